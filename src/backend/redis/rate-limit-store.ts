import type { Charge, ChargeResult, RateLimitStore } from '../../core/ports'
import { withTimeout } from './errors'
import type { RedisCommander, Sender } from './clients'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { chargeArgs, TAKE_TOKENS_SCRIPT } from './lua/rate-limit'

/**
 * Token buckets in Redis, one atomic script per check: the budget holds across all nodes together.
 * (A channel publish is charged by RedisBroker.publish: inside the publish script on one
 * redis-server, as its own step before the append on a cluster.)
 */
export class RedisRateLimitStore implements RateLimitStore {
  private script: ScriptRunner

  constructor(
    client: RedisCommander | Sender,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.script = new ScriptRunner(client, TAKE_TOKENS_SCRIPT)
  }

  async take(c: Charge): Promise<ChargeResult> {
    const r = await withTimeout(this.script.run<number[]>([this.keys.bucket(c.key)], chargeArgs(c)), this.timeoutMs)
    return { ok: Number(r[0]) === 1, remaining: Number(r[1]) / 1000, retryAfterMs: Number(r[2]) }
  }
}
