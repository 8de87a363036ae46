/**
 * Benchmark entry point: `bun bench/run.ts <scenario> [flags]`.
 *
 *   --seconds N       measured seconds per target (default 10, publish 5, accounts 30, realtime-latency 15; 3 with --short)
 *   --warmup N        unmeasured seconds before that (default 2; 0.5 with --short)
 *   --connections N   concurrent keep-alive connections (default 50); realtime-publish: connections of each kind
 *   --pipeline N      requests in flight per connection (default 4; 1 with --redis); realtime-publish: publishes in
 *                     flight per connection, HTTP and realtime alike
 *   --short           CI smoke run: a few seconds, asserts correctness only, never speed
 *   --redis           publish / fanout / latency / channels / realtime-fanout / realtime-publish / presence: run again
 *                     against Redis (own redis-server, two gateway nodes: publish to node A, subscribe on node B)
 *                     after the memory run, same parameters
 *   --rate-limits     publish: measure each backend again with RATE_LIMITS=on (nothing refused): the limiter's cost
 *                     scale: the gateway runs with RATE_LIMITS=on (nothing refused)
 *   --rounds N        publish: rounds of the interleaved comparison (default 3; 1 with --short)
 *   --loadgen G       publish: generator of the comparison, wrk (default when installed) or bun
 *   --processes L     publish: also compare N gateway processes sharing one port on a Redis backend, for each N
 *                     of the comma-separated list (e.g. 1,2); scale: the gateway processes (and nchan workers) of
 *                     each run (default 1,2)
 *   --shards L        scale: the Redis Cluster masters of each run (default 1,2)
 *   --subscribers N   fanout / connections / latency: event streams to open (default 1000 / 50,000 / 5);
 *                     channels: subscribers per channel (default 2); realtime-fanout: subscribers of each kind
 *                     (default 1000); conflation: realtime subscribers (default 1000); realtime-connections:
 *                     connections of each kind (default 10,000); scale:
 *                     event streams held on the 100 channels during each gateway and nchan run (default 100; 0: none,
 *                     and no `bare text() + delivery` run: what a publish costs before any delivery)
 *   --publishers L    fanout / realtime-fanout: publishing connections, one run per comma-separated entry
 *                     (default 1,20 / 20)
 *   --rate N          latency: publishes per second (default 2000); accounts / realtime-latency: messages/s per
 *                     account (default its limit, 2000); append-rollup: appends/s per stream (default 150);
 *                     conflation: messages/s on the channel (default 400: 4 keys × 10 per 100 ms interval); realtime-publish: messages/s in all at which the gateway and
 *                     the bare WebSocket server are also run, paced, each round (default 40,000; 0: not run)
 *   --channels N      channels: channels published to (default 10,000; 100 per event stream); append-rollup:
 *                     streams (default 1,000)
 *   --accounts N      accounts / realtime-latency: accounts publishing at their limit (default 50)
 *   --batch N         accounts / realtime-latency: messages per publish (default 10)
 *   --window N        fanout / realtime-fanout: publishers stay at most N messages ahead of the slowest subscriber
 *                     (default 500; 0 = unbounded)
 *   --rounds N        realtime-*: rounds of the realtime run and its counterpart, alternated A B, B A, …
 *                     (default 2, realtime-connections 1; 1 with --short)
 *   --members N       presence: members entering the channel (default 1,000; 200 with --short)
 *   --attachers N     presence: new attachers timed one after the other (default 20; 3 with --short)
 *   --sse-buffer N    the gateway's SSE_BUFFER_BYTES (slow-consumer budget per stream)
 *   --profile         gateway, subscriber and publisher processes write CPU profiles (bun --cpu-prof: .cpuprofile + .md)
 *                     into the results; `bun bench/cpu-profile-top.ts <file.cpuprofile>` lists the top functions
 *
 * BENCH_GATEWAY_DIR=<checkout> runs that checkout's gateway under this harness (e.g. a worktree of the code
 * before a change, for before/after figures from the same run conditions).
 *
 * Scenarios: publish (REST publish, JSON and msgpack, vs a Bun.serve hello world and bare body-reading routes), fanout (one channel to N SSE
 * subscribers), connections (K idle SSE streams: memory per connection), latency (publish-to-
 * delivery percentiles at a fixed rate), channels (many channels × few multiplexed subscribers),
 * accounts (K accounts at their rate limit, then at 110% of it, RATE_LIMITS=on).
 *
 * Realtime protocol (WebSocket, msgpack; load generators speak it through lib/realtime-client.ts),
 * each against its HTTP / event-stream counterpart in the same run, on a fresh gateway per run:
 * realtime-fanout (one channel to N realtime subscribers vs N event streams: deliveries/s),
 * realtime-publish (MESSAGE protocol messages answered by ACK vs HTTP POSTs: messages/s),
 * realtime-latency (K accounts at their limit, realtime both ways vs HTTP + event streams:
 * delivery percentiles), realtime-connections (K idle attached realtime connections vs K idle
 * event streams: memory per connection). presence (M members enter one channel: enters/s; new
 * attachers timed until their SYNC is complete, its frames and bytes; the official client's get()).
 * delta-fanout (one channel to N realtime subscribers with and without delta=vcdiff, for a JSON state
 * and a growing text: bytes per subscriber and gateway CPU per delivery, and their ratios).
 * append-rollup (S streams, one subscriber each, a message per stream appended to at R appends/s, with the
 * default rollup window and with appendRollupWindow=0: deliveries per stream per second, gateway CPU).
 * conflation (one channel to N realtime subscribers, 4 keys at 10 messages per conflation interval each,
 * with a conflation rule and without: deliveries per subscriber per second, gateway CPU).
 * scale (K gateway processes on one port × an M-master Redis Cluster started by the bench, beside a
 * bare Bun route and nchan with K workers: publishes/s, CPU per publish of the nodes and of redis-server).
 *
 * Prints progress lines and a table, and writes results.json, summary.md and SVG charts to
 * bench/results/<timestamp>-<scenario>/. Exits 1 when a check fails (e.g. a publish not answered
 * 201, a message lost, duplicated or reordered). Child processes are always stopped.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { installCleanup, stopAll } from './lib/processes'
import { printTable, writeResults } from './lib/report'
import type { RunOptions, Scenario } from './lib/scenario'
import { accountsScenario } from './scenarios/accounts'
import { channelsScenario } from './scenarios/channels'
import { connectionsScenario } from './scenarios/connections'
import { deltaFanoutScenario } from './scenarios/delta-fanout'
import { appendRollupScenario } from './scenarios/append-rollup'
import { conflationScenario } from './scenarios/conflation'
import { fanoutScenario } from './scenarios/fanout'
import { latencyScenario } from './scenarios/latency'
import { presenceScenario } from './scenarios/presence'
import { liveObjectsScenario } from './scenarios/liveobjects'
import { publishScenario } from './scenarios/publish'
import { realtimeConnectionsScenario } from './scenarios/realtime-connections'
import { realtimeFanoutScenario } from './scenarios/realtime-fanout'
import { realtimeLatencyScenario } from './scenarios/realtime-latency'
import { realtimePublishScenario } from './scenarios/realtime-publish'
import { scaleScenario } from './scenarios/scale'

const SCENARIOS: Record<string, Scenario> = {
  publish: publishScenario,
  fanout: fanoutScenario,
  connections: connectionsScenario,
  latency: latencyScenario,
  channels: channelsScenario,
  accounts: accountsScenario,
  'realtime-fanout': realtimeFanoutScenario,
  'realtime-publish': realtimePublishScenario,
  'realtime-latency': realtimeLatencyScenario,
  'realtime-connections': realtimeConnectionsScenario,
  presence: presenceScenario,
  liveobjects: liveObjectsScenario,
  scale: scaleScenario,
  'delta-fanout': deltaFanoutScenario,
  'append-rollup': appendRollupScenario,
  conflation: conflationScenario,
}

async function main(): Promise<number> {
  const f = parseFlags(process.argv.slice(2), {
    seconds: 'number',
    warmup: 'number',
    connections: 'number',
    pipeline: 'number',
    short: 'boolean',
    help: 'boolean',
    subscribers: 'number',
    publishers: 'string',
    rate: 'number',
    'sse-buffer': 'number',
    profile: 'boolean',
    redis: 'boolean',
    'rate-limits': 'boolean',
    channels: 'number',
    accounts: 'number',
    batch: 'number',
    window: 'number',
    rounds: 'number',
    members: 'number',
    attachers: 'number',
    loadgen: 'string',
    processes: 'string',
    shards: 'string',
  })
  const name = f._[0]
  const scenario = name ? SCENARIOS[name] : undefined
  if (f.help || !scenario) {
    console.log(
      `usage: bun bench/run.ts <${Object.keys(SCENARIOS).join('|')}> [--seconds N] [--warmup N] [--connections N] [--pipeline N] ` +
        '[--subscribers N] [--publishers 1,20] [--rate N] [--channels N] [--accounts N] [--batch N] [--window N] [--rounds N] [--members N] [--attachers N] [--sse-buffer BYTES] ' +
        '[--redis] [--rate-limits] [--loadgen wrk|bun] [--processes 1,2] [--shards 1,2] [--profile] [--short]',
    )
    return f.help ? 0 : 2
  }
  const short = f.short ?? false
  const redis = f.redis ?? false
  if (redis && (f.pipeline ?? 1) > 1) {
    console.error(
      '--redis needs --pipeline 1: Bun closes a connection that pipelines requests while an async (Redis) response is pending',
    )
    return 2
  }
  if (f.loadgen !== undefined && f.loadgen !== 'wrk' && f.loadgen !== 'bun') {
    console.error(`--loadgen must be wrk or bun, got ${f.loadgen}`)
    return 2
  }
  if (redis && (name === 'connections' || name === 'realtime-connections'))
    console.log(`note: ${name} measures one node's memory; --redis is ignored`)
  const startedAt = new Date().toISOString()
  const outDir = join(import.meta.dir, 'results', `${startedAt.replace(/[:.]/g, '-')}-${name}`)
  mkdirSync(outDir, { recursive: true })
  const o: RunOptions = {
    seconds:
      f.seconds ??
      (short ? 3 : name === 'accounts' ? 30 : name === 'realtime-latency' ? 15 : name === 'publish' ? 5 : 10),
    warmup: f.warmup ?? (short ? 0.5 : 2),
    connections: Math.max(1, Math.floor(f.connections ?? 50)),
    pipeline: Math.max(1, Math.floor(f.pipeline ?? (redis ? 1 : 4))),
    short,
    outDir,
    // scale may hold none (the publishes' cost before any delivery); elsewhere at least one
    subscribers:
      f.subscribers === undefined ? undefined : Math.max(name === 'scale' ? 0 : 1, Math.floor(f.subscribers)),
    publishers: f.publishers === undefined ? undefined : positiveList('--publishers', f.publishers),
    rate: f.rate,
    sseBufferBytes: f['sse-buffer'],
    profile: f.profile ?? false,
    redis,
    rateLimits: f['rate-limits'] ?? false,
    channels: f.channels === undefined ? undefined : Math.max(1, Math.floor(f.channels)),
    accounts: f.accounts === undefined ? undefined : Math.max(1, Math.floor(f.accounts)),
    batch: f.batch === undefined ? undefined : Math.max(1, Math.floor(f.batch)),
    window: f.window === undefined ? undefined : Math.floor(f.window),
    rounds: f.rounds === undefined ? undefined : Math.max(1, Math.floor(f.rounds)),
    members: f.members === undefined ? undefined : Math.max(1, Math.floor(f.members)),
    attachers: f.attachers === undefined ? undefined : Math.max(1, Math.floor(f.attachers)),
    loadgen: f.loadgen,
    processes: f.processes === undefined ? undefined : positiveList('--processes', f.processes),
    shards: f.shards === undefined ? undefined : positiveList('--shards', f.shards),
  }

  installCleanup()
  try {
    const result = await scenario(o)
    printTable(result, o.short)
    await writeResults(result, o, startedAt)
    console.log(`\nresults: ${outDir}/{results.json,summary.md}`)
    const failed = result.checks.filter((c) => !c.ok)
    if (failed.length) {
      console.error(`\nBENCHMARK FAILED: ${failed.map((c) => c.name).join('; ')}`)
      return 1
    }
    return 0
  } finally {
    await stopAll()
  }
}

function positiveList(flag: string, raw: string): number[] {
  const list = raw.split(',').map(Number)
  if (!list.length || list.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`${flag} must be positive integers separated by commas, got ${raw}`)
  return list
}

main().then(
  (code) => process.exit(code),
  async (e) => {
    console.error(`\nBENCHMARK ERROR: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)
    await stopAll()
    process.exit(1)
  },
)
