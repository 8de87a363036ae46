import { describe, expect, test } from 'bun:test'
import type { PresenceMessage } from '../../src/core/types'
import { APP_ID, useGateway } from '../helpers/gateway'
import { openSse, type SseEvent } from '../helpers/sse'

const ctx = useGateway()

const key = () => encodeURIComponent(ctx.gw.key)
const publish = (channel: string, data: string) =>
  ctx.gw.request(`/channels/${channel}/messages`, { method: 'POST', json: { data } })
const waitSubscribed = async (channel: string) => {
  for (let i = 0; i < 400 && ctx.gw.core.hub.count(APP_ID, channel) < 1; i++) await Bun.sleep(5)
}
let n = 0
const member = (clientId: string, action: number, data?: string): PresenceMessage => ({
  id: `conn1:${n++}:0`,
  action,
  clientId,
  connectionId: 'conn1',
  timestamp: 0,
  ...(data === undefined ? {} : { data }),
})
/** message data or `presence:<clientId>:<action>` per event, in stream order. */
const sequence = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === 'message' || e.event === 'presence')
    .map((e) => {
      const d = JSON.parse(e.data)
      return e.event === 'presence' ? `presence:${d.clientId}:${d.action}` : d.data
    })

describe('presence events travel the channel log beside messages', () => {
  test('an event stream receives presence events in channel order, enveloped with action, clientId, connectionId', async () => {
    const s = await openSse(`${ctx.base}/sse?v=1.2&channels=pe1&key=${key()}`)
    await waitSubscribed('pe1')
    await publish('pe1', 'm1')
    await ctx.gw.core.presence.publish(APP_ID, 'pe1', [member('ann', 2, 'hello')])
    await publish('pe1', 'm2')
    await ctx.gw.core.presence.publish(APP_ID, 'pe1', [member('ann', 3)])
    await s.until((e) => sequence(e).length === 4)
    expect(sequence(s.events)).toEqual(['m1', 'presence:ann:2', 'm2', 'presence:ann:3'])
    const enter = JSON.parse(s.events.find((e) => e.event === 'presence')!.data)
    expect(enter).toMatchObject({ action: 2, clientId: 'ann', connectionId: 'conn1', data: 'hello', channel: 'pe1' })
    expect(typeof enter.timestamp).toBe('number')
    expect(enter.id).toMatch(/^conn1:\d+:0$/)
    s.close()
  })

  test('raw (enveloped=false) presence events carry only the data', async () => {
    const s = await openSse(`${ctx.base}/sse?v=1.2&channels=pe2&enveloped=false&key=${key()}`)
    await waitSubscribed('pe2')
    await ctx.gw.core.presence.publish(APP_ID, 'pe2', [member('bob', 2, 'raw-data')])
    await s.until((e) => e.some((x) => x.event === 'presence'))
    expect(s.events.find((e) => e.event === 'presence')!.data).toBe('raw-data')
    s.close()
  })

  test('resume includes presence events in channel order; rewind counts and replays messages only; history holds only messages', async () => {
    const qs = `v=1.2&channels=pe3&key=${key()}`
    const first = await openSse(`${ctx.base}/sse?${qs}`)
    await waitSubscribed('pe3')
    await publish('pe3', 'a')
    await first.until((e) => sequence(e).length === 1)
    const lastId = first.events.at(-1)!.id!
    first.close()
    await ctx.gw.core.presence.publish(APP_ID, 'pe3', [member('cat', 2)])
    await publish('pe3', 'b')
    await ctx.gw.core.presence.publish(APP_ID, 'pe3', [member('cat', 4, 'busy')])
    const resumed = await openSse(`${ctx.base}/sse?${qs}&lastEvent=${encodeURIComponent(lastId)}`)
    await resumed.until((e) => sequence(e).length === 3)
    expect(sequence(resumed.events)).toEqual(['presence:cat:2', 'b', 'presence:cat:4'])
    resumed.close()

    // as the hosted service rewinds: the last 3 messages, the presence events between them neither
    // counted nor replayed (then live, presence included)
    const rewound = await openSse(`${ctx.base}/sse?${qs}&rewind=3`)
    await rewound.until((e) => sequence(e).length === 2)
    await waitSubscribed('pe3')
    await publish('pe3', 'c')
    await rewound.until((e) => sequence(e).length === 3)
    expect(sequence(rewound.events)).toEqual(['a', 'b', 'c'])
    rewound.close()

    const history = (await (await ctx.gw.request('/channels/pe3/messages?direction=forwards')).json()) as any[]
    expect(history.map((m) => m.data)).toEqual(['a', 'b', 'c'])
    const limited = (await (await ctx.gw.request('/channels/pe3/messages?limit=1')).json()) as any[]
    expect(limited.map((m) => m.data)).toEqual(['c'])
    const members = (await (await ctx.gw.request('/channels/pe3/presence')).json()) as any[]
    expect(members.map((m) => [m.clientId, m.action, m.data])).toEqual([['cat', 1, 'busy']])
  })
})
