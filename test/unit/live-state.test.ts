/**
 * The rules the server applies to a channel's LiveObjects (core/objects/live-state.ts), which must
 * give the state the plugin computes: sets and removes win their key in serial order, a create is
 * merged once, increments are summed, a refused batch changes nothing, and the sync form keeps the
 * create apart from what operations did (OST2).
 */
import { describe, expect, test } from 'bun:test'
import {
  applyOps,
  counterValue,
  fromLegacy,
  liveEntries,
  recordOf,
  settleSerials,
  syncMessage,
  type ApplyTarget,
  type LiveChanges,
  type LiveHead,
  type LiveObjectRecord,
  type StoredEntry,
} from '../../src/core/objects/live-state'
import { syncPages } from '../../src/core/objects/live-sync'
import { OpAction, objectIdOf, type Operation } from '../../src/core/objects/live-wire'

const LIMITS = { maxObjects: 3, maxKeys: 3, gcGraceMs: 1000, maxChannelBytes: 1000 }
const C = objectIdOf('counter', '{"count":10}', 'n'.repeat(16), 1)
const M = objectIdOf('map', '{"semantics":0,"entries":{}}', 'n'.repeat(16), 1)

const setOn = (objectId: string, key: string, v: number): Operation => ({
  action: OpAction.MAP_SET,
  objectId,
  mapSet: { key, value: { number: v } },
})
const set = (key: string, v: number) => setOn('root', key, v)

