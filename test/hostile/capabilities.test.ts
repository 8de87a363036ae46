import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  MAX_CAPABILITY_RESOURCES,
  MAX_INTERSECTION_STEPS,
  MAX_RESOURCE_LENGTH,
  MAX_WILDCARD_SEGMENTS,
} from '../../src/core/auth/capability'
import type { GatewayNode } from '../helpers/node-process'
import { makeJwt } from '../helpers/tokens'
import { APP_ID, BEARER_AUTH, KEY_AUTH, ROOT_KEY, expectShape, hostileNode, watchHealth } from './fixture'

/**
 * Capability bounds (issue 26, finding 3), in a gateway process of its own while `/health` is
 * polled: a capability names at most MAX_CAPABILITY_RESOURCES resources of at most
 * MAX_RESOURCE_LENGTH characters wherever it enters (key creation and update, token requests,
 * JWT claims), every refusal is a 400 in the spec's shape, and no capability, however large or
 * wild, holds the event loop (a `/health` answer over a second is a stall, not a busy machine).
 * Matching costs a few steps per resource (test/unit/capability.test.ts checks the results).
 */
let node: GatewayNode
beforeAll(async () => {
  node = await hostileNode()
}, 30_000)
afterAll(async () => {
  await node?.stop()
})

const STALL = 1000
const json = { 'content-type': 'application/json' }
const post = (path: string, body: unknown, auth: Record<string, string>, method = 'POST') =>
  fetch(node.url + path, { method, headers: { ...auth, ...json }, body: JSON.stringify(body) })
const keyName = (key: string) => key.slice(0, key.indexOf(':'))
/** `n` resources named by `name`, each with publish and subscribe. */
const resources = (n: number, name = (i: number) => `room-${i}`) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [name(i), ['publish', 'subscribe']]))

/** Creates a key of the test app through the management interface. */
const createKey = (capability: unknown) => post(`/v1/apps/${APP_ID}/keys`, { name: 'bounded', capability }, BEARER_AUTH)
/** A new key's key string (its secret is in the answer to its creation only). */
async function newKey(capability: unknown): Promise<string> {
  const r = await createKey(capability)
  expect(r.status).toBe(201)
  return ((await r.json()) as { key: string }).key
}
const basicAuth = (key: string) => ({ authorization: `Basic ${Buffer.from(key).toString('base64')}` })

/** Runs `f` while `/health` is polled; fails when one answer took STALL ms or more. */
async function withoutStall(f: () => Promise<void>) {
  const health = watchHealth(node.url)
  let failure: unknown
  try {
    await f()
  } catch (e) {
    failure = e
  }
  const { slowest, answers } = await health.stop()
  if (failure) throw failure
  expect(answers).toBeGreaterThanOrEqual(1)
  expect(slowest).toBeLessThan(STALL)
}

describe('management: key creation and update', () => {
  test('more resources than the bound, or a resource longer than a channel name, is 400; nothing is stored', async () => {
    await withoutStall(async () => {
      for (const n of [MAX_CAPABILITY_RESOURCES + 1, 50_000])
        await expectShape(await createKey(resources(n)), 400, [40000, 40001], `${n} resources`)
      await expectShape(
        await createKey({ ['x'.repeat(MAX_RESOURCE_LENGTH + 1)]: ['publish'] }),
        400,
        [40000],
        'a long resource',
      )
      await expectShape(
        await createKey({ ['x'.repeat(1.5 * 1024 * 1024)]: ['publish'] }),
        400,
        [40000],
        'a 1.5 MB resource',
      )
    })
    const keys = (await (await fetch(`${node.url}/v1/apps/${APP_ID}/keys`, { headers: BEARER_AUTH })).json()) as any[]
    expect(keys.filter((k) => k.name === 'bounded')).toEqual([])
  })

  test('an update beyond the bounds is 400 and leaves the key as it was', async () => {
    const created = await createKey({ 'chat:*': ['publish'] })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as any
    const patch = (capability: unknown) => post(`/v1/apps/${APP_ID}/keys/${id}`, { capability }, BEARER_AUTH, 'PATCH')
    await expectShape(await patch(resources(MAX_CAPABILITY_RESOURCES + 1)), 400, [40000, 40001], 'update')
    await expectShape(await patch({ ['y'.repeat(MAX_RESOURCE_LENGTH + 1)]: ['*'] }), 400, [40000], 'update, long')
    const keys = (await (await fetch(`${node.url}/v1/apps/${APP_ID}/keys`, { headers: BEARER_AUTH })).json()) as any[]
    const key = keys.find((k) => k.id === id)
    expect(key.capability).toEqual({ 'chat:*': ['publish'] })
    // at the bounds: accepted
    const atBound = await patch(
      resources(MAX_CAPABILITY_RESOURCES, (i) => `${'z'.repeat(MAX_RESOURCE_LENGTH - 8)}:${i}`),
    )
    expect(atBound.status).toBe(200)
  })

  test('wildcard resources with more than MAX_WILDCARD_SEGMENTS segments in all are 400', async () => {
    const deep = Array(64).fill('*').join(':')
    const n = Math.ceil(MAX_WILDCARD_SEGMENTS / 64) + 1
    await expectShape(await createKey(resources(n, (i) => `${deep}:${i}`)), 400, [40000], 'deep wildcards')
  })
})

