/**
 * One backend's run, inside the private network and mount namespace that run.ts made for it: the
 * loopback interface up (and 10/8 silently dropped), the sandbox names on 127.0.0.1, the stand-in
 * for the test-support hosts (echo-server.ts) on https port 443 of ECHO_ADDRESS, the backend's
 * Redis (if any) and the gateway on https port 443 with sandbox provisioning on, then every planned
 * file in its own process under a wall limit. Writes `<out>/<backend>.json`.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, appendFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { BUN, installCleanup, spawnTracked, stopProcess, waitForOk } from '../bench/lib/processes'
import { startRedis } from '../bench/lib/redis-server'
import { startRedisCluster } from '../bench/lib/redis-cluster-server'
import { ECHO_ADDRESS, startEchoServer } from './echo-server'
import { readResults, type FileResult } from './results'
import { SANDBOX_URL, type RunTls } from './sandbox-host'
import { commandFor, FAULTS_PORT, SUITES } from './suites'

export type Backend = 'embedded' | 'redis' | 'cluster'

export interface Plan {
  backend: Backend
  tls: RunTls
  files: Array<{ suite: string; root: string; file: string }>
  wallSeconds: number
  out: string
}

const ROOT = resolve(import.meta.dir, '..')

function sh(cmd: string[]): void {
  const r = Bun.spawnSync(cmd, { stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')}: ${r.stderr}`)
}

async function backendEnv(backend: Backend, logDir: string): Promise<Record<string, string>> {
  if (backend === 'redis') return { REDIS_URL: (await startRedis(logDir)).url }
  if (backend === 'cluster') return { REDIS_URL: (await startRedisCluster(logDir, 3)).url, REDIS_CLUSTER: 'true' }
  return { REDIS_URL: '' }
}

async function startGateway(plan: Plan, env: Record<string, string>, n: number): Promise<Subprocess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'conformance-data-'))
  const proc = spawnTracked([BUN, join(ROOT, 'src/main.ts')], {
    env: {
      ...env,
      PORT: '443',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      TLS_CERT_FILE: plan.tls.cert,
      TLS_KEY_FILE: plan.tls.key,
      SANDBOX_PROVISIONING: 'true',
      // as `gateway sandbox` runs for test suites: the suites' apps share one account here, and a
      // file's bursts of REST object reads passed the default 50/s of one account
      RATE_LIMITS: 'off',
      // the fault API (loopback, inside the run's namespace): the uts-proxy suite's control host
      FAULTS: 'on',
      FAULTS_PORT: String(FAULTS_PORT),
      LOG_LEVEL: 'warn',
    },
    stdout: join(plan.out, plan.backend, `gateway-${n}.log`),
    stderr: join(plan.out, plan.backend, `gateway-${n}.err.log`),
  })
  void proc.exited.then(() => rmSync(dataDir, { recursive: true, force: true }))
  await waitForOk(`${SANDBOX_URL}/ready`, proc, 30_000, { tls: { ca: readFileSync(plan.tls.ca, 'utf8') } })
  return proc
}

async function main(): Promise<void> {
  const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Plan
  installCleanup()
  sh(['ip', 'link', 'set', 'lo', 'up'])
  // 10/8 is routed into loopback, where nothing answers for it (no forwarding): a connection there
  // hangs as on a real network (the suites use 10.255.255.1 for a host that times out); any other
  // address outside fails at once
  sh(['ip', 'route', 'add', '10.0.0.0/8', 'dev', 'lo'])
  sh(['mount', '--bind', plan.tls.hosts, '/etc/hosts'])
  // names outside the hosts file fail at once: the resolver asks loopback, where no DNS server listens
  sh(['mount', '--bind', plan.tls.resolver, '/etc/resolv.conf'])
  const logDir = join(plan.out, plan.backend)
  mkdirSync(logDir, { recursive: true })
  const echoLog = join(logDir, 'echo-server.log')
  startEchoServer({
    hostname: ECHO_ADDRESS,
    port: 443,
    tls: { cert: readFileSync(plan.tls.cert, 'utf8'), key: readFileSync(plan.tls.key, 'utf8') },
    log: (line) => appendFileSync(echoLog, `${new Date().toISOString()} ${line}\n`),
  })
  const env = await backendEnv(plan.backend, logDir)
  let starts = 1
  let gateway = await startGateway(plan, env, starts)
  const results: Array<FileResult & { suite: string }> = []
  for (const { suite: name, root, file } of plan.files) {
    const suite = SUITES.find((s) => s.name === name)!
    if (gateway.exitCode !== null || gateway.signalCode !== null) gateway = await startGateway(plan, env, ++starts)
    const slug = `${name}--${file.replace(/[^\w.-]+/g, '_')}`
    const resultsPath = join(logDir, `${slug}.results`)
    rmSync(resultsPath, { force: true })
    const c = commandFor(suite, root, file, resultsPath, SANDBOX_URL)
    const started = performance.now()
    const proc = Bun.spawn(['timeout', '-k', '15', String(plan.wallSeconds), ...c.cmd], {
      cwd: root,
      env: { ...process.env, ...c.env, NODE_EXTRA_CA_CERTS: plan.tls.ca, CI: 'true' },
      stdin: 'ignore',
      stdout: Bun.file(join(logDir, `${slug}.log`)),
      stderr: 'pipe',
    })
    const errText = await new Response(proc.stderr).text()
    const code = await proc.exited
    appendFileSync(join(logDir, `${slug}.log`), errText)
    const seconds = Math.round((performance.now() - started) / 100) / 10
    const r = {
      suite: name,
      ...readResults(
        suite.runner,
        resultsPath,
        file,
        code === 124 || code === 137,
        seconds,
        join(logDir, `${slug}.log`),
      ),
    }
    results.push(r)
    const gone = gateway.exitCode !== null || gateway.signalCode !== null ? ' (the gateway exited)' : ''
    console.log(
      `[${plan.backend}] ${name} ${basename(file)}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped, ${r.notRun} not run, ${seconds} s${r.ending === 'ok' ? '' : `, ${r.ending}`}${gone}`,
    )
    writeFileSync(
      join(plan.out, `${plan.backend}.json`),
      JSON.stringify({ backend: plan.backend, gatewayStarts: starts, results }, null, 1),
    )
  }
  await stopProcess(gateway)
  process.exit(0)
}

await main()
