import { afterAll, beforeAll } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import type { Backend } from '../../src/backend/backend'
import { loadConfig, type Config } from '../../src/config'
import type { Core } from '../../src/core'
import { systemClock, type Clock, type Timers } from '../../src/lib/clock'
import { createLogger } from '../../src/lib/logger'
import { createNode, type Server } from '../../src/node'
import type { App } from '../../src/server'
import { sharedRedis } from './redis'
import { sharedRedisCluster } from './redis-cluster'

export const ROOT_KEY = 'testapp.rootkey:s3cr3t-root-secret'
export const ACCESS_TOKEN = 'test-management-access-token'
export const APP_ID = 'testapp'

export interface TestGateway {
  app: App
  /** Set by `listen()`. */
  readonly server?: Server
  /** The fault control API's URL (FAULTS on), set by `listen()`. */
  readonly faultsUrl?: string
  core: Core
  /** The store under the core, for tests of a port's contract on either backend. */
  backend: Backend
  config: Config
  key: string
  /** Sends a request to the app in-process (no port). `path` is relative to the root. */
  request(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>
  listen(): string
  close(): Promise<void>
}

/** A settable clock for tests of expiry and windows. */
export class TestClock implements Clock {
  constructor(public t = Date.now()) {}
  now() {
    return this.t
  }
  advance(ms: number) {
    this.t += ms
  }
}

/** Timers fired by the test clock: `advance` moves it and runs what fell due, in order. */
export class ClockTimers implements Timers {
  private due: Array<{ at: number; fn: () => void; live: boolean }> = []
  constructor(private readonly clock: TestClock) {}
  after(ms: number, fn: () => void) {
    const t = { at: this.clock.now() + ms, fn, live: true }
    this.due.push(t)
    return () => void (t.live = false)
  }
  every() {
    return () => {}
  }
  /** A turn of the event loop is not the test clock's: the runtime's. */
  soon(fn: () => void) {
    setImmediate(fn)
  }
  advance(ms: number) {
    const until = this.clock.now() + ms
    for (;;) {
      const next = this.due.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at)[0]
      if (!next) break
      next.live = false
      this.clock.t = Math.max(this.clock.t, next.at)
      next.fn()
    }
    this.clock.t = until
  }
}

export const basic = (key: string) => 'Basic ' + Buffer.from(key).toString('base64')

