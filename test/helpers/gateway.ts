import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { createBackend } from '../../src/backend'
import type { Backend } from '../../src/core/ports'
import { loadConfig, type Config } from '../../src/config'
import { createCore, type Core } from '../../src/core'
import { bootstrap } from '../../src/core/control/bootstrap'
import { systemClock, type Clock } from '../../src/core/ports'
import { createLogger } from '../../src/lib/logger'
import { buildApp, serve, type App } from '../../src/server'
import { sharedRedis } from './redis'

export const ROOT_KEY = 'testapp.rootkey:s3cr3t-root-secret'
export const ACCESS_TOKEN = 'test-management-access-token'
export const APP_ID = 'testapp'

export interface TestGateway {
  app: App
  /** Set by `listen()`. */
  server?: ReturnType<typeof serve>
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
  now() { return this.t }
  advance(ms: number) { this.t += ms }
}

export const basic = (key: string) => 'Basic ' + Buffer.from(key).toString('base64')

/** Builds a gateway on a fresh (or given) data dir; nothing listens unless `listen()` is used. */
export async function createTestGateway(overrides: Partial<Config> = {}, clock: Clock = systemClock): Promise<TestGateway> {
  const ownDir = overrides.dataDir === undefined
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'gw-test-'))
  // TEST_BACKEND=redis runs the same suites on Redis (a redis-server of the tests' own); the key
  // prefix follows the data dir, so a "restart" on the same dir finds the same data
  const redis = process.env.TEST_BACKEND === 'redis' && overrides.redisUrl === undefined
    ? { redisUrl: (await sharedRedis()).url, redisPrefix: `t:${basename(dataDir)}:` }
    : {}
  // rate limits are off unless a test turns them on (test/limits)
  const config = loadConfig({}, { bootstrapKey: ROOT_KEY, bootstrapAccessToken: ACCESS_TOKEN, logLevel: 'silent', rateLimits: false, ...redis, ...overrides, dataDir })
  const backend = await createBackend(config, clock, (e) => { if (process.env.TEST_DEBUG) console.error('backend error:', e) })
  const core = createCore(backend, clock, config)
  await bootstrap(backend.control, clock, config)
  const log = createLogger(config.logLevel)
  const app = buildApp(core, config, log)
  const gw: TestGateway = {
    app, core, backend, config, key: ROOT_KEY,
    listen: () => {
      gw.server = serve(app, core, config, log, { port: 0, hostname: '127.0.0.1' })
      return `${config.tlsCertFile ? 'https' : 'http'}://127.0.0.1:${gw.server.port}`
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
      if (gw.server) await gw.server.stop(true)
      await backend.close()
      if (ownDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return gw
}

/** Starts the gateway on a free port of 127.0.0.1 (as main.ts serves it); returns its base URL. */
export const listen = (gw: TestGateway): string => gw.listen()
