/**
 * Publishing over the realtime protocol against HTTP publishing, in the same run: a 100-byte
 * message to `bench-<i % 100>` per publish, `--connections` (default 50) connections with
 * `--pipeline` (default 4; 1 with --redis) publishes in flight each. HTTP: the publish scenario's
 * load generator (keep-alive connections, pipelined POSTs, every one answered 201). Realtime:
 * the sequence publisher over realtime connections (one MESSAGE protocol message per publish,
 * `msgSerial` numbered, every one answered by an ACK carrying its serial). A fresh gateway per
 * run, the two alternated over `--rounds` (default 2). Reports messages/s of both, per core-second
 * of the publishing gateway node too, and their ratio (target: realtime ≥ 2 × HTTP). Each round
 * also runs the realtime publisher against the bare WebSocket server of bench/baseline-server.ts
 * (msgpackr decoding, one ACK per connection per turn, nothing stored): the ceiling Bun sets, as
 * the gateway's messages per core-second ÷ the bare server's (not in short mode). Both saturated,
 * that ratio follows how many frames each reads per wake-up (a busier server reads more at once):
 * so each round also runs the gateway and the bare server at one paced rate (`--rate`, default
 * 40,000 messages/s in all; 0: not run), where each does the same work per wake-up, and reports
 * their CPU per message, the main thread's and the other threads' (garbage collection, JIT) apart. In short
 * mode every acknowledged message is also counted back from history. With --redis the runs
 * follow on a Redis cluster (publishes to node A, history read on node B).
 */
