/**
 * Redis Cluster hashes only a key's hash tag: every key of one channel must share one slot (its
 * scripts touch several), whatever the channel name holds (`{`, `}`, `:`), and so must the
 * per-app keys, the control keys and each connection's presence bookkeeping keys; and the
 * presence bookkeeping of many connections spreads over many slots.
 */
import { expect, test } from 'bun:test'
import { keySlot } from '../../src/backend/redis/cluster'
import { PRESENCE_BUCKETS, presenceBucket, RedisKeys } from '../../src/backend/redis/keys'

const keys = new RedisKeys('gw:')
const slots = (names: string[]) => new Set(names.map(keySlot))

test('the slot of a key is Redis Cluster hashing (CRC16 of the hash tag, mod 16384)', () => {
  // values from redis-server 7's CLUSTER KEYSLOT
  expect(keySlot('foo')).toBe(12182)
  expect(keySlot('{user1000}.following')).toBe(3443)
  expect(keySlot('a{}b')).toBe(13694)
  expect(keySlot('gw:s:{a:b}c}')).toBe(2785)
  expect(keySlot('é{ü}')).toBe(9552)
})

test.each(['plain', 'with}brace', 'with{brace', '}{', 'a:b:c', '{x}', 'ü-ñ'])(
  'every key of channel %p shares one slot',
  (channel) => {
    const app = 'app1'
    const names = [
      keys.stream(app, channel),
      keys.idemPrefix(app, channel) + 'client-1',
      keys.notify(app, channel),
      keys.occupancy(app, channel),
      keys.presence(app, channel),
      keys.presenceHistory(app, channel),
      keys.versions(app, channel, '1700000000000-0'),
      keys.versionIndex(app, channel, '1700000000000-0'),
      keys.chatMessage(app, channel, '1700000000000-0'),
      keys.chatTyping(app, channel),
    ]
    expect(slots(names).size).toBe(1)
  },
)

test('per-app, control, presence-bookkeeping and queue keys each share a slot', () => {
  const app = 'app1'
  expect(
    slots([
      keys.channels(app),
      keys.objectState(app, 'ns', 'id'),
      keys.objectHistory(app, 'ns:x', 'id'),
      keys.objectIds(app, 'ns'),
      keys.objectCounts(app),
      keys.objectActivity(app),
      keys.objectVersions(app),
      keys.chatRooms(app),
      keys.pushDevice(app, 'dev:1'),
      keys.pushDevices(app),
      keys.pushClientDevicesPrefix(app) + 'client',
      keys.pushSubscriptions(app),
      keys.pushTargetPrefix(app) + 'c:client',
    ]).size,
  ).toBe(1)
  expect(
    slots([
      keys.control('account'),
      keys.control('key'),
      keys.epoch(),
      keys.dataLost(),
      keys.secret(),
      keys.revocations('app1.key1'),
      keys.revocationIndex(),
    ]).size,
  ).toBe(1)
  expect(slots([keys.nonce('acc', 'n1'), keys.nonceIndex('acc')]).size).toBe(1)
  expect(
    slots([keys.queueVisible('q1'), keys.queueItems('q1'), keys.queueSeq('q1'), keys.queueDeliveries('q1')]).size,
  ).toBe(1)
})

test.each(['conn-1', 'aB3_x-9', '{x}', 'ü-ñ'])(
  "connection %p's presence bookkeeping (member list, holder, its holder's set of its bucket) shares one slot",
  (conn) => {
    const bucket = presenceBucket(conn)
    expect(bucket).toBeGreaterThanOrEqual(0)
    expect(bucket).toBeLessThan(PRESENCE_BUCKETS)
    expect(
      slots([
        keys.presenceConnection(conn),
        keys.presenceHolder(conn),
        keys.presenceNodeConnections('node-1', bucket),
        keys.presenceConnectionPrefix(bucket) + conn,
        keys.presenceHolderPrefix(bucket) + conn,
      ]).size,
    ).toBe(1)
  },
)

test("the presence bookkeeping of connections is spread over many slots, on every master's range of 3", () => {
  const buckets = Array.from({ length: PRESENCE_BUCKETS }, (_, b) => keys.presenceNodeConnections('node-1', b))
  expect(slots(buckets).size).toBe(PRESENCE_BUCKETS)
  // `redis-cli --cluster create` of 3 masters gives each a third of the slots, in order
  const thirds = new Set(buckets.map((k) => Math.floor((keySlot(k) * 3) / 16384)))
  expect(thirds.size).toBe(3)
  const holders = new Set(Array.from({ length: 1000 }, (_, i) => presenceBucket(`conn-${i}`)))
  expect(holders.size).toBe(PRESENCE_BUCKETS)
})
