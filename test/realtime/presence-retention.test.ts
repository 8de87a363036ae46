/**
 * Presence history is kept as message history is (issue 40, item 13): HISTORY_TTL_MS for a
 * channel outside persisted namespaces, PERSISTED_HISTORY_TTL_MS inside one; what is past it is
 * gone from reads and from the store (the embedded store forgets the channel, Redis drops the
 * history list with its expiry and trims it by time). Every backend (TEST_BACKEND).
 */
import { beforeAll, expect, test } from 'bun:test'
import { pack } from '../../src/backend/redis/codec'
import { RedisKeys } from '../../src/backend/redis/keys'
import type { MemoryPresenceStore } from '../../src/backend/memory/presence-store'
import { PresenceAction } from '../../src/core/types'
import { APP_ID } from '../helpers/gateway'
import { connectedClient, fresh, realtimeGateway } from '../helpers/realtime'
import { onRedis, rawRedis } from '../helpers/redis-cluster'
import { waitFor } from '../helpers/wait'

const TTL = 1000
const PERSISTED_TTL = 600_000
const rt = realtimeGateway({ historyTtlMs: TTL, channelIdleMs: 1000, persistedHistoryTtlMs: PERSISTED_TTL })

beforeAll(async () => {
  await rt.gw.backend.control.putNamespace({
    appId: APP_ID,
    id: 'kept',
    persisted: true,
    pushEnabled: false,
    mutableMessages: false,
  })
})

const presenceHistory = async (channel: string) =>
  (await rt.rest().channels.get(channel).presence.history({ limit: 100 })).items
const messageHistory = async (channel: string) => (await rt.rest().channels.get(channel).history({ limit: 100 })).items

/** Runs `fn` with a plain client of the test's Redis (or redis cluster) and the gateway's key names. */
async function withRaw<T>(fn: (raw: Awaited<ReturnType<typeof rawRedis>>, k: RedisKeys) => Promise<T>): Promise<T> {
  const raw = await rawRedis(rt.gw.config as { redisUrl: string; redisCluster?: boolean })
  try {
    return await fn(raw, new RedisKeys(rt.gw.config.redisPrefix))
  } finally {
    await raw.close()
  }
}

/** An official client enters a channel and leaves it again, and publishes a message there. */
async function enterAndLeave(channel: string) {
  const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'alice' })
  const ch = client.channels.get(channel)
  await ch.presence.enter({ here: true })
  await ch.publish('note', 'hello')
  await ch.presence.leave()
  await waitFor(
    () => presenceHistory(channel),
    (h) => h.length === 2,
  )
  client.close()
}

test('presence history leaves with message history: gone from reads and from the store after HISTORY_TTL_MS', async () => {
  const channel = fresh('presence-ttl')
  const held = () => (rt.gw.backend.presence as MemoryPresenceStore).memory?.().channels
  const before = onRedis() ? 0 : held()
  await enterAndLeave(channel)
  expect((await presenceHistory(channel)).map((e) => e.action)).toEqual(['leave', 'enter'])
  // the channel's messages leave retention: its presence events do as well
  await waitFor(
    () => messageHistory(channel),
    (h) => h.length === 0,
  )
  await waitFor(
    () => presenceHistory(channel),
    (h) => h.length === 0,
  )
  if (onRedis()) {
    // the history list expires with its newest event's retention
    await withRaw((raw, k) =>
      waitFor(
        () => raw.send(['EXISTS', k.presenceHistory(APP_ID, channel)]).then(Number),
        (n) => n === 0,
      ),
    )
  } else {
    // the embedded store forgets a channel with no member and no event left (its sweep)
    expect(held()).toBe(before + 1)
    await waitFor(held, (n) => n === before)
  }
})

test("a persisted namespace's presence history is kept for PERSISTED_HISTORY_TTL_MS, as its messages are", async () => {
  const kept = fresh('kept:presence')
  const short = fresh('presence-short')
  await enterAndLeave(kept)
  await enterAndLeave(short)
  await waitFor(
    () => presenceHistory(short),
    (h) => h.length === 0,
  )
  expect((await presenceHistory(kept)).map((e) => e.action)).toEqual(['leave', 'enter'])
  expect((await messageHistory(kept)).map((m) => m.data)).toEqual(['hello'])
  if (onRedis()) {
    const ttl = await withRaw((raw, k) => raw.send(['PTTL', k.presenceHistory(APP_ID, kept)]).then(Number))
    expect(ttl).toBeGreaterThan(TTL)
    expect(ttl).toBeLessThanOrEqual(PERSISTED_TTL)
  }
})

test.skipIf(!onRedis())(
  'a history list an earlier version wrote (no expiry, events past retention) is trimmed by time and gets an expiry at its next write',
  () =>
    withRaw(async (raw, k) => {
      // a persisted namespace's channel: the list outlives this test's reads
      const channel = fresh('kept:presence-upgrade')
      const key = k.presenceHistory(APP_ID, channel)
      const old = (i: number) =>
        pack({
          id: `old-conn:${i}:0`,
          action: PresenceAction.ENTER,
          clientId: 'old',
          connectionId: 'old-conn',
          timestamp: Date.now() - PERSISTED_TTL - 60_000 + i,
        })
      // as an earlier node left it: RPUSH and LTRIM, never an expiry
      for (let i = 0; i < 3; i++) await raw.send(['RPUSH', key, old(i) as unknown as string])
      expect(Number(await raw.send(['PTTL', key]))).toBe(-1)
      const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'new' })
      await client.channels.get(channel).presence.enter()
      const history = await waitFor(
        () => presenceHistory(channel),
        (h) => h.length > 0,
      )
      expect(history.map((e) => e.clientId)).toEqual(['new'])
      expect(Number(await raw.send(['LLEN', key]))).toBe(1)
      const ttl = Number(await raw.send(['PTTL', key]))
      expect(ttl).toBeGreaterThan(TTL)
      expect(ttl).toBeLessThanOrEqual(PERSISTED_TTL)
      client.close()
    }),
)
