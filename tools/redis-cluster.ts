/**
 * A local Redis Cluster: M masters with R replicas each, on free or given ports, every node's
 * files under one folder (`<dir>/<port>/`: nodes.conf, its log, its pid file, its append-only
 * files when persisting). Formed without `redis-cli --cluster create` (which wants 3 masters at
 * least): each master takes an even share of the 16384 slots (CLUSTER ADDSLOTSRANGE, Redis 7),
 * the nodes meet, and each replica follows its master (CLUSTER REPLICATE). A folder that already
 * holds a cluster (its `cluster.json`) is started again as it was, data included.
 *
 * One code for `npm run cluster` (tools/cluster.ts), the tests (test/helpers/redis-cluster.ts)
 * and the benchmarks (bench/lib/redis-cluster-server.ts); they differ only in how a node process
 * is spawned and whether it persists.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const SLOTS = 16384

/** A running redis-server process as the cluster needs it. */
export interface NodeProcess {
  pid: number
  kill(signal?: NodeJS.Signals): void
  /** Resolves when the process has exited. */
  exited: Promise<unknown>
}

export interface ClusterOptions {
  /** The folder holding every node's files (created; a cluster already there is reopened). */
  dir: string
  masters?: number
  /** Replicas per master (default 0). */
  replicas?: number
  /** The first of masters x (1 + replicas) consecutive ports; default: free ports. */
  port?: number
  /** Append-only persistence (fsync every second): a restart of the folder keeps the data. */
  persist?: boolean
  /** How long a master may be unreachable before its replica takes over (ms, default 5000). */
  nodeTimeoutMs?: number
  /** Start the nodes as daemons (they outlive this process; stop them with stopClusterIn). */
  detach?: boolean
  /** How a node is started (default Bun.spawn, output to its folder's redis.log); not with detach. */
  spawn?: (argv: string[], port: number) => NodeProcess
}

/** What `cluster.json` in the folder records, so the folder can be started and stopped again. */
export interface ClusterLayout {
  masters: number
  replicas: number
  ports: number[]
  persist: boolean
  nodeTimeoutMs: number
}

export class LocalRedisCluster {
  readonly procs = new Map<number, NodeProcess>()
  private constructor(
    readonly dir: string,
    readonly layout: ClusterLayout,
    private readonly opts: ClusterOptions,
  ) {}

  get ports() {
    return this.layout.ports
  }
  /** The seed nodes, as REDIS_URL takes them with REDIS_CLUSTER=true. */
  get url() {
    return this.ports.map((p) => `redis://127.0.0.1:${p}`).join(',')
  }
  /** The gateway's settings for this cluster, one `NAME=value` a line. */
  get env() {
    return `REDIS_URL=${this.url}\nREDIS_CLUSTER=true\n`
  }
  get pids(): number[] {
    return this.ports.map((p) => this.procs.get(p)?.pid ?? readPid(this.dir, p)).filter((p): p is number => !!p)
  }

  static async start(opts: ClusterOptions): Promise<LocalRedisCluster> {
    const dir = resolve(opts.dir)
    mkdirSync(dir, { recursive: true })
    const known = readLayout(dir)
    const layout: ClusterLayout = known ?? {
      masters: opts.masters ?? 3,
      replicas: opts.replicas ?? 0,
      ports: [],
      persist: opts.persist ?? false,
      nodeTimeoutMs: opts.nodeTimeoutMs ?? 5000,
    }
    if (!known) {
      if (layout.masters < 1 || layout.replicas < 0) throw new Error('a cluster needs 1 master or more')
      layout.ports = await choosePorts(layout.masters * (1 + layout.replicas), opts.port)
    } else {
      for (const p of layout.ports)
        if (pidAlive(readPid(dir, p))) throw new Error(`${dir} is in use: its node on port ${p} is running`)
    }
    const c = new LocalRedisCluster(dir, layout, opts)
    try {
      for (const p of layout.ports) c.startNode(p)
      for (const p of layout.ports) await c.waitUp(p)
      if (!known) {
        await c.form()
        writeFileSync(join(dir, 'cluster.json'), JSON.stringify(layout, null, 2) + '\n')
      }
      await c.waitOk()
      writeFileSync(join(dir, 'cluster.env'), c.env)
    } catch (e) {
      await c.stop()
      if (!known) rmSync(dir, { recursive: true, force: true })
      throw e
    }
    return c
  }

