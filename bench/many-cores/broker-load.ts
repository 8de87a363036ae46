/**
 * The Redis layer alone on a Redis Cluster: issue 27's shard scaling without the HTTP gateways'
 * CPU, which bounds `scale.sh` at 4 shards on 16 cores. P processes, each with the Redis backend
 * a gateway node has (cluster client, batched publishes), run C publishers each: one 100-byte
 * message at a time, the next when it is answered, over 1,000 channels. Each process warms up
 * for a second, then counts for S seconds. Prints `LOAD publishes/s=<sum over the processes>`.
 *
 * Bundled by pack.sh (`broker-load.js`) and run by the compiled gateway as Bun (BUN_BE_BUN=1), so
 * the machine needs no node_modules: `broker-load.js <redis urls, comma-separated> [P 4] [C 256] [S 6]`
 * (scale.sh runs it with BROKER_PROCS=P).
 */
import { createRedisBackend } from '../../src/backend/redis/index'
import { redisBenchSettings } from '../lib/redis-backend-of'

const [url, procs = '4', publishers = '256', seconds = '6', role] = process.argv.slice(2)
if (!url) throw new Error('usage: broker-load.js <redis urls> [processes] [publishers] [seconds]')

if (role !== 'child') {
  const children = Array.from({ length: Number(procs) }, () =>
    Bun.spawn([process.execPath, process.argv[1]!, url, procs, publishers, seconds, 'child'], {
      env: process.env,
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  const counts = await Promise.all(children.map(async (c) => Number((await new Response(c.stdout).text()).trim())))
  console.log(`LOAD publishes/s=${Math.round(counts.reduce((a, b) => a + b, 0) / Number(seconds))}`)
  process.exit(0)
}

const backend = await createRedisBackend({ ...redisBenchSettings(url, 'load:'), redisCluster: true }, (e) =>
  console.error(e),
)
const data = 'x'.repeat(100)
let counting = false
let count = 0
let stop = false
let seq = 0
const loops = Array.from({ length: Number(publishers) }, async (_, w) => {
  while (!stop) {
    const s = seq++
    await backend.broker.publish(
      'app',
      `load-${(s * 7919) % 1000}`,
      [{ id: `${process.pid}:${w}:${s}:0`, name: 'e', data }],
      {
        persisted: false,
      },
    )
    if (counting) count++
  }
})
await Bun.sleep(1000)
counting = true
await Bun.sleep(Number(seconds) * 1000)
counting = false
stop = true
await Promise.all(loops)
console.log(count)
await backend.close()
process.exit(0)
