import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestGateway } from '../helpers/gateway'
import { expectError, getJson, NO_LIMITS, objPath, patchOk } from './util'

const dir = mkdtempSync(join(tmpdir(), 'gw-objects-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('object state, versions, namespaces and history survive a restart', async () => {
  const first = await createTestGateway({ ...NO_LIMITS, dataDir: dir })
  let last: any
  for (let i = 0; i < 5; i++) last = await patchOk(first, 'durable', 'doc', { i, nested: { [`k${i}`]: i } })
  await patchOk(first, 'durable', 'other', { keep: [1, 2, 3] })
  await patchOk(first, 'durable', 'dropped', { bye: true })
  expect((await first.request(objPath('durable', 'dropped'), { method: 'DELETE' })).status).toBe(200)
  const namespace = await getJson(first, objPath('durable'))
  const history = await getJson(first, objPath('durable', 'doc', '/history'))
  const droppedHistory = await getJson(first, objPath('durable', 'dropped', '/history'))
  await first.close()

  const second = await createTestGateway({ ...NO_LIMITS, dataDir: dir })
  try {
    expect(await getJson(second, objPath('durable', 'doc'))).toEqual(last)
    expect((await getJson(second, objPath('durable', 'other'))).data).toEqual({ keep: [1, 2, 3] })
    await expectError(await second.request(objPath('durable', 'dropped')), 404, 40160)
    expect(await getJson(second, objPath('durable'))).toEqual(namespace)
    expect(namespace.objectCount).toBe(2)
    expect(await getJson(second, objPath('durable', 'doc', '/history'))).toEqual(history)
    expect(await getJson(second, objPath('durable', 'dropped', '/history'))).toEqual(droppedHistory)
    // the version read before the restart is still current, and the next one is new
    const next = await patchOk(second, 'durable', 'doc', { after: true }, last.version)
    expect(history.map((c: any) => c.version)).not.toContain(next.version)
    expect(next.data).toMatchObject({ i: 4, after: true, nested: { k0: 0, k4: 4 } })
    expect(next.timestamp).toBeGreaterThanOrEqual(last.timestamp)
    // a re-created object never reuses a version of its earlier life
    const reborn = await patchOk(second, 'durable', 'dropped', { back: true })
    expect(droppedHistory.map((c: any) => c.version)).not.toContain(reborn.version)
  } finally {
    await second.close()
  }
})
