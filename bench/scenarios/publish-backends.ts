/**
 * The publish scenario's backend runs (with --short, --redis or --rate-limits): each backend one
 * after the other with the Bun generator, whose request accounting is exact (pipeline 1 with
 * --redis: Bun closes a connection that pipelines behind a pending async response). JSON, then
 * msgpack publishes to 100 channels, every publish answered 201; in short mode every
 * acknowledged message is counted back from channel history (on node B in the Redis run: the
 * history is shared). With --rate-limits each backend is measured again with RATE_LIMITS=on (a
 * limit far above the load, so every publish is charged and none refused): what the limiter
 * costs a publish.
 */
import {
  cpuMeter,
  historyCheck,
  messageBody,
  noErrors,
  probe,
  PUBLISH_CHANNELS as CHANNELS,
  SHORT_RING_SIZE,
} from '../lib/publish-checks'
import { startDeployment, type Backend } from '../lib/deployment'
import { runLoadgen, type LoadgenResult, type LoadSpec } from '../lib/loadgen-client'
import type { Chart, Check, Headline, Measurement, RunOptions } from '../lib/scenario'
import { RATE_LIMITS_UNREFUSED } from '../lib/targets'
import { publishTargets, withTarget } from './publish-compare'

/** Target of the issues: Redis publish throughput at least this share of the memory one. */
const REDIS_TARGET_SHARE = 0.4

/** The backends one after the other (Bun generator): the Redis share, the rate limiter's cost, history counted back. */
/** Measured seconds of each backend run: short mode (CI) splits its seconds between the two formats. */
export const backendSeconds = (o: RunOptions) => (o.short ? o.seconds / 2 : o.seconds)

