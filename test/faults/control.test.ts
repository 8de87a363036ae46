/**
 * The fault control API (issue 45): its routes and answers (the hosted tooling's grammar), its
 * refusals in the spec's error shape, its bounds (sessions, rules, log, timeout), a session that
 * sees and alters only its own port's traffic, and a start refused on a public address.
 */
import { describe, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { Action } from '../../src/core/connections'
import { faultSession, frames, useFaultSessions } from '../helpers/faults'
import { collect, connectedClient, fresh, realtimeGateway, type Collected } from '../helpers/realtime'
import { freePort } from '../helpers/redis'
import { waitFor } from '../helpers/wait'

const rt = realtimeGateway({
  faults: true,
  faultsPort: 0,
  faultsMaxSessions: 3,
  faultsMaxRules: 5,
  faultsMaxLogEvents: 20,
})
const control = () => rt.gw.faultsUrl!
const session = useFaultSessions(control)
const post = (path: string, body: unknown) =>
  fetch(control() + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

describe('fault control API', () => {
  test('health, create on a free and on a given port, get, rules appended and prepended, delete', async () => {
    expect(await (await fetch(control() + '/health')).json()).toEqual({ ok: true })
    const auto = await post('/sessions', { target: { realtimeHost: 'sandbox.realtime.ably-nonprod.net' } })
    expect(auto.status).toBe(201)
    const a = (await auto.json()) as { sessionId: string; proxy: { host: string; port: number } }
    expect(a.sessionId).toMatch(/^[0-9a-f]{8}$/)
    expect(a.proxy.host).toBe(`localhost:${a.proxy.port}`)
    const port = await freePort()
    const given = (await (await post('/sessions', { port, rules: [] })).json()) as {
      sessionId: string
      proxy: { port: number }
    }
    expect(given.proxy.port).toBe(port)
    expect((await post('/sessions', { port })).status).toBe(409)
    const rule = (comment: string) => ({
      match: { type: 'http_request', pathContains: '/time' },
      action: { type: 'http_respond', status: 500 + Number(comment) },
      times: 1,
      comment,
    })
    expect(await (await post(`/sessions/${a.sessionId}/rules`, { rules: [rule('1')] })).json()).toEqual({
      ruleCount: 1,
    })
    expect(
      await (await post(`/sessions/${a.sessionId}/rules`, { rules: [rule('2')], position: 'prepend' })).json(),
    ).toEqual({ ruleCount: 2 })
    expect(await (await fetch(`${control()}/sessions/${a.sessionId}`)).json()).toEqual({
      sessionId: a.sessionId,
      port: a.proxy.port,
      target: { realtimeHost: 'sandbox.realtime.ably-nonprod.net' },
      ruleCount: 2,
    })
    // prepended first; each fires once and goes
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${a.proxy.port}/time`)).status)
    expect(statuses).toEqual([502, 501, 200])
    const end = await fetch(`${control()}/sessions/${a.sessionId}`, { method: 'DELETE' })
    const { events } = (await end.json()) as { events: Array<{ type: string }> }
    expect(events.filter((e) => e.type === 'http_response')).toHaveLength(3)
    expect((await fetch(`${control()}/sessions/${a.sessionId}`)).status).toBe(404)
    await fetch(`http://127.0.0.1:${a.proxy.port}/time`).then(
      () => expect.unreachable('the port is closed'),
      () => {},
    )
    await fetch(`${control()}/sessions/${given.sessionId}`, { method: 'DELETE' })
  })

  test('refusals in the error shape: bad bodies and rules (400), unknown sessions (404), no socket (409)', async () => {
    const s = await session()
    const refusal = async (r: Promise<Response>, status: number, code: number) => {
      const res = await r
      expect(res.status).toBe(status)
      expect(res.headers.get('content-type')).toBe('application/json')
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(code)
    }
    await refusal(post('/sessions', '{nope'), 400, 40001)
    await refusal(post('/sessions', { port: -1 }), 400, 40003)
    await refusal(
      post('/sessions', { rules: [{ match: { type: 'ws_teleport' }, action: { type: 'suppress' } }] }),
      400,
      40003,
    )
    await refusal(
      post('/sessions', { rules: [{ match: { type: 'http_request' }, action: { type: 'suppress' } }] }),
      400,
      40003,
    )
    await refusal(
      post('/sessions', {
        rules: [{ match: { type: 'ws_frame_to_client', action: 'TELEPORT' }, action: { type: 'suppress' } }],
      }),
      400,
      40003,
    )
    await refusal(
      post('/sessions', { rules: [{ match: { type: 'ws_frame_to_client' }, action: { type: 'replace' } }] }),
      400,
      40003,
    )
    await refusal(
      post('/sessions', {
        rules: [{ match: { type: 'ws_frame_to_client' }, action: { type: 'close', closeCode: 1006 } }],
      }),
      400,
      40003,
    )
    await refusal(post('/sessions', { timeoutMs: 'soon' }), 400, 40003)
    await refusal(post(`/sessions/${s.id}/rules`, { rules: [], position: 'middle' }), 400, 40003)
    await refusal(post(`/sessions/${s.id}/actions`, { type: 'teleport' }), 400, 40003)
    await refusal(post(`/sessions/${s.id}/actions`, { type: 'disconnect' }), 409, 40900)
    await refusal(fetch(`${control()}/sessions/ffffffff/log`), 404, 40400)
    await refusal(fetch(`${control()}/sessions/ffffffff`, { method: 'DELETE' }), 404, 40400)
    await refusal(fetch(`${control()}/nowhere`), 404, 40400)
    await refusal(fetch(`${control()}/sessions/${s.id}/log`, { method: 'POST' }), 405, 40500)
  })

  test('bounds: sessions (409 past FAULTS_MAX_SESSIONS), rules (400 past FAULTS_MAX_RULES), log events (oldest dropped)', async () => {
    const s = await session()
    await session()
    await session()
    const over = await post('/sessions', {})
    expect(over.status).toBe(409)
    const rule = { match: { type: 'http_request' }, action: { type: 'passthrough' } }
    expect(await s.addRules([rule, rule, rule, rule, rule])).toBe(5)
    expect((await post(`/sessions/${s.id}/rules`, { rules: [rule] })).status).toBe(400)
    expect((await post('/sessions', { rules: Array(6).fill(rule) })).status).toBe(409)
    for (let i = 0; i < 15; i++) await fetch(`http://127.0.0.1:${s.port}/time`)
    const log = await s.log()
    expect(log).toHaveLength(20)
    // the newest are kept: the last request's response closes the log
    expect(log.at(-1)).toMatchObject({ type: 'http_response', status: 200 })
  })

  test('a session ends after timeoutMs with no control call and no traffic on its port', async () => {
    const s = await faultSession(control(), { timeoutMs: 300 })
    await waitFor(
      () => fetch(`${control()}/sessions/${s.id}`).then((r) => r.status),
      (status) => status === 404,
      10_000,
    )
    await fetch(`http://127.0.0.1:${s.port}/time`).then(
      () => expect.unreachable('the port is closed'),
      () => {},
    )
  })

  test("a session sees and alters only its own port's traffic: not the node's port, not another session's", async () => {
    const name = fresh('iso')
    const hostile = { match: { type: 'ws_frame_to_client', action: 'MESSAGE' }, action: { type: 'suppress' } }
    const failHttp = { match: { type: 'http_request' }, action: { type: 'http_respond', status: 500 } }
    const a = await session({ rules: [hostile, failHttp] })
    const b = await session()
    const main = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'main' })
    const viaB = await connectedClient(b.port, { key: rt.gw.key, clientId: 'via-b' })
    const viaA = await connectedClient(a.port, { key: rt.gw.key, clientId: 'via-a' })
    const [gotMain, gotB, gotA] = (await Promise.all([main, viaB, viaA].map((c) => collect(c.channels.get(name))))) as [
      Collected,
      Collected,
      Collected,
    ]
    await main.channels.get(name).publish('from-main', 'x')
    await viaB.channels.get(name).publish('from-b', 'y')
    await gotMain.until(2)
    await gotB.until(2)
    expect((await fetch(`http://127.0.0.1:${rt.port}/time`)).status).toBe(200)
    expect((await fetch(`http://127.0.0.1:${b.port}/time`)).status).toBe(200)
    expect((await fetch(`http://127.0.0.1:${a.port}/time`)).status).toBe(500)
    expect(gotA.messages).toHaveLength(0)
    const [logA, logB] = [await a.log(), await b.log()]
    const clientIds = (log: typeof logA) =>
      new Set(frames(log, 'server_to_client', Action.CONNECTED).map((e) => e.message.connectionDetails.clientId))
    expect(clientIds(logA)).toEqual(new Set(['via-a']))
    expect(clientIds(logB)).toEqual(new Set(['via-b']))
    expect(logA.filter((e) => e.type === 'ws_connect')).toHaveLength(1)
    expect(logB.filter((e) => e.type === 'ws_connect')).toHaveLength(1)
    expect(logB.filter((e) => e.type === 'http_request')).toHaveLength(1)
  })
})

