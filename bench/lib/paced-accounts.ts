/**
 * One phase of the rate-limit load (the accounts and realtime-latency scenarios): K accounts
 * (account-fixtures.ts) on a fresh gateway node with RATE_LIMITS=on, each publishing to its own
 * channel on its own connection, paced precisely (publisher.ts: each account's publishes on a
 * fixed schedule, `batch` messages per publish; a lane catches up at most `maxCatchUpMs` after
 * a stall and skips older slots), with one subscriber per account channel counting deliveries
 * (exactly once, in order) and timing them. Over HTTP with event-stream subscribers, or over the
 * realtime protocol both ways (`transport`). The first `warmup` seconds are left out of the
 * latency percentiles and CPU figures.
 */
import type { AccountsDataDir } from './account-fixtures'
import { cpuSeconds } from './cpu'
import { cutNote, deliveryChecks, fmt, openedCheck } from './delivery-checks'
import { openedWhat } from './fanout-run'
import { distribution, type Distribution } from './percentiles'
import { startPublisher, type PublishResult } from './publisher-client'
import type { Check, RunOptions, Series } from './scenario'
import { startSubscribers } from './sse-subscriber-client'
import { startGateway, type Target } from './targets'
import { Timeline } from './timeline'

export const ACCOUNT_MESSAGE_BYTES = 100
export const accountChannel = (i: number) => `acct-${i}`

/** HTTP publishes with event-stream subscribers, or realtime connections for both. */
export type AccountsTransport = 'http' | 'realtime'

export interface PacedSpec {
  /** Prefix of checks, notes and progress lines. */
  label: string
  /** Suffix of the process log names. */
  name: string
  transport: AccountsTransport
  /** Messages per second per account, and per publish. */
  rate: number
  batch: number
  limit: number
  burstSeconds: number
  /** Furthest a lane catches up on its schedule after a stall (ms); default: all of it. */
  maxCatchUpMs?: number
  /** Seconds of publishing, the first `warmup` of them out of the percentiles. */
  publishSeconds: number
  warmup: number
  /** Suffix of the chart series' names. */
  seriesSuffix: string
}

export interface Phase {
  name: string
  rate: number
  publish: Distribution
  delivery: Distribution
  result: PublishResult
  /** Per account: seconds between its first and last publish, admitted expected by the token bucket. */
  windows: number[]
  expected: number[]
  /** Per account: messages sent (admitted or refused). */
  sent: number[]
  maxLagMs: number
  /** % of one core over the measured part: gateway, publisher, subscriber processes. */
  cpu: { gateway: number; publisher: number; subscriber: number }
}

export interface PacedOutcome {
  phase: Phase
  checks: Check[]
  notes: string[]
  series: Series[]
}

/**
 * Runs one phase on a fresh gateway over `data`'s accounts. `onReady` runs first against the
 * gateway (e.g. a check of the accounts' limits). Checks every publish answered (acknowledged or
 * refused by the limit), the schedule kept, and every admitted message delivered once and in order.
 */
