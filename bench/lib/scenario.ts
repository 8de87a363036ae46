import type { LoadgenResult } from './loadgen-client'

/** Options every scenario receives from bench/run.ts. */
export interface RunOptions {
  /** Measured seconds per target, after `warmup` unmeasured seconds. */
  seconds: number
  warmup: number
  connections: number
  pipeline: number
  /** Event-stream scenarios: subscribers (streams) to open; each scenario has its own default. */
  subscribers?: number
  /** fanout: publishing connections, one run per entry (default 1 and 20). */
  publishers?: number[]
  /** latency: publishes per second. */
  rate?: number
  /** The gateway's SSE_BUFFER_BYTES (slow-consumer budget per stream); unset = the gateway's default. */
  sseBufferBytes?: number
  /** Gateways write a CPU profile into outDir (`bun --cpu-prof`). */
  profile?: boolean
  /** Also run against Redis (private redis-server, two gateway nodes), after the memory run with the same parameters. */
  redis: boolean
  /** publish: also measure each backend with RATE_LIMITS=on (nothing refused), for the limiter's cost. */
  rateLimits: boolean
  /** channels: channels to publish to (default 10,000). */
  channels?: number
  /** accounts: accounts publishing at their limit (default 50). */
  accounts?: number
  /** accounts: messages per publish (default 10). */
  batch?: number
  /** fanout: most messages the publishers may be ahead of the slowest subscriber (flow control); 0 = unbounded. */
  window?: number
  /** Rounds of each variant, alternated: realtime-* (lib/alternation.ts), publish's comparison (default 3; 1 in short mode). */
  rounds?: number
  /** presence: members entering the channel (default 1,000). */
  members?: number
  /** presence: new attachers, one after the other, each timed until its SYNC is complete (default 20). */
  attachers?: number
  /** publish: load generator of the comparison, 'wrk' (default when installed) or 'bun'. */
  loadgen?: string
  /** publish: also compare clusters of this many gateway processes sharing one port on a Redis backend, one per entry. */
  processes?: number[]
  /** scale: Redis Cluster masters of each run. */
  shards?: number[]
  /** CI smoke mode: a few seconds; only correctness is asserted, never speed. */
  short: boolean
  /** bench/results/<timestamp>/: logs of the children, results.json, summary.md. */
  outDir: string
}

/** One load run against one target. */
export interface Measurement {
  target: string
  /** What one request is, e.g. "GET / (hello world)". */
  request: string
  load: LoadgenResult
}

export interface Check {
  name: string
  ok: boolean
  detail: string
}

/** A scenario's own results table (for runs that are not loadgen runs). */
export interface Table {
  title: string
  head: string[]
  rows: string[][]
}

/** A headline number and the target it is reported against (never asserted). */
export interface Headline {
  name: string
  value: number
  unit: string
  target?: string
  met?: boolean
}

/** One line of a chart: [x, y] points, e.g. [seconds, deliveries/s]. */
export interface Series {
  name: string
  points: Array<[number, number]>
  dashed?: boolean
}

/** A chart written as <file> next to summary.md and linked from it (svg-chart.ts). */
export type Chart = { file: string; title: string } & (
  | { kind: 'line'; xLabel: string; yLabel: string; series: Series[] }
  | { kind: 'bar'; yLabel: string; categories: string[]; groups: Array<{ name: string; values: number[] }> }
)

export interface ScenarioResult {
  scenario: string
  description: string
  /** One line describing the load in summary.md (default: the loadgen connections × pipeline). */
  load?: string
  /** Loadgen runs (may be empty). */
  measurements: Measurement[]
  tables?: Table[]
  headlines?: Headline[]
  /** Raw per-run numbers, written to results.json only. */
  details?: unknown
  /** Headline ratios, e.g. { 'publish / baseline': 0.25 }. */
  ratios: Record<string, number>
  checks: Check[]
  notes?: string[]
  charts?: Chart[]
}

export type Scenario = (o: RunOptions) => Promise<ScenarioResult>
