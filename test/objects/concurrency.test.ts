import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { getJson, NO_LIMITS, objPath, patch, patchOk } from './util'

/**
 * Many clients, and on Redis two nodes sharing one store, change one object at once: conditional
 * PATCHes have exactly one winner per version, unconditional ones are never lost.
 */
let a: TestGateway
let b: TestGateway
let nodes: TestGateway[]
beforeAll(async () => {
  a = await createTestGateway(NO_LIMITS)
  // on Redis a second node on the same store; embedded is single-node, so the same gateway twice
  b =
    a.core.backendKind === 'redis'
      ? await createTestGateway({ ...NO_LIMITS, redisUrl: a.config.redisUrl, redisPrefix: a.config.redisPrefix })
      : a
  nodes = [a, b]
})
afterAll(async () => {
  if (b !== a) await b.close()
  await a.close()
})

const node = (i: number) => nodes[i % 2]!

test('300 concurrent PATCHes at the same version: exactly one winner per round, the rest 409', async () => {
  let current = await patchOk(a, 'race', 'same', { n: 0 })
  for (let round = 1; round <= 5; round++) {
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        patch(node(i), 'race', 'same', { data: { n: round, by: i }, version: current.version }),
      ),
    )
    const statuses = results.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(299)
    const winner = (await results.find((r) => r.status === 200)!.json()) as any
    expect(winner.data.n).toBe(round)
    current = await getJson(b, objPath('race', 'same'))
    expect(current).toEqual(winner)
  }
})

test('racing read-modify-write clients: each version is won exactly once, no increment lost', async () => {
  await patchOk(a, 'race', 'counter', { n: 0 })
  const TARGET = 60
  const wins = new Map<string, number>()
  let done = 0
  const worker = async (w: number) => {
    const gw = node(w)
    while (done < TARGET) {
      const cur = await getJson(gw, objPath('race', 'counter'))
      const r = await patch(gw, 'race', 'counter', { data: { n: cur.data.n + 1, last: w }, version: cur.version })
      if (r.status === 200) {
        done++
        wins.set(cur.version, (wins.get(cur.version) ?? 0) + 1)
      } else expect(r.status).toBe(409)
    }
  }
  await Promise.all(Array.from({ length: 100 }, (_, w) => worker(w)))
  expect([...wins.values()].every((n) => n === 1)).toBe(true)
  const final = await getJson(a, objPath('race', 'counter'))
  expect(final.data.n).toBe(done)
  expect(wins.size).toBe(done)
  const history = (await getJson(a, objPath('race', 'counter', '/history?limit=1000'))) as any[]
  expect(history).toHaveLength(done + 1)
  expect(history.map((c) => c.data.n)).toEqual(Array.from({ length: done + 1 }, (_, i) => done - i))
})

test('400 concurrent unconditional PATCHes from two nodes: every update is in the final state', async () => {
  const N = 400
  const results = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      patch(node(i), 'race', 'merged', { data: { [`k${i}`]: i, nested: { [`n${i}`]: true } } }),
    ),
  )
  expect(results.every((r) => r.status === 200)).toBe(true)
  const states = (await Promise.all(results.map((r) => r.json()))) as any[]
  expect(new Set(states.map((s) => s.version)).size).toBe(N)
  const final = await getJson(b, objPath('race', 'merged'))
  expect(Object.keys(final.data).filter((k) => k.startsWith('k'))).toHaveLength(N)
  expect(Object.keys(final.data.nested)).toHaveLength(N)
  for (let i = 0; i < N; i++) expect(final.data[`k${i}`]).toBe(i)
  const history = (await getJson(a, objPath('race', 'merged', '/history?limit=1000&direction=forwards'))) as any[]
  expect(history).toHaveLength(N)
  // each change's state holds exactly the keys of the changes before it: a serial order exists
  history.forEach((c, i) => expect(Object.keys(c.data.nested)).toHaveLength(i + 1))
  expect(new Set(history.map((c) => c.version))).toEqual(new Set(states.map((s) => s.version)))
})