/** A store as the backends keep it: heads, entries per object, the channel's total. */
function store(heads: LiveHead[] = []) {
  const objects = new Map(heads.map((h) => [h.objectId, h]))
  const entries = new Map<string, Map<string, StoredEntry>>()
  let bytes = 0
  const target: ApplyTarget = {
    head: (id) => (objects.has(id) ? structuredClone(objects.get(id)!) : undefined),
    entry: (id, key) => structuredClone(entries.get(id)?.get(key)),
    count: () => [...objects.keys()].filter((k) => k !== 'root').length,
    bytes: () => bytes,
  }
  const write = (c: LiveChanges) => {
    for (const h of c.heads) objects.set(h.objectId, h)
    for (const id of c.cleared) entries.delete(id)
    for (const { objectId, key, entry } of c.entries) {
      if (!entries.has(objectId)) entries.set(objectId, new Map())
      entries.get(objectId)!.set(key, entry)
    }
    bytes += c.bytes
  }
  return {
    target,
    write,
    get bytes() {
      return bytes
    },
    record: (id: string): LiveObjectRecord => recordOf(objects.get(id)!, entries.get(id) ?? []),
    apply(ops: Operation[], serials: string[], ts = 1000) {
      write(applyOps(target, ops, serials, ts, LIMITS))
    },
  }
}
describe('applyOps', () => {
  test('a set or remove wins its key; the newest write is what reads see', () => {
    const s = store()
    s.apply([set('a', 1), set('b', 2)], ['01-000', '01-001'])
    s.apply(
      [{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'a' } }, set('b', 3)],
      ['02-000', '02-001'],
    )
    const root = s.record('root')
    expect(Object.fromEntries(liveEntries(root))).toEqual({ b: { number: 3 } })
    expect(root.entries!.a).toEqual({ timeserial: '02-000', tombstone: true, serialTimestamp: 1000 })
    expect(root.serial).toBe('02-001')
  })

  test('a write reads and writes only the entries it names', () => {
    const s = store()
    s.apply([set('a', 1), set('b', 2)], ['01-000', '01-001'])
    const read: string[] = []
    const target: ApplyTarget = { ...s.target, entry: (id, key) => (read.push(key), s.target.entry(id, key)) }
    const c = applyOps(target, [set('b', 5)], ['02-000'], 1000, LIMITS)
    expect(read).toEqual(['b'])
    expect(c.entries.map((e) => e.key)).toEqual(['b'])
  })

  test('a create is merged once; increments are summed; the sync form keeps the create apart', () => {
    const s = store()
    const create: Operation = { action: OpAction.COUNTER_CREATE, objectId: C, counterCreate: { count: 10 } }
    s.apply([create, { action: OpAction.COUNTER_INC, objectId: C, counterInc: { number: 2 } }], ['01-000', '01-001'])
    s.apply([create, { action: OpAction.COUNTER_INC, objectId: C, counterInc: { number: -5 } }], ['02-000', '02-001'])
    const rec = s.record(C)
    expect(counterValue(rec)).toBe(7)
    const m = syncMessage(rec, 'gw0') as { object: any }
    expect(m.object.counter).toEqual({ count: -3 })
    expect(m.object.createOp).toEqual({ action: OpAction.COUNTER_CREATE, objectId: C, counterCreate: { count: 10 } })
    expect(m.object.siteTimeserials).toEqual({ gw0: '02-001' })
  })

  test("a map create's entries are its createOp until written over; a clear removes every entry and hides them", () => {
    const s = store()
    const create: Operation = {
      action: OpAction.MAP_CREATE,
      objectId: M,
      mapCreate: { semantics: 0, entries: { a: { data: { string: 'x' } }, b: { data: { number: 1 } } } },
    }
    s.apply(
      [create, { action: OpAction.MAP_SET, objectId: M, mapSet: { key: 'a', value: { string: 'y' } } }],
      ['01-000', '01-001'],
    )
    const m = syncMessage(s.record(M), 'gw0') as { object: any }
    expect(m.object.createOp.mapCreate.entries).toEqual({ b: { data: { number: 1 } } })
    expect(m.object.map.entries).toEqual({ a: { data: { string: 'y' }, timeserial: '01-001', tombstone: false } })
    expect(Object.fromEntries(liveEntries(s.record(M)))).toEqual({ a: { string: 'y' }, b: { number: 1 } })
    expect(s.bytes).toBe(2 + 9)
    s.apply([{ action: OpAction.MAP_CLEAR, objectId: M, mapClear: {} }, setOn(M, 'c', 3)], ['02-000', '02-001'])
    const cleared = syncMessage(s.record(M), 'gw0') as { object: any }
    expect(cleared.object.map.clearTimeserial).toBe('02-000')
    expect(cleared.object.createOp.mapCreate.entries).toEqual({})
    expect(Object.fromEntries(liveEntries(s.record(M)))).toEqual({ c: { number: 3 } })
    expect(s.bytes).toBe(1 + 8)
  })

  test('a counter whose value would not be finite is refused (92000), nothing changed', () => {
    const s = store()
    const inc = (n: number): Operation => ({ action: OpAction.COUNTER_INC, objectId: C, counterInc: { number: n } })
    s.apply([inc(1e308)], ['01-000'])
    expect(() => s.apply([inc(1e308)], ['02-000'])).toThrow(expect.objectContaining({ code: 92000 }))
    expect(() => s.apply([inc(-1e308), inc(-1e308), inc(-1e308)], ['03-000', '03-001', '03-002'])).toThrow(
      expect.objectContaining({ code: 92000 }),
    )
    expect(counterValue(s.record(C))).toBe(1e308)
  })

  test('a batch over a bound changes nothing (92001), and removed keys make room', () => {
    const s = store()
    s.apply([set('a', 1), set('b', 2), set('c', 3)], ['01-000', '01-001', '01-002'])
    expect(() => s.apply([set('x', 0), set('d', 4)], ['02-000', '02-001'])).toThrow(
      expect.objectContaining({ code: 92001 }),
    )
    expect(Object.fromEntries(liveEntries(s.record('root')))).toEqual({
      a: { number: 1 },
      b: { number: 2 },
      c: { number: 3 },
    })
    s.apply(
      [{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'a' } }, set('d', 4)],
      ['03-000', '03-001'],
    )
    expect([...liveEntries(s.record('root')).keys()].sort()).toEqual(['b', 'c', 'd'])
  })

  test("the channel's total size: keys and values, tombstones not counted; past the bound 92001", () => {
    const s = store()
    const str = (key: string, n: number): Operation => ({
      action: OpAction.MAP_SET,
      objectId: 'root',
      mapSet: { key, value: { string: 'x'.repeat(n) } },
    })
    s.apply([str('a', 500), str('b', 400)], ['01-000', '01-001'])
    expect(s.bytes).toBe(902)
    expect(() => s.apply([str('c', 100)], ['02-000'])).toThrow(
      expect.objectContaining({ code: 92001, message: 'channel object total size limit 1000 exceeded' }),
    )
    // a write that shrinks is let through; a removed key frees its bytes
    s.apply([str('a', 10)], ['03-000'])
    s.apply([{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'b' } }], ['04-000'])
    expect(s.bytes).toBe(11)
  })

  test('objects per channel, a tombstoned object (92002)', () => {
    const s = store([{ objectId: M, tombstone: true, tombstonedAt: 1 }])
    expect(() =>
      s.apply([{ action: OpAction.MAP_SET, objectId: M, mapSet: { key: 'k', value: { string: 'v' } } }], ['01-000']),
    ).toThrow(expect.objectContaining({ code: 92002 }))
    const ids = ['a', 'b', 'c'].map((x) => objectIdOf('counter', `{"count":0}`, x.repeat(16), 1))
    expect(() =>
      s.apply(
        ids.map((objectId) => ({ action: OpAction.COUNTER_CREATE, objectId, counterCreate: { count: 0 } })),
        ['05-000', '05-001', '05-002'],
      ),
    ).toThrow(expect.objectContaining({ code: 92001 }))
  })

  test('placeholders are settled with the serials and time the entries got', () => {
    const s = store()
    const changes = applyOps(
      s.target,
      [
        { action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'k' } },
        { action: OpAction.MAP_CLEAR, objectId: 'root', mapClear: {} },
        { action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'j' } },
      ],
      ['\u00000', '\u00001', '\u00002'],
      5,
      LIMITS,
    )
    settleSerials(changes, ['07-000', '07-001', '07-002'], 77)
    expect(changes.heads[0]!.serial).toBe('07-002')
    expect(changes.heads[0]!.clearTimeserial).toBe('07-001')
    expect(changes.cleared).toEqual(['root'])
    expect(changes.entries).toEqual([
      { objectId: 'root', key: 'j', entry: { timeserial: '07-002', tombstone: true, serialTimestamp: 77 } },
    ])
  })

  test('a record of the earlier layout: the create entries nothing wrote over become marked entries', () => {
    const { head, entries } = fromLegacy({
      objectId: M,
      serial: '01-001',
      created: true,
      createEntries: { a: { data: { string: 'x' } }, b: { data: { number: 1 } } },
      entries: { a: { data: { string: 'yy' }, timeserial: '01-001' }, c: { timeserial: '01-000', tombstone: true } },
    })
    expect(head).toEqual({ objectId: M, serial: '01-001', created: true, keys: 2, bytes: 3 + 9 })
    expect(Object.fromEntries(entries)).toEqual({
      a: { data: { string: 'yy' }, timeserial: '01-001', z: 3 },
      b: { data: { number: 1 }, c: true, z: 9 },
      c: { timeserial: '01-000', tombstone: true },
    })
  })
})

describe('sync pages', () => {
  test('pages bounded in bytes: a large map is split over messages of the same object, the create in the first', () => {
    const s = store()
    const big = (key: string): Operation => ({
      action: OpAction.MAP_SET,
      objectId: 'root',
      mapSet: { key, value: { string: 'x'.repeat(300) } },
    })
    s.apply([big('a'), big('b'), big('c')], ['01-000', '01-001', '01-002'])
    const pages = syncPages([s.record('root')], 'gw0', 400) as any[][]
    expect(pages.length).toBe(3)
    for (const p of pages) {
      expect(p.length).toBe(1)
      expect(p[0].object.objectId).toBe('root')
      expect(Object.keys(p[0].object.map.entries).length).toBe(1)
    }
    expect(syncPages([s.record('root')], 'gw0', 10_000).length).toBe(1)
  })
})
