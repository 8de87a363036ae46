import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError, getJson, nextLink, NO_LIMITS, objPath, patchOk } from './util'

let gw: TestGateway
const versions: string[] = []
const HIST = objPath('hist', 'doc', '/history')

/** Every page of a history query, following `next` links. */
async function allPages(path: string): Promise<any[][]> {
  const pages: any[][] = []
  let p: string | undefined = path
  while (p) {
    const r = await gw.request(p)
    expect(r.status).toBe(200)
    pages.push((await r.json()) as any[])
    p = nextLink(r, p)
  }
  return pages
}

beforeAll(async () => {
  gw = await createTestGateway(NO_LIMITS)
  for (let i = 0; i < 120; i++) versions.push((await patchOk(gw, 'hist', 'doc', { i, [`k${i % 3}`]: i })).version)
})
afterAll(async () => {
  await gw.close()
})

describe('object history', () => {
  test('changes newest first by default, 100 per page, with the patch and the state after it', async () => {
    const r = await gw.request(HIST)
    const page = (await r.json()) as any[]
    expect(page).toHaveLength(100)
    expect(page.map((c) => c.version)).toEqual(versions.slice(20).reverse())
    expect(page[0]).toMatchObject({
      objectId: 'doc',
      action: 'update',
      version: versions[119],
      patch: { i: 119, k2: 119 },
    })
    expect(page[0].data).toEqual({ i: 119, k0: 117, k1: 118, k2: 119 })
    expect(typeof page[0].timestamp).toBe('number')
    expect(nextLink(r, HIST)).toBeDefined()
  })

  test('paging backwards and forwards visits every change once, in order', async () => {
    const back = await allPages(`${HIST}?limit=7`)
    expect(back.slice(0, -1).every((p) => p.length === 7)).toBe(true)
    expect(back.flat().map((c) => c.version)).toEqual([...versions].reverse())
    const fwd = await allPages(`${HIST}?limit=25&direction=forwards`)
    expect(fwd).toHaveLength(5)
    expect(fwd.flat().map((c) => c.version)).toEqual(versions)
    const ts = fwd.flat().map((c) => c.timestamp)
    expect(ts).toEqual([...ts].sort((a, b) => a - b))
  })

  test('start and end bound the timestamps (inclusive)', async () => {
    const all = (await allPages(`${HIST}?direction=forwards&limit=1000`)).flat()
    const mid = all[60].timestamp
    const after = (await allPages(`${HIST}?direction=forwards&start=${mid}&limit=10`)).flat()
    expect(after.every((c) => c.timestamp >= mid)).toBe(true)
    expect(after.map((c) => c.version)).toEqual(all.filter((c) => c.timestamp >= mid).map((c) => c.version))
    const before = (await allPages(`${HIST}?end=${mid}&limit=10`)).flat()
    expect(before.map((c) => c.version)).toEqual(
      all
        .filter((c) => c.timestamp <= mid)
        .map((c) => c.version)
        .reverse(),
    )
    expect(await getJson(gw, `${HIST}?start=${all[119].timestamp + 1}`)).toEqual([])
  })

  test('a delete is recorded, and history outlives the object', async () => {
    await patchOk(gw, 'hist', 'gone', { a: 1 })
    await patchOk(gw, 'hist', 'gone', { b: 2 })
    expect((await gw.request(objPath('hist', 'gone'), { method: 'DELETE' })).status).toBe(200)
    const h = (await getJson(gw, objPath('hist', 'gone', '/history'))) as any[]
    expect(h.map((c) => c.action)).toEqual(['delete', 'update', 'update'])
    expect(h[0].data).toBeUndefined()
    expect(h[1].data).toEqual({ a: 1, b: 2 })
    expect(h[0].timestamp).toBeGreaterThanOrEqual(h[1].timestamp)
  })

  test.each([
    ['direction', 'direction=sideways'],
    ['limit', 'limit=0'],
    ['limit', 'limit=1001'],
    ['start', 'start=yesterday'],
    ['start after end', 'start=10&end=5'],
    ['cursor', 'cursor=nonsense'],
  ])('an invalid %s is 400 / 40003', async (_why, qs) => {
    await expectError(await gw.request(`${HIST}?${qs}`), 400, 40003)
  })

  test('an object that never existed is 404 / 40160', async () => {
    await expectError(await gw.request(objPath('hist', 'never', '/history')), 404, 40160)
  })
})
