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
  liveEntries,
  settleSerials,
  syncMessage,
  type LiveObjectRecord,
} from '../../src/core/objects/live-state'
import { OpAction, objectIdOf, type Operation } from '../../src/core/objects/live-wire'

const LIMITS = { maxObjects: 3, maxKeys: 3, gcGraceMs: 1000 }
const C = objectIdOf('counter', '{"count":10}', 'n'.repeat(16), 1)
const M = objectIdOf('map', '{"semantics":0,"entries":{}}', 'n'.repeat(16), 1)

function store(recs: LiveObjectRecord[] = []) {
  const objects = new Map(recs.map((r) => [r.objectId, r]))
  return {
    objects,
    apply(ops: Operation[], serials: string[], ts = 1000) {
      const { changed } = applyOps(
        {
          get: (id) => (objects.has(id) ? structuredClone(objects.get(id)!) : undefined),
          count: () => [...objects.keys()].filter((k) => k !== 'root').length,
        },
        ops,
        serials,
        ts,
        LIMITS,
      )
      for (const r of changed) objects.set(r.objectId, r)
    },
  }
}
const set = (key: string, v: number): Operation => ({
  action: OpAction.MAP_SET,
  objectId: 'root',
  mapSet: { key, value: { number: v } },
})

describe('applyOps', () => {
  test('a set or remove wins its key; the newest write is what reads see', () => {
    const s = store()
    s.apply([set('a', 1), set('b', 2)], ['01-000', '01-001'])
    s.apply(
      [{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'a' } }, set('b', 3)],
      ['02-000', '02-001'],
    )
    const root = s.objects.get('root')!
    expect(Object.fromEntries(liveEntries(root))).toEqual({ b: { number: 3 } })
    expect(root.entries!.a).toEqual({ timeserial: '02-000', tombstone: true, serialTimestamp: 1000 })
    expect(root.serial).toBe('02-001')
  })

  test('a create is merged once; increments are summed; the sync form keeps the create apart', () => {
    const s = store()
    const create: Operation = { action: OpAction.COUNTER_CREATE, objectId: C, counterCreate: { count: 10 } }
    s.apply([create, { action: OpAction.COUNTER_INC, objectId: C, counterInc: { number: 2 } }], ['01-000', '01-001'])
    s.apply([create, { action: OpAction.COUNTER_INC, objectId: C, counterInc: { number: -5 } }], ['02-000', '02-001'])
    const rec = s.objects.get(C)!
    expect(counterValue(rec)).toBe(7)
    const m = syncMessage(rec, 'gw0') as { object: any }
    expect(m.object.counter).toEqual({ count: -3 })
    expect(m.object.createOp).toEqual({ action: OpAction.COUNTER_CREATE, objectId: C, counterCreate: { count: 10 } })
    expect(m.object.siteTimeserials).toEqual({ gw0: '02-001' })
  })

  test('a batch over a bound changes nothing (92001), and removed keys make room', () => {
    const s = store()
    s.apply([set('a', 1), set('b', 2), set('c', 3)], ['01-000', '01-001', '01-002'])
    expect(() => s.apply([set('x', 0), set('d', 4)], ['02-000', '02-001'])).toThrow(
      expect.objectContaining({ code: 92001 }),
    )
    expect(Object.fromEntries(liveEntries(s.objects.get('root')!))).toEqual({
      a: { number: 1 },
      b: { number: 2 },
      c: { number: 3 },
    })
    s.apply(
      [{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'a' } }, set('d', 4)],
      ['03-000', '03-001'],
    )
    expect([...liveEntries(s.objects.get('root')!).keys()].sort()).toEqual(['b', 'c', 'd'])
  })

  test('objects per channel, a tombstoned object (92002), removed keys forgotten after the grace period', () => {
    const s = store([{ objectId: M, tombstone: true, tombstonedAt: 1 }])
    expect(() =>
      s.apply([{ action: OpAction.MAP_SET, objectId: M, mapSet: { key: 'k', value: { string: 'v' } } }], ['01-000']),
    ).toThrow(expect.objectContaining({ code: 92002 }))
    s.apply([{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'gone' } }], ['02-000'], 1000)
    s.apply([set('k', 1)], ['03-000'], 1500)
    expect(s.objects.get('root')!.entries!.gone).toBeDefined()
    s.apply([set('k', 2)], ['04-000'], 2500)
    expect(s.objects.get('root')!.entries!.gone).toBeUndefined()
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
    const { changed } = applyOps(
      { get: () => undefined, count: () => 0 },
      [{ action: OpAction.MAP_REMOVE, objectId: 'root', mapRemove: { key: 'k' } }],
      ['\u00000'],
      5,
      LIMITS,
    )
    settleSerials(changed, ['07-000'], 77)
    expect(changed[0]!.serial).toBe('07-000')
    expect(changed[0]!.entries!.k).toEqual({ timeserial: '07-000', tombstone: true, serialTimestamp: 77 })
    expect(s.objects.size).toBe(0)
  })
})
