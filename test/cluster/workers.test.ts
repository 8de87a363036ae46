/**
 * `WORKERS=N`: one command runs a supervisor and N gateway processes sharing one port over one
 * redis-server (the test's own). Worker processes are found through /proc (the supervisor's
 * children and the sockets they listen on) and told apart by the `serverId` (`host-pid`) a realtime
 * client is given in CONNECTED. A worker killed with SIGKILL is started again, and its realtime
 * client resumes on a worker that lives with nothing lost and nothing twice; SIGTERM to the
 * supervisor stops every worker, and so does a supervisor killed outright.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { ROOT_KEY } from '../helpers/gateway'
import { listens } from '../helpers/listening'
import { GatewayNode } from '../helpers/node-process'
import { closeClients, collect, connectedClient, reach, realtimeClient } from '../helpers/realtime'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
let supervisor: GatewayNode

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start()
  supervisor = await GatewayNode.start({
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'workers:',
    WORKERS: '2',
    // generated, so the "shown once" credentials are printed
    BOOTSTRAP_ACCESS_TOKEN: '',
    LOG_LEVEL: 'info',
  })
}, 60_000)
afterAll(async () => {
  closeClients()
  const pids = supervisor?.pid ? childrenOf(supervisor.pid) : []
  await supervisor?.stop()
  for (const pid of pids) kill(pid, 'SIGKILL')
  await redis?.stop()
})

/** The live (not zombie) processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = procStat(Number(entry))
    if (stat && stat.ppid === pid && stat.state !== 'Z') out.push(Number(entry))
  }
  return out
}

/** State and parent of a process from /proc/<pid>/stat, or undefined once it is gone. */
function procStat(pid: number): { state: string; ppid: number } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after the last `)`
  const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: state!, ppid: Number(ppid) }
}

const alive = (pid: number) => {
  const s = procStat(pid)
  return s !== undefined && s.state !== 'Z'
}

function kill(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal)
  } catch {
    /* gone already */
  }
}

/** The directories of the workers' sockets that supervisor `pid` made (`gateway-workers-<pid>-*` under the temp dir). */
const socketDirsOf = (pid: number) => readdirSync(tmpdir()).filter((n) => n.startsWith(`gateway-workers-${pid}-`))

/** Waits until `sup` has `n` children, all listening on its port, none of `except`; their pids. */
async function workersListening(sup: GatewayNode, n: number, except: number[] = [], ms = 30_000): Promise<number[]> {
  const deadline = Date.now() + ms
  for (;;) {
    const pids = childrenOf(sup.pid!).filter((p) => !except.includes(p))
    if (pids.length === n && pids.every((p) => listens(p, sup.port))) return pids.sort()
    if (Date.now() > deadline)
      throw new Error(
        `workers of ${sup.pid}: ${pids.join(',')} (listening: ${pids.filter((p) => listens(p, sup.port))})`,
      )
    await Bun.sleep(100)
  }
}

