/**
 * User claims from tokens issued by the token endpoint (issue 33), with `@ably/chat` and the
 * official `ably` client, msgpack and JSON, on the backend TEST_BACKEND names: a token request
 * made with the key itself (Basic auth) may carry `ably.room.<pattern>` claims, which its token
 * then gives as `userClaim`; the same fields in a signed TokenRequest (its mac does not cover
 * them) are ignored, so whoever holds the request cannot forge one.
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { ChatClient } from '@ably/chat'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('token claims over %s', (_format, binary) => {
  const keyName = () => rt.gw.key.slice(0, rt.gw.key.indexOf(':'))
  /** Token details from `POST /keys/{keyName}/requestToken` made with the key (Basic auth). */
  const issued = async (body: Record<string, unknown>): Promise<Ably.TokenDetails> => {
    const res = await rt.rest({ binary }).request('post', `/keys/${keyName()}/requestToken`, 3, null, body)
    if (!res.success) throw new Ably.ErrorInfo(res.errorMessage!, res.errorCode!, res.statusCode)
    return res.items[0] as Ably.TokenDetails
  }
  const chatWith = async (credential: Ably.TokenDetails | Ably.TokenRequest) =>
    new ChatClient(await connectedClient(rt.port, { authCallback: (_params, cb) => cb(null, credential) }, binary), {
      logLevel: 'silent' as never,
    })

  test("a claim the key holder puts in its token request is the userClaim of the token's messages and presence", async () => {
    const name = fresh('token-claim')
    const details = await issued({
      clientId: 'alice',
      capability: '{"*":["*"]}',
      [`ably.room.${name}`]: 'mod',
      'ably.room.*': 'anyone',
    })
    const alice = await (await chatWith(details)).rooms.get(name)
    await alice.attach()
    const sent = await alice.messages.send({ text: 'hi' })
    expect(sent.userClaim).toBe('mod')
    expect((await alice.messages.get(sent.serial)).userClaim).toBe('mod')
    await alice.presence.enter()
    const members = await alice.presence.get()
    expect(members.map((m) => [m.clientId, m.userClaim])).toEqual([['alice', 'mod']])
    // another room: the wildcard claim
    const other = await (await chatWith(details)).rooms.get(fresh('elsewhere'))
    await other.attach()
    expect((await other.messages.send({ text: 'x' })).userClaim).toBe('anyone')
  })

  test("an update or delete by another client carries that client's claim, in its answer and in history", async () => {
    const name = fresh('changer-claim')
    const room = async (clientId: string, claim: string) => {
      const details = await issued({ clientId, capability: '{"*":["*"]}', [`ably.room.${name}`]: claim })
      const r = await (await chatWith(details)).rooms.get(name)
      await r.attach()
      return r
    }
    const [sender, updater, deleter] = [
      await room('s', 'sender'),
      await room('u', 'updater'),
      await room('d', 'deleter'),
    ]
    const sent = await sender.messages.send({ text: 'hello' })
    expect(sent.userClaim).toBe('sender')
    expect((await updater.messages.update(sent.serial, { text: 'changed' })).userClaim).toBe('updater')
    expect((await sender.messages.get(sent.serial)).userClaim).toBe('updater')
    expect((await deleter.messages.delete(sent.serial, { description: 'gone' })).userClaim).toBe('deleter')
    const history = await sender.messages.history({ limit: 1 })
    expect(history.items.map((m) => m.userClaim)).toEqual(['deleter'])
  })

  test('the same claim in a signed TokenRequest is ignored; a malformed claim is refused', async () => {
    const name = fresh('forged-claim')
    const request = await rt
      .rest({ binary })
      .auth.createTokenRequest({ clientId: 'mallory', [`ably.room.${name}`]: 'forged' } as Ably.TokenParams)
    expect((request as unknown as Record<string, unknown>)[`ably.room.${name}`]).toBe('forged')
    const room = await (await chatWith(request)).rooms.get(name)
    await room.attach()
    expect((await room.messages.send({ text: 'hi' })).userClaim).toBeUndefined()
    // a token whose payload is altered to carry a claim fails its signature
    const details = await issued({ clientId: 'mallory' })
    const [app, id, payload, mac] = details.token.split('.')
    const forged = { ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), rc: { [name]: 'forged' } }
    const token = [app, id, Buffer.from(JSON.stringify(forged)).toString('base64url'), mac].join('.')
    const refused = await new Ably.Rest({
      endpoint: '127.0.0.1',
      port: rt.port,
      tls: false,
      token,
      logLevel: 0,
    }).channels
      .get(name)
      .history()
      .then(
        () => undefined,
        (e: Ably.ErrorInfo) => e.code,
      )
    expect(refused).toBe(40101)
    const bad = await issued({ clientId: 'x', [`ably.room.${name}`]: 5 }).then(
      () => undefined,
      (e: Ably.ErrorInfo) => e.code,
    )
    expect(bad).toBe(40003)
  })
})
