/**
 * The one table of LiveObjects apply cases (test/contracts/live-objects.test.ts): the rules the
 * server applies to a channel's objects (core/objects/live-state.ts `applyOps` in TypeScript,
 * backend/redis/lua/live-objects.ts in Lua), each case a sequence of batches published in turn
 * and the objects a sync then reads. Serials are written `#n` (the n-th operation the case
 * appended, from 0) and the times a removal or deletion took `T`.
 */
import type { LiveLimits, LiveObjectRecord, ObjectData, Operation } from '../../src/core/objects/ports'
import { OpAction, objectIdOf } from '../../src/core/objects/live-wire'

export const C = objectIdOf('counter', '{"count":10}', 'c'.repeat(16), 1)
export const C2 = objectIdOf('counter', '{"count":1}', 'd'.repeat(16), 1)
export const M = objectIdOf('map', '{"semantics":0,"entries":{}}', 'm'.repeat(16), 1)
const R = 'root'

const set = (objectId: string, key: string, value: ObjectData): Operation => ({
  action: OpAction.MAP_SET,
  objectId,
  mapSet: { key, value },
})
const remove = (objectId: string, key: string): Operation => ({
  action: OpAction.MAP_REMOVE,
  objectId,
  mapRemove: { key },
})
const counter = (objectId: string, count: number): Operation => ({
  action: OpAction.COUNTER_CREATE,
  objectId,
  counterCreate: { count },
})
const inc = (objectId: string, number: number): Operation => ({
  action: OpAction.COUNTER_INC,
  objectId,
  counterInc: { number },
})
const map = (objectId: string, entries: Record<string, { data?: ObjectData; tombstone?: boolean }>): Operation => ({
  action: OpAction.MAP_CREATE,
  objectId,
  mapCreate: { semantics: 0, entries },
})
const clear = (objectId: string): Operation => ({ action: OpAction.MAP_CLEAR, objectId, mapClear: {} })
const del = (objectId: string): Operation => ({ action: OpAction.OBJECT_DELETE, objectId, objectDelete: {} })

/** A batch applied (its operations take the next serials), or refused whole with `code` and `message`. */
export type Batch = Operation[] | { ops: Operation[]; refused: number; message: string }

/** A record as the case expects it: serials as `#n`, times as `T`. */
type Expected = Omit<LiveObjectRecord, 'tombstonedAt'> & { tombstonedAt?: 'T' }

export interface ApplyCase {
  name: string
  limits?: Partial<LiveLimits>
  batches: Batch[]
  /** Every object a sync reads afterwards, by id (root always). */
  objects: Record<string, Expected | Record<string, unknown>>
}

export const LIMITS: LiveLimits = { maxObjects: 100, maxKeys: 100, gcGraceMs: 60_000, maxChannelBytes: 1_000_000 }

const removed = (serial: string) => ({ timeserial: serial, tombstone: true, serialTimestamp: 'T' })

