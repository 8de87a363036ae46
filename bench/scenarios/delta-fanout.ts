/**
 * Deltas at the edge (issue 43): one channel to N realtime subscribers (default 1,000, msgpack,
 * lib/realtime-client.ts) attached with `delta=vcdiff` in one run and without it in the other,
 * alternated on a fresh gateway each (`--rounds`, default 2), for two streams
 * (lib/delta-payloads.ts): a ~2 KiB JSON state object in which a few fields change per message,
 * and a growing text. M messages (default 300) are published one after the other over HTTP, each
 * once every subscriber holds the previous one. Reports the MESSAGE bytes each subscriber
 * received and the gateway's CPU per delivery, with deltas and without, and their ratios. One
 * subscriber decodes every message (vcdiff with `@ably/vcdiff-decoder`) and must get what was
 * published; every subscriber must get every message.
 */
import { alternate, mean } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { startAgent } from '../lib/agent'
import { deltaStream, payloadText, type DeltaStream } from '../lib/delta-payloads'
import { startDeployment } from '../lib/deployment'
import type { Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'
import { join } from 'node:path'

interface Run {
  stream: DeltaStream
  deltas: boolean
  round: number
  bytesPerSubscriber: number
  cpuMicrosPerDelivery: number
  deltaMessages: number
}

interface Stats {
  bytes: number
  least: number
  decoded: string[]
  deltas: number
  faults: string[]
}

const STREAMS: DeltaStream[] = ['json-state', 'growing-text']

export async function deltaFanoutScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const messages = o.short ? 30 : 300
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const runs: Run[] = []
  const checks: Check[] = []

  for (const stream of STREAMS) {
    const data = deltaStream(stream, messages)
    const texts = data.map(payloadText)
    for (const { round, variant } of alternate(false, true, rounds)) {
      const label = `${stream}, deltas ${variant ? 'on' : 'off'}, round ${round}`
      console.log(`delta-fanout: ${fmt(subscribers)} subscribers, ${messages} messages, ${label} …`)
      const name = `${stream}-${variant ? 'on' : 'off'}-r${round}`
      const d = await startDeployment('memory', { logDir: o.outDir, name: `gateway-${name}`, cpuProfile: o.profile })
      const agent = startAgent(`subscribers-${name}`, join(import.meta.dir, '..', 'delta-subscriber.ts'), {
        logDir: o.outDir,
        fdLimit: subscribers + 200,
      })
      try {
        const channel = `delta-${name}`
        await agent.call('open', { base: d.subscribeTo.base, key: d.key, channel, count: subscribers, delta: variant })
        const auth = 'Basic ' + Buffer.from(d.key).toString('base64')
        const url = `${d.publishTo.base}/channels/${channel}/messages`
        const cpu0 = d.cpuSeconds()
        let s!: Stats
        for (let i = 0; i < messages; i++) {
          const r = await fetch(url, {
            method: 'POST',
            headers: { authorization: auth, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'update', data: data[i] }),
          })
          if (r.status !== 201) throw new Error(`publish ${i}: ${r.status} ${await r.text()}`)
          // the next one once every subscriber holds this one (one message per frame, as a paced stream)
          for (let k = 0; ; k++) {
            s = await agent.call<Stats>('stats')
            if (s.least > i) break
            if (k > 2000) throw new Error(`message ${i} not delivered to every subscriber within 10 s`)
            await Bun.sleep(5)
          }
        }
        const cpu = d.cpuSeconds() - cpu0
        const ok = s.decoded.length === texts.length && s.decoded.every((t, i) => t === texts[i])
        checks.push({
          name: `${label}: every subscriber got every message, the decoding one exactly what was published`,
          ok: ok && s.faults.length === 0,
          detail: ok ? `${s.deltas} of ${messages} as deltas` : `decoded ${s.decoded.length}; ${s.faults.join('; ')}`,
        })
        runs.push({
          stream,
          deltas: variant,
          round,
          bytesPerSubscriber: s.bytes / subscribers,
          cpuMicrosPerDelivery: (cpu * 1e6) / (messages * subscribers),
          deltaMessages: s.deltas,
        })
      } finally {
        await agent.call('close').catch(() => {})
        await agent.stop()
        await d.stop()
      }
    }
  }

  const headlines: Headline[] = []
  const ratios: Record<string, number> = {}
  for (const stream of STREAMS) {
    const of = (on: boolean) => runs.filter((r) => r.stream === stream && r.deltas === on)
    const bytes = (on: boolean) => mean(of(on).map((r) => r.bytesPerSubscriber))
    const cpu = (on: boolean) => mean(of(on).map((r) => r.cpuMicrosPerDelivery))
    const bytesRatio = bytes(true) / bytes(false)
    const cpuRatio = cpu(true) / cpu(false)
    headlines.push(
      { name: `${stream}: MESSAGE bytes per subscriber, deltas on`, value: bytes(true), unit: 'B' },
      { name: `${stream}: MESSAGE bytes per subscriber, deltas off`, value: bytes(false), unit: 'B' },
      {
        name: `${stream}: bytes per subscriber, on ÷ off`,
        value: bytesRatio,
        unit: '',
        ...(stream === 'json-state' ? { target: '≤ 0.3', met: bytesRatio <= 0.3 } : {}),
      },
      { name: `${stream}: gateway CPU per delivery, deltas on`, value: cpu(true), unit: 'µs' },
      { name: `${stream}: gateway CPU per delivery, deltas off`, value: cpu(false), unit: 'µs' },
      { name: `${stream}: CPU per delivery, on ÷ off`, value: cpuRatio, unit: '' },
    )
    ratios[`${stream}: bytes per subscriber, deltas on ÷ off`] = bytesRatio
    ratios[`${stream}: gateway CPU per delivery, deltas on ÷ off`] = cpuRatio
  }
  return {
    scenario: 'delta-fanout',
    description:
      `VCDIFF deltas (delta=vcdiff) against whole messages: one channel, ${fmt(subscribers)} realtime subscribers (msgpack) in a separate ` +
      `process, ${messages} messages published one after the other over HTTP (the next once every subscriber holds the previous), ` +
      'for a ~2 KiB JSON state with a few fields changed per message and for a growing text; a fresh gateway per run, deltas off and on alternated. ' +
      'Bytes = MESSAGE frames received per subscriber; CPU = the gateway process over the publishing, per delivery.',
    load: `${fmt(subscribers)} subscribers; ${messages} messages per run; ${rounds} round(s) of each`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: ['stream', 'deltas', 'round', 'bytes / subscriber', 'CPU µs / delivery', 'deltas received'],
        rows: runs.map((r) => [
          r.stream,
          r.deltas ? 'on' : 'off',
          String(r.round),
          fmt(r.bytesPerSubscriber),
          r.cpuMicrosPerDelivery.toFixed(2),
          String(r.deltaMessages),
        ]),
      },
    ],
    headlines,
    ratios,
    checks,
    details: { subscribers, messages, rounds, runs },
  }
}