import { alternate, mean, range } from '../lib/alternation'
import { cpuSeconds, minorFaults, threadCpuSeconds } from '../lib/cpu'
import { fmt, publishCheck } from '../lib/delivery-checks'
import { backendsOf, startDeployment, type Backend, type Deployment } from '../lib/deployment'
import { runLoadgen } from '../lib/loadgen-client'
import {
  historyCheck,
  messageBody,
  noErrors,
  probe,
  PUBLISH_CHANNELS,
  publishChannel,
  SHORT_RING_SIZE,
} from '../lib/publish-checks'
import { startPublisher } from '../lib/publisher-client'
import type { Chart, Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import { BENCH_KEY, startBaseline, type Target } from '../lib/targets'
import { Timeline } from '../lib/timeline'

const TARGET_RATIO = 2
const MESSAGE_BYTES = 100
/** Messages/s in all of the paced comparison with the bare server (`--rate`). */
const PACED_RATE = 40_000

/** `bare`: the realtime publisher against the bare WebSocket server of bench/baseline-server.ts. */
type Variant = 'http' | 'realtime' | 'bare'

interface Run {
  backend: Backend
  variant: Variant
  round: number
  /** Messages/s in all the publisher was paced at; undefined: as fast as acknowledged. */
  paced?: number
  messagesPerSec: number
  /** CPU of the publishing gateway node (node A) over the measured window, % of one core. */
  gatewayCpu: number
  generatorCpu: number
  /** Messages per CPU-second of the publishing node. */
  perCoreSecond: number
  /** CPU µs per message of the publishing node and of redis-server (Redis runs), over the measured window. */
  nodeUsPerMessage: number
  /** Of it, the node's main thread and its other threads (realtime runs). */
  mainUsPerMessage?: number
  otherThreadsUsPerMessage?: number
  /**
   * The node's minor page faults per 1,000 messages: a fresh node takes one for each page its
   * rings take for the first time while they fill (bench/page-cost.ts prices one). Realtime runs.
   */
  faultsPerThousand?: number
  redisUsPerMessage?: number
}

const VARIANT_NAMES: Record<Variant, string> = { http: 'HTTP', realtime: 'realtime', bare: 'bare WebSocket server' }

const label = (v: Variant, backend: Backend, round: number, paced?: number) =>
  (v === 'bare' ? `${VARIANT_NAMES.bare} publish` : `${VARIANT_NAMES[v]} publish, ${backend}`) +
  (paced ? ` at ${fmt(paced)}/s` : '') +
  `, round ${round}`

export async function realtimePublishScenario(o: RunOptions): Promise<ScenarioResult> {
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const pacedRate = o.short ? 0 : (o.rate ?? PACED_RATE)
  const runs: Run[] = []
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []
  const body = messageBody(MESSAGE_BYTES)

  for (const backend of backendsOf(o))
    for (const { round, variant } of alternate<Variant>('http', 'realtime', rounds)) {
      const name = label(variant, backend, round)
      console.log(
        `${name}: ${o.connections} connections × ${o.pipeline} in flight, ${o.warmup} s warm-up + ${o.seconds} s …`,
      )
      const d = await startDeployment(backend, {
        logDir: o.outDir,
        name: `gateway-${variant}-${backend}-r${round}`,
        env: o.short ? { RING_SIZE: String(SHORT_RING_SIZE) } : {},
        cpuProfile: o.profile,
      })
      try {
        const auth = `Basic ${Buffer.from(d.key).toString('base64')}`
        await probe(d.publishTo.base, auth, body)
        const r =
          variant === 'http'
            ? await httpRun(o, d, name, body)
            : await realtimeRun(o, d.publishTo, name, 0, d.redis?.pid)
        runs.push({ backend, variant, round, ...r.run })
        checks.push(...r.checks)
        series.push({ name, points: r.points, dashed: variant === 'http' })
        if (r.run.generatorCpu > 90)
          notes.push(
            `${name}: the load generator used ${r.run.generatorCpu.toFixed(0)}% of a core: it may have been the bottleneck`,
          )
        if (o.short)
          checks.push(
            await historyCheck(
              d.subscribeTo.base,
              auth,
              r.acknowledged,
              `, ${name}${backend === 'redis' ? ' (read on node B)' : ''}`,
              SHORT_RING_SIZE,
            ),
          )
      } finally {
        await d.stop()
      }
      // the ceiling, in the same rounds: what Bun's WebSocket server with msgpackr alone takes
      if (variant === 'realtime' && backend === 'memory' && !o.short) {
        const run = async (v: 'realtime' | 'bare', paced?: number) => {
          const r = await barePairRun(o, v, round, paced)
          runs.push({ backend, variant: v, round, paced, ...r.run })
          checks.push(...r.checks)
          if (!paced) series.push({ name: label(v, backend, round), points: r.points, dashed: true })
        }
        await run('bare')
        // the same work per wake-up for both: the same rate, the two alternated across rounds
        if (pacedRate)
          for (const v of round % 2 ? (['realtime', 'bare'] as const) : (['bare', 'realtime'] as const))
            await run(v, pacedRate)
      }
    }

  const headlines: Headline[] = []
  const ratios: Record<string, number> = {}
  for (const backend of backendsOf(o)) {
    const of = (v: Variant, k: 'messagesPerSec' | 'perCoreSecond' | 'nodeUsPerMessage', paced?: number) =>
      runs.filter((r) => r.backend === backend && r.variant === v && r.paced === paced).map((r) => r[k])
    const [http, rt] = [of('http', 'messagesPerSec'), of('realtime', 'messagesPerSec')]
    if (!http.length || !rt.length) continue
    const ratio = mean(rt) / mean(http)
    const perCore = mean(of('realtime', 'perCoreSecond')) / mean(of('http', 'perCoreSecond'))
    headlines.push(
      { name: `realtime publish messages/s (${backend}; ${range(rt, fmt)})`, value: mean(rt), unit: '/s' },
      { name: `HTTP publish messages/s (${backend}; ${range(http, fmt)})`, value: mean(http), unit: '/s' },
      {
        name: `realtime ÷ HTTP publish rate (${backend})`,
        value: ratio,
        unit: '',
        target: `≥ ${TARGET_RATIO}`,
        met: ratio >= TARGET_RATIO,
      },
      {
        name: `realtime ÷ HTTP messages per core-second of the publishing node (${backend})`,
        value: perCore,
        unit: '',
      },
    )
    ratios[`realtime ÷ HTTP publish messages/s (${backend})`] = ratio
    const bare = of('bare', 'perCoreSecond')
    if (bare.length) {
      const share = mean(of('realtime', 'perCoreSecond')) / mean(bare)
      headlines.push({
        name: `realtime gateway ÷ bare WebSocket server, messages per core-second (${backend}; bare ${range(bare, fmt)})`,
        value: share,
        unit: '',
      })
      ratios[`realtime gateway ÷ bare WebSocket server per core-second (${backend})`] = share
    }
    const [pacedGateway, pacedBare] = [
      of('realtime', 'nodeUsPerMessage', pacedRate),
      of('bare', 'nodeUsPerMessage', pacedRate),
    ]
    if (pacedRate && pacedGateway.length && pacedBare.length) {
      const share = mean(pacedBare) / mean(pacedGateway)
      const us = (v: number) => `${v.toFixed(1)} µs`
      headlines.push({
        name: `realtime gateway ÷ bare WebSocket server at the same ${fmt(pacedRate)} messages/s, bare CPU per message ÷ the gateway's (${backend}; gateway ${range(pacedGateway, us)}, bare ${range(pacedBare, us)})`,
        value: share,
        unit: '',
      })
      ratios[`realtime gateway ÷ bare WebSocket server at the same rate (${backend})`] = share
    }
  }
  const charts: Chart[] = [
    {
      file: 'throughput.svg',
      title: 'Messages acknowledged per second over each run (HTTP and the bare server dashed)',
      kind: 'line',
      xLabel: 'seconds',
      yLabel: 'messages/s',
      series,
    },
  ]
  return {
    scenario: 'realtime-publish',
    description:
      `Publishing over the realtime protocol (WebSocket, msgpack, one MESSAGE protocol message per ${MESSAGE_BYTES}-byte message, answered by ACK) ` +
      `compared with HTTP publishing (POST, JSON, answered 201) in the same run, to ${PUBLISH_CHANNELS} channels; a fresh gateway per run, ` +
      'the two alternated. Core-seconds are those of the gateway node that takes the publishes.' +
      (o.redis ? ' Repeated on Redis (two gateway nodes, publishes to node A).' : ''),
    load: `${o.connections} connections × ${o.pipeline} publishes in flight; ${rounds} round(s) of each, ${o.warmup} s warm-up + ${o.seconds} s measured per run`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: [
          'round',
          'backend',
          'publish over',
          'paced at',
          'messages/s',
          'publishing node CPU',
          'messages per core-second',
          'generator CPU',
          'node CPU µs per message',
          'of it main thread / other threads',
          'node page faults per 1,000 messages',
          'redis-server CPU µs per message',
        ],
        rows: runs.map((r) => [
          String(r.round),
          r.backend,
          VARIANT_NAMES[r.variant],
          r.paced ? `${fmt(r.paced)}/s` : 'as acknowledged',
          fmt(r.messagesPerSec),
          `${r.gatewayCpu.toFixed(0)}%`,
          fmt(r.perCoreSecond),
          `${r.generatorCpu.toFixed(0)}%`,
          r.nodeUsPerMessage.toFixed(1),
          r.mainUsPerMessage === undefined
            ? ''
            : `${r.mainUsPerMessage.toFixed(1)} / ${(r.otherThreadsUsPerMessage ?? NaN).toFixed(1)}`,
          r.faultsPerThousand === undefined ? '' : r.faultsPerThousand.toFixed(0),
          r.redisUsPerMessage === undefined ? '' : r.redisUsPerMessage.toFixed(1),
        ]),
      },
    ],
    headlines,
    ratios,
    checks,
    notes,
    charts,
    details: { rounds, runs },
  }
}