  /** Starts (or starts again) the node of `port` with its node file and data. */
  startNode(port: number) {
    const nodeDir = join(this.dir, String(port))
    mkdirSync(nodeDir, { recursive: true })
    const storage = this.layout.persist
      ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']
      : ['--appendonly', 'no', '--save', '']
    const argv = [
      redisServer(),
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--protected-mode',
      'no',
      '--cluster-enabled',
      'yes',
      // the address every node gives in CLUSTER SLOTS (one alone in its cluster would give none)
      '--cluster-announce-ip',
      '127.0.0.1',
      '--cluster-config-file',
      join(nodeDir, 'nodes.conf'),
      '--cluster-node-timeout',
      String(this.layout.nodeTimeoutMs),
      '--dir',
      nodeDir,
      '--pidfile',
      join(nodeDir, 'redis.pid'),
      ...storage,
    ]
    if (this.opts.detach) {
      const r = Bun.spawnSync([...argv, '--daemonize', 'yes', '--logfile', join(nodeDir, 'redis.log')])
      if (r.exitCode !== 0) throw new Error(`redis-server on ${port} did not start: ${r.stderr}`)
      return
    }
    const proc =
      this.opts.spawn?.(argv, port) ??
      Bun.spawn(argv, { stdin: 'ignore', stdout: Bun.file(join(nodeDir, 'redis.log')), stderr: 'inherit' })
    this.procs.set(port, proc)
  }

  private async waitUp(port: number) {
    await until(async () => (await cli(port, 'PING')).trim() === 'PONG', `redis-server on ${port} did not start`)
  }

