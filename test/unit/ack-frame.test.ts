import { describe, expect, test } from 'bun:test'
import msgpack from '@ably/msgpack-js'
import { Unpackr } from 'msgpackr'
import { AckQueue } from '../../src/core/connections/acks'
import { systemTimers, type Timers } from '../../src/lib/clock'
import { encodeServerMessage } from '../../src/api/realtime/frames'
import { packAck, type AckMessage } from '../../src/api/wire/ack-frame'

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true })
/** The official client's decoder (the one `ably` reads msgpack frames with) and msgpackr: both must read the ACK back. */
const readBoth = (bytes: Uint8Array) => {
  const ably = msgpack.decode(Buffer.from(bytes))
  expect(unpackr.unpack(bytes)).toEqual(ably)
  return ably
}

const ack = (msgSerial: number, count: number, serials: Array<Array<string | null>>): AckMessage => ({
  action: 1,
  msgSerial,
  count,
  res: serials.map((s) => ({ serials: s })),
})

describe('the hand-written msgpack ACK', () => {
  test('the ACKs the core sends read back as they were, with the official client’s decoder', async () => {
    const sent: object[] = []
    const soon: Array<() => void> = []
    const timers: Timers = { ...systemTimers, soon: (fn) => void soon.push(fn) }
    const q = new AckQueue((pm) => sent.push(pm), timers)
    const slots = [0, 1, 2].map((n) => q.open(n, true))
    q.ack(slots[0]!, ['01796061094880-000000'])
    q.ack(slots[1]!, [null, '01796061094880-000001'])
    q.ack(slots[2]!, [])
    for (const fn of soon.splice(0)) fn()
    expect(sent).toHaveLength(1)
    const frame = encodeServerMessage(sent[0]!, 'msgpack') as Uint8Array
    expect(readBoth(frame)).toEqual(JSON.parse(JSON.stringify(sent[0])))
  })

  test('integers of every width, long and non-ASCII serials, and more entries than a short array holds', () => {
    const long = 'x'.repeat(40)
    const cases = [
      ack(0, 1, [['a']]),
      ack(127, 128, [['b']]),
      ack(255, 256, [['c']]),
      ack(65_535, 65_536, [['d']]),
      ack(2 ** 32 - 1, 1, [['e']]),
      ack(2 ** 40, 1, [['f']]),
      ack(5, 1, [[long, 'é-ü', '日本', `${long}é`, 'é'.repeat(200)]]),
      ack(
        9,
        20,
        Array.from({ length: 20 }, (_, i) => [String(i)]),
      ),
    ]
    for (const a of cases) expect(readBoth(packAck(a)!)).toEqual(JSON.parse(JSON.stringify(a)))
  })

  test('frames stay valid after later ones fill the shared chunk', () => {
    const frames: Array<[AckMessage, Uint8Array]> = []
    for (let i = 0; i < 2000; i++) {
      const a = ack(i, 1, [[`serial-${i}`]])
      frames.push([a, packAck(a)!])
    }
    for (const [a, bytes] of frames) expect(readBoth(bytes)).toEqual(JSON.parse(JSON.stringify(a)))
  })

  test('ACKs of many entries read back wherever in the shared chunk they fall (none cut at its end)', () => {
    // an ACK that answers a run of presence re-entries: hundreds of entries, most with no serial
    // (the frame that was cut when its bound counted 8 bytes an entry for 10 or more)
    const frames: Array<[AckMessage, Uint8Array]> = []
    for (let k = 0; k < 400; k++) {
      const n = 1 + ((k * 37) % 700)
      const entries = Array.from({ length: n }, (_, i) =>
        i % 50 === 0 ? [`0179608412064${k % 10}-00000${i % 10}`] : [null],
      )
      if (k % 7 === 0) entries.push(Array.from({ length: 20 }, () => null))
      const a = ack(k, entries.length, entries)
      const bytes = packAck(a)
      if (bytes) frames.push([a, bytes])
    }
    // each fits a chunk: all are written by hand (none left to msgpackr by a bound that fell short)
    expect(frames.length).toBe(400)
    for (const [a, bytes] of frames) expect(readBoth(bytes)).toEqual(JSON.parse(JSON.stringify(a)))
  })

  test('an ACK of another shape, or too large for a chunk, is left to msgpackr', () => {
    expect(packAck({ action: 1, msgSerial: 0, count: 1, res: [{}] })).toBeUndefined()
    const huge = ack(0, 1, [Array.from({ length: 2000 }, () => 'y'.repeat(20))])
    expect(packAck(huge)).toBeUndefined()
    expect(readBoth(encodeServerMessage(huge, 'msgpack') as Uint8Array)).toEqual(JSON.parse(JSON.stringify(huge)))
  })
})
