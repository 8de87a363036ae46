import { describe, expect, test } from 'bun:test'
import { WebhookDispatcher, type WebhookSettings } from '../../src/core/rules/webhooks'
import type { Rule } from '../../src/core/types'
import { TargetRefused } from '../../src/lib/http-post'
import { metrics } from '../../src/lib/metrics'
import { TestClock } from '../helpers/gateway'

/**
 * Webhook delivery is bounded: retries by count and time (the core's clock, so no test sleeps),
 * bytes waiting per rule, and a deleted rule's lanes go at once. Every message given up is counted.
 */
const SETTINGS: WebhookSettings = { webhookMaxAttempts: 4, webhookRetryMs: 60_000, webhookBufferBytes: 2_000 }
let seq = 0
const rule = (over: Partial<Rule> = {}): Rule => ({
  id: `r${++seq}`,
  appId: 'app',
  ruleType: 'http',
  requestMode: 'single',
  status: 'enabled',
  source: { channelFilter: '.*', type: 'channel.message' },
  target: { url: 'http://hook.test/', enveloped: true },
  created: 0,
  modified: 0,
  ...over,
})
const msg = (i: number, size = 10) => ({ id: `m${i}`, data: 'x'.repeat(size) })
const dropped = (reason: string) =>
  Number(
    new RegExp(`^gateway_webhook_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics.render())?.[1] ?? 0,
  )
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(2)
  expect(ok()).toBe(true)
}

/** A transport answering `answer(attempt)`, recording each call; `gate` holds calls until opened. */
function transport(answer: (n: number) => number | Error) {
  const calls: unknown[] = []
  return {
    calls,
    send: async (_url: string, _h: Record<string, string>, body: unknown) => {
      calls.push(body)
      const a = answer(calls.length)
      if (a instanceof Error) throw a
      return a
    },
  }
}

describe('webhook dispatcher bounds', () => {
  test('a 4xx (and a redirect) gives up at once; a refused target too', async () => {
    for (const [answer, reason] of [
      [404, 'rejected'],
      [400, 'rejected'],
      [302, 'rejected'],
      [new TargetRefused('private'), 'refused'],
    ] as const) {
      const t = transport(() => answer)
      const d = new WebhookDispatcher(t.send, new TestClock(), SETTINGS, undefined, async () => {})
      const before = dropped(reason)
      d.enqueue(rule(), 'acct', 'ch', [msg(1)])
      await until(() => d.backlog() === 0)
      expect(t.calls).toHaveLength(1)
      expect(dropped(reason)).toBe(before + 1)
    }
  })

  test('failures worth retrying (no answer, 408, 429, 5xx) are retried at most webhookMaxAttempts times', async () => {
    const t = transport((n) => [0, 503, 429, 408, 500][n % 5]!)
    const d = new WebhookDispatcher(t.send, new TestClock(), SETTINGS, undefined, async () => {})
    const before = dropped('attempts')
    d.enqueue(rule(), 'acct', 'ch', [msg(1), msg(2)])
    await until(() => d.backlog() === 0)
    // each message of the lane got its own four attempts, then was dropped
    expect(t.calls).toHaveLength(2 * SETTINGS.webhookMaxAttempts)
    expect(dropped('attempts')).toBe(before + 2)
  })

  test('retries stop webhookRetryMs after the first attempt, by the core clock', async () => {
    const clock = new TestClock()
    const t = transport(() => 503)
    // each wait between attempts moves the clock on by 25 s: the third attempt is past 60 s
    const d = new WebhookDispatcher(t.send, clock, { ...SETTINGS, webhookMaxAttempts: 1000 }, undefined, async () =>
      clock.advance(25_000),
    )
    const before = dropped('expired')
    d.enqueue(rule(), 'acct', 'ch', [msg(1)])
    await until(() => d.backlog() === 0)
    expect(t.calls).toHaveLength(3)
    expect(dropped('expired')).toBe(before + 1)
  })

  test('a rule holds at most webhookBufferBytes waiting over all its channels; the rest is dropped and counted', async () => {
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const sent: unknown[] = []
    const d = new WebhookDispatcher(
      async (_u, _h, body) => {
        await gate
        sent.push(body)
        return 200
      },
      new TestClock(),
      SETTINGS,
    )
    const r = rule()
    const before = dropped('full')
    // each message is about 120 bytes as JSON: 2,000 bytes hold 16 of the 40, wherever they go
    for (let i = 0; i < 40; i++) d.enqueue(r, 'acct', `ch${i % 4}`, [msg(i, 100)])
    expect(d.queuedBytes('app', r.id)).toBeLessThanOrEqual(SETTINGS.webhookBufferBytes)
    const kept = d.backlog()
    expect(kept).toBeGreaterThan(0)
    expect(dropped('full')).toBe(before + 40 - kept)
    // another rule has its own budget
    d.enqueue(rule(), 'acct', 'ch0', [msg(99, 100)])
    expect(d.backlog()).toBe(kept + 1)
    open()
    await until(() => d.backlog() === 0)
    expect(sent).toHaveLength(kept + 1)
    expect(d.queuedBytes('app', r.id)).toBe(0)
  })

  test("a deleted rule's lanes are dropped at once, its in-flight answer ignored, and it never comes back", async () => {
    let inFlight = 0
    const d = new WebhookDispatcher(
      async () => {
        inFlight++
        await Bun.sleep(30)
        return 503
      },
      new TestClock(),
      { ...SETTINGS, webhookMaxAttempts: 1000 },
      undefined,
      () => Bun.sleep(1),
    )
    const gone = rule()
    const kept = rule()
    for (let i = 0; i < 50; i++) {
      d.enqueue(gone, 'acct', `ch${i}`, [msg(i)])
      d.enqueue(kept, 'acct', 'one', [msg(i)])
    }
    const before = dropped('rule')
    d.retain('app', [kept])
    expect(d.queuedBytes('app', gone.id)).toBe(0)
    expect(d.backlog()).toBe(50)
    expect(dropped('rule')).toBe(before + 50)
    // a publish routed with the old rule list does not revive it
    d.enqueue(gone, 'acct', 'late', [msg(1)])
    expect(d.backlog()).toBe(50)
    // a disabled rule is dropped too (it may come back when enabled again)
    d.retain('app', [{ ...kept, status: 'disabled' }])
    expect(d.backlog()).toBe(0)
    d.enqueue(kept, 'acct', 'one', [msg(1)])
    expect(d.backlog()).toBe(1)
    d.retain('app', [])
    await Bun.sleep(50)
    expect(inFlight).toBeGreaterThan(0)
    expect(d.backlog()).toBe(0)
  })
})
