/**
 * One tenant cannot take over another's realtime connection: a resume key verifies only with the
 * servers' own secret and for the app, API key and clientId it was issued to (80018 otherwise,
 * and the victim keeps its connection and presence), and an AUTH stays within the connection's
 * app. Attacks as an ordinary key holder would try them, on the wire.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { hmacSha256 } from '../../src/lib/crypto'
import { addApp, APP_ID, addKey } from '../helpers/gateway'
import { rawConnected } from '../helpers/realtime-raw'
import { authCallbackOf, collect, connectedClient, FORMATS, fresh, reach, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

/** A full-access API key of an app of its own (its credentials string). */
const keyOfAnotherApp = () => addApp(rt.gw, fresh('intruder'))

/** Resume keys an attacker holding `apiKey` could mint for `victimId` with what they know. */
function forgedKeys(victimId: string, apiKey: string, genuine: string): string[] {
  const secret = apiKey.slice(apiKey.indexOf(':') + 1)
  const stamp = Date.now().toString(36)
  const mac = (data: string) => hmacSha256(secret, data, 'base64url').slice(0, 22)
  const [, who] = genuine.slice(genuine.indexOf('.') + 1).match(/^([^.]*)\./) ?? []
  return [
    `${victimId}!${stamp}.${mac(`connection:${victimId}:${stamp}`)}`, // the scheme of old: the key's own secret
    `${victimId}!${stamp}.${who}.${mac(`connection:${victimId}:${stamp}`)}`,
    `${victimId}!${stamp}.${who}.${mac(`connection:${victimId}:${stamp}:${APP_ID}:${who}`)}`,
    genuine, // the victim's own key, stolen
  ]
}

describe.each(FORMATS)('ably-js Realtime over %s: a victim connection', (_format, binary) => {
  const attackers: Array<[string, () => Promise<string>]> = [
    ['a key of another app', keyOfAnotherApp],
    ['another key of the same app', () => addKey(rt.gw, fresh('peer'))],
    ['a subscribe-only key of the same app', () => addKey(rt.gw, fresh('sub'), { capability: { '*': ['subscribe'] } })],
  ]

  test.each(attackers)('cannot be resumed with %s (80018); it keeps its connection and presence', async (_w, mint) => {
    const victim = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'victim' }, binary)
    const id = victim.connection.id!
    const genuine = victim.connection.key!
    const name = fresh('victim-room')
    const ch = victim.channels.get(name)
    await ch.presence.enter('here')
    const got = await collect(ch)
    const lost: Ably.ConnectionStateChange[] = []
    victim.connection.on((c) => c.current !== 'connected' && lost.push(c))
    const apiKey = await mint()
    for (const resume of forgedKeys(id, apiKey, genuine)) {
      const { raw, connected } = await rawConnected(rt.base, { key: apiKey, clientId: 'victim', resume })
      expect(connected.error?.code).toBe(80018)
      expect(connected.connectionId).not.toBe(id)
      // the attacker's new connection publishes under its own id, never the victim's
      raw.send({ action: 15, channel: name, msgSerial: 0, messages: [{ data: 'intruder' }] })
      await raw.next((f) => f.action === 1 || f.action === 2 || f.action === 9)
      raw.close()
    }
    await rt.rest().channels.get(name).publish('n', 'still yours')
    for (let i = 0; i < 500 && !got.messages.some((m) => m.data === 'still yours'); i++) await Bun.sleep(10)
    expect(got.messages.filter((m) => m.data === 'still yours').length).toBe(1)
    // what the intruders published (same app) came from their own connections
    expect(got.messages.filter((m) => m.connectionId === id)).toEqual([])
    expect([victim.connection.state, victim.connection.id, lost]).toEqual(['connected', id, []])
    const members = await rt.rest().channels.get(name).presence.get()
    expect(members.items.map((m) => [m.clientId, m.connectionId, m.data])).toEqual([['victim', id, 'here']])
  })

  test('an AUTH with a token of another app is refused (ERROR, connection closed)', async () => {
    const foreign = await keyOfAnotherApp()
    let key = rt.gw.key
    const { authCallback } = authCallbackOf(() => rt.rest({ key }).auth.requestToken({}))
    const client = await connectedClient(rt.port, { authCallback }, binary)
    const name = fresh('home')
    const got = await collect(client.channels.get(name))
    key = foreign
    const failed = reach(client.connection, 'failed', 5000, [])
    await client.auth.authorize().catch(() => undefined)
    const reason = await failed
    expect([reason?.code, reason?.statusCode]).toEqual([40101, 401])
    await rt.rest().channels.get(name).publish('n', 'not for the intruder')
    await Bun.sleep(200)
    expect(got.messages).toEqual([])
  })
})

describe('resume keys on the wire', () => {
  test('a key resumes only for the identity it was issued to: another clientId of the same key gets 80018', async () => {
    const { raw: first, connected } = await rawConnected(rt.base, { key: rt.gw.key, clientId: 'alice' })
    const resume = connected.connectionDetails.connectionKey as string
    first.close()
    await first.closing()
    const { raw: mallory, connected: refused } = await rawConnected(rt.base, {
      key: rt.gw.key,
      clientId: 'mallory',
      resume,
    })
    expect(refused.error?.code).toBe(80018)
    expect(refused.connectionId).not.toBe(connected.connectionId)
    mallory.close()
    const { raw, connected: again } = await rawConnected(rt.base, { key: rt.gw.key, clientId: 'alice', resume })
    expect([again.connectionId, again.error]).toEqual([connected.connectionId, undefined])
    raw.close()
  })
})
