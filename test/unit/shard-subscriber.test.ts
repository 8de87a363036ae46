import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawn } from 'node:child_process'
import type { Socket, TCPSocketListener } from 'bun'
import { createClient } from 'redis'
import { placeOfUrl } from '../../src/backend/redis/clients'
import { RespReader, type RespValue } from '../../src/backend/redis/resp-reader'
import { ShardSubscriber, type ShardPlace } from '../../src/backend/redis/shard-subscriber'
import { freePort, REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/** Polls `cond` every 20 ms until it holds; fails after `ms`. */
async function until(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await Bun.sleep(20)
  }
}

/** A node-redis client to publish with, once the server answers (its errors are the test's to see, not thrown). */
async function publisher(url: string) {
  const c = createClient({ url, socket: { reconnectStrategy: false } })
  c.on('error', () => {})
  await until(() =>
    c.connect().then(
      () => true,
      () => false,
    ),
  )
  return c
}

/** Subscribers of a sharded channel, as the server counts them. */
async function shardSubscribers(client: Awaited<ReturnType<typeof publisher>>, ch: string): Promise<number> {
  return Number(((await client.sendCommand(['PUBSUB', 'SHARDNUMSUB', ch])) as unknown as unknown[])[1])
}

const errors: Error[] = []
const record = (e: Error) => errors.push(e)

/** Messages heard, per listener. */
function heard() {
  const got: string[] = []
  return { got, listener: (m: Buffer) => got.push(m.toString('hex')) }
}

