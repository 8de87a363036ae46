import { randomId } from '../../lib/crypto'
import type { TokenRevocation } from '../../core/types'
import { CachedRevocationStore } from '../shared/cached-revocation-store'
import { withTimeout, type RedisClient } from './connection'
import type { RedisKeys } from './keys'

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
    private readonly cmd: RedisClient,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    super()
  }

  /** Listens for announcements, then loads what is stored; resolves once this node can serve. */
  async start(sub: RedisClient, onError: (e: unknown) => void): Promise<this> {
    await sub.subscribe(this.keys.revocationEvents(), (msg: string) => this.announced(msg))
    sub.on('ready', () => void this.load().catch(onError))
    await this.load()
    return this
  }

  /** Reads every stored revocation into memory (the expired ones are dropped there when read). */
  private async load() {
    const found: TokenRevocation[] = []
    let cursor = '0'
    do {
      const [next, names] = (await withTimeout(
        this.cmd.sendCommand(['SCAN', cursor, 'MATCH', this.keys.revocationsPattern(), 'COUNT', '500']),
        this.timeoutMs,
      )) as unknown as [string, string[]]
      cursor = String(next)
      for (const name of names) {
        const keyName = name.slice(this.keys.revocations('').length)
        const pairs = pairsOf(
          (await withTimeout(this.cmd.sendCommand(['HGETALL', name]), this.timeoutMs)) as unknown as Pairs,
        )
        for (let i = 0; i < pairs.length; i += 2) {
          const expires = Number(pairs[i + 1])
          const [target, issuedBefore, appliesAt] = JSON.parse(pairs[i]!) as [string, number, number]
          found.push({ keyName, target, issuedBefore, appliesAt, expires })
        }
      }
    } while (cursor !== '0')
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
      writes.push(this.cmd.sendCommand(['HSET', key, ...fields]))
      writes.push(this.cmd.sendCommand(['PEXPIREAT', key, until, 'NX']))
      writes.push(this.cmd.sendCommand(['PEXPIREAT', key, until, 'GT']))
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
