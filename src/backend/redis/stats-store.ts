import type { StatsRecord, StatsStore, StatsUnit } from '../../core/ports'
import { STATS_UNITS, intervalId, intervalStart } from '../../core/stats/intervals'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { HASH_MAX_SCRIPT } from './lua/stats'

const RETENTION_S: Record<StatsUnit, number> = {
  minute: 2 * 86_400,
  hour: 60 * 86_400,
  day: 800 * 86_400,
  month: 3650 * 86_400,
}

/** Stats counters shared by all nodes: one hash per scope, unit and interval, indexed by a sorted set. */
export class RedisStatsStore implements StatsStore {
  private readonly max: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly onError: (e: unknown) => void,
  ) {
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
          ops.push(
            k.endsWith('.peak')
              ? this.max.run([key], [k, String(v)])
              : this.cmd.sendCommand(['HINCRBY', key, k, String(v)]),
          )
        }
        ops.push(this.cmd.sendCommand(['EXPIRE', key, String(RETENTION_S[unit])]))
        ops.push(this.cmd.sendCommand(['ZADD', this.keys.statsIndex(scope, unit), String(start), String(start)]))
      }
    }
    Promise.all(ops).catch(this.onError)
  }

  /**
   * The records of `unit` in [start, end], in `direction` order, at most `limit`. A counter hash
   * expires (RETENTION_S after its last write) while its index entry stays: entries whose hash is
   * gone are skipped, so they never take the place of live records in a page, and removed.
   */
  async query(
    scope: string,
    unit: StatsUnit,
    start: number,
    end: number,
    limit: number,
    direction: 'forwards' | 'backwards',
  ): Promise<StatsRecord[]> {
    const from = String(intervalStart(unit, start))
    const idx = this.keys.statsIndex(scope, unit)
    const rows: StatsRecord[] = []
    const gone: string[] = []
    for (let offset = 0; rows.length < limit;) {
      const want = limit - rows.length
      const range =
        direction === 'forwards'
          ? ['ZRANGEBYSCORE', idx, from, String(end)]
          : ['ZREVRANGEBYSCORE', idx, String(end), from]
      const starts = await this.cmd.sendCommand<string[]>([...range, 'LIMIT', String(offset), String(want)])
      offset += starts.length
      const found = await Promise.all(starts.map((s) => this.record(scope, unit, Number(s))))
      found.forEach((r, i) => {
        if (r === undefined) gone.push(starts[i]!)
        else if (Object.keys(r.entries).length) rows.push(r)
      })
      if (starts.length < want) break
    }
    if (gone.length) this.cmd.sendCommand(['ZREM', idx, ...gone]).catch(this.onError)
    return rows
  }

  /** One interval's counters (zero ones left out); undefined when its hash is gone (expired). */
  private async record(scope: string, unit: StatsUnit, start: number): Promise<StatsRecord | undefined> {
    const raw = await this.cmd.sendCommand<string[] | Record<string, string>>([
      'HGETALL',
      this.keys.stats(scope, unit, start),
    ])
    const pairs = Array.isArray(raw) ? raw : Object.entries(raw).flat()
    const entries: Record<string, number> = {}
    for (let i = 0; i < pairs.length; i += 2) if (Number(pairs[i + 1]) !== 0) entries[pairs[i]!] = Number(pairs[i + 1])
    return pairs.length ? { intervalId: intervalId(unit, start), unit, start, entries } : undefined
  }
}
