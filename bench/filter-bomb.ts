/**
 * The filter bomb (issue 40, item 1): `--connections` realtime connections each attach
 * `--attachments` filtered channels (`[filter=...]bomb`) whose expressions compare large object
 * literals (or, with `--kind headers`, the message's headers with a large literal, or with
 * `--kind pairs`, two large parts of the message's headers with each other) and never match; then
 * publishes of `--messages` messages (about `--bytes` bytes in all) go to `bomb` while `/health`
 * is polled. Prints the slowest `/health` answer and how long each publish took to be answered.
 *
 *   bun bench/filter-bomb.ts [--connections 2] [--attachments 1000] [--messages 500] [--publishes 3]
 *                            [--kind literals|headers|pairs] [--redis] [--reattach] [--profile <dir>]
 *
 * With --reattach, the refused attachments attach again before each publish (an attacker that
 * persists).
 *
 * The gateway runs in its own process (test/helpers/node-process.ts), so its stalls show in its
 * own `/health` answers.
 */
import { parseArgs } from 'node:util'
import { GatewayNode } from '../test/helpers/node-process'
import { ROOT_KEY, basic } from '../test/helpers/gateway'
import { rawConnected, type RawClient } from '../test/helpers/realtime-raw'
import { TestRedis } from '../test/helpers/redis'
import { bombFilters, bombMessages, type BombKind } from '../test/helpers/filter-bomb'

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '2' },
    attachments: { type: 'string', default: '1000' },
    messages: { type: 'string', default: '500' },
    bytes: { type: 'string', default: '60000' },
    publishes: { type: 'string', default: '3' },
    kind: { type: 'string', default: 'literals' },
    redis: { type: 'boolean', default: false },
    reattach: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
})
const connections = Number(values.connections)
const attachments = Number(values.attachments)
const kind = values.kind as BombKind

const redis = values.redis ? await TestRedis.start() : undefined
// --profile <dir>: the gateway writes a CPU profile there when it exits (bun --cpu-prof)
const profile = values.profile
  ? { cmd: [process.execPath, '--cpu-prof', `--cpu-prof-dir=${values.profile}`, `${import.meta.dir}/../src/main.ts`] }
  : {}
const node = await GatewayNode.start({ LOG_LEVEL: 'error', ...(redis ? { REDIS_URL: redis.url } : {}) }, profile)
const channel = 'bomb'
const clients: RawClient[] = []
try {
  const filters = bombFilters(kind, connections * attachments)
  for (let c = 0; c < connections; c++) {
    const { raw } = await rawConnected(node.url, { key: ROOT_KEY })
    clients.push(raw)
    for (let i = 0; i < attachments; i++) raw.send({ action: 10, channel: filters[c * attachments + i]!.wire(channel) })
    await raw.next(() => raw.frames.filter((f) => f.action === 11 || f.action === 9).length >= attachments, 120_000)
    const refused = raw.frames.filter((f) => f.action === 9)
    if (refused.length) throw new Error(`attach refused: ${JSON.stringify(refused[0])}`)
  }
  console.log(`${connections} connections x ${attachments} filtered attachments (${kind}) attached`)
  const body = JSON.stringify(bombMessages(kind, Number(values.messages), Number(values.bytes)))
  console.log(`publish: ${Number(values.messages)} messages, ${body.length} bytes of JSON`)
  for (let p = 0; p < Number(values.publishes); p++) {
    if (values.reattach && p > 0) {
      for (const c of clients) {
        const refused = c.frames.filter((f) => f.action === 9).map((f) => f.channel as string)
        c.frames.length = 0
        for (const channel of refused) c.send({ action: 10, channel })
        await c.next(() => c.frames.filter((f) => f.action === 11).length >= refused.length, 120_000)
      }
    }
    let slowest = 0
    let polling = true
    const poll = (async () => {
      while (polling) {
        const t = performance.now()
        await (await fetch(`${node.url}/health`)).arrayBuffer()
        slowest = Math.max(slowest, performance.now() - t)
        await Bun.sleep(5)
      }
    })()
    await Bun.sleep(50)
    const t = performance.now()
    const r = await fetch(`${node.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body,
    })
    const answered = performance.now() - t
    // a second publish after it: answered once the delivery of the first is done
    const t2 = performance.now()
    await fetch(`${node.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'after', data: 'x' }),
    })
    const after = performance.now() - t2
    await Bun.sleep(500)
    polling = false
    await poll
    const errors = clients.flatMap((c) => c.frames.filter((f) => f.action === 9 || f.action === 13))
    console.log(
      `publish ${p + 1}: ${r.status} in ${answered.toFixed(0)} ms, next publish ${after.toFixed(0)} ms, ` +
        `slowest /health ${slowest.toFixed(0)} ms; channel errors so far ${errors.length}` +
        (errors[0] ? ` (${errors[0].error?.code}: ${errors[0].error?.message})` : ''),
    )
  }
} finally {
  for (const c of clients) c.close()
  await node.stop()
  await redis?.stop()
}