export async function runPacedAccounts(
  o: RunOptions,
  data: AccountsDataDir,
  p: PacedSpec,
  onReady?: (gw: Target) => Promise<Check[]>,
): Promise<PacedOutcome> {
  const k = data.accounts.length
  const { label, batch } = p
  const checks: Check[] = []
  const notes: string[] = []
  const realtime = p.transport === 'realtime'
  const gw = await startGateway({
    logDir: o.outDir,
    name: `gateway-${p.name}`,
    dataDir: data.dir,
    fdLimit: 4 * k + 1024,
    cpuProfile: o.profile,
    env: {
      RATE_LIMITS: 'on',
      LIMIT_MESSAGES_PER_SECOND: String(p.limit),
      RATE_LIMIT_BURST_SECONDS: String(p.burstSeconds),
    },
  })
  try {
    if (onReady) checks.push(...(await onReady(gw)))
    const subs = await startSubscribers({
      transport: realtime ? 'realtime' : 'sse',
      base: gw.base,
      channel: '',
      key: '',
      count: k,
      publishers: k,
      latency: true,
      logDir: o.outDir,
      name: `${realtime ? 'rt-subscriber' : 'subscriber'}-${p.name}`,
      cpuProfile: o.profile,
      groups: data.accounts.map((a, i) => ({ channels: [accountChannel(i)], key: a.key, lanes: [i] })),
    })
    try {
      checks.push(openedCheck(label, k, subs.opened, openedWhat(realtime ? 'realtime' : 'sse')))
      if (subs.opened.established !== k) throw new Error(`subscribers did not open: ${checks.at(-1)!.detail}`)
      const pub = await startPublisher({
        transport: p.transport,
        base: gw.base,
        logDir: o.outDir,
        name: `${realtime ? 'rt-publisher' : 'publisher'}-${p.name}`,
        lanes: data.accounts.map((a, i) => ({ channel: accountChannel(i), key: a.key })),
        connections: k,
        pipeline: 1,
        rate: p.rate,
        batch,
        stamps: true,
        bytes: ACCOUNT_MESSAGE_BYTES,
        cpuProfile: o.profile,
        maxCatchUpMs: p.maxCatchUpMs,
      })
      const refusal = realtime ? 'NACK 42910' : '429'
      const timeline = new Timeline(label, async () => {
        const [s, c] = await Promise.all([subs.snapshot(), pub.counts()])
        return {
          counters: {
            [`admitted${p.seriesSuffix}`]: c.messages,
            [`refused ${refusal}${p.seriesSuffix}`]: c.refused * batch,
            [`delivered${p.seriesSuffix}`]: s.received,
          },
        }
      }).start()
      await Bun.sleep(p.warmup * 1000)
      await Promise.all([subs.resetLatencies(), pub.reset()])
      const cpuNow = () => ({
        t: performance.now(),
        gateway: cpuSeconds(gw.pid) ?? 0,
        publisher: pub.cpuSeconds(),
        subscriber: subs.cpuSeconds(),
      })
      const c0 = cpuNow()
      await Bun.sleep((p.publishSeconds - p.warmup) * 1000)
      const c1 = cpuNow()
      const pct = (x: 'gateway' | 'publisher' | 'subscriber') =>
        Math.round(((c1[x] - c0[x]) / ((c1.t - c0.t) / 1000)) * 100)
      const cpu = { gateway: pct('gateway'), publisher: pct('publisher'), subscriber: pct('subscriber') }
      const result = await pub.stop()
      const settled = await subs.settle(result.acked, o.short ? 20_000 : 60_000)
      const series = await timeline.stop()
      const windows = result.firstSentMs.map((f, i) => (result.lastSentMs[i]! - f) / 1000)
      const sent = result.acked.map((n, i) => n + result.refusedByLane[i]!)
      const burst = p.limit * p.burstSeconds
      const phase: Phase = {
        name: label,
        rate: p.rate,
        publish: result.latencyUs,
        delivery: distribution(settled.latencies ?? []),
        result,
        windows,
        expected: windows.map((w, i) => Math.min(sent[i]!, burst + p.limit * w)),
        sent,
        maxLagMs: result.maxLagMs,
        cpu,
      }

      const faults = result.unanswered + result.connectionErrors + result.protocolErrors
      checks.push({
        name: `${label}: every publish answered (acknowledged, or refused by the limit), none lost`,
        ok: faults === 0 && result.sent === result.published + result.refused,
        detail:
          `${fmt(result.sent)} publishes: statuses ${JSON.stringify(result.statuses)}, unanswered ${result.unanswered}, connection errors ${result.connectionErrors}, ` +
          `protocol errors ${result.protocolErrors}${result.errorSamples.length ? `; e.g. ${result.errorSamples.slice(0, 3).join(' | ')}` : ''}`,
      })
      const scheduled = p.rate * p.publishSeconds
      const slowest = Math.min(...sent)
      checks.push({
        name: `${label}: the publisher kept every account's schedule`,
        ok: slowest >= scheduled * 0.98,
        detail:
          `messages sent per account ${fmt(slowest)} to ${fmt(Math.max(...sent))} of ${fmt(scheduled)} scheduled (${fmt(p.rate)}/s × ${p.publishSeconds} s); ` +
          `a publish fell at most ${result.maxLagMs.toFixed(1)} ms behind its schedule` +
          (result.skipped
            ? `; ${fmt(result.skipped)} messages of slots more than ${fmt(p.maxCatchUpMs ?? 0)} ms behind were skipped, not sent`
            : ''),
      })
      checks.push(...deliveryChecks(label, k, 'every admitted message of its account', settled))
      notes.push(...cutNote(settled).map((n) => `${label}: ${n}`))
      if (phase.delivery.min < 0)
        notes.push(
          `${label}: negative latency (${(phase.delivery.min / 1000).toFixed(3)} ms): the processes' wall clocks disagree`,
        )
      return { phase, checks, notes, series }
    } finally {
      await subs.close()
    }
  } finally {
    await gw.stop()
  }
}
