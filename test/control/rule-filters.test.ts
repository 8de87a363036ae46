import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_APP_FILTER_PROGRAM, MAX_FILTER_LENGTH } from '../../src/core/control/channel-filter'
import { MAX_RULES_PER_APP } from '../../src/core/control/integrations'
import { expectError } from '../helpers/errors'
import { ACCESS_TOKEN, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'

/** Rule channel filters are tenant input run on every publish: linear-time (RE2), bounded in size. */
let gw: TestGateway
beforeAll(async () => {
  // the receiver of these tests listens on loopback
  gw = await createTestGateway({ webhookAllowPrivateTargets: true })
})
afterAll(async () => {
  await gw.close()
})

const v1 = (path: string, method = 'GET', json?: unknown) =>
  gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const rule = (channelFilter: string, url = 'http://127.0.0.1:9/hook') => ({
  ruleType: 'http',
  requestMode: 'single',
  source: { channelFilter, type: 'channel.message' },
  target: { url },
})
const removeAllRules = async () => {
  for (const r of (await (await v1(`/apps/${APP_ID}/rules`)).json()) as any[])
    await v1(`/apps/${APP_ID}/rules/${r.id}`, 'DELETE')
}

describe('rule channel filters', () => {
  test('catastrophic patterns route a 1,000-character channel correctly, without backtracking', async () => {
    await removeAllRules()
    const received: string[] = []
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        for (const item of ((await req.json()) as any).items) received.push(item.data.channelId)
        return new Response('ok')
      },
    })
    try {
      // Against "aaaa...a!" (n = 1,000) a backtracking engine tries 2^n ways for `(a+)+b` before
      // the second branch: it freezes the node, and JavaScriptCore gives up after ~1 s answering
      // "no match", so the message was silently not routed. RE2 matches it in one pass.
      const filters = ['^((a+)+b|a+!)$', '^(a+)+$', '^(a|aa)+$', '^(\\w+\\s?)+$']
      for (const filter of filters)
        expect(
          (await v1(`/apps/${APP_ID}/rules`, 'POST', rule(filter, `http://127.0.0.1:${receiver.port}/`))).status,
        ).toBe(201)
      const evil = `${'a'.repeat(1000)}!`
      expect((await gw.request(`/channels/${evil}/messages`, { method: 'POST', json: { data: 'x' } })).status).toBe(201)
      expect((await gw.request('/channels/aaaa/messages', { method: 'POST', json: { data: 'y' } })).status).toBe(201)
      for (let i = 0; i < 500 && received.length < 4; i++) await Bun.sleep(10)
      await Bun.sleep(50)
      // the first filter matches the long name; the other three match "aaaa" and not the long name
      expect(received.sort()).toEqual(['aaaa', 'aaaa', 'aaaa', evil])
    } finally {
      receiver.stop(true)
      await removeAllRules()
    }
  })

  test('patterns a linear-time engine cannot run, too long or too complex are 400 with the reason', async () => {
    await removeAllRules()
    const refused: Array<[string, string]> = [
      ['(a)\\1', 'backreferences and lookaround are not supported'],
      ['^(?=chat).*', 'backreferences and lookaround are not supported'],
      ['(?<!x)y', 'backreferences and lookaround are not supported'],
      ['([unclosed', 'not a valid RE2 regular expression'],
      ['a'.repeat(MAX_FILTER_LENGTH + 1), `longer than ${MAX_FILTER_LENGTH} characters`],
      ['[a-z]{1000}', 'too complex'],
      ['(?:[a-z]{200}){2}', 'too complex'],
    ]
    for (const [filter, why] of refused) {
      const e = await expectError(await v1(`/apps/${APP_ID}/rules`, 'POST', rule(filter)), 400, 40000)
      expect(e.message).toContain('source.channelFilter')
      expect(e.message).toContain(why)
    }
    // an update is held to the same rules
    const ok = (await (await v1(`/apps/${APP_ID}/rules`, 'POST', rule('^orders:'))).json()) as any
    await expectError(
      await v1(`/apps/${APP_ID}/rules/${ok.id}`, 'PATCH', { source: { channelFilter: '(a)\\1' } }),
      400,
      40000,
    )
    await removeAllRules()
  })

  test("an app's filters share one complexity budget, and an app has a bounded number of rules", async () => {
    await removeAllRules()
    const big = '[a-z]{150}' // about 150 instructions each
    let created = 0
    let refusal: any
    for (let i = 0; i < 20 && !refusal; i++) {
      const r = await v1(`/apps/${APP_ID}/rules`, 'POST', rule(big))
      if (r.status === 201) created++
      else refusal = await expectError(r, 400, 40000)
    }
    expect(created).toBeGreaterThan(0)
    expect(created * 150).toBeLessThanOrEqual(MAX_APP_FILTER_PROGRAM)
    expect(refusal.message).toContain(`at most ${MAX_APP_FILTER_PROGRAM}`)
    await removeAllRules()

    for (let i = 0; i < MAX_RULES_PER_APP; i++)
      expect((await v1(`/apps/${APP_ID}/rules`, 'POST', rule(`^r${i}:`))).status).toBe(201)
    const e = await expectError(await v1(`/apps/${APP_ID}/rules`, 'POST', rule('^one-more:')), 400, 40000)
    expect(e.message).toContain(`at most ${MAX_RULES_PER_APP} rules`)
    await removeAllRules()
  })
})
