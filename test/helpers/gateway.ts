import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBackend } from '../../src/backend'
import { loadConfig, type Config } from '../../src/config'
import { createCore, type Core } from '../../src/core'
import { bootstrap } from '../../src/core/control/bootstrap'
import { systemClock, type Clock } from '../../src/core/ports'
import { createLogger } from '../../src/lib/logger'
import { buildApp, type App } from '../../src/server'

export const ROOT_KEY = 'testapp.rootkey:s3cr3t-root-secret'
export const ACCESS_TOKEN = 'test-management-access-token'
export const APP_ID = 'testapp'

export interface TestGateway {
  app: App
  core: Core
  config: Config
  key: string
  /** Sends a request to the app in-process (no port). `path` is relative to the root. */
  request(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>
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
  const config = loadConfig({}, { bootstrapKey: ROOT_KEY, bootstrapAccessToken: ACCESS_TOKEN, logLevel: 'silent', ...overrides, dataDir })
  const backend = await createBackend(config, clock)
  const core = createCore(backend, clock, config)
  await bootstrap(backend.control, clock, config)
  const app = buildApp(core, config, createLogger(config.logLevel))
  return {
    app, core, config, key: ROOT_KEY,
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
      if (app.server) await app.stop(true)
      await backend.close()
      if (ownDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Starts the gateway on a free port of 127.0.0.1; returns its base URL. */
export function listen(gw: TestGateway): string {
  gw.app.listen({ port: 0, hostname: '127.0.0.1', idleTimeout: 0, maxRequestBodySize: gw.config.maxBodySize + 1024 })
  return `http://127.0.0.1:${gw.app.server!.port}`
}