interface VariantResult {
  run: Omit<Run, 'backend' | 'variant' | 'round'>
  checks: Check[]
  points: Array<[number, number]>
  acknowledged: number
}

/** HTTP: the publish scenario's load generator, pipelined POSTs, every one answered 201. */
async function httpRun(o: RunOptions, d: Deployment, name: string, body: string): Promise<VariantResult> {
  const t = d.publishTo
  const r = await runLoadgen({
    seconds: o.seconds,
    warmup: o.warmup,
    connections: o.connections,
    pipeline: o.pipeline,
    url: `${t.base}/channels/${publishChannel('{n}')}/messages`,
    variants: PUBLISH_CHANNELS,
    method: 'POST',
    body,
    expectStatus: 201,
    headers: [`Authorization: Basic ${Buffer.from(t.key).toString('base64')}`, 'Content-Type: application/json'],
    serverPid: t.pid,
    redisPid: d.redis?.pid,
    label: name,
  })
  const gatewayCpu = r.serverCpuPercent ?? NaN
  return {
    run: {
      messagesPerSec: r.rps,
      gatewayCpu,
      generatorCpu: r.cpuPercent,
      perCoreSecond: r.rps / (gatewayCpu / 100),
      nodeUsPerMessage: (gatewayCpu / 100 / r.rps) * 1e6,
      redisUsPerMessage: r.redisCpuPercent === undefined ? undefined : (r.redisCpuPercent / 100 / r.rps) * 1e6,
    },
    checks: [noErrors(`${name}: every publish answered 201`, r)],
    points: r.timeline,
    acknowledged: r.statuses['201'] ?? 0,
  }
}

