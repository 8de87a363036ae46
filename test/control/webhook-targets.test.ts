import { describe, expect, test } from 'bun:test'
import { metrics } from '../../src/lib/metrics'
import type { Rule } from '../../src/core/types'
import { expectError } from '../helpers/errors'
import { ACCESS_TOKEN, APP_ID, useGateway } from '../helpers/gateway'

/**
 * Server-side request forgery through rule targets: with the default settings a tenant cannot
 * make the gateway POST to loopback, private, link-local or unspecified addresses, neither by
 * the URL's text (refused at creation) nor by a name resolving there (refused at delivery).
 */
const ctx = useGateway()

const v1 = (path: string, method = 'GET', json?: unknown) =>
  ctx.gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const httpRule = (url: string, headers?: unknown) => ({
  ruleType: 'http',
  source: { channelFilter: '^ssrf', type: 'channel.message' },
  target: { url, headers },
})

/** A loopback receiver that records whatever reaches it. */
function receiver() {
  const hits: string[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      hits.push(new URL(req.url).pathname)
      return new Response('ok')
    },
  })
  return { hits, port: server.port, stop: () => server.stop(true) }
}

const dropped = (reason: string) =>
  Number(
    new RegExp(`^gateway_webhook_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics.render())?.[1] ?? 0,
  )

describe('webhook targets', () => {
  test('a rule whose URL names a private, loopback, link-local or unspecified address is 400 at creation', async () => {
    const targets = [
      'http://169.254.169.254/latest/meta-data/',
      'http://127.0.0.1:6379/',
      'http://127.0.0.1:5432/',
      `${ctx.base}/v1/accounts`, // the gateway's own management interface
      'http://[::1]:8080/',
      'http://0.0.0.0:8080/',
      'http://[::]/',
      'http://2130706433/', // 127.0.0.1 as one number
      'http://0x7f.1/',
      'http://127.1/',
      'http://017700000001/',
      'http://[::ffff:127.0.0.1]/',
      'http://10.0.0.8/',
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://localhost:8080/',
      'http://api.localhost/',
    ]
    for (const url of targets) {
      const e = await expectError(await v1(`/apps/${APP_ID}/rules`, 'POST', httpRule(url)), 400, 40000)
      expect(e.message).toContain('target.url must reach a public address')
      expect(e.message).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS')
    }
    // a public address or a name is accepted (a name is checked again when delivering)
    for (const url of ['http://93.184.215.14/hook', 'https://hooks.example.com/in'])
      expect((await v1(`/apps/${APP_ID}/rules`, 'POST', httpRule(url))).status).toBe(201)
    // and a change of target is held to the same rule
    const rules = (await (await v1(`/apps/${APP_ID}/rules`)).json()) as Rule[]
    await expectError(
      await v1(`/apps/${APP_ID}/rules/${rules[0]!.id}`, 'PATCH', { target: { url: 'http://127.0.0.1/' } }),
      400,
      40000,
    )
    for (const r of rules) await v1(`/apps/${APP_ID}/rules/${r.id}`, 'DELETE')
  })

  test('headers must be valid HTTP and not ones the gateway sets', async () => {
    const url = 'https://hooks.example.com/in'
    for (const headers of [
      [{ name: 'Host', value: 'redis' }],
      [{ name: 'content-length', value: '0' }],
      [{ name: 'Transfer-Encoding', value: 'chunked' }],
      [{ name: 'x-ok', value: 'a\r\nInjected: yes' }],
      [{ name: 'bad name', value: 'v' }],
      Array.from({ length: 21 }, (_, i) => ({ name: `x-h${i}`, value: 'v' })),
    ])
      await expectError(await v1(`/apps/${APP_ID}/rules`, 'POST', httpRule(url, headers)), 400, 40000)
    expect((await v1(`/apps/${APP_ID}/rules`, 'POST', httpRule(url, 'x-a: b'))).status).toBe(400)
    const ok = await v1(`/apps/${APP_ID}/rules`, 'POST', httpRule(url, [{ name: 'Authorization', value: 'Bearer x' }]))
    expect(ok.status).toBe(201)
    await v1(`/apps/${APP_ID}/rules/${((await ok.json()) as Rule).id}`, 'DELETE')
  })

  test('a stored target that is (or resolves to) loopback is refused when delivering: nothing reaches it', async () => {
    const r = receiver()
    try {
      const now = Date.now()
      // rules stored before this check existed, or while the operator allowed private targets
      const stored = (id: string, url: string): Rule => ({
        id,
        appId: APP_ID,
        ruleType: 'http',
        requestMode: 'single',
        status: 'enabled',
        source: { channelFilter: `^ssrf-${id}$`, type: 'channel.message' },
        target: { url, enveloped: true },
        created: now,
        modified: now,
      })
      await ctx.gw.backend.control.putRule(stored('literal', `http://127.0.0.1:${r.port}/literal`))
      await ctx.gw.backend.control.putRule(stored('name', `http://localhost:${r.port}/name`))
      const before = dropped('refused')
      for (const id of ['literal', 'name'])
        expect(
          (await ctx.gw.request(`/channels/ssrf-${id}/messages`, { method: 'POST', json: { data: 'x' } })).status,
        ).toBe(201)
      for (let i = 0; i < 300 && dropped('refused') < before + 2; i++) await Bun.sleep(10)
      expect(dropped('refused')).toBe(before + 2)
      expect(r.hits).toEqual([])
      expect(ctx.gw.core.webhooks.backlog()).toBe(0)
      for (const id of ['literal', 'name']) await ctx.gw.backend.control.deleteRule(APP_ID, id)
    } finally {
      r.stop()
    }
  })
})
