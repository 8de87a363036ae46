/**
 * Instructions redis-server executes per publish of the Redis broker (valgrind's callgrind counts
 * them, so two code trees compare exactly on a loaded machine, where CPU times vary by 10-30%):
 * `bun bench/redis-publish-instructions.ts [--channels 100] [--batch 50] [--batches 60]
 * [--messages 1] [--ids] [--charge] [dir ...]`. One redis-server runs under callgrind; each code
 * tree named (as in bench/redis-publish-cost.ts; this checkout when none is named) gets its
 * broker on it (its own key prefix), in turn. A batch is `--batch` publishes made in one turn
 * (so one script call) over C channels, each awaited before the next; after a warm-up (every
 * channel written, its index and expiry set) the counts are zeroed, `--batches` batches run and
 * the counts are read. The node's clock is held still meanwhile: under callgrind a second is a
 * few batches, so channels would be due for their index and expiry refresh (once a second) far
 * more often than at full speed. Needs `valgrind` and `redis-server` on the PATH; asserts nothing.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, installCleanup, spawnTracked, stopProcess } from './lib/processes'
import { redisBackendOf } from './lib/redis-backend-of'

const argv = process.argv.slice(2)
const arg = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? Number(argv.splice(i, 2)[1]) : def
}
const flag = (name: string) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 && argv.splice(i, 1).length > 0
}
const CHANNELS = arg('channels', 100)
const BATCH = arg('batch', 50)
const BATCHES = arg('batches', 60)
const MESSAGES = arg('messages', 1)
const IDS = flag('ids')
const CHARGE = flag('charge')
const dirs = argv.length ? argv.map((d) => resolve(d)) : [resolve(import.meta.dir, '..')]
for (const bin of ['valgrind', 'callgrind_control', 'redis-server'])
  if (!Bun.which(bin)) throw new Error(`${bin} not found on the PATH`)

installCleanup()
const out = mkdtempSync(join(tmpdir(), 'redis-publish-instructions-'))
const port = freePort()
const redis = spawnTracked(
  [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${out}/callgrind.out`,
    'redis-server',
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ],
  { stdout: join(out, 'redis.log'), stderr: join(out, 'valgrind.log') },
)
const url = `redis://127.0.0.1:${port}`
for (let i = 0; ; i++) {
  const c = new Bun.RedisClient(url, { autoReconnect: false })
  try {
    await c.connect()
    break
  } catch {
    if (i > 300) throw new Error(`redis-server under valgrind did not start; see ${out}`)
    await Bun.sleep(100)
  } finally {
    c.close()
  }
}

/** callgrind_control on the server: `-z` zeroes the counts, `-d` writes them to a new file. */
async function control(option: '-z' | '-d') {
  await Bun.spawn(['callgrind_control', option, String(redis.pid)], { stdout: 'ignore', stderr: 'ignore' }).exited
}
/** The instruction count of the newest dump. */
function lastDump(): number {
  const dumps = readdirSync(out)
    .filter((f) => /^callgrind\.out\.\d+$/.test(f))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
  const text = readFileSync(join(out, dumps[dumps.length - 1]!), 'latin1')
  return Number(/^summary: (\d+)/m.exec(text)?.[1])
}

const data = 'x'.repeat(100)
const results: string[] = []
for (const [i, dir] of dirs.entries()) {
  const backend = await redisBackendOf(dir, url, `instr${i}:`, 60_000)
  let seq = 0
  const batch = async () => {
    const made = Array.from({ length: BATCH }, (_, p) => {
      const s = seq++
      const drafts = Array.from({ length: MESSAGES }, (_, m) => ({ id: `w:${s}:${m}`, name: 'e', data }))
      return backend.broker.publish('app', `instr-${s % CHANNELS}`, drafts, {
        persisted: false,
        clientIds: IDS,
        findable: IDS,
        charge: CHARGE
          ? { key: `account${p % 2}:publish`, cost: 1, rate: 1e9, burst: 1e9, now: Date.now() }
          : undefined,
      })
    })
    for (const r of await Promise.all(made))
      if (r.appended !== MESSAGES) throw new Error(`${dir}: a publish appended ${r.appended} of ${MESSAGES}`)
  }
  for (let w = 0; w < Math.ceil((2 * CHANNELS) / BATCH) + 2; w++) await batch()
  const now = Date.now
  const still = now()
  Date.now = () => still
  try {
    await batch()
    await control('-z')
    for (let b = 0; b < BATCHES; b++) await batch()
    await control('-d')
  } finally {
    Date.now = now
  }
  results.push(`  ${dir}: ${(lastDump() / (BATCHES * BATCH) / 1000).toFixed(2)}k`)
  await backend.close()
}
console.log(
  `redis-server instructions per publish (callgrind): ${CHANNELS} channels, batches of ${BATCH} × ${BATCHES}, ${MESSAGES} message(s) a publish, ${IDS ? 'client ids' : 'no client ids'}${CHARGE ? ', charged' : ''}`,
)
for (const r of results) console.log(r)
await stopProcess(redis)
process.exit(0)