describe('token requests', () => {
  test('a request naming 10,000 resources is refused at once and /health keeps answering', async () => {
    await withoutStall(async () => {
      for (let i = 0; i < 3; i++) {
        const r = await post(
          `/keys/${keyName(ROOT_KEY)}/requestToken`,
          { capability: JSON.stringify(resources(10_000)) },
          KEY_AUTH,
        )
        const e = await expectShape(r, 400, [40000], '10,000 resources')
        expect(e.message).toContain(`more than ${MAX_CAPABILITY_RESOURCES} resources`)
      }
    })
  })

  test('a key and a request at the bound intersect without a stall', async () => {
    // every requested resource is covered by several key patterns and covers key resources in turn
    const key = {
      ...resources(MAX_CAPABILITY_RESOURCES / 2, (i) => `room-${i}:*`),
      ...resources(MAX_CAPABILITY_RESOURCES / 2, (i) => `*:chan-${i}`),
    }
    const bounded = await newKey(key)
    const requested = {
      ...resources(MAX_CAPABILITY_RESOURCES / 2, (i) => `room-${i}:chan-${i}`),
      ...resources(MAX_CAPABILITY_RESOURCES / 2, (i) => `room-${i}:*`),
    }
    await withoutStall(async () => {
      for (let i = 0; i < 3; i++) {
        const r = await post(
          `/keys/${keyName(bounded)}/requestToken`,
          { capability: JSON.stringify(requested) },
          basicAuth(bounded),
        )
        expect(r.status).toBe(200)
        const capability = JSON.parse(((await r.json()) as { capability: string }).capability)
        expect(Object.keys(capability).length).toBe(MAX_CAPABILITY_RESOURCES)
        expect(capability['room-7:chan-7']).toEqual(['publish', 'subscribe'])
      }
    })
  })

  test('wildcards that would take more than MAX_INTERSECTION_STEPS to intersect are 400, without a stall', async () => {
    // 60 key patterns of 64 segments, `*` or `a`, all matching `a:a:...`; 1000 requested names like it
    const bits = (i: number) => Array.from({ length: 64 }, (_, j) => ((i >> (j % 6)) & 1 ? '*' : 'a'))
    const keyCap = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [[...bits(i), '*'].join(':'), ['publish']]))
    const wild = await newKey(keyCap)
    const requested = resources(MAX_CAPABILITY_RESOURCES, (i) => `${Array(64).fill('a').join(':')}:${i}`)
    await withoutStall(async () => {
      const r = await post(
        `/keys/${keyName(wild)}/requestToken`,
        { capability: JSON.stringify(requested) },
        basicAuth(wild),
      )
      const e = await expectShape(r, 400, [40000], 'deep wildcards on both sides')
      expect(e.message).toContain(String(MAX_INTERSECTION_STEPS))
    })
  })
})

describe('JWT claims', () => {
  test('an x-ably-capability beyond the bounds is 400', async () => {
    const secret = ROOT_KEY.slice(ROOT_KEY.indexOf(':') + 1)
    const now = Math.floor(Date.now() / 1000)
    const claims = (capability: unknown) => ({ iat: now, exp: now + 600, 'x-ably-capability': capability })
    const use = (capability: unknown) =>
      fetch(`${node.url}/channels/jwt-bounds/messages`, {
        headers: { authorization: `Bearer ${makeJwt(keyName(ROOT_KEY), secret, claims(capability))}` },
      })
    expect((await use(JSON.stringify({ 'jwt-bounds': ['history'] }))).status).toBe(200)
    const long = JSON.stringify({ ['j'.repeat(MAX_RESOURCE_LENGTH + 1)]: ['history'] })
    await expectShape(await use(long), 400, [40000], 'long resource')
    // as an object with short names, to stay within the runtime's header limit
    const many = Object.fromEntries(
      Array.from({ length: MAX_CAPABILITY_RESOURCES + 1 }, (_, i) => [i.toString(36), ['*']]),
    )
    await expectShape(await use(many), 400, [40000], 'too many resources')
  })
})
