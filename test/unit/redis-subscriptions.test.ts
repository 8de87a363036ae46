/**
 * A node's channel subscriptions on Redis (src/backend/redis/subscriptions.ts), with a fake
 * subscriber and fake stream reads: what a node published it delivers from what it holds, in the
 * previous-id chain's order, and the notification of it then decodes nothing; a notification that
 * follows what was delivered is handled at once, one after a gap waits for the gap's read.
 */
import { expect, test } from 'bun:test'
import { endsWithId, pack, parseNotification, serialFromId } from '../../src/backend/redis/codec'
import { RedisKeys } from '../../src/backend/redis/keys'
import { ChannelSubscriptions, type StreamReads } from '../../src/backend/redis/subscriptions'
import type { RedisSubscriber } from '../../src/backend/redis/clients'
import { formatSerial } from '../../src/core/model/serial'
import type { Message, MessageDraft } from '../../src/core/types'

/** A notification as the publish script writes it: the previous id, then `<id> <length> <body>` per entry. */
function notification(prev: string, entries: Array<[string, Uint8Array]>): Buffer {
  const parts: Buffer[] = [Buffer.from(prev + ' ')]
  for (const [id, body] of entries) parts.push(Buffer.from(`${id} ${body.length} `), Buffer.from(body))
  return Buffer.concat(parts)
}
const body = (d: MessageDraft) => pack(d)
/** Bytes that are no msgpack message: decoding them throws. */
const UNDECODABLE = Uint8Array.from([0xc1, 0xc1, 0xc1])

async function setup(stream: Message[] = [], whileSubscribing?: () => void) {
  const listeners = new Map<string, (b: Buffer, channel: string) => void>()
  // what reached Redis, in order: the subscriptions and the set's changes
  const log: string[] = []
  const sub: RedisSubscriber = {
    subscribe: async () => {},
    sSubscribe: async (c, l) => {
      log.push(`ssubscribe ${c}`)
      whileSubscribing?.()
      listeners.set(c, l)
    },
    sUnsubscribe: async (c) => {
      log.push(`sunsubscribe ${c}`)
      listeners.delete(c)
    },
    onReady: () => {},
    onShardsReady: () => {},
  }
  const reads: string[][] = []
  const fake: StreamReads = {
    range: async (cmd, _key, a, b) => {
      reads.push([cmd, a, b])
      if (cmd === 'XREVRANGE') return stream.slice(-1)
      const lo = a.startsWith('(') ? a.slice(1) : a
      const hi = b.startsWith('(') ? b.slice(1) : b
      const before = (m: Message) =>
        hi === '+' || (b.startsWith('(') ? m.serial < serialFromId(hi) : m.serial <= serialFromId(hi))
      return stream.filter((m) => m.serial > serialFromId(lo) && before(m))
    },
    now: async () => formatSerial(1, 0),
  }
  const errors: unknown[] = []
  // the channel's set of subscribed nodes, as Redis would hold it (this node's place in it)
  const membership = { joined: 0, left: 0, failing: 0 }
  const subs = new ChannelSubscriptions(
    sub,
    new RedisKeys('t:'),
    fake,
    { ringSize: 100, ringMaxBytes: 1 << 20, redisTimeoutMs: 20 },
    (e) => errors.push(e),
    {
      join: async (_app, channel) => {
        if (membership.failing > 0 && membership.failing--) throw new Error('ZADD failed')
        membership.joined++
        log.push(`join ${channel}`)
      },
      leave: async (_app, channel) => {
        membership.left++
        log.push(`leave ${channel}`)
      },
    },
  )
  const got: Message[] = []
  subs.subscribe('app', 'ch', (_a, _c, ms) => got.push(...ms))
  await subs.get('app', 'ch')!.subscribed
  const notify = (buf: Buffer) => listeners.get(new RedisKeys('t:').notify('app', 'ch'))!(buf, '')
  return { subs, got, notify, reads, errors, membership, log, s: subs.get('app', 'ch')! }
}

const draft = (id: string): MessageDraft => ({ id, name: 'n', data: id })
const stored = (id: string, streamId: string): Message => ({
  ...draft(id),
  serial: serialFromId(streamId),
  timestamp: Number(streamId.split('-')[0]),
})

