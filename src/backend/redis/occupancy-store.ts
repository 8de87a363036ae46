import type { OccupancyCounts, OccupancyStore } from '../../core/ports'
import { zeroCounts } from '../../core/fanout/occupancy'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'

/** How often a node re-reports its counts, and how old a report may be before it no longer counts. */
export const OCCUPANCY_REFRESH_MS = 10_000
export const OCCUPANCY_STALE_MS = 30_000

/**
 * The counts in the order a node writes them. New ones go at the end only: a node of an earlier
 * version reads the fields it knows (the first ones) and ignores the rest, and a value written by
 * such a node (fewer fields) reads as 0 for the missing ones.
 */
const FIELDS = [
  'connections',
  'publishers',
  'subscribers',
  'presenceSubscribers',
  'objectPublishers',
  'objectSubscribers',
] as const
const isZero = (c: OccupancyCounts) => FIELDS.every((f) => c[f] === 0)

/**
 * Occupancy counts of every node, one hash per channel: node id ->
 * `<connections>,<publishers>,<subscribers>,<presenceSubscribers>,<objectPublishers>,<objectSubscribers>:<reported at>`
 * (a node before object counts wrote the first four).
 * Changes of one event-loop turn are written together; every node rewrites its counts every
 * OCCUPANCY_REFRESH_MS, so a node that died without a goodbye stops counting after
 * OCCUPANCY_STALE_MS (and its fields go with the key once nobody refreshes it).
 */
export class RedisOccupancyStore implements OccupancyStore {
  /** This node's non-zero counts by key. */
  private readonly local = new Map<string, OccupancyCounts>()
  private readonly dirty = new Set<string>()
  private scheduled = false
  private closed = false
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly cmd: RedisCommander,
    private readonly node: string,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
    private readonly onError: (e: unknown) => void,
  ) {
    this.timer = setInterval(() => this.write([...this.local.keys()]), OCCUPANCY_REFRESH_MS)
    this.timer.unref?.()
  }

  report(appId: string, channel: string, counts: OccupancyCounts): void {
    if (this.closed) return // streams ending during shutdown: close() already took this node's counts away
    const key = this.keys.occupancy(appId, channel)
    if (!isZero(counts)) this.local.set(key, { ...counts })
    else this.local.delete(key)
    this.dirty.add(key)
    if (this.scheduled) return
    this.scheduled = true
    setTimeout(() => {
      this.scheduled = false
      const keys = [...this.dirty]
      this.dirty.clear()
      this.write(keys)
    }, 0)
  }

  async count(appId: string, channel: string): Promise<OccupancyCounts> {
    const key = this.keys.occupancy(appId, channel)
    const raw = await withTimeout(
      this.cmd.sendCommand<string[] | Record<string, string>>(['HGETALL', key]),
      this.timeoutMs,
    )
    const pairs = Array.isArray(raw) ? raw : Object.entries(raw).flat()
    // this node's own count is read live; the others' as long as they are fresh
    const total = { ...(this.local.get(key) ?? zeroCounts()) }
    const freshSince = Date.now() - OCCUPANCY_STALE_MS
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i] === this.node) continue
      const [counts, at] = String(pairs[i + 1]).split(':')
      if (!(Number(at) >= freshSince)) continue
      const parts = counts!.split(',')
      FIELDS.forEach((f, j) => {
        total[f] += Number(parts[j]) || 0 // a field missing (an earlier node's value) counts 0
      })
    }
    return total
  }

  private write(keys: string[]) {
    if (!keys.length || this.closed) return
    const value = (c: OccupancyCounts) => `${FIELDS.map((f) => c[f]).join(',')}:${Date.now()}`
    const ops: Promise<unknown>[] = []
    for (const key of keys) {
      const n = this.local.get(key)
      if (n === undefined) ops.push(this.cmd.sendCommand(['HDEL', key, this.node]))
      else
        ops.push(
          this.cmd.sendCommand(['HSET', key, this.node, value(n)]),
          this.cmd.sendCommand(['PEXPIRE', key, String(OCCUPANCY_STALE_MS * 2)]),
        )
    }
    Promise.all(ops).catch(this.onError)
  }

  /** Graceful shutdown: this node's counts leave at once. */
  async close() {
    this.closed = true
    clearInterval(this.timer)
    const keys = [...this.local.keys()]
    this.local.clear()
    await Promise.allSettled(keys.map((key) => this.cmd.sendCommand(['HDEL', key, this.node])))
  }
}