  /** Slots to the masters, every node met, each replica following its master. */
  private async form() {
    const { masters, ports } = this.layout
    const ids = await Promise.all(ports.map(async (p) => (await cli(p, 'CLUSTER', 'MYID')).trim()))
    // distinct config epochs, as redis-cli --cluster create sets them: no collision to resolve
    for (const [i, p] of ports.entries()) await cli(p, 'CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1))
    for (let i = 0; i < masters; i++) {
      const from = Math.floor((i * SLOTS) / masters)
      const to = Math.floor(((i + 1) * SLOTS) / masters) - 1
      await cli(ports[i]!, 'CLUSTER', 'ADDSLOTSRANGE', String(from), String(to))
    }
    for (const p of ports.slice(1)) await cli(ports[0]!, 'CLUSTER', 'MEET', '127.0.0.1', String(p))
    await until(async () => {
      for (const p of ports) {
        const lines = (await cli(p, 'CLUSTER', 'NODES')).trim().split('\n')
        if (lines.length < ports.length || lines.some((l) => /handshake|noaddr/.test(l))) return false
      }
      return true
    }, 'the Redis Cluster nodes did not meet')
    for (let i = masters; i < ports.length; i++)
      await cli(ports[i]!, 'CLUSTER', 'REPLICATE', ids[(i - masters) % masters]!)
  }

  /** Waits until every live node reports `cluster_state:ok` and every replica's link to its master is up. */
  async waitOk(timeoutMs = 30_000) {
    await until(
      async () => {
        for (const p of this.ports) {
          if (!this.alive(p)) continue
          if (!(await cli(p, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false
          const repl = await cli(p, 'INFO', 'replication')
          if (repl.includes('role:slave') && !repl.includes('master_link_status:up')) return false
        }
        return true
      },
      'the Redis Cluster did not reach cluster_state:ok',
      timeoutMs,
    )
  }

  /** Whether the node of `port` runs (a child of this process, or a daemon by its pid file). */
  alive(port: number): boolean {
    return pidAlive(this.procs.get(port)?.pid ?? readPid(this.dir, port))
  }

  /** SIGKILL of one node (a master: its replica is promoted after the node timeout). */
  async kill(port: number): Promise<void> {
    const p = this.procs.get(port)
    if (p) {
      p.kill('SIGKILL')
      await p.exited
      this.procs.delete(port)
    } else await stopPid(readPid(this.dir, port), 'SIGKILL')
  }

  /** Stops every node (SIGTERM: a persisting node writes its last commands), the folder stays. */
  stop = async () => {
    await Promise.all(
      this.ports.map(async (port) => {
        const p = this.procs.get(port)
        this.procs.delete(port)
        if (p) {
          p.kill('SIGTERM')
          const t = setTimeout(() => p.kill('SIGKILL'), 5000)
          await p.exited
          clearTimeout(t)
        } else await stopPid(readPid(this.dir, port))
      }),
    )
  }
}

/** Stops the nodes of the cluster in `dir` (started detached, or left by a process that died). */
export async function stopClusterIn(dir: string): Promise<number> {
  const layout = readLayout(resolve(dir))
  if (!layout) throw new Error(`no cluster in ${resolve(dir)} (no cluster.json)`)
  let stopped = 0
  await Promise.all(
    layout.ports.map(async (p) => {
      const pid = readPid(resolve(dir), p)
      if (pidAlive(pid)) stopped++
      await stopPid(pid)
    }),
  )
  return stopped
}

/** The ports of the cluster in `dir` and which of its nodes run. */
export function clusterStatus(dir: string): { layout: ClusterLayout; running: number[] } | undefined {
  const layout = readLayout(resolve(dir))
  if (!layout) return undefined
  return { layout, running: layout.ports.filter((p) => pidAlive(readPid(resolve(dir), p))) }
}

export function readLayout(dir: string): ClusterLayout | undefined {
  const f = join(dir, 'cluster.json')
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as ClusterLayout) : undefined
}

/** Whether `dir` can take a new cluster (absent, empty, or one of ours). */
export function folderUsable(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0 || !!readLayout(dir)
}

export function redisServer(): string {
  const bin = Bun.which('redis-server') ?? (existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : undefined)
  if (!bin) throw new Error('redis-server not found on PATH (Debian: apt-get install redis-server; Redis 7 or newer)')
  return bin
}

function redisCli(): string {
  const bin = Bun.which('redis-cli') ?? (existsSync('/usr/bin/redis-cli') ? '/usr/bin/redis-cli' : undefined)
  if (!bin) throw new Error('redis-cli not found on PATH (Debian: apt-get install redis-tools)')
  return bin
}

/** Runs redis-cli against one node; its output, or an error (also for an `ERR` answer). */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const p = Bun.spawn([redisCli(), '-h', '127.0.0.1', '-p', String(port), ...args], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0 || /^(ERR|Could not connect)/m.test(out)) throw new Error(`redis-cli ${args.join(' ')}: ${out}${err}`)
  return out
}

const portFree = (port: number) => {
  try {
    Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}

/** n ports whose cluster bus port (+10000) is free too: from `first` on, or any the OS hands out. */
async function choosePorts(n: number, first?: number): Promise<number[]> {
  if (first !== undefined) {
    const ports = Array.from({ length: n }, (_, i) => first + i)
    if (ports.at(-1)! + 10000 > 65535) throw new Error(`ports up to ${ports.at(-1)} leave no room for the bus (+10000)`)
    const taken = ports.filter((p) => !portFree(p) || !portFree(p + 10000))
    if (taken.length) throw new Error(`ports in use: ${taken.map((p) => `${p} or ${p + 10000}`).join(', ')}`)
    return ports
  }
  const ports: number[] = []
  while (ports.length < n) {
    const l = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const p = l.port
    l.stop(true)
    if (p < 55000 && !ports.includes(p) && portFree(p + 10000)) ports.push(p)
  }
  return ports.sort((a, b) => a - b)
}

function readPid(dir: string, port: number): number | undefined {
  try {
    return Number(readFileSync(join(dir, String(port), 'redis.pid'), 'utf8').trim()) || undefined
  } catch {
    return undefined
  }
}

/** Whether `pid` is a running redis-server (not a zombie, not another program given a stale pid). */
function pidAlive(pid: number | undefined): boolean {
  if (!pid) return false
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    if (/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server')
  } catch {
    return true // no /proc: trust the signal
  }
}

async function stopPid(pid: number | undefined, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000) {
  if (!pidAlive(pid)) return
  process.kill(pid!, signal)
  const end = Date.now() + graceMs
  while (pidAlive(pid)) {
    if (Date.now() > end) process.kill(pid!, 'SIGKILL')
    await Bun.sleep(50)
  }
}

async function until(ok: () => Promise<boolean>, message: string, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs
  for (;;) {
    try {
      if (await ok()) return
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(message)
    await Bun.sleep(50)
  }
}
