import { helpText, parseArgs, USAGE } from './cli'
import { loadConfig, type Config } from './config'
import { allocatorRestartEnv } from './config/allocator'
import { createLogger, flushLogs } from './lib/logger'
import { VERSION } from './version'

/**
 * Composition root: command line -> config -> node (backend, core, app) -> listen -> bootstrap.
 * The node's modules are loaded only once the process keeps running: a start that must begin
 * again for the allocator's settings (restartForAllocator) does so before it loads them.
 */
async function main(): Promise<number | undefined> {
  const parsed = parseArgs(process.argv.slice(2))
  if ('error' in parsed) {
    process.stderr.write(`gateway: ${parsed.error}\n\n${USAGE}`)
    return 2
  }
  switch (parsed.command) {
    case 'help':
      process.stdout.write(helpText())
      return 0
    case 'version':
      process.stdout.write(`gateway ${VERSION} (bun ${Bun.version})\n`)
      return 0
    case 'healthcheck':
      return (await healthy(loadConfig())) ? 0 : 1
    case 'sandbox': {
      restartForAllocator()
      const { sandbox } = await import('./sandbox')
      await sandbox(parsed.sandbox)
      return undefined
    }
  }

  const config = loadConfig()
  restartForAllocator()
  const [{ createNode }, { supervise, supervisorGone }] = await Promise.all([import('./node'), import('./supervisor')])
  // WORKERS above 1: this process supervises that many workers (each one runs the lines below)
  if (config.workers > 1 && !config.workerId) return supervise(config)
  const orphaned = config.workerId ? supervisorGone() : undefined
  const node = await createNode(
    config,
    config.workerId ? { log: createLogger(config.logLevel, { worker: config.workerId }) } : {},
  )
  const { log } = node
  // the port first: a start that cannot listen exits before any credential is created
  let server
  try {
    server = node.listen()
  } catch (e) {
    await node.close()
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${e instanceof Error ? e.message : String(e)}`)
  }
  const boot = await node.bootstrap().catch(async (e) => {
    await node.close()
    throw e
  })
  if (boot.created) {
    // printed once, on creation only: the operator's only chance to see generated secrets
    process.stdout.write(
      `\nBootstrap credentials (shown once):\n  account: ${boot.accountId}\n  app:     ${boot.appId}\n` +
        (boot.created.key ? `  key:     ${boot.created.key}\n` : '') +
        (boot.created.accessToken ? `  management access token: ${boot.created.accessToken}\n` : '') +
        '\n',
    )
  }
  // the store must keep the data this node started on: checked every 5 s (and on every /ready)
  let problem: string | undefined
  setInterval(async () => {
    const now = (await node.core.health().catch(() => undefined))?.problem
    if (now && now !== problem) log.error('not ready: data', { problem: now })
    else if (!now && problem) log.info('ready again: the store holds the data this node started on')
    problem = now
  }, 5000).unref()
  log.info('listening', {
    port: server.port,
    host: config.host,
    backend: node.backend.kind,
    app: boot.appId,
    version: VERSION,
  })

  if (node.faults)
    log.warn('fault control API listening (test runs only: it cuts and forges traffic)', { url: node.faults.url })

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const streams = await node.shutdown()
    log.info('stopped', { streams })
    flushLogs()
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
  // a worker whose supervisor was killed (no SIGTERM passed on) stops too: no orphan keeps the port
  void orphaned?.then(() => stop('supervisor gone'))
  return undefined
}

/**
 * Bun's flags under which a process is not begun again: its CPU profiler samples the main thread
 * with a signal, which can reach the new program before that has a handler for it (it then dies
 * of SIGPWR: 2 starts in 15 here), and a profile or an inspector session would be cut anyway.
 */
const NOT_BEGUN_AGAIN = /^--(cpu-prof|heap-prof|inspect)/

/**
 * Begins this program again in this process (execve: the same process id and open files) when
 * its allocator does not yet keep freed memory as MEMORY_PURGE_DELAY_MS says (it reads that only
 * as a process starts): the executable, Bun's own flags, the script and the arguments, or a
 * compiled gateway's executable and the arguments. Returns when nothing is to be done, or when
 * that is not done or fails (said on stderr): the process then runs on with the allocator's
 * defaults.
 */
function restartForAllocator(): void {
  const env = allocatorRestartEnv()
  if (!env) return
  const flag = process.execArgv.find((a) => NOT_BEGUN_AGAIN.test(a))
  if (flag) {
    process.stderr.write(
      `gateway: not begun again for the allocator's settings under ${flag} (set MIMALLOC_PURGE_DELAY to MEMORY_PURGE_DELAY_MS's value in the environment to have them)\n`,
    )
    return
  }
  const compiled = process.argv[1]?.startsWith('/$bunfs/')
  const args = compiled
    ? [process.execPath, ...process.argv.slice(2)]
    : [process.execPath, ...process.execArgv, ...process.argv.slice(1)]
  try {
    if (!process.execve) throw new Error('this runtime has no process.execve')
    process.execve(process.execPath, args, env)
  } catch (e) {
    process.stderr.write(
      `gateway: cannot start again with the allocator's settings (MEMORY_PURGE_DELAY_MS): ${e instanceof Error ? e.message : String(e)}; running with its defaults\n`,
    )
  }
}

/** `gateway healthcheck`: GET /health of the node this environment configures (self-signed TLS accepted). */
async function healthy(config: Config): Promise<boolean> {
  const wildcard = config.host === '0.0.0.0' || config.host === '::' || config.host === ''
  const host = wildcard ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host
  const url = `${config.tlsCertFile ? 'https' : 'http'}://${host}:${config.port}/health`
  try {
    const r = await fetch(url, { tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(3000) } as RequestInit)
    return r.status === 200
  } catch (e) {
    process.stderr.write(`healthcheck: ${url}: ${e instanceof Error ? e.message : String(e)}\n`)
    return false
  }
}

main().then(
  (code) => {
    if (code !== undefined) process.exitCode = code
  },
  (e) => {
    process.stderr.write(`fatal: ${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(1)
  },
)
