/**
 * `npm run cluster`: a local Redis Cluster for the gateway (REDIS_URL + REDIS_CLUSTER=true), every
 * node's files under one folder. In the foreground it runs until Ctrl-C / SIGTERM and then stops
 * every node; with --detach it leaves them running for `npm run cluster -- stop`.
 */
import { resolve } from 'node:path'
import { clusterStatus, folderUsable, LocalRedisCluster, readLayout, stopClusterIn } from './redis-cluster'

export const USAGE = `Usage: npm run cluster -- [start] [options]    start a local Redis Cluster
       npm run cluster -- stop [--dir DIR]      stop the cluster of DIR
       npm run cluster -- status [--dir DIR]    its ports and which nodes run

Options of start:
  --masters N    masters, each with an even share of the slots (default 3)
  --replicas N   replicas per master (default 0)
  --port P       ports P, P+1, ... (and P+10000, ... for the cluster bus); default: free ports
  --dir DIR      the folder of every node's files (default data/redis-cluster); a folder that
                 holds a cluster is started again as it was, with its data and ports
  --no-persist   keep no data (default: append-only files, fsync every second)
  --detach       start the nodes in the background and exit (stop them with: stop --dir DIR)

Prints the gateway's settings (REDIS_URL=... and REDIS_CLUSTER=true) on stdout, and writes them to
DIR/cluster.env. Needs redis-server and redis-cli 7 or newer (Debian: apt-get install redis-server).
`

interface Args {
  command: 'start' | 'stop' | 'status' | 'help'
  masters?: number
  replicas?: number
  port?: number
  dir: string
  persist: boolean
  detach: boolean
}

export function parseClusterArgs(argv: string[]): Args | { error: string } {
  const a: Args = { command: 'start', dir: 'data/redis-cluster', persist: true, detach: false }
  const rest = [...argv]
  if (rest[0] && !rest[0].startsWith('-')) {
    const c = rest.shift()!
    if (c !== 'start' && c !== 'stop' && c !== 'status' && c !== 'help') return { error: `unknown command: ${c}` }
    a.command = c
  }
  const int = (name: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v)
    if (!/^\d+$/.test(v ?? '') || n < min || n > max) throw new Error(`${name} takes an integer ${min}-${max}`)
    return n
  }
  try {
    while (rest.length) {
      const f = rest.shift()!
      if (f === '--masters') a.masters = int(f, rest.shift(), 1, 100)
      else if (f === '--replicas') a.replicas = int(f, rest.shift(), 0, 5)
      else if (f === '--port') a.port = int(f, rest.shift(), 1024, 55535)
      else if (f === '--dir') a.dir = rest.shift() ?? ''
      else if (f === '--no-persist') a.persist = false
      else if (f === '--detach') a.detach = true
      else if (f === '-h' || f === '--help') a.command = 'help'
      else return { error: `unknown argument: ${f}` }
    }
  } catch (e) {
    return { error: (e as Error).message }
  }
  if (!a.dir) return { error: '--dir takes a folder' }
  return a
}

async function main(argv: string[]): Promise<number> {
  const a = parseClusterArgs(argv)
  if ('error' in a) {
    process.stderr.write(`${a.error}\n\n${USAGE}`)
    return 2
  }
  const dir = resolve(a.dir)
  if (a.command === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  if (a.command === 'stop') {
    if (!readLayout(dir)) return fail(`no cluster in ${dir}`)
    const n = await stopClusterIn(dir)
    process.stderr.write(`stopped ${n} redis-server process(es) of ${dir} (its data stays there)\n`)
    return 0
  }
  if (a.command === 'status') {
    const s = clusterStatus(dir)
    if (!s) return fail(`no cluster in ${dir}`)
    process.stderr.write(`ports ${s.layout.ports.join(', ')}; running: ${s.running.join(', ') || 'none'}\n`)
    return s.running.length === s.layout.ports.length ? 0 : 1
  }
  if (!folderUsable(dir)) return fail(`${dir} holds other files: choose an empty folder with --dir`)
  const known = readLayout(dir)
  if (known && (a.masters !== undefined || a.replicas !== undefined || a.port !== undefined))
    process.stderr.write(`${dir} holds a cluster already: starting it as it was (ports ${known.ports.join(', ')})\n`)
  const cluster = await LocalRedisCluster.start({
    dir,
    masters: a.masters,
    replicas: a.replicas,
    port: a.port,
    persist: a.persist,
    detach: a.detach,
  })
  const { masters, replicas, ports } = cluster.layout
  process.stderr.write(
    `Redis Cluster up: ${masters} master(s), ${replicas} replica(s) each, ports ${ports.join(', ')}, files in ${dir}\n` +
      `Start gateways with these settings (also in ${dir}/cluster.env):\n`,
  )
  process.stdout.write(cluster.env)
  if (a.detach) {
    process.stderr.write(`Running in the background; stop it with: npm run cluster -- stop --dir ${a.dir}\n`)
    return 0
  }
  process.stderr.write('Ctrl-C stops it.\n')
  await new Promise<void>((done) => {
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => done())
    // a node that dies on its own ends the foreground run too
    for (const p of cluster.procs.values()) void p.exited.then(() => done())
  })
  await cluster.stop()
  process.stderr.write(`stopped; the data stays in ${dir}\n`)
  return 0
}

function fail(message: string): number {
  process.stderr.write(`${message}\n`)
  return 1
}

if (import.meta.main)
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`${(e as Error).message}\n`)
      process.exit(1)
    },
  )
