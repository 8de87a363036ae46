import type { StatsRecord, StatsStore, StatsUnit } from '../../core/ports'
import { STATS_UNITS, intervalId, intervalStart } from '../../core/stats/intervals'
import type { RedisClient } from './connection'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { HASH_MAX_SCRIPT } from './scripts'

const RETENTION_S: Record<StatsUnit, number> = { minute: 2 * 86_400, hour: 60 * 86_400, day: 800 * 86_400, month: 3650 * 86_400 }

/** Stats counters shared by all nodes: one hash per scope, unit and interval, indexed by a sorted set. */
export class RedisStatsStore implements StatsStore {
  private readonly max: ScriptRunner

  constructor(private readonly cmd: RedisClient, private readonly keys: RedisKeys, private readonly onError: (e: unknown) => void) {
    this.max = new ScriptRunner(cmd, HASH_MAX_SCRIPT)
  }

  add(scopes: string[], at: number, entries: Record<string, number>): void {
    const ops: Promise<unknown>[] = []
    for (const scope of scopes) {
      for (const unit of STATS_UNITS) {
        const start = intervalStart(unit, at)
        const key = this.keys.stats(scope, unit, start)
        for (const [k, v] of Object.entries(entries)) {
          // counters add up; `*.peak` entries keep the highest value
          ops.push(k.endsWith('.peak') ? this.max.run([key], [k, String(v)]) : this.cmd.sendCommand(['HINCRBY', key, k, String(v)]))
        }
        ops.push(this.cmd.sendCommand(['EXPIRE', key, String(RETENTION_S[unit])]))
        ops.push(this.cmd.sendCommand(['ZADD', this.keys.statsIndex(scope, unit), String(start), String(start)]))
      }
    }
    Promise.all(ops).catch(this.onError)
  }

  async query(scope: string, unit: StatsUnit, start: number, end: number, limit: number, direction: 'forwards' | 'backwards'): Promise<StatsRecord[]> {
    const from = String(intervalStart(unit, start))
    const idx = this.keys.statsIndex(scope, unit)
    const starts = (direction === 'forwards'
      ? await this.cmd.sendCommand(['ZRANGEBYSCORE', idx, from, String(end), 'LIMIT', '0', String(limit)])
      : await this.cmd.sendCommand(['ZREVRANGEBYSCORE', idx, String(end), from, 'LIMIT', '0', String(limit)])) as unknown as string[]
    const rows = await Promise.all(starts.map(async (s) => {
      const raw = (await this.cmd.sendCommand(['HGETALL', this.keys.stats(scope, unit, Number(s))])) as unknown as string[] | Record<string, string>
      const pairs = Array.isArray(raw) ? raw : Object.entries(raw).flat()
      const entries: Record<string, number> = {}
      for (let i = 0; i < pairs.length; i += 2) if (Number(pairs[i + 1]) !== 0) entries[pairs[i]!] = Number(pairs[i + 1])
      return { intervalId: intervalId(unit, Number(s)), unit, start: Number(s), entries }
    }))
    return rows.filter((r) => Object.keys(r.entries).length > 0)
  }
}
