/**
 * redis-server CPU per publish of the Redis broker, in process (no HTTP, so the node is never the
 * bound and batches fill as they would where Redis is): `bun bench/redis-publish-cost.ts
 * [--channels 100] [--publishers 50] [--seconds 2] [--rounds 5] [--ids] [dir ...]`.
 *
 * Each code tree named (a checkout, e.g. `git archive <rev> | tar -x -C /tmp/before` with a
 * node_modules link; this checkout when none is named) gets its own broker on one private
 * redis-server (its own key prefix); rounds alternate between the trees. In a round, P publishers
 * each publish one 100-byte message at a time, the next as soon as the last is answered, over C
 * channels; the figure is the redis-server's CPU time (/proc) over the round ÷ the publishes
 * made. `--publishers 1` measures a publish alone (a batch of one). `--ids` gives every message a
 * client id (the idempotency lookup and marker). Prints min, median and every round per tree, for
 * redis-server and for this process (the broker's side: its batching, arguments and replies, with
 * the publishers' loop; the trees share the process, so compare them only with each other);
 * asserts nothing.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { cpuSeconds } from './lib/cpu'
import { startRedis } from './lib/redis-server'
import { installCleanup } from './lib/processes'
import { redisBackendOf } from './lib/redis-backend-of'
import type { Backend } from '../src/backend/backend'

const argv = process.argv.slice(2)
const arg = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? Number(argv.splice(i, 2)[1]) : def
}
const CHANNELS = arg('channels', 100)
const PUBLISHERS = arg('publishers', 50)
const SECONDS = arg('seconds', 2)
const ROUNDS = arg('rounds', 5)
const ids = argv.indexOf('--ids')
const IDS = ids >= 0 && argv.splice(ids, 1).length > 0
const dirs = argv.length ? argv.map((d) => resolve(d)) : [resolve(import.meta.dir, '..')]

installCleanup()
const redis = await startRedis(mkdtempSync(join(tmpdir(), 'redis-publish-cost-')))
const trees: Array<{ dir: string; backend: Backend; rounds: number[]; own: number[] }> = []
for (const [i, dir] of dirs.entries()) {
  const backend = await redisBackendOf(dir, redis.url, `cost${i}:`)
  trees.push({ dir, backend, rounds: [], own: [] })
}

const data = 'x'.repeat(100)
let seq = 0
/** One round on one tree: redis-server CPU µs per publish, and this process's (the broker's side). */
async function round(backend: Backend, seconds: number): Promise<{ redis: number; own: number }> {
  let count = 0
  let stop = false
  const cpu0 = cpuSeconds(redis.pid)!
  const own0 = process.cpuUsage()
  const publishers = Array.from({ length: PUBLISHERS }, async (_, w) => {
    while (!stop) {
      const s = seq++
      await backend.broker.publish('app', `cost-${s % CHANNELS}`, [{ id: `${w}:${s}:0`, name: 'e', data }], {
        persisted: false,
        clientIds: IDS,
        findable: IDS,
      })
      count++
    }
  })
  await Bun.sleep(seconds * 1000)
  stop = true
  await Promise.all(publishers)
  const own = process.cpuUsage(own0)
  return { redis: ((cpuSeconds(redis.pid)! - cpu0) / count) * 1e6, own: (own.user + own.system) / count }
}

for (const t of trees) await round(t.backend, 0.5)
for (let r = 0; r < ROUNDS; r++)
  for (const t of trees) {
    const { redis, own } = await round(t.backend, SECONDS)
    t.rounds.push(redis)
    t.own.push(own)
  }
const summary = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return `min ${sorted[0]!.toFixed(1)}, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} [${xs.map((x) => x.toFixed(1)).join(' ')}]`
}
console.log(
  `CPU µs per publish: ${CHANNELS} channels, ${PUBLISHERS} publishers, ${IDS ? 'client ids' : 'no client ids'}, ${ROUNDS} alternated rounds of ${SECONDS} s`,
)
for (const t of trees) {
  console.log(`  ${t.dir}: redis-server ${summary(t.rounds)}`)
  console.log(`  ${' '.repeat(t.dir.length)}  this process (the broker and the publishers) ${summary(t.own)}`)
}
for (const t of trees) await t.backend.close()
await redis.stop()
process.exit(0)
