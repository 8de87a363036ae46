import type { PresenceStore } from '../../core/ports'
import type { HistoryQuery, PresenceMessage } from '../../core/types'
import { BUFFERS, withTimeout, type RedisClient } from './connection'
import { pack, unpack } from './codec'
import type { RedisKeys } from './keys'

const HISTORY_MAX = 1000
const LEAVE = 3

/** Presence sets (hash member -> message) and capped presence history (list) in Redis. */
export class RedisPresenceStore implements PresenceStore {
  constructor(private readonly cmd: RedisClient, private readonly keys: RedisKeys, private readonly timeoutMs: number) {}

  async members(app: string, channel: string): Promise<PresenceMessage[]> {
    const vals = (await withTimeout(this.cmd.sendCommand(['HVALS', this.keys.presence(app, channel)], BUFFERS), this.timeoutMs)) as unknown as Buffer[]
    return vals.map((v) => unpack<PresenceMessage>(v))
  }

  async apply(app: string, channel: string, events: PresenceMessage[]): Promise<void> {
    const key = this.keys.presence(app, channel)
    const hist = this.keys.presenceHistory(app, channel)
    const ops: Promise<unknown>[] = []
    for (const e of events) {
      const member = `${e.connectionId}\u0000${e.clientId}`
      ops.push(e.action === LEAVE ? this.cmd.sendCommand(['HDEL', key, member]) : this.cmd.sendCommand(['HSET', key, member, pack({ ...e, action: 1 })]))
      ops.push(this.cmd.sendCommand(['RPUSH', hist, pack(e)]))
    }
    ops.push(this.cmd.sendCommand(['LTRIM', hist, String(-HISTORY_MAX), '-1']))
    await withTimeout(Promise.all(ops), this.timeoutMs)
  }

  async history(app: string, channel: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    const raw = (await withTimeout(this.cmd.sendCommand(['LRANGE', this.keys.presenceHistory(app, channel), '0', '-1'], BUFFERS), this.timeoutMs)) as unknown as Buffer[]
    const all = raw.map((b) => unpack<PresenceMessage>(b)).filter((e) => (q.start === undefined || e.timestamp >= q.start) && (q.end === undefined || e.timestamp <= q.end))
    const ordered = q.direction === 'forwards' ? all : all.reverse()
    const from = q.cursor === undefined ? 0 : ordered.findIndex((e) => e.id === q.cursor) + 1
    return ordered.slice(from, from + q.limit)
  }
}