/** Waits until `cond` holds (polling), or fails with `what`. */
async function until(cond: () => boolean, what: string, ms = 30_000) {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`)
    await Bun.sleep(100)
  }
}

/** The pid of the worker a connected client is on (`serverId` of CONNECTED is `host-pid`). */
function workerOf(client: Ably.Realtime): number {
  const details = (client.connection as unknown as { connectionManager: { connectionDetails?: { serverId?: string } } })
    .connectionManager.connectionDetails
  const m = /-(\d+)$/.exec(details?.serverId ?? '')
  if (!m) throw new Error(`no serverId in ${JSON.stringify(details)}`)
  return Number(m[1])
}

/** A connected client of the supervisor's port whose connection a worker accepted for which `want` holds. */
async function clientOn(want: (pid: number) => boolean): Promise<Ably.Realtime> {
  for (let i = 0; i < 60; i++) {
    const c = await connectedClient(supervisor.port, { key: ROOT_KEY })
    if (want(workerOf(c))) return c
    c.close()
  }
  throw new Error('no connection reached the worker wanted')
}

describe.skipIf(!available)('WORKERS on Redis', () => {
  test('two worker processes answer on one port, each a node; the credentials are printed once', async () => {
    const pids = await workersListening(supervisor, 2)
    expect(pids).not.toContain(supervisor.pid!)
    // both bootstrapped (a worker listens before it bootstraps): /ready on 20 fresh connections in a row
    for (let ok = 0, t = 0; ok < 20; t++) {
      if (t > 400) throw new Error(`workers not ready: ${supervisor.log}`)
      const r = await fetch(`${supervisor.url}/ready`, { headers: { connection: 'close' } })
      ok = r.status === 200 ? ok + 1 : 0
    }
    // connections are spread by the kernel: realtime clients reach both workers
    const seen = new Set<number>()
    for (let i = 0; i < 60 && seen.size < 2; i++) {
      const c = await connectedClient(supervisor.port, { key: ROOT_KEY })
      seen.add(workerOf(c))
      c.close()
    }
    expect([...seen].sort()).toEqual(pids)
    // one log stream: the supervisor's stdout carries every worker's lines, each marked
    await until(() => /"msg":"listening".*"worker":1\b/.test(supervisor.log), 'worker 1 logged')
    await until(() => /"msg":"listening".*"worker":2\b/.test(supervisor.log), 'worker 2 logged')
    // every worker bootstraps; only the one that seeded Redis prints
    expect(supervisor.log.match(/Bootstrap credentials \(shown once\)/g)).toHaveLength(1)
    expect(supervisor.log.match(/management access token: \S+/g)).toHaveLength(1)
  }, 60_000)

  test('comet: whichever worker a request of a connection reaches, it is served by the one holding it (never 80003)', async () => {
    await workersListening(supervisor, 2)
    // raw: every request on a new TCP connection (the kernel picks a worker per connection)
    const close = { connection: 'close' }
    const r = await fetch(`${supervisor.url}/comet/connect?v=6&key=${encodeURIComponent(ROOT_KEY)}`, { headers: close })
    const [connected] = (await r.json()) as Array<{ action: number; connectionDetails: { connectionKey: string } }>
    expect(connected!.action).toBe(4)
    const base = `${supervisor.url}/comet/${encodeURIComponent(connected!.connectionDetails.connectionKey)}`
    const answers: string[] = []
    for (let i = 0; i < 40; i++) {
      const sent = await fetch(`${base}/send`, {
        method: 'POST',
        headers: { ...close, 'content-type': 'application/json' },
        body: JSON.stringify([{ action: 0, id: `ping-${i}` }]),
      })
      answers.push(`send ${i}: ${sent.status} ${await sent.text()}`)
      // the HEARTBEAT is echoed on the poll of the worker that holds the connection
      const poll = await fetch(`${base}/recv`, { headers: close })
      answers.push(`recv ${i}: ${poll.status} ${await poll.text()}`.trim())
    }
    const expected = Array.from({ length: 40 }, (_, i) => [
      `send ${i}: 204 `,
      `recv ${i}: 200 ${JSON.stringify([{ action: 0, id: `ping-${i}` }])}`,
    ]).flat()
    expect(answers).toEqual(expected)

    // the official client over comet: connected throughout, every publish ACKed and received
    const c = realtimeClient(supervisor.port, { key: ROOT_KEY, transports: ['comet'] }, false)
    await reach(c.connection, 'connected')
    const id = c.connection.id
    const changes: string[] = []
    c.connection.on((change) => changes.push(change.current))
    const ch = c.channels.get('workers-comet')
    const got = await collect(ch)
    const sent: string[] = []
    for (let i = 0; i < 30; i++) {
      await ch.publish('n', `m${i}`)
      sent.push(`m${i}`)
    }
    await got.until(30)
    expect(got.messages.map((m) => m.data)).toEqual(sent)
    expect(changes).toEqual([])
    expect(c.connection.id).toBe(id)
    closeClients()
  }, 60_000)

  test('kill -9 a worker: it is started again, and its realtime client resumes on a live worker with nothing lost', async () => {
    const before = await workersListening(supervisor, 2)
    const sub = await clientOn(() => true)
    const victim = workerOf(sub)
    const pub = await clientOn((pid) => pid !== victim)
    const id = sub.connection.id!
    const ids: string[] = []
    sub.connection.on('connected', () => ids.push(sub.connection.id!))
    const ch = sub.channels.get('workers-failover')
    const got = await collect(ch)
    const resumed: boolean[] = []
    ch.on('attached', (c) => resumed.push(c.resumed))
    ch.on('update', (c) => resumed.push(c.resumed))

    const out = pub.channels.get('workers-failover')
    const sent: string[] = []
    for (let i = 0; i < 100; i++) {
      if (i === 50) kill(victim, 'SIGKILL')
      await out.publish('n', `m${i}`)
      sent.push(`m${i}`)
    }
    await got.until(100, 20_000)
    expect(got.messages.map((m) => m.data)).toEqual(sent)
    expect(new Set(got.messages.map((m) => m.id)).size).toBe(100)
    // the same connection, resumed on a worker that lives, the channel with no discontinuity
    expect(ids).toEqual([id])
    expect(sub.connection.id).toBe(id)
    expect(resumed).toEqual([true])
    expect(workerOf(sub)).not.toBe(victim)

    // the supervisor started a new worker in the victim's place, listening on the port
    const after = await workersListening(supervisor, 2, [victim])
    expect(after).not.toContain(victim)
    expect(after.filter((p) => before.includes(p))).toHaveLength(1)
    expect(supervisor.log).toContain('worker exited; restarting it')
    await out.publish('n', 'after')
    await got.until(101)
    expect(got.messages.length).toBe(101)
    closeClients()
  }, 60_000)

  test('SIGTERM to the supervisor stops every worker, then the supervisor', async () => {
    const pids = await workersListening(supervisor, 2)
    // the workers' sockets (comet hand-over) are in the supervisor's private directory
    expect(socketDirsOf(supervisor.pid!)).toHaveLength(1)
    kill(supervisor.pid!, 'SIGTERM')
    await until(() => supervisor.exit.code !== null || supervisor.exit.signal !== null, 'supervisor exited')
    expect(supervisor.exit).toEqual({ code: 0, signal: null })
    await until(() => !pids.some(alive), 'workers gone', 10_000)
    expect(supervisor.log).toContain('"msg":"stopped","workers":2')
    expect(socketDirsOf(supervisor.pid!)).toEqual([])
  }, 60_000)

  test('a supervisor killed outright (SIGKILL) leaves no worker behind', async () => {
    const sup = await GatewayNode.start({ REDIS_URL: redis.url, REDIS_PREFIX: 'workers:', WORKERS: '2' })
    try {
      const pids = await workersListening(sup, 2)
      await sup.kill('SIGKILL')
      // each worker sees its supervisor gone (its stdin pipe closes) and drains as on SIGTERM
      await until(() => !pids.some(alive), `workers ${pids} still running`)
      // its socket directory is left, and removed by the next supervisor that starts
      expect(socketDirsOf(sup.pid!)).toHaveLength(1)
      const next = await GatewayNode.start({ REDIS_URL: redis.url, REDIS_PREFIX: 'workers:', WORKERS: '2' })
      expect(socketDirsOf(sup.pid!)).toEqual([])
      const nextWorkers = childrenOf(next.pid!)
      await next.kill('SIGTERM') // which removes its own
      await next.stop()
      for (const pid of nextWorkers) kill(pid, 'SIGKILL')
      expect(socketDirsOf(next.pid!)).toEqual([])
    } finally {
      const left = sup.pid ? childrenOf(sup.pid) : []
      await sup.stop()
      for (const pid of left) kill(pid, 'SIGKILL')
    }
  }, 60_000)
})

describe('WORKERS settings', () => {
  test('embedded store: WORKERS above 1 is refused at start, naming REDIS_URL', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-workers-'))
    try {
      const r = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', '..', 'src', 'main.ts')], {
        env: { ...process.env, WORKERS: '2', REDIS_URL: '', DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1' },
        stdout: 'pipe',
        stderr: 'pipe',
        timeout: 30_000,
      })
      expect(r.exitCode).toBe(1)
      expect(r.stderr.toString()).toContain('WORKERS=2 needs REDIS_URL')
      // refused before the store was touched
      expect(readdirSync(dir)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  test('WORKERS: 1 by default, auto is one per CPU on Redis and 1 on the embedded store; bounds checked', () => {
    const redisUrl = 'redis://127.0.0.1:1'
    expect(loadConfig({}).workers).toBe(1)
    expect(loadConfig({ WORKERS: 'auto', REDIS_URL: redisUrl }).workers).toBe(Math.min(availableParallelism(), 256))
    expect(loadConfig({ WORKERS: 'auto' }).workers).toBe(1)
    expect(loadConfig({ WORKERS: '8', REDIS_URL: redisUrl }).workers).toBe(8)
    expect(() => loadConfig({ WORKERS: '2' })).toThrow(/WORKERS=2 needs REDIS_URL/)
    for (const bad of ['0', '257', '1.5', 'all'])
      expect(() => loadConfig({ WORKERS: bad, REDIS_URL: redisUrl })).toThrow(
        /WORKERS: must be an integer in \[1, 256\]/,
      )
    expect(() => loadConfig({ WORKERS: '2', REDIS_URL: redisUrl, PORT: '0' })).toThrow(/needs a fixed PORT/)
    // a worker (WORKER_ID set) serves: it is never refused for what its supervisor was allowed
    expect(loadConfig({ WORKERS: '2', REDIS_URL: redisUrl, WORKER_ID: '2' }).workerId).toBe(2)
    expect(() => loadConfig({ WORKER_ID: '0' })).toThrow(/WORKER_ID/)
  })
})
