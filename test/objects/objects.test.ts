import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pack, unpack } from 'msgpackr'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { addKey, expectError, getJson, nextLink, NO_LIMITS, objPath, patch, patchOk } from './util'

let gw: TestGateway
let readOnly: string
let writeOnly: string
let plainSubscriber: string
beforeAll(async () => {
  gw = await createTestGateway(NO_LIMITS)
  readOnly = await addKey(gw, 'objread', {
    'game:*': ['object-subscribe'],
    vis1: ['object-subscribe'],
    vis3: ['object-subscribe'],
    vis5: ['object-subscribe'],
  })
  writeOnly = await addKey(gw, 'objwrite', { 'game:*': ['object-publish'] })
  plainSubscriber = await addKey(gw, 'plainsub', { '*': ['subscribe', 'publish', 'history'] })
})
afterAll(async () => {
  await gw.close()
})

describe('object state', () => {
  test('PATCH creates an object; GET returns objectId, data, version, timestamp', async () => {
    const before = Date.now()
    const created = await patchOk(gw, 'crud', 'doc1', { title: 'hello', n: 1 })
    expect(created).toMatchObject({ objectId: 'doc1', data: { title: 'hello', n: 1 } })
    expect(typeof created.version).toBe('string')
    expect(created.timestamp).toBeGreaterThanOrEqual(before)
    expect(await getJson(gw, objPath('crud', 'doc1'))).toEqual(created)
  })

  test('every change gets a new version and a timestamp that never goes back', async () => {
    const a = await patchOk(gw, 'crud', 'doc2', { x: 1 })
    const b = await patchOk(gw, 'crud', 'doc2', {})
    const c = await patchOk(gw, 'crud', 'doc2', { x: 1 })
    expect(new Set([a.version, b.version, c.version]).size).toBe(3)
    expect(b.timestamp).toBeGreaterThanOrEqual(a.timestamp)
    expect(c.timestamp).toBeGreaterThanOrEqual(b.timestamp)
    expect(c.data).toEqual({ x: 1 })
  })

  test('merge rule: nested objects merged, null removes, arrays and scalars replaced (RFC 7396)', async () => {
    await patchOk(gw, 'merge', 'm', {
      a: { b: 1, c: { d: 2, e: 3 } },
      list: [1, 2, 3],
      s: 'x',
      gone: true,
      obj: { k: 1 },
    })
    const r = await patchOk(gw, 'merge', 'm', {
      a: { c: { d: null, f: [] }, g: {} },
      list: [null, { z: 1 }],
      s: { now: 'object' },
      gone: null,
      obj: 5,
      extra: { n: null, m: 1 },
    })
    expect(r.data).toEqual({
      a: { b: 1, c: { e: 3, f: [] }, g: {} },
      list: [null, { z: 1 }],
      s: { now: 'object' },
      obj: 5,
      extra: { m: 1 },
    })
    expect((await getJson(gw, objPath('merge', 'm'))).data).toEqual(r.data)
  })

  test('values round-trip exactly (numbers, unicode, empty containers, odd keys)', async () => {
    const data = {
      float: 0.1 + 0.2,
      big: 9007199254740991,
      neg: -1.5e-300,
      zero: 0,
      t: true,
      f: false,
      text: 'héllo 🌍 "quoted" \\ / \n',
      arr: [[], {}, [1, [2]], 'a'],
      empty: {},
      '': 'empty key',
      '1': 'numeric key',
      __proto__x: 1,
    }
    const r = await patchOk(gw, 'merge', 'exact', data)
    expect(r.data).toEqual(data)
    expect((await getJson(gw, objPath('merge', 'exact'))).data).toEqual(data)
  })

  test('a __proto__ key is stored as data, not as a prototype', async () => {
    const r = await gw.request(objPath('merge', 'proto'), {
      method: 'PATCH',
      body: '{"data":{"__proto__":{"polluted":1},"ok":1}}',
      headers: { 'content-type': 'application/json' },
    })
    expect(r.status).toBe(200)
    const text = await (await gw.request(objPath('merge', 'proto'))).text()
    expect(JSON.parse(text).data).toEqual(JSON.parse('{"__proto__":{"polluted":1},"ok":1}'))
    expect(({} as any).polluted).toBeUndefined()
  })

  test('msgpack in and out', async () => {
    const r = await gw.request(objPath('crud', 'packed'), {
      method: 'PATCH',
      body: new Uint8Array(pack({ data: { a: [1, 2], b: { c: 'd' } } })),
      headers: { 'content-type': 'application/x-msgpack', accept: 'application/x-msgpack' },
    })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/x-msgpack')
    expect(unpack(new Uint8Array(await r.arrayBuffer()))).toMatchObject({
      objectId: 'packed',
      data: { a: [1, 2], b: { c: 'd' } },
    })
  })

  test('object ids and namespaces with reserved URL characters', async () => {
    await patchOk(gw, 'ns:with:colons', 'id with/slash?&#', { ok: true })
    expect((await getJson(gw, objPath('ns:with:colons', 'id with/slash?&#'))).objectId).toBe('id with/slash?&#')
    expect((await getJson(gw, objPath('ns:with:colons'))).objectCount).toBe(1)
  })

  test('DELETE removes the object: later GET and DELETE are 404 / 40160', async () => {
    const s = await patchOk(gw, 'crud', 'doomed', { v: 1 })
    const r = await gw.request(objPath('crud', 'doomed'), { method: 'DELETE' })
    expect(r.status).toBe(200)
    const d = (await r.json()) as any
    expect(d).toMatchObject({ objectId: 'doomed', deleted: true })
    expect(d.version).not.toBe(s.version)
    await expectError(await gw.request(objPath('crud', 'doomed')), 404, 40160)
    await expectError(await gw.request(objPath('crud', 'doomed'), { method: 'DELETE' }), 404, 40160)
    // re-created from scratch, with a version never used before
    const again = await patchOk(gw, 'crud', 'doomed', { w: 2 })
    expect(again.data).toEqual({ w: 2 })
    expect([s.version, d.version]).not.toContain(again.version)
  })
})

