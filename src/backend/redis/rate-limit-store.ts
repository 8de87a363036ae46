import type { Charge, ChargeResult, RateLimitStore } from '../../core/ports'
import { commandTimedOut, withTimeout } from './errors'
import type { RedisCommander, Sender } from './clients'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import type { Waiting } from './publish-batcher'
import { chargeArgs, TAKE_TOKENS_SCRIPT } from './lua/rate-limit'
import { capture, made } from '../../lib/capture'

/** At most this many charges in one script call. */
const MAX_CHARGES = 256

/** The charges of one bucket: those waiting, and whether a call of the bucket is in flight. */
interface Bucket {
  waiting: Array<Waiting<Charge, ChargeResult>>
  busy: boolean
}

/**
 * Token buckets in Redis: the budget holds across all nodes together. Charges are batched per
 * bucket (group commit, as publishes are: PublishBatcher): a charge goes at once when its bucket
 * has no call in flight; otherwise it waits for that call's answer and goes with every charge of
 * the bucket made meanwhile, in one script call that applies them in the order they were made. So
 * an account's publishes on a busy node cost one bucket read and write per call, not per publish
 * (a channel publish is charged here on Redis Cluster when its bucket is on another master than
 * its channel; otherwise its publish script takes it, RedisBroker.publish). Each charge
 * is answered within the timeout of being made, queueing included: one that waited past it is
 * refused with the timeout's error without being sent (its tokens untouched).
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly script: ScriptRunner
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    client: RedisCommander | Sender,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.script = new ScriptRunner(client, TAKE_TOKENS_SCRIPT)
  }

  take(c: Charge): Promise<ChargeResult> {
    const key = this.keys.bucket(c.key)
    // its resolving functions kept in its queue entry, with no closure per charge (lib/capture.ts)
    const promise = new Promise<ChargeResult>(capture)
    const { resolve, reject } = made
    let b = this.buckets.get(key)
    if (!b) this.buckets.set(key, (b = { waiting: [], busy: false }))
    b.waiting.push({ p: c, at: performance.now(), resolve, reject })
    if (!b.busy) {
      b.busy = true
      // after the current turn's synchronous charges (they go together)
      queueMicrotask(() => this.send(key, b))
    }
    return promise
  }

  private send(key: string, b: Bucket): void {
    const now = performance.now()
    const batch: Bucket['waiting'] = []
    while (b.waiting.length && batch.length < MAX_CHARGES) {
      const w = b.waiting.shift()!
      if (now - w.at >= this.timeoutMs) w.reject(commandTimedOut())
      else batch.push(w)
    }
    if (!batch.length) return this.next(key, b)
    const args: string[] = []
    for (const { p } of batch) args.push(...chargeArgs(p))
    withTimeout(this.script.run<number[]>([key], args), batch[0]!.at + this.timeoutMs - now)
      .then(
        (r) =>
          batch.forEach((w, i) =>
            w.resolve({
              ok: Number(r[3 * i]) === 1,
              remaining: Number(r[3 * i + 1]) / 1000,
              retryAfterMs: Number(r[3 * i + 2]),
            }),
          ),
        (e) => {
          for (const w of batch) w.reject(e)
        },
      )
      .finally(() => this.next(key, b))
  }

  /** The bucket's next call, with what waited meanwhile; the bucket is forgotten when none did. */
  private next(key: string, b: Bucket): void {
    if (b.waiting.length) return this.send(key, b)
    b.busy = false
    if (this.buckets.get(key) === b) this.buckets.delete(key)
  }
}