test('a notification decodes only the messages past the serial given', () => {
  const buf = notification('10-0', [
    ['11-0', UNDECODABLE],
    ['11-1', body(draft('b'))],
  ])
  const { prev, messages } = parseNotification(buf, serialFromId('11-0'))
  expect(prev).toBe(serialFromId('10-0'))
  expect(messages.map((m) => [m.id, m.serial, m.timestamp])).toEqual([['b', serialFromId('11-1'), 11]])
  expect(() => parseNotification(buf)).toThrow()
})

test('a serial made from a stream id is formatSerial of its numbers', () => {
  for (const [ms, seq] of [
    [0, 0],
    [5, 1_234_567],
    [1_732_860_000_123, 0],
    [1_732_860_000_123, 999_999],
    [123_456_789_012_345, 42],
  ] as const)
    expect(serialFromId(`${ms}-${seq}`)).toBe(formatSerial(ms, seq))
})

test('what a node published is delivered from its drafts when it follows the last delivered, and its notification decodes nothing', async () => {
  const { subs, got, notify, errors, s } = await setup([stored('a', '10-0')])
  const drafts = [draft('b'), draft('c')]
  subs.published(s, serialFromId('10-0'), drafts, [serialFromId('11-0'), serialFromId('11-1')], ['11-0', '11-1'])
  // delivered at once, the drafts themselves with their serials and timestamps
  expect(got.map((m) => [m.id, m.serial, m.timestamp])).toEqual([
    ['b', serialFromId('11-0'), 11],
    ['c', serialFromId('11-1'), 11],
  ])
  expect(got[0]).toBe(drafts[0] as Message)
  // its notification: nothing new in it, nothing decoded (these bodies would throw)
  notify(
    notification('10-0', [
      ['11-0', UNDECODABLE],
      ['11-1', UNDECODABLE],
    ]),
  )
  expect(got.length).toBe(2)
  expect(errors).toEqual([])
  // the next entry, another node's, delivered at once from its notification
  notify(notification('11-1', [['12-0', body(draft('d'))]]))
  expect(got.map((m) => m.id)).toEqual(['b', 'c', 'd'])
})

test("a publish whose previous entry is not the last delivered (another node's came between) waits for the notifications, in order", async () => {
  const { subs, got, notify, errors, s } = await setup([stored('a', '10-0')])
  // this node's publish came after another node's entry 11-0, whose notification has not arrived
  subs.published(s, serialFromId('11-0'), [draft('mine')], [serialFromId('12-0')], ['12-0'])
  expect(got).toEqual([])
  notify(notification('10-0', [['11-0', body(draft('other'))]]))
  notify(notification('11-0', [['12-0', body(draft('mine'))]]))
  expect(got.map((m) => m.id)).toEqual(['other', 'mine'])
  expect(errors).toEqual([])
})

test('a duplicate (its serial an older entry) is not delivered again; only what the publish appended is', async () => {
  const { subs, got, s } = await setup([stored('a', '10-0')])
  subs.published(
    s,
    serialFromId('10-0'),
    [draft('a'), draft('b')],
    [serialFromId('10-0'), serialFromId('11-0')],
    ['10-0', '11-0'],
  )
  expect(got.map((m) => [m.id, m.serial])).toEqual([['b', serialFromId('11-0')]])
})

test('a notification after a gap waits for the gap read from the stream; what comes meanwhile waits its turn', async () => {
  const stream = [stored('a', '10-0')]
  const { subs, got, notify, reads, s } = await setup(stream)
  // 11-0 was missed (its notification lost): it is in the stream
  stream.push(stored('missed', '11-0'))
  notify(notification('11-0', [['12-0', body(draft('b'))]]))
  // a publish of this node answered while the gap is read: left to its notification
  subs.published(s, serialFromId('12-0'), [draft('c')], [serialFromId('13-0')], ['13-0'])
  notify(notification('12-0', [['13-0', body(draft('c'))]]))
  expect(got).toEqual([])
  await Bun.sleep(10)
  expect(got.map((m) => m.id)).toEqual(['missed', 'b', 'c'])
  expect(reads.at(-1)).toEqual(['XRANGE', '(10-0', '(12-0'])
})