describe('optimistic concurrency', () => {
  test('the current version applies; a stale one is 409 / 40900 and changes nothing', async () => {
    const v1 = await patchOk(gw, 'cond', 'c', { n: 1 })
    const v2 = await patchOk(gw, 'cond', 'c', { n: 2 }, v1.version)
    expect(v2.data).toEqual({ n: 2 })
    await expectError(await patch(gw, 'cond', 'c', { data: { n: 3 }, version: v1.version }), 409, 40900)
    expect(await getJson(gw, objPath('cond', 'c'))).toEqual(v2)
  })

  test('a version for an object that does not exist is a conflict', async () => {
    await expectError(await patch(gw, 'cond', 'absent', { data: { n: 1 }, version: '1' }), 409, 40900)
    await expectError(await gw.request(objPath('cond', 'absent')), 404, 40160)
  })

  test('version null means unconditional', async () => {
    expect((await patch(gw, 'cond', 'nullv', { data: { n: 1 }, version: null })).status).toBe(200)
  })
})

describe('namespaces and listing', () => {
  test('GET /liveobjects lists namespaces with objectCount and lastActivity', async () => {
    const t0 = Date.now()
    for (const id of ['a', 'b', 'c']) await patchOk(gw, 'listing', id, { id })
    const all = (await getJson(gw, '/liveobjects?limit=1000')) as any[]
    const mine = all.find((n) => n.namespaceId === 'listing')
    expect(mine).toMatchObject({ namespaceId: 'listing', objectCount: 3 })
    expect(mine.lastActivity).toBeGreaterThanOrEqual(t0)
    expect(all.map((n) => n.namespaceId)).toEqual([...all.map((n) => n.namespaceId)].sort())
    expect(await getJson(gw, objPath('listing'))).toEqual(mine)
  })

  test('namespaces page with limit and a next link', async () => {
    for (const ns of ['pg1', 'pg2', 'pg3']) await patchOk(gw, ns, 'x', {})
    const seen: string[] = []
    let path: string | undefined = '/liveobjects?limit=2'
    while (path) {
      const r = await gw.request(path)
      expect(r.status).toBe(200)
      const page = (await r.json()) as any[]
      expect(page.length).toBeLessThanOrEqual(2)
      seen.push(...page.map((n) => n.namespaceId))
      path = nextLink(r, path)
    }
    expect(seen).toEqual([...new Set(seen)].sort())
    expect(seen).toEqual(expect.arrayContaining(['pg1', 'pg2', 'pg3', 'listing']))
  })

  test('a namespace disappears with its last object; lastActivity follows deletes', async () => {
    await patchOk(gw, 'short', 'only', {})
    const before = await getJson(gw, objPath('short'))
    await patchOk(gw, 'short', 'second', {})
    expect((await getJson(gw, objPath('short'))).objectCount).toBe(2)
    await gw.request(objPath('short', 'second'), { method: 'DELETE' })
    const after = await getJson(gw, objPath('short'))
    expect(after.objectCount).toBe(1)
    expect(after.lastActivity).toBeGreaterThanOrEqual(before.lastActivity)
    await gw.request(objPath('short', 'only'), { method: 'DELETE' })
    await expectError(await gw.request(objPath('short')), 404, 40160)
    await expectError(await gw.request(objPath('short', undefined, '/objects')), 404, 40160)
    expect(((await getJson(gw, '/liveobjects?limit=1000')) as any[]).some((n) => n.namespaceId === 'short')).toBe(false)
  })

  test('objects list: default limit 100, prefix filter, pagination by id', async () => {
    const ids = Array.from({ length: 105 }, (_, i) => `item-${String(i).padStart(3, '0')}`)
    await Promise.all(ids.map((id) => patchOk(gw, 'many', id, { id })))
    await patchOk(gw, 'many', 'other', {})
    const r = await gw.request(objPath('many', undefined, '/objects'))
    const first = (await r.json()) as any[]
    expect(first).toHaveLength(100)
    expect(first[0]).toMatchObject({ objectId: 'item-000', data: { id: 'item-000' } })
    expect(typeof first[0].version).toBe('string')
    const rest = (await getJson(gw, nextLink(r, objPath('many', undefined, '/objects'))!)) as any[]
    expect([...first, ...rest].map((o) => o.objectId)).toEqual([...ids, 'other'])

    const seen: string[] = []
    let path: string | undefined = objPath('many', undefined, '/objects?prefix=item-01&limit=4')
    while (path) {
      const p = await gw.request(path)
      seen.push(...((await p.json()) as any[]).map((o) => o.objectId))
      path = nextLink(p, path)
    }
    expect(seen).toEqual(ids.filter((id) => id.startsWith('item-01')))
    expect(await getJson(gw, objPath('many', undefined, '/objects?prefix=nothing'))).toEqual([])
  })
})

