/**
 * Occupancy counts LiveObjects attachments (every backend): an attachment granted OBJECT_PUBLISH
 * / OBJECT_SUBSCRIBE (which needs the object-publish / object-subscribe capability) counts in
 * `objectPublishers` / `objectSubscribers` of channel details and of `[meta]occupancy` events,
 * until it detaches; a mode requested without the capability, a plain attachment and an event
 * stream count in neither.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveObjects } from 'ably/liveobjects'
import { addKey } from '../helpers/gateway'
import { connectedClient, fresh, realtimeGateway } from '../helpers/realtime'
import { openSse } from '../helpers/sse'
import { eventually, MODES } from './live-util'

const rt = realtimeGateway()

type Metrics = Record<string, number>

const objectsClient = (key = rt.gw.key) =>
  connectedClient(rt.port, { key, plugins: { LiveObjects } } as Ably.ClientOptions)

/** The channel's occupancy as channel details report it. */
async function details(name: string): Promise<Metrics> {
  const r = await rt.gw.request(`/channels/${encodeURIComponent(name)}`)
  expect(r.status).toBe(200)
  return ((await r.json()) as any).status.occupancy.metrics
}

/** An attachment with `occupancy=metrics` (default modes: it counts in no object category) and the last event it got. */
async function watcher(name: string) {
  const c = await connectedClient(rt.port, { key: rt.gw.key })
  const ch = c.channels.get(name, { params: { occupancy: 'metrics' } })
  const seen = { last: undefined as Metrics | undefined }
  await ch.subscribe('[meta]occupancy', (m) => {
    seen.last = (typeof m.data === 'string' ? JSON.parse(m.data) : m.data).metrics
  })
  return seen
}

const objects = (m: Metrics | undefined) => ({
  connections: m?.connections,
  objectPublishers: m?.objectPublishers,
  objectSubscribers: m?.objectSubscribers,
})

describe('occupancy of LiveObjects attachments', () => {
  test('object modes count in objectPublishers / objectSubscribers, in channel details and events, until detach', async () => {
    const name = fresh('lo-occ')
    const seen = await watcher(name)
    await eventually(() =>
      expect(objects(seen.last)).toEqual({ connections: 1, objectPublishers: 0, objectSubscribers: 0 }),
    )
    // one attachment without object modes, one with both
    const plain = (await objectsClient()).channels.get(name)
    await plain.attach()
    const live = (await objectsClient()).channels.get(name, { modes: MODES })
    await (live as any).object.get()
    // an event stream of the channel counts as a connection, in no object category
    const sse = await openSse(`${rt.base}/sse?v=1.2&channels=${name}&key=${encodeURIComponent(rt.gw.key)}`)
    try {
      const want = { connections: 4, objectPublishers: 1, objectSubscribers: 1 }
      await eventually(() => expect(objects(seen.last)).toEqual(want))
      expect(objects(await details(name))).toEqual(want)
      // the object modes alone: neither a publisher nor a subscriber of messages
      expect(await details(name)).toMatchObject({ publishers: 2, subscribers: 3, presenceSubscribers: 3 })

      await live.detach()
      const after = { connections: 3, objectPublishers: 0, objectSubscribers: 0 }
      await eventually(() => expect(objects(seen.last)).toEqual(after))
      expect(objects(await details(name))).toEqual(after)
    } finally {
      sse.close()
    }
  })

  test('OBJECT_PUBLISH requested without the object-publish capability: an object subscriber only', async () => {
    const key = await addKey(rt.gw, fresh('lo-occ-ro'), { capability: { '*': ['object-subscribe', 'subscribe'] } })
    const name = fresh('lo-occ-ro')
    const seen = await watcher(name)
    const reader = (await objectsClient(key)).channels.get(name, { modes: MODES })
    await (reader as any).object.get()
    const want = { connections: 2, objectPublishers: 0, objectSubscribers: 1 }
    await eventually(() => expect(objects(seen.last)).toEqual(want))
    expect(objects(await details(name))).toEqual(want)
  })
})