export const CASES: ApplyCase[] = [
  {
    name: 'a set or remove wins its key; a remove leaves a tombstone with its serial and time; every value kind kept',
    batches: [
      [set(R, 'a', { number: 1 }), set(R, 'b', { string: 'x' }), set(R, 'bin', { bytes: 'AQID' })],
      [remove(R, 'a'), set(R, 'b', { boolean: true }), set(R, 'j', { json: '{"a":[1,2.5]}' })],
      [set(R, 'ref', { objectId: M }), set(R, 'f', { number: -0.5 })],
    ],
    objects: {
      root: {
        objectId: R,
        serial: '#7',
        entries: {
          a: removed('#3'),
          b: { data: { boolean: true }, timeserial: '#4' },
          bin: { data: { bytes: 'AQID' }, timeserial: '#2' },
          j: { data: { json: '{"a":[1,2.5]}' }, timeserial: '#5' },
          ref: { data: { objectId: M }, timeserial: '#6' },
          f: { data: { number: -0.5 }, timeserial: '#7' },
        },
      },
    },
  },
  {
    name: 'a counter: its create merged once, its increments summed apart from the create',
    batches: [
      [counter(C, 10), inc(C, 2)],
      [counter(C, 99), inc(C, -5)],
    ],
    objects: {
      root: { objectId: R },
      [C]: { objectId: C, serial: '#3', created: true, createCount: 10, count: -3 },
    },
  },
  {
    name: "a map's create: merged once, its entries kept apart until written over; an entry written before it stays",
    batches: [
      [set(M, 'a', { string: 'first' })],
      [
        map(M, {
          a: { data: { string: 'x' } },
          b: { data: { number: 1 } },
          c: { data: { number: 2 } },
          t: { tombstone: true },
        }),
      ],
      [set(M, 'b', { number: 3 }), map(M, { d: { data: { number: 4 } } })],
    ],
    objects: {
      root: { objectId: R },
      [M]: {
        objectId: M,
        serial: '#3',
        created: true,
        entries: { a: { data: { string: 'first' }, timeserial: '#0' }, b: { data: { number: 3 }, timeserial: '#2' } },
        createEntries: { c: { data: { number: 2 } } },
      },
    },
  },
  {
    name: "a clear removes every entry and hides the create's; writes after it land",
    batches: [
      [map(M, { a: { data: { number: 1 } } }), set(M, 'b', { number: 2 })],
      [clear(M)],
      [set(M, 'c', { number: 3 }), remove(M, 'b')],
    ],
    objects: {
      root: { objectId: R },
      [M]: {
        objectId: M,
        serial: '#4',
        created: true,
        clearTimeserial: '#2',
        entries: { c: { data: { number: 3 }, timeserial: '#3' }, b: removed('#4') },
        createEntries: {},
      },
    },
  },
  {
    name: 'a create after a clear brings none of its entries',
    batches: [[clear(M)], [map(M, { a: { data: { number: 1 } } })]],
    objects: {
      root: { objectId: R },
      [M]: { objectId: M, serial: '#1', created: true, clearTimeserial: '#0', entries: {}, createEntries: {} },
    },
  },
  {
    name: 'a deleted object is a tombstone that refuses operations (92002); root is never deleted',
    batches: [
      [counter(C, 5), inc(C, 1), set(M, 'k', { number: 1 })],
      [del(C), del(R), del(M)],
      {
        ops: [set(R, 'x', { number: 0 }), inc(C, 1)],
        refused: 92002,
        message: `Object ${C} has been deleted (tombstoned); operations on it are refused`,
      },
      [set(R, 'x', { number: 1 })],
    ],
    objects: {
      root: { objectId: R, serial: '#6', entries: { x: { data: { number: 1 }, timeserial: '#6' } } },
      [C]: { objectId: C, serial: '#3', created: true, tombstone: true, tombstonedAt: 'T' },
      [M]: { objectId: M, serial: '#5', tombstone: true, tombstonedAt: 'T' },
    },
  },
  {
    name: 'the object limit: a batch making one object too many is refused whole (92001)',
    limits: { maxObjects: 2 },
    batches: [
      [counter(C, 1), set(R, 'r', { number: 1 })],
      {
        ops: [set(M, 'a', { number: 1 }), counter(C2, 1)],
        refused: 92001,
        message: 'Channel object limit exceeded: a channel holds at most 2 objects',
      },
      [set(M, 'a', { number: 2 })],
    ],
    objects: {
      root: { objectId: R, serial: '#1', entries: { r: { data: { number: 1 }, timeserial: '#1' } } },
      [C]: { objectId: C, serial: '#0', created: true, createCount: 1 },
      [M]: { objectId: M, serial: '#2', entries: { a: { data: { number: 2 }, timeserial: '#2' } } },
    },
  },
  {
    name: "the key limit counts live keys: a replace takes none, a remove frees one, a create's entries count (92001)",
    limits: { maxKeys: 2 },
    batches: [
      [set(R, 'a', { number: 1 }), set(R, 'b', { number: 1 })],
      [set(R, 'a', { number: 2 })],
      {
        ops: [set(R, 'c', { number: 1 })],
        refused: 92001,
        message: 'Map key limit exceeded: map root holds at most 2 keys',
      },
      [remove(R, 'a'), set(R, 'c', { number: 3 })],
      {
        ops: [remove(R, 'never'), set(R, 'd', { number: 1 })],
        refused: 92001,
        message: 'Map key limit exceeded: map root holds at most 2 keys',
      },
      {
        ops: [map(M, { x: { data: { number: 1 } }, y: { data: { number: 1 } }, z: { data: { number: 1 } } })],
        refused: 92001,
        message: `Map key limit exceeded: map ${M} holds at most 2 keys`,
      },
    ],
    objects: {
      root: {
        objectId: R,
        serial: '#4',
        entries: {
          a: removed('#3'),
          b: { data: { number: 1 }, timeserial: '#1' },
          c: { data: { number: 3 }, timeserial: '#4' },
        },
      },
    },
  },
  {
    name: "the channel's byte total: live entries (key and value) and counters (8); removals, clears and deletes give room back (92001)",
    limits: { maxChannelBytes: 40 },
    batches: [
      [set(R, 'k1', { string: 'x'.repeat(18) })],
      [set(R, 'k2', { string: 'y'.repeat(18) })],
      { ops: [counter(C, 1)], refused: 92001, message: 'channel object total size limit 40 exceeded' },
      [remove(R, 'k1')],
      [counter(C, 1)],
      {
        ops: [set(R, 'k2', { string: 'z'.repeat(31) })],
        refused: 92001,
        message: 'channel object total size limit 40 exceeded',
      },
      [set(R, 'k2', { number: 5 })],
      [clear(R)],
      {
        ops: [set(R, 'k3', { string: 'w'.repeat(31) })],
        refused: 92001,
        message: 'channel object total size limit 40 exceeded',
      },
      [del(C)],
      [set(R, 'k3', { string: 'w'.repeat(31) })],
    ],
    objects: {
      root: {
        objectId: R,
        serial: '#7',
        clearTimeserial: '#5',
        entries: { k3: { data: { string: 'w'.repeat(31) }, timeserial: '#7' } },
      },
      [C]: { objectId: C, serial: '#6', created: true, tombstone: true, tombstonedAt: 'T' },
    },
  },
  {
    name: 'a counter that would leave the finite numbers is refused (92000)',
    batches: [
      [counter(C, 1e308)],
      {
        ops: [inc(C, 1e308)],
        refused: 92000,
        message: `Invalid object message: counter ${C} would not hold a finite number`,
      },
      [inc(C, -1)],
    ],
    objects: {
      root: { objectId: R },
      [C]: { objectId: C, serial: '#1', created: true, createCount: 1e308, count: -1 },
    },
  },
]
