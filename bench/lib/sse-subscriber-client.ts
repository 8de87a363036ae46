/**
 * Parent side of the subscriber processes: bench/sse-subscriber.ts (event streams, the default)
 * or bench/realtime-subscriber.ts (`transport: 'realtime'`: realtime connections, each attached
 * to its channels). One or more processes (shards) hold `count` subscribers on one channel of a
 * gateway, or on the channels of `groups`; results are summed over the shards.
 */
import { resolve } from 'node:path'
import type { RealtimeOpenArgs } from '../realtime-subscriber'
import type { OpenArgs } from '../sse-subscriber'
import type { OpenResult, SettleResult, Snapshot } from './delivery-ledger'
import { startAgent, type Agent } from './agent'
import { cpuSeconds } from './cpu'

export type Transport = 'sse' | 'realtime'
const SCRIPTS: Record<Transport, string> = {
  sse: resolve(import.meta.dir, '../sse-subscriber.ts'),
  realtime: resolve(import.meta.dir, '../realtime-subscriber.ts'),
}

export interface SubscribersSpec {
  /** Event streams (default) or realtime connections. */
  transport?: Transport
  /** http://127.0.0.1:<port> of the gateway. */
  base: string
  channel: string
  key: string
  count: number
  /** Publisher lanes (ids 0 .. publishers-1 in the data). */
  publishers: number
  /**
   * Streams on different channels: stream i opens group i % groups.length (several channels on one
   * stream, `channels=a,b,c`) with its key and must receive exactly that group's lanes. Streams of
   * the same group are compared for arrival order only within one subscriber process.
   */
  groups?: Array<{ channels: string[]; key: string; lanes: number[] }>
  latency?: boolean
  /** Streams per subscriber process (default: all in one). */
  perProcess?: number
  /** Loopback source addresses, each used for at most this many connections (default: no explicit source; event streams only). */
  perSourceAddress?: number
  concurrency?: number
  openTimeoutMs?: number
  logDir: string
  /** Open-file limit asked for each subscriber process. */
  fdLimit?: number
  cpuProfile?: boolean
  /** Log (and profile) name of the process(es); default subscriber. */
  name?: string
}

export interface Subscribers {
  pids: number[]
  opened: OpenResult
  snapshot(): Promise<Snapshot>
  settle(acked: number[], timeoutMs: number): Promise<SettleResult>
  /** Latency mode: drop the samples recorded so far (warm-up). */
  resetLatencies(): Promise<void>
  /** CPU seconds used so far by all subscriber processes. */
  cpuSeconds(): number
  /**
   * Stops treating closed streams as lost, without closing them: stop the gateway next and the
   * TIME_WAIT state stays on its side, not on the (reused) client source addresses.
   */
  detach(): Promise<void>
  close(): Promise<void>
}

export const ssePath = (channel: string, key: string) =>
  `/sse?v=1.2&channels=${encodeURIComponent(channel)}&key=${encodeURIComponent(key)}`

/**
 * Loopback source addresses, enough for `count` connections at `per` each: 127.A.B.2, .3, … with
 * A.B random per run, so ports left in TIME_WAIT by an earlier run on the same addresses do not
 * slow down or exhaust the kernel's search for a free port (bind before connect).
 */
export function loopbackSources(count: number, per: number): string[] {
  const a = 1 + Math.floor(Math.random() * 254)
  const b = Math.floor(Math.random() * 256)
  return Array.from(
    { length: Math.ceil(count / per) },
    (_, i) => `127.${a}.${(b + Math.floor(i / 250)) % 256}.${2 + (i % 250)}`,
  )
}

