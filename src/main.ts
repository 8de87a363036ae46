import { createBackend } from './backend'
import { loadConfig, settingsTable } from './config'
import { createCore } from './core'
import { bootstrap } from './core/control/bootstrap'
import { systemClock } from './core/ports'
import { createLogger } from './lib/logger'
import { monitorEventLoop } from './lib/metrics'
import { buildApp, serve } from './server'

/** Composition root: config -> backend -> core -> server -> listen. */
async function main() {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`Messaging gateway. Settings (environment variables):\n\n${settingsTable()}\n`)
    return
  }
  const config = loadConfig()
  const log = createLogger(config.logLevel)
  // backend trouble (e.g. Redis reconnecting) is logged at most once per 5 s per message
  const lastLogged = new Map<string, number>()
  const backend = await createBackend(config, systemClock, (e) => {
    const msg = e instanceof Error ? e.message : String(e)
    const now = Date.now()
    if ((lastLogged.get(msg) ?? 0) > now - 5000) return
    lastLogged.set(msg, now)
    log.warn('backend error', { error: msg })
  })
  const core = createCore(backend, systemClock, config)
  const boot = await bootstrap(backend.control, systemClock, config)
  if (boot.created) {
    // printed once, on creation only: the operator's only chance to see generated secrets
    process.stdout.write(
      `\nBootstrap credentials (shown once):\n  account: ${boot.accountId}\n  app:     ${boot.appId}\n` +
      (boot.created.key ? `  key:     ${boot.created.key}\n` : '') +
      (boot.created.accessToken ? `  management access token: ${boot.created.accessToken}\n` : '') + '\n',
    )
  }
  monitorEventLoop()
  const app = buildApp(core, config, log)
  const server = serve(app, core, config, log, { port: config.port, hostname: config.host })
  log.info('listening', { port: server.port, host: config.host, backend: backend.kind, app: boot.appId })

  // Graceful shutdown: stop accepting, end event streams (clients resume elsewhere or after the
  // restart with their last event id), let in-flight requests finish, flush the store, exit.
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const forced = setTimeout(() => {
      log.warn('shutdown timed out; closing the remaining connections', { ms: config.shutdownTimeoutMs })
      void server.stop(true)
    }, config.shutdownTimeoutMs)
    const drained = server.stop(false)
    const streams = core.hub.disconnectAll()
    await drained
    clearTimeout(forced)
    core.chat.close()
    // webhook deliveries still queued get what is left of the shutdown bound
    const undelivered = await core.webhooks.settle(Math.max(0, config.shutdownTimeoutMs / 2))
    if (undelivered) log.warn('webhook messages not delivered before shutdown', { count: undelivered })
    await backend.close()
    log.info('stopped', { streams })
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}

main().catch((e) => {
  process.stderr.write(`fatal: ${e instanceof Error ? e.message : String(e)}\n`)
  process.exit(1)
})