describe('sharded subscriber on a real redis-server', () => {
  let redis: TestRedis
  let pub: Awaited<ReturnType<typeof publisher>>
  const subscribers = (ch: string) => shardSubscribers(pub, ch)
  beforeAll(async () => {
    redis = await TestRedis.start()
    pub = await publisher(redis.url)
  })
  afterAll(async () => {
    await pub.quit().catch(() => {})
    await redis.stop()
  })
  const subscriber = () =>
    new ShardSubscriber({ url: redis.url, redisTimeoutMs: 2000, placeOf: () => placeOfUrl(redis.url) }, record)

  test('a notification reaches each listener of its channel, its bytes as published', async () => {
    const s = subscriber()
    const a = heard()
    const b = heard()
    const other = heard()
    await s.sSubscribe('n:{a}', a.listener)
    await s.sSubscribe('n:{a}', b.listener)
    await s.sSubscribe('n:{b}', other.listener)
    // bytes that a line-oriented reader would cut: CR LF, '$', '*', past ASCII
    const body = Buffer.from([0x0d, 0x0a, 0x24, 0x2a, 0xff, 0x00, 0x0d])
    await pub.sPublish('n:{a}', body)
    await pub.sPublish('n:{b}', Buffer.from('x'))
    await until(() => a.got.length === 1 && b.got.length === 1 && other.got.length === 1)
    expect(a.got).toEqual([body.toString('hex')])
    expect(b.got).toEqual([body.toString('hex')])
    // one listener leaves: the other still hears the channel
    await s.sUnsubscribe('n:{a}', a.listener)
    await pub.sPublish('n:{a}', Buffer.from('y'))
    await until(() => b.got.length === 2)
    expect(a.got).toHaveLength(1)
    s.close()
  })

  test('the last listener leaving unsubscribes the channel on the server', async () => {
    const s = subscriber()
    const a = heard()
    await s.sSubscribe('n:{gone}', a.listener)
    expect(await subscribers('n:{gone}')).toBe(1)
    await s.sUnsubscribe('n:{gone}', a.listener)
    await until(async () => (await subscribers('n:{gone}')) === 0)
    s.close()
  })

  test('a connection left with no channel is closed after the idle time, and one subscribed again within it is kept', async () => {
    /** The server's pub/sub clients' ids (its subscriber connections). */
    const pubsubClients = async () =>
      String(await pub.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub']))
        .split('\n')
        .filter((l) => l.includes('ssub=1'))
        .map((l) => /id=(\d+)/.exec(l)![1]!)
    const s = new ShardSubscriber(
      { url: redis.url, redisTimeoutMs: 2000, placeOf: () => placeOfUrl(redis.url), idleCloseMs: 300 },
      record,
    )
    const a = heard()
    await s.sSubscribe('n:{idle}', a.listener)
    const [first] = await pubsubClients()
    expect(first).toBeDefined()
    // left and subscribed again at once: the same connection carries it
    await s.sUnsubscribe('n:{idle}', a.listener)
    await s.sSubscribe('n:{idle}', a.listener)
    await Bun.sleep(500)
    expect(await pubsubClients()).toEqual([first!])
    // left for longer than the idle time: the connection is closed
    await s.sUnsubscribe('n:{idle}', a.listener)
    await until(async () => (await subscribers('n:{idle}')) === 0)
    const open = async (id: string) =>
      String(await pub.sendCommand(['CLIENT', 'LIST']))
        .split('\n')
        .some((l) => l.startsWith(`id=${id} `))
    expect(await open(first!)).toBe(true)
    await until(async () => !(await open(first!)))
    // a later subscription opens a new connection, and hears the channel
    await s.sSubscribe('n:{idle}', a.listener)
    const [second] = await pubsubClients()
    expect(second).toBeDefined()
    expect(second).not.toBe(first)
    await pub.sPublish('n:{idle}', Buffer.from('z'))
    await until(() => a.got.length === 1)
    s.close()
  })

  test('many notifications in one read, and one larger than a read, arrive whole and in order', async () => {
    const s = subscriber()
    const a = heard()
    await s.sSubscribe('n:{many}', a.listener)
    const sent: string[] = []
    const multi = pub.multi()
    for (let i = 0; i < 500; i++) {
      const body = Buffer.alloc(i === 250 ? 300_000 : 40, i % 256)
      sent.push(body.toString('hex'))
      multi.sPublish('n:{many}', body)
    }
    await multi.exec()
    await until(() => a.got.length === 500)
    expect(a.got).toEqual(sent)
    s.close()
  })

  test('after the server restarts, channels are subscribed again and the ready hooks run after that', async () => {
    const s = subscriber()
    const a = heard()
    let readies = 0
    let subscribedAtReady = -1
    // the server's view, asked by the hook through the publisher made after the restart (the one
    // before it is closed, and the hook may run before the test has the new one)
    let restarted: Promise<typeof pub> | undefined
    s.onReady(() => {
      readies++
      void restarted!.then((p) => shardSubscribers(p, 'n:{again}')).then((n) => (subscribedAtReady = n))
    })
    await s.sSubscribe('n:{again}', a.listener)
    expect(readies).toBe(0)
    await pub.quit().catch(() => {})
    await redis.kill()
    restarted = redis.restart().then(() => publisher(redis.url))
    pub = await restarted
    await until(() => readies > 0 && subscribedAtReady >= 0, 10_000)
    expect(subscribedAtReady).toBe(1)
    await pub.sPublish('n:{again}', Buffer.from('after'))
    await until(() => a.got.length === 1)
    s.close()
  })

  test('a server that asks for a password is given the URL’s', async () => {
    const port = await freePort()
    const proc = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--requirepass', 's3cret'],
      {
        stdio: 'ignore',
      },
    )
    try {
      const url = `redis://:s3cret@127.0.0.1:${port}`
      const p = await publisher(url)
      const s = new ShardSubscriber({ url, redisTimeoutMs: 2000, placeOf: () => placeOfUrl(url) }, record)
      const a = heard()
      await s.sSubscribe('n:{auth}', a.listener)
      await p.sPublish('n:{auth}', Buffer.from('ok'))
      await until(() => a.got.length === 1)
      s.close()
      await p.quit()
    } finally {
      proc.kill('SIGKILL')
    }
  })

  test('a subscription the server never confirms is told failed after the timeout, and made when it answers', async () => {
    // a server that accepts and says nothing until told to forward to the real one
    let forward = false
    const held: Buffer[] = []
    let upstream: Socket<undefined> | undefined
    const quiet = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        async data(_client, d) {
          if (!forward) return void held.push(d)
          upstream!.write(d)
        },
        async open(client) {
          upstream = await Bun.connect({
            hostname: '127.0.0.1',
            port: redis.port,
            socket: { data: (_u, d) => void client.write(d) },
          })
        },
      },
    })
    const place: ShardPlace = { host: '127.0.0.1', port: quiet.port, address: `127.0.0.1:${quiet.port}` }
    const s = new ShardSubscriber({ url: redis.url, redisTimeoutMs: 300, placeOf: () => place }, record)
    const a = heard()
    await expect(s.sSubscribe('n:{late}', a.listener)).rejects.toThrow(/did not confirm/)
    forward = true
    for (const d of held) upstream!.write(d)
    await until(async () => (await subscribers('n:{late}')) === 1)
    await pub.sPublish('n:{late}', Buffer.from('z'))
    await until(() => a.got.length === 1)
    s.close()
    quiet.stop(true)
  })
})

/**
 * A listening port that never accepts: its backlog of one is filled by a first connection, so the
 * kernel drops the SYNs of the next (a host that does not answer, as a dead machine's address).
 */
async function neverAccepting(): Promise<{ place: ShardPlace; close(): void }> {
  const py = spawn('/usr/bin/python3', [
    '-c',
    "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)",
  ])
  const port = await new Promise<number>((r) => py.stdout.once('data', (d) => r(Number(String(d).trim()))))
  const first = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
  return {
    place: { host: '127.0.0.1', port, address: `127.0.0.1:${port}` },
    close() {
      first.end()
      py.kill('SIGKILL')
    },
  }
}

