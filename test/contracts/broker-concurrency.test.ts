import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Broker, PublishOptions } from '../../src/core/ports'
import type { Message } from '../../src/core/types'
import { RedisKeys } from '../../src/backend/redis/keys'
import { packDraft } from '../../src/backend/redis/codec'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { onRedis, rawRedis } from '../helpers/redis-cluster'

// Many publishes made at once (on Redis they share batches: publishes made while their shard has
// a script call in flight go together in the next, see backend/redis/publish-batcher.ts): each keeps the
// guarantees of a publish made alone. Runs on every backend (TEST_BACKEND).
let gw: TestGateway
let broker: Broker
const APP = 'batch-app'
const plain: PublishOptions = { persisted: false }
const ids: PublishOptions = { persisted: false, clientIds: true, findable: true }
beforeAll(async () => {
  gw = await createTestGateway()
  broker = gw.backend.broker
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const fresh = () => `bc-${Date.now()}-${n++}`

/** Subscribes, then waits (position) until deliveries from here on reach it. */
async function subscribed(channel: string) {
  const got: Message[] = []
  const unsubscribe = broker.subscribe(APP, channel, (_a, _c, msgs) => got.push(...msgs))
  await broker.position(APP, channel)
  return {
    got,
    unsubscribe,
    async until(count: number) {
      for (let i = 0; i < 2000 && got.length < count; i++) await Bun.sleep(5)
      return got
    },
  }
}

async function allHistory(channel: string): Promise<Message[]> {
  return broker.history(APP, channel, { limit: 1000, direction: 'forwards' }, plain)
}

describe('concurrent publishes (batched on Redis)', () => {
  test('one channel: 200 publishes made at once are stored and delivered once each, in the order they were made', async () => {
    const ch = fresh()
    const sub = await subscribed(ch)
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => broker.publish(APP, ch, [{ id: `one-${i}`, data: String(i) }], plain)),
    )
    const serials = results.map((r) => r.serials[0]!)
    // serials follow the order the publishes were made
    expect([...serials].sort()).toEqual(serials)
    expect(new Set(serials).size).toBe(200)
    const data = (await allHistory(ch)).map((m) => m.data)
    expect(data).toEqual(Array.from({ length: 200 }, (_, i) => String(i)))
    const got = await sub.until(200)
    expect(got.map((m) => m.data)).toEqual(data)
    sub.unsubscribe()
  })

  test('many channels: publishes interleaved over 20 channels keep each channel in order', async () => {
    const channels = Array.from({ length: 20 }, fresh)
    const subs = await Promise.all(channels.map(subscribed))
    await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        broker.publish(APP, channels[i % 20]!, [{ id: `many-${i}`, data: String(Math.floor(i / 20)) }], plain),
      ),
    )
    const want = Array.from({ length: 20 }, (_, i) => String(i))
    for (const [k, ch] of channels.entries()) {
      expect((await allHistory(ch)).map((m) => m.data)).toEqual(want)
      expect((await subs[k]!.until(20)).map((m) => m.data)).toEqual(want)
      subs[k]!.unsubscribe()
    }
  })

  test('repeated client ids in publishes made at once: each id appended once, every repeat answered its serial', async () => {
    const channels = [fresh(), fresh()]
    const results = await Promise.all(
      Array.from({ length: 120 }, (_, i) => {
        const ch = channels[i % 2]!
        const id = `dup:${i % 10}`
        return broker.publish(APP, ch, [{ id, data: id }], ids).then((r) => ({ ch, id, ...r }))
      }),
    )
    for (const ch of channels) {
      const stored = await allHistory(ch)
      expect(stored.map((m) => m.id).sort()).toEqual(
        Array.from({ length: 5 }, (_, k) => `dup:${(ch === channels[0] ? 0 : 1) + 2 * k}`).sort(),
      )
      const serialOf = new Map(stored.map((m) => [m.id, m.serial]))
      const mine = results.filter((r) => r.ch === ch)
      for (const r of mine) expect(r.serials).toEqual([serialOf.get(r.id)!])
      expect(mine.reduce((t, r) => t + r.appended, 0)).toBe(5)
    }
  })

  test('rate-limit charges of publishes made at once: exactly the bucket’s tokens pass, the rest are refused alone', async () => {
    const ch = fresh()
    const now = Date.now()
    const charge = { key: `acct-${ch}`, cost: 1, rate: 0.001, burst: 10, now }
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        broker.publish(APP, ch, [{ id: `rl-${i}`, data: String(i) }], { ...plain, charge }),
      ),
    )
    const passed = results.filter((r) => r.charged?.ok !== false)
    expect(passed).toHaveLength(10)
    expect(results.filter((r) => r.charged?.ok === false).every((r) => r.appended === 0)).toBe(true)
    expect((await allHistory(ch)).map((m) => m.data)).toEqual(
      results.flatMap((r, i) => (r.charged?.ok !== false ? [String(i)] : [])),
    )
  })

  test('charges of every kind made at once to one channel (two accounts, none, client ids, two messages): each bucket pays in the order made, each publish as if alone', async () => {
    const ch = fresh()
    const now = Date.now()
    const a = { key: `acct-a-${ch}`, cost: 1, rate: 0.001, burst: 5, now }
    const b = { key: `acct-b-${ch}`, cost: 1, rate: 0.001, burst: 3, now: now + 1 }
    // five kinds in turn: account a, account b, no charge, a with a client id, a for two messages
    const made = Array.from({ length: 25 }, (_, i) => {
      const kind = i % 5
      const charge = kind === 1 ? b : kind === 2 ? undefined : kind === 4 ? { ...a, cost: 2 } : a
      const drafts =
        kind === 4
          ? [
              { id: `two-${i}`, data: `${i}a` },
              { id: `two-${i}`, data: `${i}b` },
            ]
          : [{ id: kind === 3 ? `c${i}:0` : `m-${i}`, data: String(i) }]
      return { drafts, opts: { ...(kind === 3 ? ids : plain), charge } as PublishOptions }
    })
    const results = await Promise.all(made.map(({ drafts, opts }) => broker.publish(APP, ch, drafts, opts)))
    // what each bucket lets through, taken in the order the publishes were made
    const tokens = new Map([
      [a.key, a.burst],
      [b.key, b.burst],
    ])
    const passes = made.map(({ opts }) => {
      const c = opts.charge
      if (!c) return true
      const left = tokens.get(c.key)!
      if (left < c.cost) return false
      tokens.set(c.key, left - c.cost)
      return true
    })
    expect(results.map((r) => r.charged?.ok !== false)).toEqual(passes)
    expect(results.map((r) => r.appended)).toEqual(made.map(({ drafts }, i) => (passes[i] ? drafts.length : 0)))
    // stored once each, and in the order made among the publishes of one bucket (on a cluster a
    // bucket on another master than the channel is charged in a step before the publish's)
    const stored = (await allHistory(ch)).map((m) => m.data as string)
    const accepted = made.flatMap(({ drafts }, i) => (passes[i] ? drafts.map((d) => d.data) : []))
    expect([...stored].sort()).toEqual([...accepted].sort())
    const bucketOf = new Map(made.flatMap(({ drafts, opts }) => drafts.map((d) => [d.data, opts.charge?.key])))
    for (const key of [a.key, b.key, undefined]) {
      const mine = (data: string[]) => data.filter((d) => bucketOf.get(d) === key)
      expect(mine(stored)).toEqual(mine(accepted))
    }
  })

  test.skipIf(!onRedis())(
    'a publish of one message charged on its bucket’s terms costs the script call two arguments, as an uncharged one',
    async () => {
      const script = (broker as unknown as { batcher: { script: { run: (k: string[], a: unknown[]) => unknown } } })
        .batcher.script
      const run = script.run
      let args = 0
      script.run = (k, a) => ((args += a.length), run.call(script, k, a))
      try {
        const ch = fresh()
        const charge = { key: `acct-${ch}`, cost: 1, rate: 1000, burst: 1000, now: Date.now() }
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            broker.publish(APP, ch, [{ id: `t-${i}`, data: String(i) }], { ...plain, charge }),
          ),
        )
        expect(results.every((r) => r.appended === 1 && r.charged?.ok === true)).toBe(true)
        // each publish's channel number and body, and per call a few more (the general form takes 8 a publish)
        expect(args).toBeLessThan(40 * 3)
      } finally {
        script.run = run
      }
    },
  )

  /**
   * 48 publishes made at once to 12 channels, each charged one token of one account's bucket of
   * 30: the 30 that pass are stored, each channel in its own order, and nothing refused is.
   */
  async function chargedAcross12Channels() {
    const acct = `acct-${fresh()}`
    const now = Date.now()
    const channels = Array.from({ length: 12 }, () => fresh())
    const results = await Promise.all(
      Array.from({ length: 48 }, (_, i) =>
        broker.publish(APP, channels[i % 12]!, [{ id: `m-${i}`, data: String(i) }], {
          ...plain,
          charge: { key: acct, cost: 1, rate: 0.001, burst: 30, now },
        }),
      ),
    )
    const passed = results.flatMap((r, i) => (r.charged?.ok !== false ? [i] : []))
    expect(passed).toHaveLength(30)
    for (const r of results) if (r.charged?.ok === false) expect(r.appended).toBe(0)
    for (const [c, ch] of channels.entries())
      expect((await allHistory(ch)).map((m) => Number(m.data))).toEqual(passed.filter((i) => i % 12 === c))
  }

  test('one account charged by publishes to 12 channels at once: its tokens pass in the order made, whichever master a channel is on', async () => {
    // on a cluster a channel on the bucket's master is charged in its publish's step, the others
    // in a step of their own before it: 12 channels fall on both sides of that
    await chargedAcross12Channels()
  })

  test.skipIf(process.env.TEST_BACKEND !== 'redis-cluster')(
    'a cluster node wrong about where a bucket is (slots moved): the charge is taken apart instead, once',
    async () => {
      // the node believes every key is on one master, so it puts each charge in its publish step;
      // on the masters that do not hold the bucket the step refuses it, and the node charges apart
      const b = broker as unknown as { shardOf?: (key: string) => string; limits: { take: (c: unknown) => unknown } }
      const { shardOf, limits } = b
      const take = limits.take
      let apart = 0
      b.shardOf = () => 'one master'
      limits.take = (c) => (apart++, take.call(limits, c))
      try {
        await chargedAcross12Channels()
        expect(apart).toBeGreaterThan(0) // some channels are on another master than the bucket
        expect(apart).toBeLessThan(48) // and some on its master
      } finally {
        b.shardOf = shardOf
        limits.take = take
      }
    },
  )

  test.skipIf(!onRedis())('publishes to 60 channels made at once share script calls (on a cluster too)', async () => {
    const raw = await rawRedis(gw.config as { redisUrl: string; redisCluster?: boolean })
    // script calls (EVALSHA, EVAL) answered so far by every master, whatever their script
    const calls = async () => {
      let total = 0
      for (const info of await raw.onEach(['INFO', 'commandstats']))
        for (const m of String(info).matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) total += Number(m[1])
      return total
    }
    try {
      const channels = Array.from({ length: 60 }, fresh)
      const before = await calls()
      const results = await Promise.all(
        channels.map((ch) => broker.publish(APP, ch, [{ id: `s-${ch}`, data: 'x' }], plain)),
      )
      const made = (await calls()) - before
      expect(results.every((r) => r.appended === 1)).toBe(true)
      // one at once per master and the rest together in the next: one call each would be 60
      // (before: a cluster refused a batch over several slots, CROSSSLOT, and each went alone)
      expect(made).toBeLessThan(20)
      for (const ch of channels) expect((await allHistory(ch)).map((m) => m.data)).toEqual(['x'])
    } finally {
      await raw.close()
    }
  })

  test.skipIf(!onRedis())('one publish that fails in a batch fails alone: its batch-mates are stored', async () => {
    const bad = fresh()
    const good = Array.from({ length: 10 }, fresh)
    // the bad channel's stream key holds a string: its XADD fails (WRONGTYPE)
    const raw = await rawRedis(gw.config as { redisUrl: string; redisCluster?: boolean })
    const streamKey = new RedisKeys(gw.config.redisPrefix).stream(APP, bad)
    await raw.send(['SET', streamKey, 'not a stream'])
    try {
      // a plain publish (one message, no client id) and one with client ids take different paths in the script
      const settled = await Promise.allSettled([
        ...good.slice(0, 5).map((ch) => broker.publish(APP, ch, [{ id: `g-${ch}`, data: 'ok' }], plain)),
        broker.publish(APP, bad, [{ id: 'b', data: 'bad' }], plain),
        broker.publish(
          APP,
          bad,
          [
            { id: 'b0', data: 'bad' },
            { id: 'b1', data: 'bad' },
          ],
          ids,
        ),
        ...good.slice(5).map((ch) => broker.publish(APP, ch, [{ id: `g-${ch}`, data: 'ok' }], ids)),
      ])
      expect(settled[5]!.status).toBe('rejected')
      expect(settled[6]!.status).toBe('rejected')
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(10)
      for (const ch of good) expect((await allHistory(ch)).map((m) => m.data)).toEqual(['ok'])
      // the channel works again once its key is a stream's
      await raw.send(['DEL', streamKey])
      expect((await broker.publish(APP, bad, [{ id: 'b2', data: 'fine' }], plain)).appended).toBe(1)
    } finally {
      await raw.close()
    }
  })
  /** A Redis connection beside the broker's, and the key names, for the duration of `fn`. */
  async function withRaw(fn: (raw: Awaited<ReturnType<typeof rawRedis>>, k: RedisKeys) => Promise<void>) {
    const raw = await rawRedis(gw.config as { redisUrl: string; redisCluster?: boolean })
    try {
      await fn(raw, new RedisKeys(gw.config.redisPrefix))
    } finally {
      await raw.close()
    }
  }

  test.skipIf(!onRedis())(
    "an entry whose notification a node missed is delivered before the next publish's messages (the channel's last id key kept, or gone)",
    () =>
      withRaw(async (raw, k) => {
        for (const keyGone of [false, true]) {
          const ch = fresh()
          const sub = await subscribed(ch)
          await broker.publish(APP, ch, [{ id: 'a', data: 'a' }], plain)
          expect((await sub.until(1)).map((m) => m.data)).toEqual(['a'])
          // stored as a publish script stores it (its last id key set, or gone as after its expiry), never notified
          const body = packDraft({ id: 'b', data: 'b' }) as unknown as string
          const id = String(await raw.send(['XADD', k.stream(APP, ch), '*', 'm', body]))
          if (keyGone) await raw.send(['DEL', k.lastId(APP, ch)])
          else await raw.send(['SET', k.lastId(APP, ch), id])
          // the next notification names it as the previous id: the node reads it from the stream first
          await broker.publish(APP, ch, [{ id: 'c', data: 'c' }], plain)
          expect((await sub.until(3)).map((m) => m.data)).toEqual(['a', 'b', 'c'])
          sub.unsubscribe()
        }
      }),
  )

  test.skipIf(!onRedis())(
    "a channel's last id key expires with its stream, also when it was gone and is written again between two expiry refreshes",
    () =>
      withRaw(async (raw, k) => {
        const ch = fresh()
        await broker.publish(APP, ch, [{ id: 'a', data: 'a' }], plain)
        const ttl = (key: string) => raw.send(['PTTL', key]).then(Number)
        expect(await ttl(k.lastId(APP, ch))).toBeGreaterThan(0)
        // the next publish comes within the node's second: the stream's expiry is not set again, the key's is kept
        await raw.send(['DEL', k.lastId(APP, ch)])
        await broker.publish(APP, ch, [{ id: 'b', data: 'b' }], plain)
        expect(await raw.send(['GET', k.lastId(APP, ch)])).toBeTruthy()
        expect(await ttl(k.lastId(APP, ch))).toBeGreaterThan(0)
      }),
  )

  test.skipIf(!onRedis())(
    "a channel's last id key of another type fails no publish: the notification's previous id is read from the stream",
    () =>
      withRaw(async (raw, k) => {
        const ch = fresh()
        const sub = await subscribed(ch)
        await broker.publish(APP, ch, [{ id: 'a', data: 'a' }], plain)
        await sub.until(1)
        await raw.send(['DEL', k.lastId(APP, ch)])
        await raw.send(['HSET', k.lastId(APP, ch), 'f', 'v'])
        expect((await broker.publish(APP, ch, [{ id: 'b', data: 'b' }], plain)).appended).toBe(1)
        expect((await sub.until(2)).map((m) => m.data)).toEqual(['a', 'b'])
        expect((await allHistory(ch)).map((m) => m.data)).toEqual(['a', 'b'])
        sub.unsubscribe()
      }),
  )
})
