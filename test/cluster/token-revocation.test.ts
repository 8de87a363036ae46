/**
 * Token revocation across gateway processes sharing one redis-server of the test's own: revoked
 * on one node, refused on the others (and their event streams of the token ended), and on a node
 * started after the revocation.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { basic } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { openSse, type SseClient } from '../helpers/sse'
import { requireSystem } from '../helpers/system'
import { expectError } from '../helpers/errors'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
const nodes: GatewayNode[] = []
const streams: SseClient[] = []
const env = () => ({ REDIS_URL: redis.url, REDIS_PREFIX: 'revoke:', SANDBOX_PROVISIONING: 'true' })

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start()
  for (let i = 0; i < 2; i++) nodes.push(await GatewayNode.start(env()))
}, 60_000)
afterAll(async () => {
  for (const s of streams) s.close()
  for (const n of nodes) await n.stop()
  await redis?.kill()
})

const bearer = (token: string) => ({ authorization: `Bearer ${Buffer.from(token).toString('base64')}` })
const read = (node: GatewayNode, token: string) =>
  fetch(`${node.url}/channels/cluster-probe/messages`, { headers: bearer(token), signal: AbortSignal.timeout(5000) })

/** Polls `probe` until it answers `status` (changes travel between nodes through Redis pub/sub). */
async function eventually(probe: () => Promise<Response>, status: number): Promise<Response> {
  let last: Response | undefined
  for (let i = 0; i < 250; i++) {
    last = await probe()
    if (last.status === status) return last
    await Bun.sleep(20)
  }
  throw new Error(`still ${last?.status}: ${await last?.text()}`)
}

describe.skipIf(!available)('token revocation on Redis', () => {
  test('revoked on one node: refused on the others, their streams of the token ended, and on a new node', async () => {
    const [a, b] = nodes as [GatewayNode, GatewayNode]
    const provisioned = await fetch(`${a.url}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: [{ revocableTokens: true }] }),
    })
    expect(provisioned.status).toBe(201)
    const { keys } = (await provisioned.json()) as { keys: Array<{ keyName: string; keyStr: string }> }
    const { keyName, keyStr } = keys[0]!
    const tokenFor = async (clientId: string) => {
      const r = await fetch(`${a.url}/keys/${keyName}/requestToken`, {
        method: 'POST',
        headers: { authorization: basic(keyStr), 'content-type': 'application/json' },
        body: JSON.stringify({ clientId }),
      })
      expect(r.status).toBe(200)
      return ((await r.json()) as { token: string }).token
    }
    const [victim, bystander] = [await tokenFor('victim'), await tokenFor('bystander')]
    // node B learns of the new app and key through the control feed
    await eventually(() => read(b, victim), 200)
    const stream = await openSse(`${b.url}/sse?v=1.2&channels=watched&accessToken=${encodeURIComponent(victim)}`)
    streams.push(stream)
    expect(stream.status).toBe(200)
    await Bun.sleep(3)

    const revoked = await fetch(`${a.url}/keys/${keyName}/revokeTokens`, {
      method: 'POST',
      headers: { authorization: basic(keyStr), 'content-type': 'application/json' },
      body: JSON.stringify({ targets: ['clientId:victim'] }),
    })
    expect(revoked.status).toBe(201)
    expect(((await revoked.json()) as { successCount: number }).successCount).toBe(1)

    await expectError(await read(a, victim), 401, 40141)
    await expectError(await eventually(() => read(b, victim), 401), 401, 40141)
    const events = await stream.until((e) => e.some((x) => x.event === 'error'))
    expect(JSON.parse(events.find((e) => e.event === 'error')!.data)).toMatchObject({ code: 40141 })
    await stream.ended
    expect((await read(b, bystander)).status).toBe(200)

    // a node started afterwards loads the revocations in force before it serves anything
    const c = await GatewayNode.start(env())
    nodes.push(c)
    await expectError(await read(c, victim), 401, 40141)
    expect((await read(c, bystander)).status).toBe(200)
  }, 60_000)
})
