import { afterAll, expect, test } from 'bun:test'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseClusterArgs } from '../../tools/cluster'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/** `npm run cluster` as docs/deployment.md runs it: a local Redis Cluster, two gateways on it, stopped. */
const ROOT = join(import.meta.dir, '..', '..')
const has = requireSystem(REDIS_SERVER, 'redis-server')
const dirs: string[] = []
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'gw-cluster-cmd-'))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) {
    // whatever a failed test left running goes too
    if (existsSync(join(d, 'cluster.json')))
      Bun.spawnSync([process.execPath, join(ROOT, 'tools/cluster.ts'), 'stop', '--dir', d])
    rmSync(d, { recursive: true, force: true })
  }
})

function npmCluster(args: string[]) {
  const r = Bun.spawnSync([Bun.which('npm')!, 'run', '--silent', 'cluster', '--', ...args], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
}

/** The settings the command printed, as a gateway's environment. */
const envOf = (out: string) =>
  Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => l.split(/=(.*)/s).slice(0, 2) as [string, string]),
  )

/** The pids of the cluster's nodes (from their pid files) and whether each still runs. */
function nodePids(dir: string): number[] {
  return readdirSync(dir)
    .filter((f) => /^\d+$/.test(f))
    .flatMap((f) => {
      try {
        return [Number(readFileSync(join(dir, f, 'redis.pid'), 'utf8'))]
      } catch {
        return []
      }
    })
}
const running = (pid: number) => {
  try {
    process.kill(pid, 0)
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

test.skipIf(!has)(
  'npm run cluster -- --detach: two gateways share it, stop leaves nothing running, start again keeps the data',
  async () => {
    const dir = tempDir()
    const up = npmCluster(['start', '--detach', '--dir', dir])
    expect(up.code).toBe(0)
    const env = envOf(up.out)
    expect(env.REDIS_CLUSTER).toBe('true')
    expect(env.REDIS_URL!.split(',')).toHaveLength(3)
    expect(readFileSync(join(dir, 'cluster.env'), 'utf8')).toBe(up.out)
    const pids = nodePids(dir)
    expect(pids).toHaveLength(3)
    expect(pids.every(running)).toBe(true)

    const nodes = [await GatewayNode.start(env), await GatewayNode.start(env)]
    try {
      const auth = { authorization: `Basic ${btoa(ROOT_KEY)}`, 'content-type': 'application/json' }
      const res = await fetch(`${nodes[0]!.url}/channels/news/messages`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'greeting', data: 'hello' }),
      })
      expect(res.status).toBe(201)
      const history = await (await fetch(`${nodes[1]!.url}/channels/news/messages`, { headers: auth })).json()
      expect(history.map((m: { data: string }) => m.data)).toEqual(['hello'])
    } finally {
      for (const n of nodes) await n.stop()
    }

    const down = npmCluster(['stop', '--dir', dir])
    expect(down.code).toBe(0)
    expect(pids.some(running)).toBe(false)
    expect(npmCluster(['status', '--dir', dir]).code).toBe(1)

    // the folder starts again as it was: same ports, its data kept (append-only files)
    const again = npmCluster(['--detach', '--dir', dir])
    expect(again.code).toBe(0)
    expect(again.out).toBe(up.out)
    const node = await GatewayNode.start(env)
    try {
      const auth = { authorization: `Basic ${btoa(ROOT_KEY)}` }
      const history = await (await fetch(`${node.url}/channels/news/messages`, { headers: auth })).json()
      expect(history.map((m: { data: string }) => m.data)).toEqual(['hello'])
    } finally {
      await node.stop()
    }
    expect(npmCluster(['stop', '--dir', dir]).code).toBe(0)
    expect(nodePids(dir).some(running)).toBe(false)
  },
  90_000,
)

test.skipIf(!has)(
  'in the foreground with replicas, SIGTERM stops every node and the command exits 0',
  async () => {
    const dir = tempDir()
    const proc = spawn(
      process.execPath,
      [join(ROOT, 'tools/cluster.ts'), '--dir', dir, '--replicas', '1', '--masters', '3'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    proc.stdout!.on('data', (d) => (out += d))
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)))
    for (let i = 0; i < 600 && !out.includes('REDIS_CLUSTER=true'); i++) await Bun.sleep(50)
    expect(envOf(out).REDIS_URL!.split(',')).toHaveLength(6)
    const pids = nodePids(dir)
    expect(pids).toHaveLength(6)
    expect(pids.every(running)).toBe(true)
    proc.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(pids.some(running)).toBe(false)
  },
  60_000,
)

test('arguments are checked before anything starts', () => {
  expect(parseClusterArgs([])).toMatchObject({ command: 'start', dir: 'data/redis-cluster', persist: true })
  expect(parseClusterArgs(['--masters', '0'])).toEqual({ error: '--masters takes an integer 1-100' })
  expect(parseClusterArgs(['--port', 'x'])).toEqual({ error: '--port takes an integer 1024-55535' })
  expect(parseClusterArgs(['frob'])).toEqual({ error: 'unknown command: frob' })
  expect(parseClusterArgs(['--bogus'])).toEqual({ error: 'unknown argument: --bogus' })
  const r = npmCluster(['--bogus'])
  expect(r.code).toBe(2)
  expect(r.err).toContain('Usage: npm run cluster')
})
