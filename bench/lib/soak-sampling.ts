/**
 * What the soak samples every few seconds: each gateway node's resident memory and `/metrics`
 * gauges (summed over their labels), and on Redis the server's memory and key count; and the
 * least-squares slope of a series, with its standard error, to tell growth from noise.
 */
import { createClient } from 'redis'

/** Gauges that count what clients hold: each must be back to 0 once every client left. */
export const CLIENT_GAUGES = [
  'gateway_connections',
  'gateway_realtime_attachments',
  'gateway_presence_members',
  'gateway_subscriptions',
  'gateway_channels_subscribed',
  'gateway_queue_buffered',
]
/** Gauges of what the embedded broker keeps for history: back to 0 once the retention passed. */
export const RETENTION_GAUGES = ['gateway_ring_channels', 'gateway_ring_messages', 'gateway_ring_bytes']
const WANTED = new Set([...CLIENT_GAUGES, ...RETENTION_GAUGES, 'process_heap_bytes'])

/** The wanted gauges of one node's `/metrics`, each summed over its series (labels). */
export async function gaugesOf(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(10_000) })).text()
  const out: Record<string, number> = {}
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const end = line.search(/[{ ]/)
    const name = line.slice(0, end)
    if (!WANTED.has(name)) continue
    out[name] = (out[name] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return out
}

/** Sums per-node gauge records. */
export function sumGauges(all: Array<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const g of all) for (const [k, v] of Object.entries(g)) out[k] = (out[k] ?? 0) + v
  return out
}

export type RedisProbe = Awaited<ReturnType<typeof redisProbe>>

/** A client of the run's redis-server: its memory, its key count, and its keys by family. */
export async function redisProbe(url: string, prefix: string) {
  const c = createClient({ url })
  c.on('error', () => {})
  await c.connect()
  return {
    async memory(): Promise<{ usedBytes: number; keys: number }> {
      const info = await c.info('memory')
      const used = Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN)
      return { usedBytes: used, keys: await c.dbSize() }
    },
    /**
     * Keys by family (what follows the prefix up to the first `:` or `{`), and how many of each
     * have no expiry.
     */
    async families(): Promise<Record<string, { keys: number; noExpiry: number }>> {
      const out: Record<string, { keys: number; noExpiry: number }> = {}
      for await (const batch of c.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
        for (const key of Array.isArray(batch) ? batch : [batch]) {
          const rest = String(key).slice(prefix.length)
          const family = rest.slice(0, rest.search(/[:{]|$/))
          const f = (out[family] ??= { keys: 0, noExpiry: 0 })
          f.keys++
          if ((await c.pTTL(String(key))) === -1) f.noExpiry++
        }
      }
      return out
    },
    close: () => c.quit(),
  }
}

/** Least-squares slope of y over x and its standard error (0 with fewer than 3 points). */
export function slope(points: Array<[number, number]>): { slope: number; stderr: number } {
  const n = points.length
  if (n < 3) return { slope: 0, stderr: 0 }
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  let sxx = 0
  let sxy = 0
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2
    sxy += (x - mx) * (y - my)
  }
  if (sxx === 0) return { slope: 0, stderr: 0 }
  const b = sxy / sxx
  const a = my - b * mx
  const residual = points.reduce((s, [x, y]) => s + (y - a - b * x) ** 2, 0)
  return { slope: b, stderr: Math.sqrt(residual / (n - 2) / sxx) }
}
