import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestGateway } from '../helpers/gateway'
import { as, json, room, send } from './chat-fixture'

const dir = mkdtempSync(join(tmpdir(), 'gw-chat-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('messages, edits, reactions and rooms survive a restart on the same store', async () => {
  const a = await createTestGateway({ dataDir: dir })
  const m = await send(a, 'durable', { text: 'v0' }, { headers: as('amy') })
  const gone = await send(a, 'durable', { text: 'gone' })
  await json(await a.request(`${room('durable')}/messages/${m.serial}`, { method: 'PATCH', json: { text: 'v1' } }))
  await json(await a.request(`${room('durable')}/messages/${gone.serial}`, { method: 'DELETE' }))
  await json(
    await a.request(`${room('durable')}/messages/${m.serial}/reactions`, {
      method: 'POST',
      json: { type: 'like' },
      headers: as('bob'),
    }),
    201,
  )
  await a.close()
  const b = await createTestGateway({ dataDir: dir })
  try {
    const items = await json(await b.request(`${room('durable')}/messages?direction=forwards`))
    expect(items.map((x: any) => [x.text, x.action])).toEqual([
      ['v1', 'message.update'],
      ['', 'message.delete'],
    ])
    expect(items[0].reactions.distinct.like.clientIds).toEqual(['bob'])
    expect((await json(await b.request('/chat/rooms'))).map((r: any) => r.roomId)).toEqual(['durable'])
  } finally {
    await b.close()
  }
})
