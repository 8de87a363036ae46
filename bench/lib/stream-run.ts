/**
 * One run of the append-rollup and conflation scenarios: a fresh gateway (its namespace rule made
 * through the Control API), subscribers (stream-subscriber.ts) and a publisher
 * (stream-publisher.ts) in processes of their own; the publisher paced for `warmup` + `seconds`,
 * the measured window being the last `seconds`: what the publisher sent, what the subscribers
 * received (frames, messages, bytes) and the gateway's CPU over it; then the publisher stops and
 * the first subscriber's view is read once it has everything (or after 10 s).
 */
import { join } from 'node:path'
import { startAgent } from './agent'
import { startDeployment } from './deployment'
import { BENCH_KEY } from './targets'

const ACCESS_TOKEN = 'bench-access-token-not-for-production'
const APP_ID = BENCH_KEY.slice(0, BENCH_KEY.indexOf('.'))

export interface StreamRunOptions {
  logDir: string
  name: string
  profile?: boolean
  /** The namespace rule of the channels (Control API body, `id` included). */
  rule: Record<string, unknown>
  channels: string[]
  subscribers: number
  /** Transport params of the subscribers' connections. */
  params?: Record<string, string>
  publisherConnections: number
  publish: { mode: 'appends' | 'messages'; rate: number; keys?: number }
  warmup: number
  seconds: number
  /** Whether the first subscriber has everything the publisher reported (`stop`'s answer). */
  complete: (sub: SubscriberStats, pub: PublisherStats) => boolean
}

export interface SubscriberStats {
  frames: number
  messages: number
  bytes: number
  texts: Record<string, string>
  latest: Record<string, string>
  faults: string[]
}

export interface PublisherStats {
  sent: number
  acked: number
  /** Publishes due but not sent (too many unanswered: the gateway was the bound). */
  skipped: number
  text: string
  latest: Record<string, string>
  faults: string[]
}

export interface StreamRun {
  /** Publishes sent in the window, per second. */
  publishedPerSecond: number
  /** Over the window, per second. */
  framesPerSecond: number
  messagesPerSecond: number
  bytesPerSecond: number
  /** Gateway CPU over the window (CPU seconds per second: cores). */
  cpuCores: number
  sub: SubscriberStats
  pub: PublisherStats
  complete: boolean
}

export async function streamRun(o: StreamRunOptions): Promise<StreamRun> {
  const d = await startDeployment('memory', {
    logDir: o.logDir,
    name: `gateway-${o.name}`,
    cpuProfile: o.profile,
    env: { BOOTSTRAP_ACCESS_TOKEN: ACCESS_TOKEN },
  })
  const subs = startAgent(`subscribers-${o.name}`, join(import.meta.dir, '..', 'stream-subscriber.ts'), {
    logDir: o.logDir,
    fdLimit: o.subscribers + 200,
  })
  const pubs = startAgent(`publisher-${o.name}`, join(import.meta.dir, '..', 'stream-publisher.ts'), {
    logDir: o.logDir,
  })
  try {
    const r = await fetch(`${d.publishTo.base}/v1/apps/${APP_ID}/namespaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACCESS_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(o.rule),
    })
    if (r.status !== 201) throw new Error(`namespace rule: ${r.status} ${await r.text()}`)
    const key = d.key
    await subs.call(
      'open',
      { base: d.subscribeTo.base, key, channels: o.channels, count: o.subscribers, params: o.params },
      600_000,
    )
    await pubs.call('open', { base: d.publishTo.base, key, connections: o.publisherConnections })
    await pubs.call('start', { ...o.publish, channels: o.channels }, 120_000)
    await Bun.sleep(o.warmup * 1000)
    const s0 = await subs.call<SubscriberStats>('stats')
    const p0 = await pubs.call<{ sent: number }>('counts')
    const cpu0 = d.cpuSeconds()
    const t0 = performance.now()
    await Bun.sleep(o.seconds * 1000)
    const s1 = await subs.call<SubscriberStats>('stats')
    const p1 = await pubs.call<{ sent: number }>('counts')
    const cpu = d.cpuSeconds() - cpu0
    const secs = (performance.now() - t0) / 1000
    const pub = await pubs.call<PublisherStats>('stop', undefined, 60_000)
    let sub = await subs.call<SubscriberStats>('stats')
    for (let i = 0; i < 200 && !o.complete(sub, pub); i++) {
      await Bun.sleep(50)
      sub = await subs.call<SubscriberStats>('stats')
    }
    return {
      publishedPerSecond: (p1.sent - p0.sent) / secs,
      framesPerSecond: (s1.frames - s0.frames) / secs,
      messagesPerSecond: (s1.messages - s0.messages) / secs,
      bytesPerSecond: (s1.bytes - s0.bytes) / secs,
      cpuCores: cpu / secs,
      sub,
      pub,
      complete: o.complete(sub, pub),
    }
  } finally {
    await subs.call('close').catch(() => {})
    await pubs.call('close').catch(() => {})
    await subs.stop()
    await pubs.stop()
    await d.stop()
  }
}
