import { afterAll, beforeAll, expect, test } from 'bun:test'
import Ably from 'ably'
import { Packr } from 'msgpackr'
import { addKey, createTestGateway, type TestGateway } from '../test/helpers/gateway'
import { Flag, RealtimeClient, type Attached } from './lib/realtime-client'
import { scanMessages } from './lib/realtime-frames'

/**
 * The benchmarks' realtime client must speak what the official client speaks, so what they
 * measure is the real protocol: the same publishes seen by both, ACKs carrying the serials the
 * official client receives, a NACK and a refused ATTACH, and presence both ways (members entered
 * by the official client arrive in our SYNC; our enter is in the official client's get()).
 */
let gw: TestGateway
let base: string
let port: number
const official: Ably.Realtime[] = []
const ours: RealtimeClient[] = []
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })

beforeAll(async () => {
  gw = await createTestGateway()
  base = gw.listen()
  port = Number(new URL(base).port)
})
afterAll(async () => {
  for (const c of official) c.close()
  await Promise.all(ours.map((c) => c.close()))
  await gw.close()
})

function ably(clientId?: string): Ably.Realtime {
  const c = new Ably.Realtime({
    key: gw.key,
    endpoint: '127.0.0.1',
    port,
    tls: false,
    useBinaryProtocol: true,
    logLevel: 0,
    ...(clientId ? { clientId } : {}),
  } as Ably.ClientOptions)
  official.push(c)
  return c
}

async function client(o: Partial<Parameters<typeof RealtimeClient.connect>[0]> = {}): Promise<RealtimeClient> {
  const c = await RealtimeClient.connect({ base, key: gw.key, ...o })
  ours.push(c)
  return c
}

const publish = (c: RealtimeClient, channel: string, data: string[]) =>
  new Promise<Array<string | null>>((resolve, reject) =>
    c.publish(
      channel,
      data.map((d) => ({ name: 'bench', data: d })),
      (err, serials) => (err ? reject(new Error(`NACK ${err.code}`)) : resolve(serials!)),
    ),
  )

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await Bun.sleep(10)
  }
}

test('publishes both ways: ACK serials are what the official client receives; scanned data equals decoded data', async () => {
  const channel = 'rt-client-messages'
  const frames: Uint8Array[] = []
  const sub = await client({ onMessageFrame: (f) => frames.push(f) })
  expect(sub.connectionId).not.toBe('')
  expect(sub.details.connectionKey).toBeString()
  const attached: Attached = await sub.attach(channel)
  expect(attached.flags & Flag.SUBSCRIBE).toBeTruthy()
  expect(attached.channelSerial).toBeString()

  const received: Ably.Message[] = []
  const officialChannel = ably().channels.get(channel)
  await officialChannel.subscribe((m) => void received.push(m))

  const pub = await client()
  // three protocol messages in a row, the last one carrying three messages: one serial per message
  const answers = await Promise.all([
    publish(pub, channel, ['0.0:a']),
    publish(pub, channel, ['0.1:b']),
    publish(pub, channel, ['0.2:c', '0.3:d', '0.4:e']),
  ])
  expect(answers.map((s) => s.length)).toEqual([1, 1, 3])
  await officialChannel.publish('bench', '1.0:from-official')
  await until(() => received.length === 6)
  expect(received.map((m) => m.data)).toEqual(['0.0:a', '0.1:b', '0.2:c', '0.3:d', '0.4:e', '1.0:from-official'])
  expect(received.slice(0, 5).map((m) => m.serial as string | null)).toEqual(answers.flat())
  expect(received[0]!.connectionId).toBe(pub.connectionId)
  expect(pub.faults + sub.faults).toBe(0)

  await until(() => frames.reduce((n, f) => n + (unpackr.unpack(f).messages as unknown[]).length, 0) === 6)
  const scanned: string[] = []
  const decoded: string[] = []
  for (const f of frames) {
    scanMessages(f, (bytes, start, end) => scanned.push(Buffer.from(bytes.subarray(start, end)).toString()))
    for (const m of unpackr.unpack(f).messages as Array<{ data: string }>) decoded.push(m.data)
  }
  expect(scanned).toEqual(decoded)
  expect(scanned).toEqual(received.map((m) => m.data as string))
})