/**
 * A realtime run beside the gateway's of the same round, on the embedded backend: the bare
 * server as fast as it acknowledges, or either of the two paced at `paced` messages/s in all (a
 * fresh gateway for the gateway's).
 */
async function barePairRun(o: RunOptions, v: 'realtime' | 'bare', round: number, paced?: number) {
  const name = label(v, 'memory', round, paced)
  console.log(`${name} …`)
  if (v === 'bare') {
    const bare = await startBaseline(o.outDir)
    try {
      return await realtimeRun(o, { ...bare, key: BENCH_KEY }, name, paced)
    } finally {
      await bare.stop()
    }
  }
  const d = await startDeployment('memory', {
    logDir: o.outDir,
    name: `gateway-paced-r${round}`,
    cpuProfile: o.profile,
  })
  try {
    return await realtimeRun(o, d.publishTo, name, paced)
  } finally {
    await d.stop()
  }
}

/**
 * Realtime: the sequence publisher over realtime connections, `pipeline` lanes (one publish in
 * flight each) per connection, as fast as acknowledged or `paced` messages/s in all.
 */
export async function realtimeRun(
  o: RunOptions,
  t: Target & { key: string },
  name: string,
  paced = 0,
  redisPid?: number,
): Promise<VariantResult> {
  const lanes = o.connections * o.pipeline
  const pub = await startPublisher({
    transport: 'realtime',
    base: t.base,
    logDir: o.outDir,
    name: `rt-publisher-${name.replace(/[^\w]+/g, '-')}`,
    lanes: Array.from({ length: lanes }, (_, k) => ({ channel: publishChannel(k % PUBLISH_CHANNELS), key: t.key })),
    connections: o.connections,
    pipeline: o.pipeline,
    rate: paced / lanes,
    stamps: false,
    bytes: MESSAGE_BYTES,
    cpuProfile: o.profile,
  })
  const timeline = new Timeline(name, async () => ({ counters: { messages: (await pub.counts()).messages } })).start()
  await Bun.sleep(o.warmup * 1000)
  const sample = async () => ({
    t: performance.now(),
    messages: (await pub.counts()).messages,
    gateway: cpuSeconds(t.pid) ?? 0,
    threads: threadCpuSeconds(t.pid),
    faults: minorFaults(t.pid),
    redis: redisPid ? (cpuSeconds(redisPid) ?? NaN) : NaN,
    generator: pub.cpuSeconds(),
  })
  const a = await sample()
  await Bun.sleep(o.seconds * 1000)
  const b = await sample()
  const result = await pub.stop()
  const points = (await timeline.stop()).find((s) => s.name === 'messages/s')?.points ?? []
  const dt = (b.t - a.t) / 1000
  const messagesPerSec = (b.messages - a.messages) / dt
  const gatewayCpu = ((b.gateway - a.gateway) / dt) * 100
  const perMessage = (s0: number, s1: number) => ((s1 - s0) / (b.messages - a.messages)) * 1e6
  return {
    run: {
      messagesPerSec,
      gatewayCpu,
      generatorCpu: ((b.generator - a.generator) / dt) * 100,
      perCoreSecond: messagesPerSec / (gatewayCpu / 100),
      nodeUsPerMessage: perMessage(a.gateway, b.gateway),
      mainUsPerMessage: a.threads && b.threads ? perMessage(a.threads.main, b.threads.main) : undefined,
      otherThreadsUsPerMessage: a.threads && b.threads ? perMessage(a.threads.others, b.threads.others) : undefined,
      faultsPerThousand: ((b.faults - a.faults) / (b.messages - a.messages)) * 1000,
      redisUsPerMessage: redisPid ? perMessage(a.redis, b.redis) : undefined,
    },
    checks: [publishCheck(name, result)],
    points,
    acknowledged: result.messages,
  }
}
