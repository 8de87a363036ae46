import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ACCESS_TOKEN, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * Webhook queues give up: a deleted rule stops at once, a receiver answering 4xx is not retried,
 * and what was given up is counted in /metrics and in the app's stats (both backends).
 */
let gw: TestGateway
/** Every stats interval read here starts after this (ms): the sums read twice cover the same intervals. */
let since = 0
beforeAll(async () => {
  since = Date.now() - 60_000
  gw = await createTestGateway({ webhookAllowPrivateTargets: true, webhookMaxAttempts: 1000 })
})
afterAll(async () => {
  await gw.close()
})

const v1 = (path: string, method = 'GET', json?: unknown) =>
  gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const publish = (channel: string, data: string) =>
  gw.request(`/channels/${channel}/messages`, { method: 'POST', json: { data } })
const until = async (ok: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 500; i++) {
    if (await ok()) return
    await Bun.sleep(10)
  }
  throw new Error(`timed out waiting for ${what}`)
}
const metric = async (reason: string) =>
  Number(
    new RegExp(`^gateway_webhook_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
      await (await gw.request('/metrics', { key: null })).text(),
    )?.[1] ?? 0,
  )
/**
 * The app's stats entries summed over the minutes since the file began: a test that reads them
 * before and after crosses a minute's end sometimes, and the newest minute alone then lacks what
 * the one before it counted.
 */
const stats = async () => {
  const records = (await (await gw.request(`/stats?unit=minute&start=${since}&limit=100`)).json()) as Array<{
    entries?: Record<string, number>
  }>
  const sum: Record<string, number> = {}
  for (const r of records) for (const [k, v] of Object.entries(r.entries ?? {})) sum[k] = (sum[k] ?? 0) + v
  return sum
}

/** A receiver answering `status(path)`, counting requests. */
function receiver(status: (path: string) => number) {
  const state = { requests: 0 }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      await req.arrayBuffer()
      state.requests++
      return new Response(null, { status: status(new URL(req.url).pathname) })
    },
  })
  return { state, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
}

describe('webhook delivery bounds', () => {
  test('deleting a rule drops its queued deliveries at once; they are counted as dropped', async () => {
    const r = receiver(() => 503)
    try {
      const rule = (await (
        await v1(`/apps/${APP_ID}/rules`, 'POST', {
          ruleType: 'http',
          source: { channelFilter: '^failing:', type: 'channel.message' },
          target: { url: `${r.url}/down` },
        })
      ).json()) as any
      for (let i = 0; i < 20; i++) expect((await publish(`failing:${i % 5}`, `m${i}`)).status).toBe(201)
      await until(() => r.state.requests >= 5 && gw.core.webhooks.backlog() === 20, 'the first failing attempts')
      const before = await metric('rule')
      const failedBefore = (await stats())['messages.outbound.webhook.all.failed'] ?? 0

      expect((await v1(`/apps/${APP_ID}/rules/${rule.id}`, 'DELETE')).status).toBe(204)
      await until(() => gw.core.webhooks.backlog() === 0, 'the lanes to be dropped')
      expect(await metric('rule')).toBe(before + 20)
      expect((await stats())['messages.outbound.webhook.all.failed']).toBe(failedBefore + 20)
      // no retry of the deleted rule is still scheduled: at most the 5 lanes' requests in flight
      // arrive (given 2 s: only a stall keeps a local request longer), then nothing more
      const seen = r.state.requests
      await Bun.sleep(2000)
      expect(r.state.requests).toBeLessThanOrEqual(seen + 5)
      const settled = r.state.requests
      await Bun.sleep(1000)
      expect(r.state.requests).toBe(settled)
    } finally {
      r.stop()
    }
  })

  test('a 4xx answer is not retried: the message is dropped and counted, delivered ones too', async () => {
    const r = receiver((path) => (path === '/gone' ? 410 : 200))
    try {
      const make = async (filter: string, path: string) =>
        (await (
          await v1(`/apps/${APP_ID}/rules`, 'POST', {
            ruleType: 'http',
            source: { channelFilter: filter, type: 'channel.message' },
            target: { url: `${r.url}${path}` },
          })
        ).json()) as any
      const gone = await make('^gone:', '/gone')
      const fine = await make('^fine:', '/fine')
      const before = await metric('rejected')
      const was = await stats()
      for (let i = 0; i < 3; i++) {
        expect((await publish('gone:x', `g${i}`)).status).toBe(201)
        expect((await publish('fine:x', `f${i}`)).status).toBe(201)
      }
      await until(async () => (await metric('rejected')) === before + 3, 'the 4xx drops')
      await until(() => gw.core.webhooks.backlog() === 0, 'the deliveries')
      expect(r.state.requests).toBe(6)
      const now = await stats()
      expect(now['messages.outbound.webhook.all.failed']! - (was['messages.outbound.webhook.all.failed'] ?? 0)).toBe(3)
      expect(now['messages.outbound.webhook.all.count']! - (was['messages.outbound.webhook.all.count'] ?? 0)).toBe(3)
      for (const id of [gone.id, fine.id]) await v1(`/apps/${APP_ID}/rules/${id}`, 'DELETE')
    } finally {
      r.stop()
    }
  })
})
