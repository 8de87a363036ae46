/** Parent side of bench/publisher.ts: one publisher process with its lanes and connections (HTTP or realtime). */
import { resolve } from 'node:path'
import type { Lane, PublishArgs, PublishCounts, PublishResult } from '../publisher'
import { startAgent } from './agent'
import { cpuSeconds } from './cpu'

export type { Lane, PublishCounts, PublishResult }
const SCRIPT = resolve(import.meta.dir, '../publisher.ts')

export interface PublisherSpec extends Omit<PublishArgs, 'host' | 'port' | 'batch' | 'transport'> {
  /** HTTP publishes (default) or realtime MESSAGE protocol messages. */
  transport?: PublishArgs['transport']
  /** http://127.0.0.1:<port> of the gateway. */
  base: string
  /** Messages per publish (default 1). */
  batch?: number
  logDir: string
  cpuProfile?: boolean
  /** Log (and profile) name of the process; default publisher. */
  name?: string
}

export interface Publisher {
  pid: number
  counts(): Promise<PublishCounts>
  /** Flow control (rate 0): up to `messages` messages may have been written in all; returns how many were before. */
  allow(messages: number): Promise<number>
  /** Forgets the publish latencies recorded so far (warm-up). */
  reset(): Promise<void>
  /** Stops publishing, waits up to `drainMs` for the answers in flight, and reports. */
  stop(drainMs?: number): Promise<PublishResult>
  cpuSeconds(): number
}

/** `n` lanes all publishing to one channel with one key (fanout, latency). */
export const sameChannel = (n: number, channel: string, key: string): Lane[] =>
  Array.from({ length: n }, () => ({ channel, key }))

/** Starts the publisher process; publishing begins as soon as its connections are open. */
export async function startPublisher(s: PublisherSpec): Promise<Publisher> {
  const { base, logDir, cpuProfile, name, ...args } = s
  const url = new URL(base)
  const agent = startAgent(name ?? 'publisher', SCRIPT, { logDir, cpuProfile })
  try {
    await agent.call(
      'start',
      {
        ...args,
        transport: args.transport ?? 'http',
        batch: args.batch ?? 1,
        host: url.hostname,
        port: Number(url.port),
      } satisfies PublishArgs,
      30_000,
    )
  } catch (e) {
    await agent.stop()
    throw e
  }
  return {
    pid: agent.pid,
    counts: () => agent.call<PublishCounts>('counts'),
    allow: (messages) => agent.call<number>('allow', { messages }),
    reset: async () => {
      await agent.call('reset')
    },
    stop: async (drainMs = 5000) => {
      try {
        return await agent.call<PublishResult>('stop', { drainMs }, drainMs + 30_000)
      } finally {
        await agent.stop()
      }
    },
    cpuSeconds: () => cpuSeconds(agent.pid) ?? 0,
  }
}