test('a notification is told to end with an id by reading it in place, bodies skipped by their length', () => {
  // bodies with spaces and digits in them, as msgpack bodies may have
  const spaced = Buffer.from(' 12 34-5 ')
  const one = notification('10-0', [['11-0', spaced]])
  const two = notification('10-0', [
    ['11-0', spaced],
    ['11-17', body(draft('b'))],
  ])
  expect(endsWithId(one, '11-0')).toBe(true)
  expect(endsWithId(two, '11-17')).toBe(true)
  expect(endsWithId(two, '11-0')).toBe(false)
  expect(endsWithId(two, '11-1')).toBe(false)
  expect(endsWithId(two, '11-170')).toBe(false)
  // not well formed: a body shorter or longer than its length, a length that is no number, no entry
  expect(endsWithId(Buffer.concat([one, Buffer.from('x')]), '11-0')).toBe(false)
  expect(endsWithId(one.subarray(0, one.length - 1), '11-0')).toBe(false)
  expect(endsWithId(Buffer.from('10-0 11-0 x9 abcdefghi'), '11-0')).toBe(false)
  expect(endsWithId(Buffer.from('10-0 '), '10-0')).toBe(false)
  expect(endsWithId(Buffer.from('10-0'), '10-0')).toBe(false)
})

test("the notification of a node's own publish is passed over; after another delivery, a notification is read again", async () => {
  const { subs, got, notify, errors, s } = await setup([stored('a', '10-0')])
  subs.published(s, serialFromId('10-0'), [draft('b')], [serialFromId('11-0')], ['11-0'])
  expect(s.lastId).toBe('11-0')
  // its notification: nothing in it is new, passed over (its body would not decode)
  notify(Buffer.concat([Buffer.from('99-9 11-0 3 '), Buffer.from(UNDECODABLE)]))
  expect(got.map((m) => m.id)).toEqual(['b'])
  expect(errors).toEqual([])
  // another node's entry: delivered from its notification, and the id forgotten
  notify(notification('11-0', [['12-0', body(draft('c'))]]))
  expect(s.lastId).toBeUndefined()
  expect(got.map((m) => m.id)).toEqual(['b', 'c'])
  // a notification ending with an entry delivered is still read (and finds nothing new)
  notify(notification('11-0', [['12-0', UNDECODABLE]]))
  expect(got.map((m) => m.id)).toEqual(['b', 'c'])
  expect(errors).toEqual([])
})

test("a node alone in the channel's set is not notified of its own publishes: one that does not follow the last delivered waits for the entry before it, then is delivered from what the node holds", async () => {
  const stream = [stored('a', '10-0')]
  const { subs, got, notify, reads, errors, membership, s } = await setup(stream)
  expect(membership.joined).toBe(1)
  const before = reads.length
  // another node's entry 11-0 came first (its notification still on its way), then this node's 12-0 and 13-0
  stream.push(stored('other', '11-0'), stored('mine', '12-0'), stored('next', '13-0'))
  subs.published(s, serialFromId('11-0'), [draft('mine')], [serialFromId('12-0')], ['12-0'], true)
  subs.published(s, serialFromId('12-0'), [draft('next')], [serialFromId('13-0')], ['13-0'], true)
  expect(got).toEqual([])
  notify(notification('10-0', [['11-0', body(draft('other'))]]))
  expect(got.map((m) => m.id)).toEqual(['other', 'mine', 'next'])
  // nothing read from the stream, and nothing read once the hold's time has passed
  await Bun.sleep(40)
  expect(reads.length).toBe(before)
  expect(got.length).toBe(3)
  // the next quiet publish follows: delivered at once
  subs.published(s, serialFromId('13-0'), [draft('after')], [serialFromId('14-0')], ['14-0'], true)
  expect(got.map((m) => m.id)).toEqual(['other', 'mine', 'next', 'after'])
  expect(errors).toEqual([])
})