test('a publish the key may not make is NACKed with its error; an ATTACH it may not make is refused', async () => {
  const key = await addKey(gw, 'rt-client-subscribe-only', { capability: { '*': ['subscribe'] } })
  const c = await client({ key })
  await expect(publish(c, 'rt-client-nack', ['0.0:x'])).rejects.toThrow('NACK 40160')
  const limited = await client({ key: await addKey(gw, 'rt-client-one-channel', { capability: { only: ['*'] } }) })
  await expect(limited.attach('elsewhere')).rejects.toThrow('40160')
  expect(c.faults + limited.faults).toBe(0)
})

test('presence: members the official client enters arrive in our paged SYNC; our enter is in its get()', async () => {
  const channel = 'rt-client-presence'
  const host = ably().channels.get(channel).presence
  await Promise.all(Array.from({ length: 250 }, (_, i) => host.enterClient(`u${i}`, `d${i}`)))

  const late = await client()
  const attached = await late.attach(channel)
  expect(attached.flags & Flag.HAS_PRESENCE).toBeTruthy()
  const sync = await attached.sync!
  expect(sync.members.length).toBe(250)
  expect(new Set(sync.members.map((m) => m.clientId)).size).toBe(250)
  expect(sync.members.every((m) => m.action === 1)).toBe(true)
  expect(sync.members.find((m) => m.clientId === 'u7')!.data).toBe('d7')
  expect(sync.frames).toBe(late.framesIn[16]!)
  expect(sync.frames).toBeGreaterThan(1) // paged
  expect(sync.bytes).toBe(late.bytesIn[16]!)

  const member = await client({ clientId: 'bench-member' })
  await member.attach(channel, { flags: Flag.PRESENCE })
  const serials = await member.enter(channel, 'here')
  expect(serials.length).toBe(1)
  const seen = await ably('watcher').channels.get(channel).presence.get({ clientId: 'bench-member' })
  expect(seen.map((m) => [m.clientId, m.data, m.connectionId])).toEqual([['bench-member', 'here', member.connectionId]])
  expect(late.faults + member.faults).toBe(0)
})

test('a refused connection rejects connect with the ERROR it got', async () => {
  // a known key with a wrong secret: 40101 (a key name the app does not have is 40400, as the hosted service answers)
  const keyName = gw.key.slice(0, gw.key.indexOf(':'))
  await expect(RealtimeClient.connect({ base, key: `${keyName}:wrong` })).rejects.toThrow('40101')
  await expect(RealtimeClient.connect({ base, key: 'testapp.nokey:wrong' })).rejects.toThrow('40400')
})

test('an ACK or NACK of several protocol messages answers them in order; an answer for nothing pending is a fault', async () => {
  // a scripted server: CONNECTED, then after 5 MESSAGEs one ACK of the first 3, one NACK of the last 2, one stray ACK
  const packr = new Packr({ useRecords: false })
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (req, s) => (s.upgrade(req) ? undefined : new Response('', { status: 400 })),
    websocket: {
      open: (ws) => void ws.send(packr.pack({ action: 4, connectionId: 'c', connectionDetails: {} })),
      message(ws, raw) {
        const pm = unpackr.unpack(raw as Buffer) as { msgSerial: number }
        if (pm.msgSerial !== 4) return
        const res = [0, 1, 2].map((i) => ({ serials: [`s${i}`] }))
        ws.send(packr.pack({ action: 1, msgSerial: 0, count: 3, res }))
        ws.send(packr.pack({ action: 2, msgSerial: 3, count: 2, error: { code: 42910, message: 'too fast' } }))
        ws.send(packr.pack({ action: 1, msgSerial: 5, count: 1, res: [{ serials: ['x'] }] }))
      },
    },
  })
  try {
    const c = await RealtimeClient.connect({ base: `http://127.0.0.1:${server.port}`, key: 'a.b:c' })
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        publish(c, 'ch', [`0.${i}:x`]).then(
          (s) => s.join(),
          (e: Error) => e.message,
        ),
      ),
    )
    expect(answers).toEqual(['s0', 's1', 's2', 'NACK 42910', 'NACK 42910'])
    await until(() => c.faults === 1)
    expect(c.faultSamples[0]).toContain('ACK msgSerial 5 count 1 with 0 pending')
    c.terminate()
  } finally {
    server.stop(true)
  }
})
