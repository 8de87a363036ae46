/**
 * Helpers of the publish-throughput scenarios (publish, realtime-publish): the 100-byte message,
 * a probe publish before the load, the checks of a loadgen run and of what history stored, and
 * the CPU of a deployment's processes over a run.
 */
import { cpuSeconds } from './cpu'
import type { Deployment } from './deployment'
import type { Check, Measurement } from './scenario'

export const PUBLISH_CHANNELS = 100
export const publishChannel = (n: number | string) => `bench-${n}`
/** Ring size of short runs, which count every message back from history: 100 × 20,000 messages would need > 500k publishes/s. */
export const SHORT_RING_SIZE = 20_000

/** `{"name":"bench","data":"xxx…"}`, exactly `bytes` long. */
export function messageBody(bytes = 100): string {
  const empty = JSON.stringify({ name: 'bench', data: '' })
  return JSON.stringify({ name: 'bench', data: 'x'.repeat(Math.max(0, bytes - empty.length)) })
}

/** One publish before the load, so a broken setup fails with the gateway's own error message. */
export async function probe(base: string, auth: string, body: string): Promise<void> {
  const res = await fetch(`${base}/channels/${publishChannel('probe')}/messages`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body,
  })
  if (res.status !== 201) throw new Error(`probe publish answered ${res.status}: ${await res.text()}`)
}

export function noErrors(name: string, r: Measurement['load']): Check {
  const bad = r.unexpected + r.unanswered + r.connectionErrors + r.protocolErrors
  return {
    name,
    ok: bad === 0 && r.received > 0,
    detail:
      `statuses ${JSON.stringify(r.statuses)}, unexpected ${r.unexpected}, unanswered ${r.unanswered}, ` +
      `connection errors ${r.connectionErrors}, protocol errors ${r.protocolErrors}${r.errorSamples.length ? `; e.g. ${r.errorSamples.join(' | ')}` : ''}`,
  }
}

/** CPU of every process of a deployment from now until the returned function is called. */
export function cpuMeter(d: Deployment): () => string {
  const procs = [
    ...d.nodes.map((n, i) => [`node ${'AB'[i] ?? i}`, n.pid] as const),
    ...(d.redis ? [['redis-server', d.redis.pid] as const] : []),
  ]
  const t0 = performance.now()
  const c0 = procs.map(([, pid]) => cpuSeconds(pid) ?? 0)
  return () => {
    const dt = (performance.now() - t0) / 1000
    return procs
      .map(([name, pid], i) => `${name} ${Math.round((((cpuSeconds(pid) ?? 0) - c0[i]!) / dt) * 100)}%`)
      .join(', ')
  }
}

/**
 * Counts the messages of the bench channels 0 .. PUBLISH_CHANNELS-1 back from history (following
 * `Link: rel="next"`); they must be the `acknowledged` ones, and no channel may have filled its
 * ring of `ringSize` (the oldest would be gone).
 */
export async function historyCheck(
  base: string,
  auth: string,
  acknowledged: number,
  where: string,
  ringSize: number,
): Promise<Check> {
  const channel = publishChannel
  const counts = await Promise.all(
    Array.from({ length: PUBLISH_CHANNELS }, async (_, n) => {
      let count = 0
      let query = 'limit=1000'
      for (;;) {
        const res = await fetch(`${base}/channels/${channel(n)}/messages?${query}`, {
          headers: { Authorization: auth },
        })
        if (res.status !== 200) throw new Error(`history of ${channel(n)} answered ${res.status}: ${await res.text()}`)
        count += ((await res.json()) as unknown[]).length
        const next = /<\.\/messages\?([^>]*)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')
        if (!next) return count
        query = next[1]!
      }
    }),
  )
  const stored = counts.reduce((a, b) => a + b, 0)
  const full = counts.some((c) => c >= ringSize)
    ? ` (a channel filled its ring of ${ringSize}: raise the ring size)`
    : ''
  return {
    name: `publishes stored in history${where}`,
    ok: stored === acknowledged && !full,
    detail: `${stored} messages in history, ${acknowledged} acknowledged${full}`,
  }
}
