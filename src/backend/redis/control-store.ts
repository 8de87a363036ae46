import type { ControlEvent } from '../../core/ports'
import { CONTROL_KINDS, CachedControlStore, type ControlKind, type ControlRecord } from '../shared/cached-control-store'
import { withTimeout, type RedisClient } from './connection'
import type { RedisKeys } from './keys'

/**
 * Control records in Redis hashes (one per kind), cached in memory on every node. A write goes
 * to Redis first, then is announced on a pub/sub channel so every node refreshes that record:
 * a revoked key stops working on all nodes.
 */
export class RedisControlStore extends CachedControlStore {
  private constructor(private readonly cmd: RedisClient, private readonly keys: RedisKeys, private readonly timeoutMs: number) {
    super()
  }

  static async open(cmd: RedisClient, sub: RedisClient, keys: RedisKeys, timeoutMs: number): Promise<RedisControlStore> {
    const store = new RedisControlStore(cmd, keys, timeoutMs)
    await sub.subscribe(keys.controlEvents(), (msg: string) => void store.refresh(msg))
    for (const kind of CONTROL_KINDS) {
      const all = (await cmd.sendCommand(['HGETALL', keys.control(kind)])) as unknown as string[] | Record<string, string>
      const pairs = Array.isArray(all) ? all : Object.entries(all).flat()
      for (let i = 0; i < pairs.length; i += 2) store.apply(kind, pairs[i]!, JSON.parse(pairs[i + 1]!), { kind: 'account' })
    }
    return store
  }

  protected async persist(r: ControlRecord, e: ControlEvent) {
    const write = r.value === undefined
      ? ['HDEL', this.keys.control(r.kind), r.id]
      : ['HSET', this.keys.control(r.kind), r.id, JSON.stringify(r.value)]
    await withTimeout(this.cmd.sendCommand(write), this.timeoutMs)
    await withTimeout(this.cmd.sendCommand(['PUBLISH', this.keys.controlEvents(), JSON.stringify({ kind: r.kind, id: r.id, e })]), this.timeoutMs)
  }

  /** Another node (or this one) changed a record: load it again. */
  private async refresh(msg: string) {
    try {
      const { kind, id, e } = JSON.parse(msg) as { kind: ControlKind; id: string; e: ControlEvent }
      const raw = (await this.cmd.sendCommand(['HGET', this.keys.control(kind), id])) as unknown as string | null
      this.apply(kind, id, raw ? JSON.parse(raw) : undefined, e)
    } catch {
      // a missed refresh is repaired by the next change; reads keep the last known value
    }
  }

  async ready() {
    try { return String(await withTimeout(this.cmd.sendCommand(['PING']), this.timeoutMs)) === 'PONG' } catch { return false }
  }

  async close() {}
}
