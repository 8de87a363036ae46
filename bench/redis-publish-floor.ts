/**
 * What the parts of a Redis publish cost redis-server, in instructions per publish (callgrind:
 * exact, see lib/callgrind-redis.ts): `bun bench/redis-publish-floor.ts [--channels 100]
 * [--batch 50] [--batches 40]`. Every shape gets the same batches (`--batch` publishes of one
 * 130-byte body each, over C channels in turn, one script call per batch) and adds one part to
 * the shape before it:
 * - arguments: the call and its arguments alone (per channel its stream and last id key, per
 *   publish its channel number and body);
 * - append: one XADD per publish;
 * - notify: one SPUBLISH per publish carrying the new id and the body;
 * - previous id: the last id key swapped per publish (SET ... KEEPTTL GET), so the notification
 *   names the id before it (what lets a node that missed a notification see the gap);
 * then the gateway's own batch script (lua/batch-publish.ts, plain publishes, its own layout:
 * it also names each channel's notification channel, notifies once per channel and batch) and,
 * for scale, the same appends as plain XADD commands pipelined (no Lua). With as many channels as
 * a batch has publishes, each publish is one channel's append, notification and previous id: the
 * floor of a design that keeps a stream per channel, notifies only the nodes subscribed to a
 * channel and lets them detect a gap. Asserts nothing.
 */
import { BATCH_PUBLISH_SCRIPT } from '../src/backend/redis/lua/batch-publish'
import { parseFlags } from './lib/args'
import { startCallgrindRedis } from './lib/callgrind-redis'
import { installCleanup } from './lib/processes'

const f = parseFlags(process.argv.slice(2), { channels: 'number', batch: 'number', batches: 'number' })
const CHANNELS = f.channels ?? 100
const BATCH = f.batch ?? 50
const BATCHES = f.batches ?? 40
const BODY = 'x'.repeat(130)

/** Per publish (i: its place in ARGV after the count): its stream KEYS[2s-1] and body. */
const EACH = `local n = tonumber(ARGV[1])
local out = {}
for i = 1, n do
  local s = tonumber(ARGV[2 * i])
  local body = ARGV[2 * i + 1]
`
const SHAPES: Record<string, string> = {
  arguments: 'return 1',
  append: `${EACH}  out[i] = redis.pcall('XADD', KEYS[2 * s - 1], '*', 'm', body)
end
return out`,
  '+ notify': `${EACH}  local id = redis.pcall('XADD', KEYS[2 * s - 1], '*', 'm', body)
  out[i] = id
  redis.call('SPUBLISH', KEYS[2 * s - 1], id .. ' ' .. body)
end
return out`,
  '+ previous id': `${EACH}  local id = redis.pcall('XADD', KEYS[2 * s - 1], '*', 'm', body)
  out[i] = id
  local prev = redis.pcall('SET', KEYS[2 * s], id, 'KEEPTTL', 'GET')
  redis.call('SPUBLISH', KEYS[2 * s - 1], tostring(prev) .. ' ' .. id .. ' ' .. body)
end
return out`,
}

installCleanup()
const redis = await startCallgrindRedis()
const client = new Bun.RedisClient(redis.url)
await client.connect()
const shas = new Map<string, string>()
for (const [name, source] of Object.entries({ ...SHAPES, 'batch script': BATCH_PUBLISH_SCRIPT }))
  shas.set(name, String(await client.send('SCRIPT', ['LOAD', source])))

let seq = 0
/** One batch: the channels it names (numbered from 1 in order of first use) and its publishes. */
function nextBatch() {
  const numbers = new Map<number, number>()
  const publishes: Array<[number, number]> = []
  for (let i = 0; i < BATCH; i++) {
    const c = seq++ % CHANNELS
    if (!numbers.has(c)) numbers.set(c, numbers.size + 1)
    publishes.push([c, numbers.get(c)!])
  }
  const keys = [...numbers.keys()].flatMap((c) => [`floor:s:{app:${c}}`, `floor:l:{app:${c}}`])
  return { numbers, publishes, keys }
}

async function run(shape: string) {
  const { numbers, publishes, keys } = nextBatch()
  const sha = shas.get(shape)
  if (shape === 'pipeline') {
    await Promise.all(publishes.map(([c]) => client.send('XADD', [`floor:s:{app:${c}}`, '*', 'm', BODY])))
    return
  }
  const each = publishes.flatMap(([, s]) => [String(s), BODY])
  const args =
    shape === 'batch script'
      ? // idempotency window, channels, publishes, notification channels, no due / index / id lists
        ['120000', String(numbers.size), String(BATCH), ...[...numbers.keys()].map((c) => `floor:n:{app:${c}}`)].concat(
          ['0', '0', '0'],
          each,
        )
      : [String(BATCH), ...each]
  const reply = await client.send('EVALSHA', [sha!, String(keys.length), ...keys, ...args])
  if (shape !== 'arguments' && (!Array.isArray(reply) || reply.length !== BATCH))
    throw new Error(`${shape}: unexpected reply ${JSON.stringify(reply).slice(0, 200)}`)
}

const rows: string[] = []
for (const shape of [...shas.keys(), 'pipeline']) {
  for (let w = 0; w < Math.ceil(CHANNELS / BATCH) + 2; w++) await run(shape)
  const n = await redis.count(async () => {
    for (let b = 0; b < BATCHES; b++) await run(shape)
  })
  rows.push(`  ${shape.padEnd(14)} ${(n / (BATCH * BATCHES) / 1000).toFixed(1)}k`)
}
console.log(
  `redis-server instructions per publish (callgrind): ${CHANNELS} channels, batches of ${BATCH} × ${BATCHES}, one 130-byte body a publish`,
)
for (const r of rows) console.log(r)
client.close()
await redis.stop()
process.exit(0)
