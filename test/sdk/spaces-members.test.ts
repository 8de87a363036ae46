/**
 * `@ably/spaces` members, profile updates, locations and locks, and `@ably/chat` presence, from
 * one client seen by another, msgpack and JSON, on the backend TEST_BACKEND names (all of them
 * presence on the SDKs' channels: data, extras and leaves with the member's last data).
 */
import { describe, expect, test } from 'bun:test'
import Spaces, { type Lock, type SpaceMember } from '@ably/spaces'
import { ChatClient, PresenceEventType, type PresenceEvent } from '@ably/chat'
import { connectedClient, firstOf, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('SDK presence over %s', (_format, binary) => {
  const space = async (name: string, clientId: string) => {
    const s = await new Spaces(await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary)).get(name)
    await s.enter({ name: clientId })
    return s
  }

  test('spaces: members enter, update their profile and leave; locations; locks', async () => {
    const name = fresh('members')
    const ada = await space(name, 'ada')
    const updated = firstOf<SpaceMember>(
      (cb) => void ada.members.subscribe('updateProfile', cb),
      (m) => m.clientId === 'bob' && (m.profileData as { name?: string } | null)?.name === 'Bobby',
    )
    const bob = await space(name, 'bob')
    expect((await ada.members.getAll()).map((m) => m.clientId).sort()).toEqual(['ada', 'bob'])
    await bob.updateProfileData({ name: 'Bobby' })
    await updated

    const moved = firstOf<{ member: SpaceMember; currentLocation: unknown }>(
      (cb) => void ada.locations.subscribe('update', cb as never),
      (e) => e.member.clientId === 'bob',
    )
    await bob.locations.set({ slide: 3 })
    expect((await moved).currentLocation).toEqual({ slide: 3 })

    const locked = firstOf<Lock>(
      (cb) => void ada.locks.subscribe('update', cb),
      (l) => l.id === 'title' && l.status === 'locked',
    )
    const lock = await bob.locks.acquire('title', { attributes: { field: 'title' } })
    expect(lock.status).toBe('pending')
    const seen = await locked
    expect(seen.member.clientId).toBe('bob')
    expect(ada.locks.get('title')?.member.clientId).toBe('bob')

    const left = firstOf<SpaceMember>(
      (cb) => void ada.members.subscribe('leave', cb),
      (m) => m.clientId === 'bob',
    )
    await bob.leave()
    expect((await left).profileData).toEqual({ name: 'Bobby' })
  })

  test('chat: presence enter, update and leave are seen by another client', async () => {
    const name = fresh('chat-presence')
    const room = async (clientId: string) => {
      const r = await new ChatClient(await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary), {
        logLevel: 'silent' as never,
      }).rooms.get(name)
      await r.attach()
      return r
    }
    const alice = await room('alice')
    const bob = await room('bob')
    const seen = (type: PresenceEventType) =>
      firstOf<PresenceEvent>(
        (cb) => void bob.presence.subscribe(cb),
        (e) => e.type === type && e.member.clientId === 'alice',
      )
    const entered = seen(PresenceEventType.Enter)
    await alice.presence.enter({ status: 'here' })
    expect((await entered).member.data).toEqual({ status: 'here' })
    const updated = seen(PresenceEventType.Update)
    await alice.presence.update({ status: 'away' })
    expect((await updated).member.data).toEqual({ status: 'away' })
    expect((await bob.presence.get()).map((m) => [m.clientId, m.data])).toEqual([['alice', { status: 'away' }]])
    const left = seen(PresenceEventType.Leave)
    await alice.presence.leave()
    await left
    expect(await bob.presence.get()).toEqual([])
  })
})