test('a held publish whose previous entry does not come in time is read from the stream, once, in order', async () => {
  const stream = [stored('a', '10-0')]
  const { subs, got, reads, errors, s } = await setup(stream)
  const before = reads.length
  stream.push(stored('other', '11-0'), stored('mine', '12-0'), stored('next', '13-0'))
  subs.published(s, serialFromId('11-0'), [draft('mine')], [serialFromId('12-0')], ['12-0'], true)
  subs.published(s, serialFromId('12-0'), [draft('next')], [serialFromId('13-0')], ['13-0'], true)
  // the notification of 11-0 is lost: after the hold (here REDIS_TIMEOUT_MS, 20 ms) one read
  await Bun.sleep(60)
  expect(got.map((m) => m.id)).toEqual(['other', 'mine', 'next'])
  expect(reads.slice(before)).toEqual([['XRANGE', '(10-0', '13-0']])
  expect(errors).toEqual([])
})

test('a held publish is delivered after the gap read that brings the entry before it, not twice', async () => {
  const stream = [stored('a', '10-0')]
  const { subs, got, notify, errors, s } = await setup(stream)
  stream.push(stored('lost', '11-0'), stored('other', '12-0'), stored('mine', '13-0'))
  subs.published(s, serialFromId('12-0'), [draft('mine')], [serialFromId('13-0')], ['13-0'], true)
  // 11-0's notification was lost: 12-0's shows the gap, read from the stream, then 12-0, then this node's
  notify(notification('11-0', [['12-0', body(draft('other'))]]))
  await Bun.sleep(5)
  expect(got.map((m) => m.id)).toEqual(['lost', 'other', 'mine'])
  await Bun.sleep(40)
  expect(got.length).toBe(3)
  expect(errors).toEqual([])
})

test('a quiet publish to a channel whose stream was empty when subscribed follows where the subscription started: delivered at once', async () => {
  const stream: Message[] = []
  const { subs, got, reads, s } = await setup(stream)
  const before = reads.length
  stream.push(stored('first', '5-0'))
  subs.published(s, serialFromId('0-0'), [draft('first')], [serialFromId('5-0')], ['5-0'], true)
  expect(got.map((m) => m.id)).toEqual(['first'])
  expect(reads.length).toBe(before)
})

test('a publish of unknown outcome: the stream is read once, however many fail meanwhile', async () => {
  const stream = [stored('a', '10-0')]
  const { subs, got, reads } = await setup(stream)
  stream.push(stored('stored-anyway', '11-0'))
  const before = reads.length
  for (let i = 0; i < 5; i++) subs.unsure('app', 'ch')
  await Bun.sleep(10)
  expect(got.map((m) => m.id)).toEqual(['stored-anyway'])
  expect(reads.length - before).toBe(1)
})

test("the node joins a channel's set once its SSUBSCRIBE stands, and leaves it before it unsubscribes", async () => {
  const { subs, log } = await setup()
  const n = (c: string) => new RedisKeys('t:').notify('app', c)
  const off = subs.subscribe('app', 'ch2', () => {})
  await subs.get('app', 'ch2')!.subscribed
  off()
  await Bun.sleep(5)
  expect(log).toEqual([
    `ssubscribe ${n('ch')}`,
    'join ch',
    `ssubscribe ${n('ch2')}`,
    'join ch2',
    'leave ch2',
    `sunsubscribe ${n('ch2')}`,
  ])
  // unsubscribed before its SSUBSCRIBE stood: it never joins
  log.length = 0
  subs.subscribe('app', 'ch3', () => {})()
  await Bun.sleep(5)
  expect(log.filter((l) => l.startsWith('join'))).toEqual([])
  // closed: every channel still subscribed leaves
  log.length = 0
  await subs.close()
  expect(log).toEqual(['leave ch'])
})

test('a join that fails is tried again while the subscription lasts', async () => {
  const { subs, errors, membership } = await setup()
  membership.failing = 2
  subs.subscribe('app', 'ch4', () => {})
  await subs.get('app', 'ch4')!.subscribed
  for (let i = 0; i < 100 && membership.joined < 2; i++) await Bun.sleep(5)
  expect(membership.joined).toBe(2)
  expect(errors.length).toBe(2)
})

test('what is appended after a subscription began and before its SSUBSCRIBE stood is delivered (its notification went to no one)', async () => {
  const stream = [stored('a', '10-0')]
  const { got } = await setup(stream, () => {
    stream.push(stored('meanwhile', '11-0'))
  })
  expect(got.map((m) => m.id)).toEqual(['meanwhile'])
})
