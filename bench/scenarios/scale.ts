/**
 * Scale-out (issue 27): publishes/s of K gateway processes sharing one port (REUSE_PORT) on an
 * M-master Redis Cluster started by the bench (lib/redis-cluster-server.ts), for every K of
 * `--processes` (default 1,2) and every M of `--shards` (default 1,2), beside a bare Bun route
 * that reads the body (bench/baseline-server.ts, `bare text()`), the same route writing each body
 * to the channel's event streams too (`bare text() + delivery`: the I/O of a delivered publish,
 * nothing stored or checked) and nchan with K workers (when nginx with the nchan module is
 * installed; otherwise the run says so and skips it), all with the same load generator (wrk, or
 * the Bun generator), the same JSON publish to 100 channels, each channel with `--subscribers` ÷
 * 100 event streams held meanwhile (default one, on the gateway's `/sse` or nchan's `/sub`; with
 * K processes they land on any of them, so deliveries cross nodes through the cluster; with
 * `--subscribers 0` none, and no delivering bare route: the publishes' cost before any delivery,
 * the difference to a run with streams being what the deliveries cost). Reports
 * per run: publishes/s, deliveries/s, CPU µs per publish of the gateway processes (their
 * deliveries included) and of the redis-servers, and checks that every acknowledged publish
 * reached every stream of its channel; ratios: each (K, M) against the bare route and against
 * nchan with K workers (publishes/s), each K = 1 against both bare routes (CPU per publish), and
 * each M against M = the smallest one (scaling per added shard). On a machine with fewer cores
 * than K + M + the generator the figures show the cost per publish, not the scaling.
 */
import { cpuSeconds } from '../lib/cpu'
import { settledCount, startDeliveryCounter, type DeliveryCounter } from '../lib/delivery-count'
import { nchanMissing, startNchan } from '../lib/nchan'
import { freePort } from '../lib/processes'
import { messageBody, probe, PUBLISH_CHANNELS } from '../lib/publish-checks'
import { startRedisCluster } from '../lib/redis-cluster-server'
import type { Check, Headline, Measurement, RunOptions, ScenarioResult } from '../lib/scenario'
import { RATE_LIMITS_UNREFUSED, startBaseline, startGateway, type Target } from '../lib/targets'
import { readyOnEveryProcess } from '../lib/cluster'
import { clientHeaders, drive, driverOf, type LoadShape } from './publish-compare'
import { publishChannel } from '../lib/publish-checks'

/** The bare route whose publishes are written to event streams too (bench/baseline-server.ts). */
const BARE_DELIVER = 'bare text() + delivery'
/** Issue 44: one process's server CPU per publish at most this many times the bare `text()` route's. */
const CPU_TARGET = 2

interface Run {
  target: string
  processes?: number
  shards?: number
  rps: number
  /** Messages received by the streams per second (absent: none held). */
  dps?: number
  /** CPU µs per publish of the serving processes (gateways, nginx), and of the redis-servers. */
  serverUs: number
  redisUs?: number
}