describe('FAULTS refused on a public address', () => {
  test('the configuration is refused unless FAULTS_ALLOW_PUBLIC is set', () => {
    expect(() => loadConfig({ FAULTS: 'on', FAULTS_HOST: '0.0.0.0' })).toThrow(
      /FAULTS_HOST=0\.0\.0\.0 is not a loopback address/,
    )
    expect(() => loadConfig({ FAULTS: 'on', FAULTS_HOST: '192.168.1.10' })).toThrow(/FAULTS_ALLOW_PUBLIC/)
    expect(loadConfig({ FAULTS: 'on', FAULTS_HOST: '::1' }).faults).toBe(true)
    expect(loadConfig({ FAULTS: 'on', FAULTS_HOST: 'localhost' }).faults).toBe(true)
    expect(loadConfig({ FAULTS: 'on', FAULTS_HOST: '0.0.0.0', FAULTS_ALLOW_PUBLIC: 'true' }).faultsHost).toBe('0.0.0.0')
    expect(loadConfig({}).faults).toBe(false)
  })

  test('a gateway started so exits at once with the reason, having listened on nothing', async () => {
    const port = await freePort()
    const r = spawnSync(process.execPath, [join(import.meta.dir, '../../src/main.ts')], {
      env: {
        ...process.env,
        FAULTS: 'on',
        FAULTS_HOST: '0.0.0.0',
        PORT: String(port),
        DATA_DIR: '/nonexistent/never-created',
      },
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('FAULTS_HOST=0.0.0.0 is not a loopback address')
  })
})
