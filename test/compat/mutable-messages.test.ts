/**
 * Message updates, deletes and appends with the official `ably` client (ably-js 2.x), over a real
 * port, once over msgpack (the Node default) and once over JSON: `getMessage`, `updateMessage`,
 * `deleteMessage`, `appendMessage` and `getMessageVersions` of a REST channel, history showing
 * latest versions, and realtime subscribers receiving each change as it is made.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { addKey, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { freshMutable as fresh, mutableNamespace } from '../helpers/mutable'

let gw: TestGateway
let port: number
/** May change only its own messages on `mut:*`. */
let ownKey: string
/** May change any message on `mut:*`. */
let anyKey: string

beforeAll(async () => {
  gw = await createTestGateway()
  port = Number(new URL(listen(gw)).port)
  await mutableNamespace(gw)
  const base = ['publish', 'subscribe', 'history']
  ownKey = await addKey(gw, 'own', {
    capability: { 'mut:*': [...base, 'message-update-own', 'message-delete-own'] },
  })
  anyKey = await addKey(gw, 'any', {
    capability: { 'mut:*': [...base, 'message-update-any', 'message-delete-any'] },
  })
})

afterAll(async () => {
  await gw.close()
})

type Options = Omit<Ably.ClientOptions, 'endpoint' | 'port' | 'tls' | 'useBinaryProtocol'>

/** Waits one millisecond, so that a version made next has a later timestamp than what came before. */
const tick = () => Bun.sleep(2)

