/**
 * Benchmark entry point: `bun bench/run.ts <scenario> [flags]`.
 *
 *   --seconds N       measured seconds per target (default 10, accounts 30; 3 with --short)
 *   --warmup N        unmeasured seconds before that (default 2; 0.5 with --short)
 *   --connections N   concurrent keep-alive connections (default 50)
 *   --pipeline N      requests in flight per connection (default 4; 1 with --redis)
 *   --short           CI smoke run: a few seconds, asserts correctness only, never speed
 *   --redis           publish / fanout / latency / channels: run again against Redis (own redis-server, two
 *                     gateway nodes: publish to node A, subscribe on node B) after the memory run, same parameters
 *   --rate-limits     publish: measure each backend again with RATE_LIMITS=on (nothing refused): the limiter's cost
 *   --subscribers N   fanout / connections / latency: event streams to open (default 1000 / 50,000 / 5);
 *                     channels: subscribers per channel (default 2)
 *   --publishers L    fanout: publishing connections, one run per comma-separated entry (default 1,20)
 *   --rate N          latency: publishes per second (default 2000); accounts: messages/s per account (default its limit, 2000)
 *   --channels N      channels: channels published to (default 10,000; 100 per event stream)
 *   --accounts N      accounts: accounts publishing at their limit (default 50)
 *   --batch N         accounts: messages per publish (default 10)
 *   --window N        fanout: publishers stay at most N messages ahead of the slowest subscriber (default 500; 0 = unbounded)
 *   --sse-buffer N    the gateway's SSE_BUFFER_BYTES (slow-consumer budget per stream)
 *   --profile         gateway, subscriber and publisher processes write CPU profiles (bun --cpu-prof: .cpuprofile + .md)
 *                     into the results; `bun bench/cpu-profile-top.ts <file.cpuprofile>` lists the top functions
 *
 * Scenarios: publish (REST publish vs Bun.serve hello world), fanout (one channel to N SSE
 * subscribers), connections (K idle SSE streams: memory per connection), latency (publish-to-
 * delivery percentiles at a fixed rate), channels (many channels × few multiplexed subscribers),
 * accounts (K accounts at their rate limit, then at 110% of it, RATE_LIMITS=on).
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
import { fanoutScenario } from './scenarios/fanout'
import { latencyScenario } from './scenarios/latency'
import { publishScenario } from './scenarios/publish'

const SCENARIOS: Record<string, Scenario> = {
  publish: publishScenario,
  fanout: fanoutScenario,
  connections: connectionsScenario,
  latency: latencyScenario,
  channels: channelsScenario,
  accounts: accountsScenario,
}

async function main(): Promise<number> {
  const f = parseFlags(process.argv.slice(2), {
    seconds: 'number', warmup: 'number', connections: 'number', pipeline: 'number', short: 'boolean', help: 'boolean',
    subscribers: 'number', publishers: 'string', rate: 'number', 'sse-buffer': 'number', profile: 'boolean',
    redis: 'boolean', 'rate-limits': 'boolean', channels: 'number', accounts: 'number', batch: 'number', window: 'number',
  })
  const name = f._[0]
  const scenario = name ? SCENARIOS[name] : undefined
  if (f.help || !scenario) {
    console.log(`usage: bun bench/run.ts <${Object.keys(SCENARIOS).join('|')}> [--seconds N] [--warmup N] [--connections N] [--pipeline N] ` +
      '[--subscribers N] [--publishers 1,20] [--rate N] [--channels N] [--accounts N] [--batch N] [--window N] [--sse-buffer BYTES] [--redis] [--rate-limits] [--profile] [--short]')
    return f.help ? 0 : 2
  }
  const short = f.short ?? false
  const redis = f.redis ?? false
  if (redis && (f.pipeline ?? 1) > 1) {
    console.error('--redis needs --pipeline 1: Bun closes a connection that pipelines requests while an async (Redis) response is pending')
    return 2
  }
  if (redis && name === 'connections') console.log('note: connections measures one node\'s memory; --redis is ignored')
  const startedAt = new Date().toISOString()
  const outDir = join(import.meta.dir, 'results', `${startedAt.replace(/[:.]/g, '-')}-${name}`)
  mkdirSync(outDir, { recursive: true })
  const o: RunOptions = {
    seconds: f.seconds ?? (short ? 3 : name === 'accounts' ? 30 : 10),
    warmup: f.warmup ?? (short ? 0.5 : 2),
    connections: Math.max(1, Math.floor(f.connections ?? 50)),
    pipeline: Math.max(1, Math.floor(f.pipeline ?? (redis ? 1 : 4))),
    short,
    outDir,
    subscribers: f.subscribers === undefined ? undefined : Math.max(1, Math.floor(f.subscribers)),
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
  }

  installCleanup()
  try {
    const result = await scenario(o)
    printTable(result)
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
  if (!list.length || list.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${flag} must be positive integers separated by commas, got ${raw}`)
  return list
}

main().then((code) => process.exit(code), async (e) => {
  console.error(`\nBENCHMARK ERROR: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
  await stopAll()
  process.exit(1)
})
