import { randomId } from '../../lib/crypto'
import type { TokenRevocation } from '../../core/types'
import { CachedRevocationStore } from '../shared/cached-revocation-store'
import { withTimeout } from './errors'
import type { RedisCommander, RedisSubscriber } from './clients'
import type { RedisKeys } from './keys'
import { REVOCATION_FORGET_SCRIPT } from './lua/revocations'
import { ScriptRunner } from './script-runner'

type Pairs = string[] | Record<string, string>
const pairsOf = (raw: Pairs): string[] => (Array.isArray(raw) ? raw : Object.entries(raw).flat())

/**
 * Token revocations shared by every node: one Redis hash per key (expiring with the last
 * revocation it holds), cached in memory on every node. A write goes to Redis first and is then
 * announced with the revocations themselves on a pub/sub channel, so every node refuses the
 * tokens at once without reading anything back. A node loads them all at start and again whenever
 * its subscriber reconnects (announcements made while it was away are not lost).
 */
export class RedisRevocationStore extends CachedRevocationStore {
  /** This node's announcements come back to it: they are applied already. */
  private readonly origin = randomId(12)

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    super()
    this.forgetScript = new ScriptRunner(cmd, REVOCATION_FORGET_SCRIPT)
  }
  private readonly forgetScript: ScriptRunner

  /** Listens for announcements, then loads what is stored; resolves once this node can serve. */
  async start(sub: RedisSubscriber, onError: (e: unknown) => void): Promise<this> {
    await sub.subscribe(this.keys.revocationEvents(), (msg: string) => this.announced(msg))
    sub.onReady(() => void this.load().catch(onError))
    await this.load()
    return this
  }

  /**
   * Reads every stored revocation into memory (the expired ones are dropped there when read). The
   * key names are indexed in a set (a cluster cannot SCAN all masters in one command); names
   * whose hash expired are dropped from the index here.
   */
  private async load() {
    const found: TokenRevocation[] = []
    const index = this.keys.revocationIndex()
    const names = await withTimeout(this.cmd.sendCommand<string[]>(['SMEMBERS', index]), this.timeoutMs)
    const gone: string[] = []
    for (const keyName of names) {
      const pairs = pairsOf(
        await withTimeout(this.cmd.sendCommand<Pairs>(['HGETALL', this.keys.revocations(keyName)]), this.timeoutMs),
      )
      if (!pairs.length) gone.push(keyName)
      for (let i = 0; i < pairs.length; i += 2) {
        const expires = Number(pairs[i + 1])
        const [target, issuedBefore, appliesAt] = JSON.parse(pairs[i]!) as [string, number, number]
        found.push({ keyName, target, issuedBefore, appliesAt, expires })
      }
    }
    if (gone.length)
      await withTimeout(
        this.forgetScript.run([index, ...gone.map((k) => this.keys.revocations(k))], gone),
        this.timeoutMs,
      )
    this.apply(found)
  }

  protected async persist(rs: TokenRevocation[]) {
    const writes: Promise<unknown>[] = []
    for (const keyName of new Set(rs.map((r) => r.keyName))) {
      const mine = rs.filter((r) => r.keyName === keyName)
      const key = this.keys.revocations(keyName)
      const fields = mine.flatMap((r) => [JSON.stringify([r.target, r.issuedBefore, r.appliesAt]), String(r.expires)])
      const until = String(Math.max(...mine.map((r) => r.expires)))
      // the hash lives as long as its longest-lived revocation: NX sets a first expiry, GT only ever extends it
      // indexed after the hash exists: a load that finds the hash gone drops the name only while it still is
      writes.push(this.cmd.sendCommand(['HSET', key, ...fields]))
      writes.push(this.cmd.sendCommand(['PEXPIREAT', key, until, 'NX']))
      writes.push(this.cmd.sendCommand(['PEXPIREAT', key, until, 'GT']))
      writes.push(this.cmd.sendCommand(['SADD', this.keys.revocationIndex(), keyName]))
    }
    await withTimeout(Promise.all(writes), this.timeoutMs)
    const announcement = JSON.stringify({ o: this.origin, r: rs })
    await withTimeout(this.cmd.sendCommand(['PUBLISH', this.keys.revocationEvents(), announcement]), this.timeoutMs)
  }

  private announced(msg: string) {
    try {
      const { o, r } = JSON.parse(msg) as { o: string; r: TokenRevocation[] }
      if (o !== this.origin) this.apply(r)
    } catch {
      // not an announcement of ours: ignored
    }
  }
}