export async function scaleScenario(o: RunOptions): Promise<ScenarioResult> {
  const driver = driverOf(o.loadgen)
  const ks = o.processes ?? [1, 2]
  const ms = o.shards ?? [1, 2]
  const shape: LoadShape = {
    seconds: o.short ? 1 : o.seconds,
    warmup: o.short ? 0 : o.warmup,
    connections: o.connections,
    dir: o.outDir,
  }
  const body = messageBody()
  // event streams per channel, the same on every channel (so that each publish has as many)
  const perChannel = Math.ceil((o.subscribers ?? PUBLISH_CHANNELS) / PUBLISH_CHANNELS)
  const streams = perChannel * PUBLISH_CHANNELS
  // `--subscribers 0`: no streams, so no deliveries (and no delivering bare route to compare with)
  const delivering = streams > 0
  const runs: Run[] = []
  const measurements: Measurement[] = []
  const checks: Check[] = []
  const notes: string[] = []

  /** One measured run against `url` (publishes of `body`), CPU counted over `servers` and `redis`. */
  const measure = async (
    name: string,
    url: string,
    headers: string[],
    expect: number,
    servers: () => number[],
    redis: number[] = [],
    counter?: DeliveryCounter,
  ) => {
    console.log(`${name}: ${driver}, ${o.connections} connections, ${shape.warmup} s warm-up + ${shape.seconds} s …`)
    const sum = (pids: number[]) => pids.reduce((t, p) => t + (cpuSeconds(p) ?? 0), 0)
    const req = { url, headers, body, serverPids: servers(), label: name }
    // publishes answered `expect` (wrk tells only the answers under 400)
    const acked = (statuses: Record<string, number>) => statuses[String(expect)] ?? statuses['<400'] ?? 0
    let sent = 0
    // the warm-up apart, so that the CPU counted (around the measured run) is that of the answers counted
    if (shape.warmup > 0)
      sent += acked(
        (
          await drive(
            driver,
            { ...req, label: `${name}, warm-up` },
            { ...shape, seconds: shape.warmup, warmup: 0 },
            expect,
          )
        ).statuses,
      )
    const s0 = sum(servers())
    const r0 = sum(redis)
    const d0 = counter ? (await counter.count()).deliveries : 0
    const t0 = performance.now()
    const r = await drive(driver, req, { ...shape, warmup: 0 }, expect)
    const d1 = counter ? (await counter.count()).deliveries : 0
    const seconds = (performance.now() - t0) / 1000
    const s1 = sum(servers())
    const r1 = sum(redis)
    sent += acked(r.statuses)
    const answered = r.received
    const perReq = (cpu: number) => (answered > 0 ? (cpu / answered) * 1e6 : NaN)
    measurements.push({
      target: name,
      request: `POST ${new URL(url).pathname.replace('%7Bn%7D', 'N')} (JSON, ${driver})`,
      load: r,
    })
    const bad = r.unexpected + r.unanswered + r.connectionErrors + r.protocolErrors
    checks.push({
      name: `${name}: every publish answered ${expect}`,
      ok: bad === 0 && r.responses > 0,
      detail: `statuses ${JSON.stringify(r.statuses)}, unanswered ${r.unanswered}, connection errors ${r.connectionErrors}`,
    })
    let dps: number | undefined
    if (counter) {
      dps = (d1 - d0) / seconds
      // every acknowledged publish reached each stream of its channel; at most the publishes
      // still unanswered when the generator stopped (one per connection, warm-up and measured
      // run) and the gateway's probe came on top
      const want = sent * perChannel
      const got = await settledCount(counter, want)
      const extra = ((shape.warmup > 0 ? 2 : 1) * o.connections + 1) * perChannel
      checks.push({
        name: `${name}: every acknowledged publish delivered to the ${perChannel} stream(s) of its channel`,
        ok: got.deliveries >= want && got.deliveries <= want + extra && got.failed === 0,
        detail: `${got.deliveries} deliveries for ${sent} acknowledged publishes × ${perChannel} (up to ${extra} more allowed: unanswered at the end, the probe), streams failed or dropped ${got.failed}`,
      })
    }
    return { rps: r.rps, dps, serverUs: perReq(s1 - s0), redisUs: redis.length ? perReq(r1 - r0) : undefined }
  }

  /** Event streams on every channel of the load (stream i on channel i % 100), counting their deliveries. */
  const subscribe = async (name: string, url: (channel: string) => string): Promise<DeliveryCounter | undefined> => {
    if (!delivering) return undefined
    const counter = startDeliveryCounter(`${name}-streams`, o.outDir)
    const urls = Array.from({ length: streams }, (_, i) => url(publishChannel(i % PUBLISH_CHANNELS)))
    const opened = await counter.open(urls)
    if (opened !== streams) {
      await counter.stop()
      throw new Error(`${name}: ${opened} of ${streams} event streams opened`)
    }
    return counter
  }

  // the bare Bun routes (the body read; the body read and written to the channel's event
  // streams), and nchan with K workers, for each K
  const bare = await startBaseline(o.outDir)
  let bareStreams: DeliveryCounter | undefined
  try {
    const r = await measure(
      'bare text()',
      `${bare.base}/bare/text/${publishChannel('{n}')}`,
      clientHeaders('Basic x', 'json'),
      201,
      () => [bare.pid],
    )
    runs.push({ target: 'bare text()', ...r })
    bareStreams = await subscribe('bare', (c) => `${bare.base}/bare/sub/${c}`)
    if (bareStreams) {
      const d = await measure(
        BARE_DELIVER,
        `${bare.base}/bare/deliver/${publishChannel('{n}')}`,
        clientHeaders('Basic x', 'json'),
        201,
        () => [bare.pid],
        [],
        bareStreams,
      )
      runs.push({ target: BARE_DELIVER, ...d })
    }
  } finally {
    await bareStreams?.stop()
    await bare.stop()
  }
  const missing = nchanMissing()
  if (missing) notes.push(`nchan skipped: ${missing}`)
  else
    for (const k of ks) {
      const n = await startNchan(o.outDir, k)
      let counter: DeliveryCounter | undefined
      try {
        counter = await subscribe(`nchan-${k}`, (c) => `${n.base}/sub/${c}`)
        // 201: published, to a channel with subscribers (202: queued, none there)
        const r = await measure(
          `nchan ×${k}`,
          `${n.base}/pub/${publishChannel('{n}')}`,
          ['Content-Type: application/json'],
          delivering ? 201 : 202,
          n.pids,
          [],
          counter,
        )
        runs.push({ target: `nchan ×${k}`, processes: k, ...r })
      } finally {
        await counter?.stop()
        await n.stop()
      }
    }

  for (const m of ms)
    for (const k of ks) {
      const name = `gateway ×${k}, ${m} shard${m > 1 ? 's' : ''}`
      const cluster = await startRedisCluster(o.outDir, m, `redis-k${k}-m${m}`)
      const nodes: Array<Target & { key: string }> = []
      let counter: DeliveryCounter | undefined
      try {
        const port = freePort()
        const env = {
          REDIS_URL: cluster.url,
          REDIS_CLUSTER: 'true',
          REDIS_PREFIX: 'bench:',
          REUSE_PORT: 'true',
          ...(o.rateLimits ? RATE_LIMITS_UNREFUSED : {}),
        }
        for (let i = 0; i < k; i++) {
          nodes.push(
            await startGateway({
              logDir: o.outDir,
              env,
              port,
              name: `gateway-k${k}-m${m}-${i + 1}`,
              cpuProfile: o.profile,
            }),
          )
          await readyOnEveryProcess(nodes[0]!.base)
        }
        const auth = `Basic ${Buffer.from(nodes[0]!.key).toString('base64')}`
        await probe(nodes[0]!.base, auth, body)
        const key = encodeURIComponent(nodes[0]!.key)
        counter = await subscribe(`gateway-k${k}-m${m}`, (c) => `${nodes[0]!.base}/sse?v=1.2&key=${key}&channels=${c}`)
        const r = await measure(
          name,
          `${nodes[0]!.base}/channels/${publishChannel('{n}')}/messages`,
          clientHeaders(auth, 'json'),
          201,
          () => nodes.map((g) => g.pid),
          cluster.pids,
          counter,
        )
        runs.push({ target: name, processes: k, shards: m, ...r })
      } finally {
        await counter?.stop()
        await Promise.all(nodes.map((g) => g.stop()))
        await cluster.stop()
      }
    }

  const rpsOf = (t: string) => runs.find((r) => r.target === t)?.rps
  const cpuOf = (t: string) => runs.find((r) => r.target === t)?.serverUs
  const ratios: Record<string, number> = {}
  const headlines: Headline[] = []
  const bareRps = rpsOf('bare text()')
  for (const r of runs.filter((x) => x.shards !== undefined)) {
    if (bareRps) ratios[`${r.target} ÷ bare text()`] = r.rps / bareRps
    // CPU per publish of one process against the bare routes' (the issue 44 measure: ≤ 2× bare text())
    if (r.processes === 1)
      for (const b of ['bare text()', BARE_DELIVER]) {
        const us = cpuOf(b)
        if (!us) continue
        const name = `${r.target}: server CPU per publish ÷ ${b}'s`
        const ratio = r.serverUs / us
        ratios[name] = ratio
        // the target holds with deliveries on: without streams the ratio is shown, not judged
        if (b === 'bare text()')
          headlines.push({
            name,
            value: ratio,
            unit: delivering ? '' : '(no deliveries)',
            ...(delivering ? { target: `≤ ${CPU_TARGET.toFixed(1)}`, met: ratio <= CPU_TARGET } : {}),
          })
      }
    const nchan = rpsOf(`nchan ×${r.processes}`)
    if (nchan) {
      ratios[`${r.target} ÷ nchan ×${r.processes}`] = r.rps / nchan
      headlines.push({
        name: `${r.target} ÷ nchan ×${r.processes}`,
        value: r.rps / nchan,
        unit: '',
        target: '≥ 1.0',
        met: r.rps / nchan >= 1,
      })
    }
    const m0 = Math.min(...ms)
    const base = rpsOf(`gateway ×${r.processes}, ${m0} shard${m0 > 1 ? 's' : ''}`)
    if (base && r.shards! > m0) {
      const share = r.rps / base / (r.shards! / m0)
      ratios[`${r.target}: publishes/s ÷ (${m0} shard × ${r.shards! / m0}), share of linear`] = share
      headlines.push({
        name: `${r.target}: share of linear scaling from ${m0} shard`,
        value: share,
        unit: '',
        target: '≥ 0.8 (on a machine with the cores for it)',
        met: share >= 0.8,
      })
    }
    headlines.push({ name: `${r.target} publishes/s`, value: r.rps, unit: '/s' })
    if (r.dps !== undefined) headlines.push({ name: `${r.target} deliveries/s`, value: r.dps, unit: '/s' })
  }
  const cores = navigator.hardwareConcurrency
  notes.push(
    `${cores} cores here: ${cores < Math.max(...ks) + Math.max(...ms) + 1 ? 'fewer than the largest run needs (processes + shards + the generator), so the rates show the cost per publish, not the scaling' : 'enough for the largest run'}`,
  )
  const fmt = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '' : x.toFixed(1))
  return {
    scenario: 'scale',
    description:
      'Publishes/s of K gateway processes on one port (REUSE_PORT) on an M-master Redis Cluster started by the bench, ' +
      'beside a bare Bun route that reads the body and nchan with K workers, same generator, same JSON publish to 100 channels, ' +
      `${streams} event streams held on them during the gateway and nchan runs (${perChannel} per channel).`,
    load: `${driver}, ${o.connections} keep-alive connections × 1 in flight, ${shape.warmup} s warm-up + ${shape.seconds} s per run`,
    measurements,
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: ['target', 'publishes/s', 'deliveries/s', 'server CPU µs per publish', 'redis-server CPU µs per publish'],
        rows: runs.map((r) => [
          r.target,
          Math.round(r.rps).toLocaleString('en-US'),
          r.dps === undefined ? '' : Math.round(r.dps).toLocaleString('en-US'),
          fmt(r.serverUs),
          fmt(r.redisUs),
        ]),
      },
    ],
    headlines,
    ratios,
    checks,
    notes,
    details: { runs },
  }
}