/** Builds a gateway on a fresh (or given) data dir; nothing listens unless `listen()` is used. */
export async function createTestGateway(
  overrides: Partial<Config> = {},
  clock: Clock = systemClock,
): Promise<TestGateway> {
  const ownDir = overrides.dataDir === undefined
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'gw-test-'))
  // TEST_BACKEND=redis runs the same suites on Redis (a redis-server of the tests' own); the key
  // prefix follows the data dir, so a "restart" on the same dir finds the same data
  // (TEST_BACKEND=redis-cluster: the same on a Redis Cluster of the tests' own, 3 masters + 3 replicas)
  const redis =
    overrides.redisUrl !== undefined
      ? // a second gateway on the same cluster (its seed nodes are comma-separated)
        overrides.redisCluster === undefined && overrides.redisUrl.includes(',')
        ? { redisCluster: true }
        : {}
      : process.env.TEST_BACKEND === 'redis'
        ? { redisUrl: (await sharedRedis()).url, redisPrefix: `t:${basename(dataDir)}:` }
        : process.env.TEST_BACKEND === 'redis-cluster'
          ? { redisUrl: (await sharedRedisCluster()).url, redisCluster: true, redisPrefix: `t:${basename(dataDir)}:` }
          : {}
  // rate limits are off unless a test turns them on (test/limits)
  // REDIS_SKIP_OWN_NOTIFICATIONS=true in the tests' environment runs them with that setting on
  const config = loadConfig(
    { REDIS_SKIP_OWN_NOTIFICATIONS: process.env.REDIS_SKIP_OWN_NOTIFICATIONS },
    {
      bootstrapKey: ROOT_KEY,
      bootstrapAccessToken: ACCESS_TOKEN,
      logLevel: 'silent',
      rateLimits: false,
      ...redis,
      ...overrides,
      dataDir,
    },
  )
  const node = await createNode(config, {
    clock,
    log: createLogger(config.logLevel),
    onBackendError: (e) => {
      if (process.env.TEST_DEBUG) console.error('backend error:', e)
    },
  })
  await node.bootstrap()
  const { app } = node
  const gw: TestGateway = {
    app,
    core: node.core,
    backend: node.backend,
    config,
    key: ROOT_KEY,
    get server() {
      return node.server
    },
    get faultsUrl() {
      return node.faults?.url
    },
    listen: () => {
      const server = node.listen({ port: 0, hostname: '127.0.0.1' })
      return `${config.tlsCertFile ? 'https' : 'http'}://127.0.0.1:${server.port}`
    },
    async request(path, init = {}) {
      const headers = new Headers(init.headers)
      const key = init.key === undefined ? ROOT_KEY : init.key
      if (key && !headers.has('authorization')) headers.set('authorization', basic(key))
      let body = init.body
      if (init.json !== undefined) {
        body = JSON.stringify(init.json)
        if (!headers.has('content-type')) headers.set('content-type', 'application/json')
      }
      return app.handle(new Request('http://localhost' + path, { ...init, headers, body }))
    },
    async close() {
      await node.close()
      if (ownDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return gw
}

/** Starts the gateway on a free port of 127.0.0.1 (as main.ts serves it); returns its base URL. */
export const listen = (gw: TestGateway): string => gw.listen()

/** A file's gateway (`useGateway`): there once the file's tests run. */
export interface UsedGateway {
  readonly gw: TestGateway
  /** Its base URL on a free port of 127.0.0.1. */
  readonly base: string
}

/**
 * The setup most files share: a gateway built (with `overrides`) and listening before the file's
 * tests, closed after them. Call it at the top of the file; read `gw` and `base` in the tests.
 */
export function useGateway(overrides: Partial<Config> = {}, clock?: Clock): UsedGateway {
  let gw: TestGateway | undefined
  let base: string | undefined
  beforeAll(async () => {
    gw = await createTestGateway(overrides, clock)
    base = gw.listen()
  })
  afterAll(async () => {
    await gw?.close()
  })
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('useGateway: read before the tests run (its gateway is made in beforeAll)')
    return v
  }
  return {
    get gw() {
      return ready(gw)
    },
    get base() {
      return ready(base)
    },
  }
}

/**
 * Adds a key to the test app (all capabilities unless given) through the store, as an operator
 * would have created it; returns its key string `appId.id:secret`.
 */
export async function addKey(
  gw: TestGateway,
  id: string,
  opts: { secret?: string; capability?: Record<string, string[]>; revocableTokens?: boolean } = {},
): Promise<string> {
  const secret = opts.secret ?? `${id}-secret`
  await gw.backend.control.createKey({
    appId: APP_ID,
    id,
    name: id,
    secret,
    capability: opts.capability ?? { '*': ['*'] },
    status: 0,
    revocableTokens: opts.revocableTokens ?? false,
    created: 0,
    modified: 0,
  })
  return `${APP_ID}.${id}:${secret}`
}

/**
 * Adds an app `appId` to the test app's account, with one full-access key, through the store (as
 * an operator would have created them); returns its key string `appId.k:secret`.
 */
export async function addApp(gw: TestGateway, appId: string): Promise<string> {
  const control = gw.backend.control
  const { accountId } = (await control.getApp(APP_ID))!
  await control.createApp({
    id: appId,
    accountId,
    name: appId,
    status: 'enabled',
    tlsOnly: false,
    created: 0,
    modified: 0,
  })
  const k = { appId, id: 'k', name: 'k', secret: `${appId}-secret`, capability: { '*': ['*'] } }
  await control.createKey({ ...k, status: 0, revocableTokens: false, created: 0, modified: 0 })
  return `${appId}.k:${k.secret}`
}