async function ablyError(p: Promise<unknown>): Promise<Ably.ErrorInfo> {
  try {
    await p
  } catch (e) {
    return e as Ably.ErrorInfo
  }
  throw new Error('expected the call to fail')
}

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js over $protocol', ({ useBinaryProtocol }) => {
  const rest = (opts: Options = { key: gw.key }) =>
    new Ably.Rest({ endpoint: '127.0.0.1', port, tls: false, useBinaryProtocol, logLevel: 0, ...opts })
  const realtime = (opts: Options = { key: gw.key }) =>
    new Ably.Realtime({ endpoint: '127.0.0.1', port, tls: false, useBinaryProtocol, logLevel: 0, ...opts })

  test('getMessage answers the message by serial or by message, as published', async () => {
    const ch = rest().channels.get(fresh('get'))
    const { serials } = await ch.publish('test-message', { value: 'original' })
    const bySerial = await ch.getMessage(serials[0]!)
    expect(bySerial).toMatchObject({ serial: serials[0], name: 'test-message', data: { value: 'original' } })
    expect(bySerial.action).toBe('message.create')
    expect(bySerial.version).toEqual({ serial: serials[0]!, timestamp: bySerial.timestamp })
    const byMessage = await ch.getMessage({ serial: serials[0]! } as Ably.Message)
    expect(byMessage.name).toBe('test-message')
  })

  test('updateMessage mixes the given fields into the message, with the operation as its version', async () => {
    const ch = rest().channels.get(fresh('update'))
    const { serials } = await ch.publish({
      name: 'original-message',
      data: { value: 'original' },
      extras: { headers: { a: '1' } },
    })
    const serial = serials[0]!
    const original = await ch.getMessage(serial)
    await tick()
    const result = await ch.updateMessage({ serial, data: { value: 'updated' } } as Ably.Message, {
      clientId: 'updater-client',
      description: 'Test update operation',
      metadata: { reason: 'testing' },
    })
    expect(typeof result.versionSerial).toBe('string')
    expect(result.versionSerial! > serial).toBe(true)

    const latest = await ch.getMessage(serial)
    expect(latest.action).toBe('message.update')
    expect(latest).toMatchObject({
      serial,
      id: original.id,
      timestamp: original.timestamp,
      name: 'original-message',
      data: { value: 'updated' },
      extras: { headers: { a: '1' } },
    })
    expect(latest.version).toEqual({
      serial: result.versionSerial!,
      timestamp: latest.version!.timestamp,
      clientId: 'updater-client',
      description: 'Test update operation',
      metadata: { reason: 'testing' },
    })
    expect(latest.version!.timestamp!).toBeGreaterThan(original.timestamp!)
  })

  test('deleteMessage is a soft delete: the fields given replace, the others stay', async () => {
    const ch = rest().channels.get(fresh('delete'))
    const { serials } = await ch.publish('message-to-delete', { value: 'will be deleted' })
    const serial = serials[0]!
    await tick()
    const result = await ch.deleteMessage({ serial, data: {} } as Ably.Message, {
      clientId: 'deleter-client',
      description: 'Test delete operation',
      metadata: { reason: 'inappropriate content' },
    })
    const latest = await ch.getMessage(serial)
    expect(latest.action).toBe('message.delete')
    expect(latest).toMatchObject({ serial, name: 'message-to-delete', data: {} })
    expect(latest.version).toMatchObject({
      serial: result.versionSerial!,
      clientId: 'deleter-client',
      description: 'Test delete operation',
      metadata: { reason: 'inappropriate content' },
    })
  })

  test('appendMessage concatenates text; the message reads as one update of the whole text', async () => {
    const ch = rest().channels.get(fresh('append'))
    const { serials } = await ch.publish('response', '')
    const serial = serials[0]!
    for (const token of ['Hel', 'lo', ' wor', 'ld']) await ch.appendMessage({ serial, data: token } as Ably.Message)
    const latest = await ch.getMessage(serial)
    expect(latest).toMatchObject({ serial, name: 'response', data: 'Hello world', action: 'message.update' })
    const { items } = await ch.history()
    expect(items.map((m) => [m.serial, m.data, m.action])).toEqual([[serial, 'Hello world', 'message.update']])
  })

  test('appendMessage concatenates binary data (base64 over JSON, bytes over msgpack)', async () => {
    const ch = rest().channels.get(fresh('append-binary'))
    const { serials } = await ch.publish('bytes', Buffer.from([1, 2]))
    await ch.appendMessage({ serial: serials[0]!, data: Buffer.from([3, 4, 5]) } as Ably.Message)
    const latest = await ch.getMessage(serials[0]!)
    expect([...new Uint8Array(latest.data as ArrayBuffer)]).toEqual([1, 2, 3, 4, 5])
  })

  test('getMessageVersions lists every version oldest first, in pages', async () => {
    const ch = rest().channels.get(fresh('versions'))
    const { serials } = await ch.publish('versioned-message', 'v1')
    const serial = serials[0]!
    const made: string[] = []
    for (const data of ['v2', 'v3'])
      made.push((await ch.updateMessage({ serial, data } as Ably.Message)).versionSerial!)
    made.push((await ch.appendMessage({ serial, data: '+' } as Ably.Message)).versionSerial!)
    made.push((await ch.deleteMessage({ serial } as Ably.Message)).versionSerial!)

    const all = await ch.getMessageVersions(serial)
    expect(all.items.map((m) => [m.action, m.data])).toEqual([
      ['message.create', 'v1'],
      ['message.update', 'v2'],
      ['message.update', 'v3'],
      ['message.append', '+'],
      ['message.delete', 'v3+'],
    ])
    expect(all.items.map((m) => m.version!.serial)).toEqual([serial, ...made])
    expect(new Set(all.items.map((m) => m.serial))).toEqual(new Set([serial]))

    const first = await ch.getMessageVersions(serial, { limit: 2 })
    expect(first.items.map((m) => m.data)).toEqual(['v1', 'v2'])
    expect(first.hasNext()).toBe(true)
    const second = (await first.next())!
    expect(second.items.map((m) => m.data)).toEqual(['v3', '+'])
    const third = (await second.next())!
    expect(third.items.map((m) => m.action)).toEqual(['message.delete'])
    expect(third.hasNext()).toBe(false)
  })

  test('history shows each message in its latest version, in the place of the original', async () => {
    const ch = rest().channels.get(fresh('history'))
    const { serials } = await ch.publish([
      { name: 'a', data: 'first' },
      { name: 'b', data: 'second' },
      { name: 'c', data: 'third' },
    ])
    await ch.updateMessage({ serial: serials[1]!, data: 'second, edited' } as Ably.Message)
    await ch.deleteMessage({ serial: serials[2]! } as Ably.Message)
    const { items } = await ch.history({ direction: 'forwards' })
    expect(items.map((m) => [m.serial, m.name, m.data, m.action])).toEqual([
      [serials[0], 'a', 'first', 'message.create'],
      [serials[1], 'b', 'second, edited', 'message.update'],
      [serials[2], 'c', 'third', 'message.delete'],
    ])
  })

  test('own changes need message-update-own / -delete-own and an identified publisher; any needs -any', async () => {
    const name = fresh('own')
    const alice = rest({ key: ownKey, clientId: 'alice' }).channels.get(name)
    const bob = rest({ key: ownKey, clientId: 'bob' }).channels.get(name)
    const moderator = rest({ key: anyKey }).channels.get(name)
    const { serials } = await alice.publish('note', 'by alice')
    const serial = serials[0]!

    await alice.updateMessage({ serial, data: 'by alice, edited' } as Ably.Message)
    const refused = await ablyError(bob.updateMessage({ serial, data: 'by bob' } as Ably.Message))
    expect([refused.code, refused.statusCode]).toEqual([40160, 403])
    const refusedDelete = await ablyError(bob.deleteMessage({ serial } as Ably.Message))
    expect(refusedDelete.code).toBe(40160)

    await moderator.deleteMessage({ serial } as Ably.Message, { description: 'moderated' })
    const latest = await alice.getMessage(serial)
    expect(latest).toMatchObject({ clientId: 'alice', data: 'by alice, edited', action: 'message.delete' })
    expect(latest.version!.description).toBe('moderated')
    expect(latest.version!.clientId).toBeUndefined()
    // the editor's identity is the credentials': alice's own update names her
    const versions = await alice.getMessageVersions(serial)
    expect(versions.items[1]!.version!.clientId).toBe('alice')
  })

  test('errors: 93002 without mutableMessages, 404 for an unknown serial, 40003 without a serial', async () => {
    const plain = rest().channels.get(`plain:${fresh('x')}`)
    const { serials } = await plain.publish('n', 'd')
    const notMutable = await ablyError(plain.updateMessage({ serial: serials[0]!, data: 'x' } as Ably.Message))
    expect([notMutable.code, notMutable.statusCode]).toEqual([93002, 400])
    // reads work on any channel
    expect((await plain.getMessage(serials[0]!)).data).toBe('d')

    const ch = rest().channels.get(fresh('errors'))
    const missing = await ablyError(ch.getMessage('01000000000000-000000'))
    expect([missing.code, missing.statusCode]).toEqual([40400, 404])
    const missingUpdate = await ablyError(
      ch.updateMessage({ serial: '01000000000000-000000', data: 'x' } as Ably.Message),
    )
    expect(missingUpdate.statusCode).toBe(404)
    const noSerial = await ablyError(ch.updateMessage({ data: 'x' } as Ably.Message))
    expect(noSerial.code).toBe(40003)
  })

  test('realtime subscribers receive create, update, delete and append with the message serial and version', async () => {
    const name = fresh('realtime')
    const client = realtime()
    try {
      const sub = client.channels.get(name)
      const got: Ably.InboundMessage[] = []
      await sub.subscribe((m) => got.push(m))
      const ch = rest().channels.get(name)
      const { serials } = await ch.publish({ name: 'response', data: 'Hel', extras: { headers: { model: 'x' } } })
      const serial = serials[0]!
      await tick()
      const appended = await ch.appendMessage({ serial, data: 'lo' } as Ably.Message, { description: 'token' })
      const updated = await ch.updateMessage({ serial, data: 'Hello!' } as Ably.Message, {
        clientId: 'editor',
        metadata: { k: 'v' },
      })
      const deleted = await ch.deleteMessage({ serial, data: '' } as Ably.Message)
      for (let i = 0; i < 200 && got.length < 4; i++) await Bun.sleep(10)

      expect(got.map((m) => [m.action, m.data, m.name])).toEqual([
        ['message.create', 'Hel', 'response'],
        ['message.append', 'lo', 'response'],
        ['message.update', 'Hello!', 'response'],
        ['message.delete', '', 'response'],
      ])
      const created = got[0]!
      for (const m of got) {
        expect(m.serial).toBe(serial)
        expect(m.timestamp).toBe(created.timestamp)
        expect(m.id).toBe(created.id)
        expect(m.extras).toEqual({ headers: { model: 'x' } })
      }
      expect(got.map((m) => m.version!.serial)).toEqual([
        serial,
        appended.versionSerial!,
        updated.versionSerial!,
        deleted.versionSerial!,
      ])
      expect(got[1]!.version).toMatchObject({ description: 'token' })
      expect(got[1]!.version.timestamp!).toBeGreaterThan(created.timestamp!)
      expect(got[2]!.version).toMatchObject({ clientId: 'editor', metadata: { k: 'v' } })
    } finally {
      client.close()
    }
  })

  test('a realtime client changes messages over its connection (acknowledged with the version serial)', async () => {
    const name = fresh('realtime-own')
    const client = realtime({ key: ownKey, clientId: 'alice' })
    try {
      const ch = client.channels.get(name)
      const got: Ably.InboundMessage[] = []
      await ch.subscribe((m) => got.push(m))
      const { serials } = await ch.publish('note', 'draft')
      const serial = serials[0]!
      const updated = await ch.updateMessage({ serial, data: 'final' } as Ably.Message, { description: 'done' })
      const appended = await ch.appendMessage({ serial, data: '!' } as Ably.Message)
      for (let i = 0; i < 200 && got.length < 3; i++) await Bun.sleep(10)
      expect(got.map((m) => [m.action, m.data])).toEqual([
        ['message.create', 'draft'],
        ['message.update', 'final'],
        ['message.append', '!'],
      ])
      expect(got.map((m) => m.version!.serial)).toEqual([serial, updated.versionSerial!, appended.versionSerial!])
      expect(got[1]!.version).toMatchObject({ clientId: 'alice', description: 'done' })
      const latest = await rest().channels.get(name).getMessage(serial)
      expect(latest).toMatchObject({ data: 'final!', action: 'message.update', clientId: 'alice' })
      // another client's message is not alice's to change
      const other = await rest({ key: anyKey, clientId: 'bob' }).channels.get(name).publish('n', 'by bob')
      const refused = await ablyError(ch.updateMessage({ serial: other.serials[0]!, data: 'x' } as Ably.Message))
      expect(refused.code).toBe(40160)
    } finally {
      client.close()
    }
  })
})
