/**
 * What the realtime protocol writes to the log, with the official `ably` client: the connection
 * lifecycle at debug (connected with its id, app, whether it has a clientId, resumed or not;
 * attach and detach with the channel; the end with its reason) and refusals at info (a refused
 * connection, a refused attach, a failed connection), one line each, never a secret.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { loadConfig } from '../../src/config'
import type { Logger, LogLevel } from '../../src/lib/logger'
import { createNode, type GatewayNode } from '../../src/node'
import { ACCESS_TOKEN, ROOT_KEY } from '../helpers/gateway'
import { closeClients, connectedClient, FORMATS, fresh, reach, realtimeClient } from '../helpers/realtime'
import { sharedRedis } from '../helpers/redis'

type Line = Record<string, unknown> & { level: LogLevel; msg: string }

/** A logger at debug that keeps every line (as parsed JSON) instead of writing it. */
function capturingLogger(lines: Line[]): Logger {
  const write = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push({ ...fields, level, msg })
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    enabled: () => true,
    line: (level, json) => void lines.push({ ...JSON.parse(json), level }),
  }
}

const lines: Line[] = []
let node: GatewayNode
let port: number
let dataDir: string

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gw-test-'))
  const redis =
    process.env.TEST_BACKEND === 'redis'
      ? { redisUrl: (await sharedRedis()).url, redisPrefix: `t:${basename(dataDir)}:` }
      : {}
  const config = loadConfig(
    {},
    {
      bootstrapKey: ROOT_KEY,
      bootstrapAccessToken: ACCESS_TOKEN,
      logLevel: 'debug',
      rateLimits: false,
      ...redis,
      dataDir,
    },
  )
  node = await createNode(config, { log: capturingLogger(lines) })
  await node.bootstrap()
  port = node.listen({ port: 0, hostname: '127.0.0.1' }).port!
})
afterEach(() => closeClients())
afterAll(async () => {
  await node.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Lines of `msg` about connection `id`, once at least `n` are there (log lines follow the frames). */
async function linesOf(msg: string, id: string, n = 1): Promise<Line[]> {
  for (let i = 0; i < 200; i++) {
    const found = lines.filter((l) => l.msg === msg && l.connectionId === id)
    if (found.length >= n) return found
    await Bun.sleep(20)
  }
  throw new Error(`no "${msg}" line for ${id}: ${JSON.stringify(lines.filter((l) => l.connectionId === id))}`)
}

const SECRET = ROOT_KEY.split(':')[1]!

describe.each(FORMATS)('realtime logs over %s', (_format, binary) => {
  test('connected, attached, detached at debug; a refused attach at info, one line with its reason', async () => {
    const c = await connectedClient(port, { key: ROOT_KEY, clientId: 'ann' }, binary)
    const id = c.connection.id!
    const [connected] = await linesOf('realtime connected', id)
    expect(connected).toMatchObject({ level: 'debug', appId: 'testapp', clientId: true, resumed: false })
    const name = fresh('logged')
    const ch = c.channels.get(name)
    await ch.attach()
    expect((await linesOf('realtime attached', id))[0]).toMatchObject({ level: 'debug', channel: name })
    await ch.detach()
    expect((await linesOf('realtime detached', id))[0]).toMatchObject({ level: 'debug', channel: name })

    await c.channels
      .get(':hell')
      .attach()
      .catch(() => {})
    const refused = await linesOf('realtime attach refused', id)
    // give any second line a chance to show up: there must be exactly one
    await Bun.sleep(100)
    expect(lines.filter((l) => l.msg === 'realtime attach refused' && l.connectionId === id)).toHaveLength(1)
    expect(refused[0]).toMatchObject({ level: 'info', channel: ':hell', code: 40010, statusCode: 400 })
    expect(String(refused[0]!.error)).toContain('must not start with ":"')
    const connectionKey = c.connection.key!
    for (const l of lines) {
      const text = JSON.stringify(l)
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain(connectionKey)
    }
  })

  test('a connection that ends writes one line with the reason: closed by the client, or its socket gone', async () => {
    const c = await connectedClient(port, { key: ROOT_KEY }, binary)
    const id = c.connection.id!
    expect((await linesOf('realtime connected', id))[0]).toMatchObject({ clientId: false })
    c.close()
    await reach(c.connection, 'closed')
    const [ended] = await linesOf('realtime connection ended', id)
    expect(ended).toMatchObject({ level: 'debug', reason: 'closed by the client', resumable: false })

    const d = await connectedClient(port, { key: ROOT_KEY }, binary)
    const dropped = d.connection.id!
    node.server!.realtime.connection(dropped)!.terminate()
    const [gone] = await linesOf('realtime connection ended', dropped)
    expect(gone).toMatchObject({ level: 'debug', resumable: true })
    expect(String(gone!.reason)).toStartWith('socket closed')
    // the client resumes: one more "connected" line, resumed this time
    await reach(d.connection, 'connected')
    const again = await linesOf('realtime connected', dropped, 2)
    expect(again[1]).toMatchObject({ resumed: true })
    await Bun.sleep(100)
    expect(lines.filter((l) => l.msg === 'realtime connection ended' && l.connectionId === id)).toHaveLength(1)
  })

  test('a refused connection is logged at info with its error code, never the key', async () => {
    const before = lines.length
    const bad = realtimeClient(port, { key: 'testapp.rootkey:not-the-secret-at-all' }, binary)
    await reach(bad.connection, 'failed').catch(() => {})
    let refused: Line | undefined
    for (let i = 0; i < 200 && !refused; i++) {
      refused = lines.slice(before).find((l) => l.msg === 'realtime connection refused')
      if (!refused) await Bun.sleep(20)
    }
    expect(refused).toMatchObject({ level: 'info', statusCode: 401 })
    expect(String(refused!.code)).toStartWith('401')
    for (const l of lines) expect(JSON.stringify(l)).not.toContain('not-the-secret-at-all')
  })
})
