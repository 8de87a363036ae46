import { afterAll, describe, expect, test } from 'bun:test'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/**
 * Redis restarted without persistence: the running node notices its epoch is gone, logs an
 * error and turns /ready 503; a new node refuses to bootstrap over the lost data until the
 * operator accepts the loss; the old node is ready again once restarted.
 */
const available = requireSystem(REDIS_SERVER, 'redis-server')
const nodes: GatewayNode[] = []
let redis: TestRedis | undefined
afterAll(async () => {
  for (const n of nodes) await n.stop()
  await redis?.kill()
})

const ready = async (n: GatewayNode) => {
  const r = await fetch(`${n.url}/ready`)
  return { status: r.status, body: (await r.json()) as { status: string; problem?: string } }
}
async function until<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await fn()
    if (ok(v)) return v
    await Bun.sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe.skipIf(!available)('Redis data loss', () => {
  test('is detected, logged, refused at start and recovered by the operator', async () => {
    redis = await TestRedis.start()
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: 'loss:', REDIS_TIMEOUT_MS: '500', LOG_LEVEL: 'info' }
    const a = await GatewayNode.start(env)
    nodes.push(a)
    expect((await ready(a)).status).toBe(200)
    const publish = await fetch(`${a.url}/channels/c/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'before' }),
    })
    expect(publish.status).toBe(201)

    // Redis restarts empty (no AOF, no RDB)
    await redis.kill()
    await redis.restart()

    const lost = await until(
      'node A to notice',
      () => ready(a),
      (r) => r.status === 503 && !!r.body.problem,
    )
    expect(lost.body.problem).toContain('lost its data')
    await until(
      'the error in the log',
      async () => a.log,
      (log) => log.includes('not ready: data'),
    )
    expect(a.log).toMatch(/"level":"error".*lost its data/)

    // a node starting now does not silently bootstrap a new account over the lost data
    const refused = await GatewayNode.start(env).then(
      (n) => {
        nodes.push(n)
        return ''
      },
      (e: Error) => e.message,
    )
    expect(refused).toContain('Refusing to start')
    expect(refused).toContain('REDIS_ACCEPT_DATA_LOSS')

    // the operator accepts the loss on one node: it bootstraps anew
    const c = await GatewayNode.start({ ...env, REDIS_ACCEPT_DATA_LOSS: 'true' })
    nodes.push(c)
    expect((await ready(c)).status).toBe(200)
    // the old node still holds the old generation in its caches: not ready until restarted
    const other = await until(
      'node A to see the new epoch',
      () => ready(a),
      (r) => !!r.body.problem?.includes('other data'),
    )
    expect(other.status).toBe(503)
    await a.kill()
    await a.restart()
    expect((await ready(a)).status).toBe(200)
    // and a node started without the setting now starts too
    const d = await GatewayNode.start(env)
    nodes.push(d)
    expect((await ready(d)).status).toBe(200)
  }, 90_000)
})