/** Starts the subscriber processes and opens every stream (resolves when all answered or failed). */
export async function startSubscribers(s: SubscribersSpec): Promise<Subscribers> {
  const url = new URL(s.base)
  const transport = s.transport ?? 'sse'
  if (transport === 'realtime' && s.perSourceAddress)
    throw new Error("realtime subscribers cannot choose a source address (Bun's WebSocket client has no localAddress)")
  const perProcess = Math.max(1, s.perProcess ?? s.count)
  const shards = Math.max(1, Math.ceil(s.count / perProcess))
  const name = s.name ?? (transport === 'sse' ? 'subscriber' : 'rt-subscriber')
  const agents: Agent[] = Array.from({ length: shards }, (_, i) =>
    startAgent(shards === 1 ? name : `${name}-${i}`, SCRIPTS[transport], {
      logDir: s.logDir,
      fdLimit: s.fdLimit,
      cpuProfile: s.cpuProfile,
    }),
  )
  const sources = s.perSourceAddress ? loopbackSources(s.count, s.perSourceAddress) : []
  const timeoutMs = s.openTimeoutMs ?? 60_000
  const shared = {
    concurrency: s.concurrency ?? 256,
    publishers: s.publishers,
    latency: s.latency ?? false,
    timeoutMs,
  }
  const allLanes = Array.from({ length: s.publishers }, (_, p) => p)
  try {
    const results = await Promise.all(
      agents.map((agent, i) => {
        const count = Math.min(perProcess, s.count - i * perProcess)
        const first = i * perProcess
        if (transport === 'realtime') {
          const groups = s.groups ?? [{ channels: [s.channel], key: s.key, lanes: allLanes }]
          const args: RealtimeOpenArgs = { ...shared, base: s.base, count, first, groups }
          return agent.call<OpenResult>('open', args, timeoutMs + 10_000)
        }
        // each shard takes its own slice of source addresses' capacity by starting the round robin elsewhere
        const shardSources = sources.length ? sources.map((_, k) => sources[(k + i) % sources.length]!) : []
        const args: OpenArgs = {
          ...shared,
          host: url.hostname,
          port: Number(url.port),
          path: ssePath(s.channel, s.key),
          count,
          sources: shardSources,
          first,
          groups: s.groups?.map((g) => ({ path: ssePath(g.channels.join(','), g.key), lanes: g.lanes })),
        }
        return agent.call<OpenResult>('open', args, timeoutMs + 10_000)
      }),
    )
    const opened: OpenResult = {
      established: sum(results.map((r) => r.established)),
      failed: sum(results.map((r) => r.failed)),
      ms: Math.max(...results.map((r) => r.ms)),
      errorSamples: results.flatMap((r) => r.errorSamples).slice(0, 8),
    }
    return {
      pids: agents.map((a) => a.pid),
      opened,
      snapshot: async () => merge(await Promise.all(agents.map((a) => a.call<Snapshot>('snapshot')))),
      settle: async (acked, timeoutMs) => {
        const parts = await Promise.all(
          agents.map((a) => a.call<SettleResult>('settle', { acked, timeoutMs }, timeoutMs + 30_000)),
        )
        return {
          ...merge(parts),
          complete: sum(parts.map((p) => p.complete)),
          missing: sum(parts.map((p) => p.missing)),
          orders: Math.max(...parts.map((p) => p.orders)),
          ms: Math.max(...parts.map((p) => p.ms)),
          latencies: parts.flatMap((p) => p.latencies ?? []),
        }
      },
      resetLatencies: async () => {
        await Promise.all(agents.map((a) => a.call('resetLatencies')))
      },
      cpuSeconds: () => sum(agents.map((a) => cpuSeconds(a.pid) ?? 0)),
      detach: async () => {
        await Promise.all(agents.map((a) => a.call('close', { end: false }).catch(() => 0)))
      },
      close: async () => {
        await Promise.all(agents.map((a) => a.call('close').catch(() => 0)))
        await Promise.all(agents.map((a) => a.stop()))
      },
    }
  } catch (e) {
    await Promise.all(agents.map((a) => a.stop()))
    throw e
  }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)

function merge(parts: Snapshot[]): Snapshot {
  const total = (k: keyof Omit<Snapshot, 'errorSamples'>) => sum(parts.map((p) => p[k]))
  return {
    received: total('received'),
    minReceived: Math.min(...parts.map((p) => p.minReceived)),
    open: total('open'),
    lost: total('lost'),
    ahead: total('ahead'),
    behind: total('behind'),
    foreign: total('foreign'),
    protocolErrors: total('protocolErrors'),
    errorSamples: parts.flatMap((p) => p.errorSamples).slice(0, 8),
  }
}
