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
import { resolve } from 'node:path'
import { startCallgrindRedis } from './lib/callgrind-redis'
import { installCleanup } from './lib/processes'
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
installCleanup()
const redis = await startCallgrindRedis()
const url = redis.url

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
  let count = 0
  try {
    await batch()
    count = await redis.count(async () => {
      for (let b = 0; b < BATCHES; b++) await batch()
    })
  } finally {
    Date.now = now
  }
  results.push(`  ${dir}: ${(count / (BATCHES * BATCH) / 1000).toFixed(2)}k`)
  await backend.close()
}
console.log(
  `redis-server instructions per publish (callgrind): ${CHANNELS} channels, batches of ${BATCH} × ${BATCHES}, ${MESSAGES} message(s) a publish, ${IDS ? 'client ids' : 'no client ids'}${CHARGE ? ', charged' : ''}`,
)
for (const r of results) console.log(r)
await redis.stop()
process.exit(0)
