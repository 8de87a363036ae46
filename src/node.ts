import { createBackend } from './backend'
import type { Config } from './config'
import { createCore, type Core } from './core'
import { bootstrap, type BootstrapResult } from './core/control/bootstrap'
import type { Backend } from './backend/backend'
import { systemClock, systemTimers, type Clock } from './lib/clock'
import { clientAddress } from './api/http/access-log'
import { createLogger, type Logger } from './lib/logger'
import { monitorEventLoop, monitorProcess } from './lib/metrics'
import { VERSION } from './version'
import { buildApp, internalError, runtimeBodyLimit, serve, type App, type ListenOptions } from './server'
import { startFaults, type FaultControl } from './api/faults'

export type Server = ReturnType<typeof serve>

/**
 * One gateway node: config -> backend -> core -> app. The one place this wiring lives: `main.ts`
 * runs it as a process, the tests' helper builds it in-process. Nothing listens or is bootstrapped
 * until asked, so a process can bind its port before it creates (and prints) any credential.
 */
export interface GatewayNode {
  config: Config
  backend: Backend
  core: Core
  app: App
  log: Logger
  /** Set by `listen()`. */
  server?: Server
  /** The fault control API (FAULTS=on), started by `listen()`. */
  faults?: FaultControl
  /** Creates the bootstrap account, app, key and token the store lacks; `/ready` answers 503 until then. */
  bootstrap(): Promise<BootstrapResult>
  /** Starts serving (throws when the port cannot be bound). Defaults: the config's port and host. */
  listen(o?: ListenOptions): Server
  /**
   * Graceful stop: stop accepting, end event streams and realtime connections (DISCONNECTED:
   * clients resume elsewhere or after a restart), let in-flight requests finish within SHUTDOWN_TIMEOUT_MS, flush
   * queued webhooks within half of it, close the store. Resolves with the streams ended.
   */
  shutdown(): Promise<number>
  /** Immediate stop: connections closed, store closed (tests, failed starts). */
  close(): Promise<void>
}

export interface NodeOptions {
  clock?: Clock
  /** Default: a logger at the config's level. */
  log?: Logger
  /** Backend trouble (e.g. Redis reconnecting). Default: logged at warn, at most once per 5 s per message. */
  onBackendError?: (e: unknown) => void
}

export async function createNode(config: Config, o: NodeOptions = {}): Promise<GatewayNode> {
  const clock = o.clock ?? systemClock
  const log = o.log ?? createLogger(config.logLevel)
  const backend = await createBackend(config, clock, o.onBackendError ?? throttledWarn(log))
  const core = createCore(backend, clock, systemTimers, config)
  monitorEventLoop()
  monitorProcess({ version: VERSION, backend: backend.kind })
  let bootstrapped = false
  const app = buildApp(core, config, log, {
    ready: () => bootstrapped,
    addressOf: (r) => (node.server ? clientAddress(node.server, r) : undefined),
  })
  const node: GatewayNode = {
    config,
    backend,
    core,
    app,
    log,
    async bootstrap() {
      const result = await bootstrap(backend.control, clock, config)
      // the store must keep the data this node started on (checked by readiness)
      core.dataGuard.expect(result.epoch)
      bootstrapped = true
      return result
    },
    listen(l = { port: config.port, hostname: config.host }) {
      const server = serve(app, core, config, log, l)
      node.server = server
      if (config.faults) {
        try {
          node.faults = startFaults(
            config,
            {
              fetch: server.handlers.fetch,
              websocket: server.handlers.websocket,
              idleTimeoutSeconds: Math.ceil(config.idleConnectionTimeoutMs / 1000),
              maxRequestBodySize: runtimeBodyLimit(config.maxBodySize),
              error: (e) => internalError(e, log),
            },
            log,
          )
        } catch (e) {
          void server.stop(true)
          throw new Error(
            `the fault control API cannot listen on ${config.faultsHost}:${config.faultsPort}: ${e instanceof Error ? e.message : String(e)}`,
          )
        }
      }
      return server
    },
    async shutdown() {
      const server = node.server
      let streams = 0
      await node.faults?.close()
      if (server) {
        const forced = setTimeout(() => {
          log.warn('shutdown timed out; closing the remaining connections', { ms: config.shutdownTimeoutMs })
          void server.stop(true)
        }, config.shutdownTimeoutMs)
        const drained = server.stop(false)
        streams = core.streams.disconnectAll() + (await server.realtime.disconnectAll())
        server.realtime.close()
        await drained
        clearTimeout(forced)
      }
      core.close()
      const undelivered = await core.webhooks.settle(Math.max(0, config.shutdownTimeoutMs / 2))
      if (undelivered) log.warn('webhook messages not delivered before shutdown', { count: undelivered })
      await backend.close()
      return streams
    },
    async close() {
      await node.faults?.close()
      node.server?.realtime.close()
      core.close()
      if (node.server) await node.server.stop(true)
      await backend.close()
    },
  }
  return node
}

function throttledWarn(log: Logger) {
  const lastLogged = new Map<string, number>()
  return (e: unknown) => {
    const msg = e instanceof Error ? e.message : String(e)
    const now = Date.now()
    if ((lastLogged.get(msg) ?? 0) > now - 5000) return
    lastLogged.set(msg, now)
    log.warn('backend error', { error: msg })
  }
}