describe.skipIf(!requireSystem('/usr/bin/python3', 'python3'))(
  'sharded subscriber, a server that never answers',
  () => {
    test('its connection is given up after the timeout, and the channel subscribed where it is served next', async () => {
      const redis = await TestRedis.start()
      const pub = await publisher(redis.url)
      const hung = await neverAccepting()
      try {
        let where = hung.place
        const seen: Error[] = []
        const s = new ShardSubscriber(
          {
            url: redis.url,
            redisTimeoutMs: 300,
            placeOf: () => where,
            // the topology read again finds the channel served elsewhere
            refresh: () => {
              where = placeOfUrl(redis.url)
            },
          },
          (e) => seen.push(e),
        )
        const a = heard()
        await expect(s.sSubscribe('n:{hung}', a.listener)).rejects.toThrow(/did not confirm/)
        const subscribed = async () => (await shardSubscribers(pub, 'n:{hung}')) === 1
        await until(subscribed)
        expect(seen.some((e) => /did not accept a connection within 300 ms/.test(e.message))).toBe(true)
        await pub.sPublish('n:{hung}', Buffer.from('reached'))
        await until(() => a.got.length === 1)
        s.close()
      } finally {
        hung.close()
        await pub.quit().catch(() => {})
        await redis.stop()
      }
    })
  },
)

/** A fake server speaking RESP: records commands, answers as `answer` says. */
function fakeServer(answer: (cmd: string[], s: Socket<undefined>) => void): {
  server: TCPSocketListener<undefined>
  place: ShardPlace
  commands: string[][]
  sockets: Socket<undefined>[]
} {
  const commands: string[][] = []
  const sockets: Socket<undefined>[] = []
  const readers = new Map<Socket<undefined>, RespReader>()
  const server = Bun.listen<undefined>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(s) {
        sockets.push(s)
        readers.set(
          s,
          new RespReader((v: RespValue) => {
            const cmd = (v as Buffer[]).map((b) => b.toString())
            commands.push(cmd)
            answer(cmd, s)
          }),
        )
      },
      data(s, d) {
        readers.get(s)!.feed(d)
      },
    },
  })
  const place = { host: '127.0.0.1', port: server.port, address: `127.0.0.1:${server.port}` }
  return { server, place, commands, sockets }
}
const confirm = (s: Socket<undefined>, kind: string, ch: string) =>
  s.write(`*3\r\n$${kind.length}\r\n${kind}\r\n$${ch.length}\r\n${ch}\r\n:1\r\n`)
const smessage = (s: Socket<undefined>, ch: string, body: string) =>
  s.write(`*3\r\n$8\r\nsmessage\r\n$${ch.length}\r\n${ch}\r\n$${body.length}\r\n${body}\r\n`)

describe('sharded subscriber when a channel moves (servers that answer as a cluster would)', () => {
  test('the server’s own SUNSUBSCRIBE (its slot moved): subscribed where it is served now, then the ready hooks run', async () => {
    const b = fakeServer((cmd, s) => cmd[0] === 'SSUBSCRIBE' && confirm(s, 'ssubscribe', cmd[1]!))
    const a = fakeServer((cmd, s) => cmd[0] === 'SSUBSCRIBE' && confirm(s, 'ssubscribe', cmd[1]!))
    let where = a.place
    const refreshed: string[] = []
    const s = new ShardSubscriber(
      { url: 'redis://127.0.0.1', redisTimeoutMs: 2000, placeOf: () => where, refresh: (c) => refreshed.push(c) },
      record,
    )
    let readies = 0
    s.onReady(() => readies++)
    const got = heard()
    await s.sSubscribe('n:{m}', got.listener)
    await s.sSubscribe('n:{stay}', () => {})
    expect(a.commands).toEqual([
      ['SSUBSCRIBE', 'n:{m}'],
      ['SSUBSCRIBE', 'n:{stay}'],
    ])
    // the slot moves to b: a unsubscribes the channel by itself
    where = b.place
    confirm(a.sockets[0]!, 'sunsubscribe', 'n:{m}')
    await until(() => b.commands.length === 1 && readies === 1)
    expect(b.commands).toEqual([['SSUBSCRIBE', 'n:{m}']])
    expect(refreshed).toEqual(['n:{m}'])
    smessage(b.sockets[0]!, 'n:{m}', 'hello')
    await until(() => got.got.length === 1)
    expect(got.got).toEqual([Buffer.from('hello').toString('hex')])
    // the other channel stayed where it was
    expect(a.commands).toHaveLength(2)
    s.close()
    a.server.stop(true)
    b.server.stop(true)
  })

  test('a MOVED answer to SSUBSCRIBE: the topology read again, the channel subscribed where it is served', async () => {
    const b = fakeServer((cmd, s) => cmd[0] === 'SSUBSCRIBE' && confirm(s, 'ssubscribe', cmd[1]!))
    const a = fakeServer((_cmd, s) => s.write(`-MOVED 1234 127.0.0.1:${b.place.port}\r\n`))
    let where = a.place
    const s = new ShardSubscriber(
      {
        url: 'redis://127.0.0.1',
        redisTimeoutMs: 2000,
        placeOf: () => where,
        refresh: () => {
          where = b.place
        },
      },
      record,
    )
    let readies = 0
    s.onReady(() => readies++)
    await s.sSubscribe('n:{x}', () => {})
    expect(a.commands).toEqual([['SSUBSCRIBE', 'n:{x}']])
    expect(b.commands).toEqual([['SSUBSCRIBE', 'n:{x}']])
    // never confirmed before: nothing was missed, no catch-up
    await Bun.sleep(20)
    expect(readies).toBe(0)
    s.close()
    a.server.stop(true)
    b.server.stop(true)
  })
})
