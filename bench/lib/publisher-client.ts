/** Parent side of bench/publisher.ts: one publisher process with P connections. */
import { resolve } from 'node:path'
import type { PublishArgs, PublishCounts, PublishResult } from '../publisher'
import { startAgent } from './agent'
import { cpuSeconds } from './cpu'

export type { PublishResult }
const SCRIPT = resolve(import.meta.dir, '../publisher.ts')

export interface PublisherSpec extends Omit<PublishArgs, 'host' | 'port'> {
  /** http://127.0.0.1:<port> of the gateway. */
  base: string
  logDir: string
  cpuProfile?: boolean
  /** Log (and profile) name of the process; default publisher. */
  name?: string
}

export interface Publisher {
  pid: number
  counts(): Promise<PublishCounts>
  /** Stops publishing, waits up to `drainMs` for the answers in flight, and reports. */
  stop(drainMs?: number): Promise<PublishResult>
  cpuSeconds(): number
}

/** Starts the publisher process; publishing begins as soon as its connections are open. */
export async function startPublisher(s: PublisherSpec): Promise<Publisher> {
  const { base, logDir, cpuProfile, name, ...args } = s
  const url = new URL(base)
  const agent = startAgent(name ?? 'publisher', SCRIPT, { logDir, cpuProfile })
  try {
    await agent.call('start', { ...args, host: url.hostname, port: Number(url.port) } satisfies PublishArgs, 30_000)
  } catch (e) {
    await agent.stop()
    throw e
  }
  return {
    pid: agent.pid,
    counts: () => agent.call<PublishCounts>('counts'),
    stop: async (drainMs = 5000) => {
      try { return await agent.call<PublishResult>('stop', { drainMs }, drainMs + 10_000) } finally { await agent.stop() }
    },
    cpuSeconds: () => cpuSeconds(agent.pid) ?? 0,
  }
}