describe('subscriptions', () => {
  test('the object channel and no subscribers while nobody listens', async () => {
    await patchOk(gw, 'subs', 'o', {})
    expect(await getJson(gw, objPath('subs', 'o', '/subscriptions'))).toEqual({
      channel: 'subs::$objects:o',
      subscriptions: [],
    })
    await expectError(await gw.request(objPath('subs', 'never', '/subscriptions')), 404, 40160)
  })
})

describe('errors', () => {
  test.each([
    ['data is an array', { data: [1] }],
    ['data is a string', { data: 'x' }],
    ['data is null', { data: null }],
    ['data is missing', { version: '1' }],
    ['version is a number', { data: {}, version: 3 }],
    ['version is empty', { data: {}, version: '' }],
  ])('PATCH with %s is 400', async (_why, body) => {
    const e = await expectError(await patch(gw, 'errs', 'e', body), 400, 40001)
    expect(e.message.length).toBeGreaterThan(0)
  })

  test('a body that is not an object, and data nested too deep, are 400', async () => {
    await expectError(
      await gw.request(objPath('errs', 'e'), {
        method: 'PATCH',
        body: '[1]',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      40001,
    )
    let deep: any = {}
    for (let i = 0; i < 40; i++) deep = { d: deep }
    await expectError(await patch(gw, 'errs', 'e', { data: deep }), 400, 40001)
    await expectError(await gw.request(objPath('errs', 'e')), 404, 40160)
  })

  test('state over the size bound is 413 / 40009 and changes nothing', async () => {
    await patchOk(gw, 'errs', 'big', { small: 1 })
    await expectError(await patch(gw, 'errs', 'big', { data: { huge: 'x'.repeat(70_000) } }), 413, 40009)
    expect((await getJson(gw, objPath('errs', 'big'))).data).toEqual({ small: 1 })
  })

  test.each([
    ['limit 0', '/objects?limit=0'],
    ['limit not a number', '/objects?limit=abc'],
    ['limit too big', '/objects?limit=1001'],
  ])('objects list with %s is 400 / 40003', async (_why, tail) => {
    await patchOk(gw, 'errs', 'q', {})
    await expectError(await gw.request(objPath('errs', undefined, tail)), 400, 40003)
  })

  test('namespace list limit and invalid names are 400 / 40003', async () => {
    await expectError(await gw.request('/liveobjects?limit=-1'), 400, 40003)
    await expectError(await gw.request(objPath('[meta]x', 'o')), 400, 40003)
    await expectError(await gw.request(objPath('a::$b', 'o')), 400, 40003)
    await expectError(await gw.request(objPath('errs', 'x'.repeat(600))), 400, 40003)
    await expectError(await patch(gw, 'errs', 'bad\u0001id', { data: {} }), 400, 40003)
  })

  test('missing object and missing namespace are 404 / 40160', async () => {
    await expectError(await gw.request(objPath('nowhere')), 404, 40160)
    await expectError(await gw.request(objPath('nowhere', undefined, '/objects')), 404, 40160)
    await expectError(await gw.request(objPath('nowhere', 'x')), 404, 40160)
    await expectError(await gw.request(objPath('nowhere', 'x'), { method: 'DELETE' }), 404, 40160)
  })

  test('no credentials is 401', async () => {
    await expectError(await gw.request('/liveobjects', { key: null }), 401, 40101)
    await expectError(
      await gw.request(objPath('crud', 'doc1'), { key: null, method: 'PATCH', json: { data: {} } }),
      401,
      40101,
    )
  })

  test('object-subscribe reads, object-publish writes, on the namespace (403 / 40160 otherwise)', async () => {
    await patchOk(gw, 'game:1', 'board', { turn: 1 })
    await patchOk(gw, 'private', 'p', {})
    // read-only key: reads allowed, writes refused
    expect((await gw.request(objPath('game:1', 'board'), { key: readOnly })).status).toBe(200)
    expect((await gw.request(objPath('game:1', 'board', '/history'), { key: readOnly })).status).toBe(200)
    await expectError(await patch(gw, 'game:1', 'board', { data: { turn: 2 } }, readOnly), 403, 40160)
    await expectError(await gw.request(objPath('game:1', 'board'), { method: 'DELETE', key: readOnly }), 403, 40160)
    await expectError(await gw.request(objPath('private', 'p'), { key: readOnly }), 403, 40160)
    // namespace listing shows only what the key may read
    const visible = ((await getJson(gw, '/liveobjects?limit=1000', readOnly)) as any[]).map((n) => n.namespaceId)
    expect(visible).toContain('game:1')
    expect(visible).not.toContain('private')
    // paging through what a key may read skips what it may not, and loses nothing
    for (const ns of ['vis1', 'vis2', 'vis3', 'vis4', 'vis5']) await patchOk(gw, ns, 'o', {})
    const paged: string[] = []
    for (let path: string | undefined = '/liveobjects?limit=1'; path;) {
      const r = await gw.request(path, { key: readOnly })
      paged.push(...((await r.json()) as any[]).map((n) => n.namespaceId))
      path = nextLink(r, path)
    }
    expect(paged).toEqual(['game:1', 'vis1', 'vis3', 'vis5'])
    // write-only key: writes allowed, reads refused
    expect((await patch(gw, 'game:1', 'board', { data: { turn: 2 } }, writeOnly)).status).toBe(200)
    await expectError(await gw.request(objPath('game:1', 'board'), { key: writeOnly }), 403, 40160)
    // channel capabilities are not object capabilities
    await expectError(await gw.request(objPath('game:1', 'board'), { key: plainSubscriber }), 403, 40160)
    await expectError(await patch(gw, 'game:1', 'board', { data: {} }, plainSubscriber), 403, 40160)
  })
})
