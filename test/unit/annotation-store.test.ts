/**
 * The embedded annotation store (SQLite): a change answers the field's value before it and is
 * refused past the entry cap with nothing written; a message's fields are kept together while any
 * of them changed within the retention, and go together after (kept by one row per message: the
 * change of a message at the cap no longer rewrites all its fields).
 */
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { SqliteAnnotationStore } from '../../src/backend/memory/annotation-store'
import { stateOp } from '../../src/core/channels/annotations'
import { TooManyAnnotations } from '../../src/core/channels/ports'

const DAY = 86_400_000
const op = (name: string, action = 0) => stateOp({ action, type: 'r:distinct.v1', name, clientId: 'c' })!

test('change: the value before, the cap refusing a new field (nothing written), removals always taken', async () => {
  const store = new SqliteAnnotationStore(new Database(':memory:'), DAY)
  const now = Date.now()
  expect(await store.change('a', 'ch', 'm', op('x'), 2, now)).toEqual({})
  expect(await store.change('a', 'ch', 'm', op('x'), 2, now)).toEqual({ before: '1' })
  await store.change('a', 'ch', 'm', op('y'), 2, now)
  await expect(store.change('a', 'ch', 'm', op('z'), 2, now)).rejects.toBeInstanceOf(TooManyAnnotations)
  expect(Object.keys((await store.current('a', 'ch', 'm')).state)).toHaveLength(2)
  expect(await store.change('a', 'ch', 'm', op('x', 1), 2, now)).toEqual({ before: '1' })
  await store.change('a', 'ch', 'm', op('z'), 2, now)
  expect(Object.keys((await store.current('a', 'ch', 'm')).state)).toHaveLength(2)
})

test("retention: a message's fields stay while any changed within it, and go together after", async () => {
  const store = new SqliteAnnotationStore(new Database(':memory:'), DAY)
  const t0 = Date.now()
  await store.change('a', 'ch', 'kept', op('old'), 1000, t0)
  await store.change('a', 'ch', 'gone', op('old'), 1000, t0)
  // a day later the first message changes again: its old field stays with it
  await store.change('a', 'ch', 'kept', op('new'), 1000, t0 + DAY - 1000)
  await store.change('a', 'ch', 'other', op('x'), 1000, t0 + DAY + 120_000)
  expect(Object.keys((await store.current('a', 'ch', 'kept')).state)).toHaveLength(2)
  expect((await store.current('a', 'ch', 'gone')).state).toEqual({})
  // past the retention of its last change, the whole message goes
  await store.change('a', 'ch', 'other', op('y'), 1000, t0 + 2 * DAY + 120_000)
  expect((await store.current('a', 'ch', 'kept')).state).toEqual({})
})