export async function backends(o: RunOptions) {
  const seconds = backendSeconds(o)
  const load = { seconds, warmup: o.warmup, connections: o.connections, pipeline: o.pipeline }
  const measurements: Measurement[] = []
  const checks: Check[] = []
  const notes: string[] = []
  const headlines: Headline[] = []
  const ratios: Record<string, number> = {}
  const rps: Partial<Record<Backend, number>> = {}
  const limitedRps: Partial<Record<Backend, number>> = {}
  const runs = (['memory', 'redis'] as const)
    .filter((b) => b === 'memory' || o.redis)
    .flatMap((backend) => (o.rateLimits ? [false, true] : [false]).map((limited) => ({ backend, limited })))
  for (const { backend, limited } of runs) {
    const label = `${backend === 'memory' ? 'gateway' : 'gateway (redis, node A)'}${limited ? ' + rate limits' : ''}`
    console.log(
      `${label}: JSON, then msgpack publishes to ${CHANNELS} channels, ${o.warmup} s warm-up + ${seconds} s each …`,
    )
    // short mode counts every message back from history, so the per-channel ring must hold them all
    const env = {
      ...(o.short ? { RING_SIZE: String(SHORT_RING_SIZE) } : {}),
      ...(limited ? RATE_LIMITS_UNREFUSED : {}),
    }
    let stored: Check | undefined
    const results = await withTarget(
      startDeployment(backend, {
        logDir: o.outDir,
        env,
        name: `gateway-${backend}${limited ? '-limited' : ''}`,
        cpuProfile: o.profile,
      }),
      async (d) => {
        const t = d.publishTo
        const auth = `Basic ${Buffer.from(t.key).toString('base64')}`
        await probe(t.base, auth, messageBody())
        const cpu = cpuMeter(d)
        const out: Array<[string, LoadgenResult]> = []
        for (const target of publishTargets(t)) {
          const spec: LoadSpec = {
            ...load,
            url: target.load.url,
            variants: CHANNELS,
            method: 'POST',
            ...(typeof target.load.body === 'string'
              ? { body: target.load.body }
              : { bodyBase64: Buffer.from(target.load.body).toString('base64') }),
            expectStatus: 201,
            headers: target.load.headers,
            serverPid: t.pid,
            redisPid: d.redis?.pid,
            label: `${label}, ${target.name.slice('gateway '.length)}`,
          }
          out.push([target.name.slice('gateway '.length), await runLoadgen(spec)])
        }
        const total = out.reduce((n, [, r]) => n + (r.statuses['201'] ?? 0), 0)
        const json = out[0]![1]
        if (backend === 'redis') {
          for (const [format, r] of out)
            notes.push(
              `${label}, ${format}: CPU per publish over the measured window at ${Math.round(r.rps).toLocaleString('en-US')}/s: ` +
                `node A ${usPer(r.serverCpuPercent, r.rps)} µs, redis-server ${usPer(r.redisCpuPercent, r.rps)} µs`,
            )
          notes.push(
            `redis run, CPU over the whole load (warm-up included), % of one core: ${cpu()}; ` +
              `${o.connections} connections × ${o.pipeline} in flight at ${Math.round(json.rps).toLocaleString('en-US')}/s = ${((o.connections * o.pipeline * 1000) / json.rps).toFixed(2)} ms per JSON publish; ` +
              `node A's mean Redis command time ${await meanRedisMs(t.base)}`,
          )
        }
        if (o.short)
          stored = await historyCheck(
            d.subscribeTo.base,
            auth,
            total,
            backend === 'redis' ? ' (read on node B)' : '',
            SHORT_RING_SIZE,
          )
        return out
      },
    )
    for (const [format, r] of results) {
      measurements.push({
        target: `${label}, ${format}`,
        request: `POST /channels/bench-N/messages (${format}; Bun generator)`,
        load: r,
      })
      checks.push(noErrors(`${label}, ${format}: every publish answered 201`, r))
      checks.push({
        name: `${label}, ${format}: publishes acknowledged`,
        ok: (r.statuses['201'] ?? 0) > 0 && r.statuses['201'] === r.sent,
        detail: `${r.statuses['201'] ?? 0} of ${r.sent} publishes answered 201`,
      })
    }
    const jsonRps = results[0]![1].rps
    if (limited) limitedRps[backend] = jsonRps
    else rps[backend] = jsonRps
    if (stored) checks.push(stored)
  }
  if (rps.redis !== undefined) {
    const share = rps.redis / rps.memory!
    ratios['redis JSON publish/s ÷ memory JSON publish/s (Bun generator)'] = share
    headlines.push({ name: 'publish/s (redis, 2 nodes, JSON)', value: rps.redis, unit: '/s' })
    headlines.push({
      name: 'redis ÷ memory publish rate',
      value: share * 100,
      unit: '%',
      target: `≥ ${REDIS_TARGET_SHARE * 100}%`,
      met: share >= REDIS_TARGET_SHARE,
    })
  }
  for (const backend of ['memory', 'redis'] as const) {
    const on = limitedRps[backend]
    const off = rps[backend]
    if (on === undefined || off === undefined) continue
    ratios[`${backend}: publish/s with rate limits ÷ without`] = on / off
    // the gateway is saturated in both runs, so 1/rate is its time per publish: the difference is the limiter's
    headlines.push({
      name: `rate-limit cost per publish (${backend})`,
      value: (1 / on - 1 / off) * 1e6,
      unit: 'µs of gateway time',
    })
  }
  const chart: Chart = {
    file: 'throughput.svg',
    title: 'Responses per second over each backend run (Bun generator, warm-up included)',
    kind: 'line',
    xLabel: 'seconds',
    yLabel: 'responses/s',
    series: measurements.map((m) => ({ name: m.target, points: m.load.timeline })),
  }
  return { measurements, checks, notes, headlines, ratios, chart }
}

/** CPU µs per request from a CPU share (% of one core) at `rps`. */
const usPer = (cpuPercent: number | undefined, rps: number) =>
  cpuPercent === undefined || !(rps > 0) ? 'n/a' : ((cpuPercent / 100 / rps) * 1e6).toFixed(1)

/** Mean of the gateway's gateway_redis_command_seconds histogram (its /metrics), in ms. */
async function meanRedisMs(base: string): Promise<string> {
  try {
    const text = await (await fetch(`${base}/metrics`)).text()
    const sum = Number(/^gateway_redis_command_seconds_sum(?:\{\})? (\S+)$/m.exec(text)?.[1])
    const count = Number(/^gateway_redis_command_seconds_count(?:\{\})? (\S+)$/m.exec(text)?.[1])
    return count > 0 ? `${((sum / count) * 1000).toFixed(3)} ms over ${count.toLocaleString('en-US')} commands` : 'n/a'
  } catch (e) {
    return `n/a (${(e as Error).message})`
  }
}
