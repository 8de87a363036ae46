import { expect, test } from 'bun:test'
import { Packr } from 'msgpackr'
import { MsgpackScan } from './msgpack-scan'
import { frameAction, scanMessages } from './realtime-frames'

/**
 * The scanning reader must see in a frame exactly what a full decoder sees: every MessagePack
 * type and length form walked to the right end, the action, and each message's data string in
 * order; and it must refuse what is not a well-formed frame instead of miscounting it.
 */
const packr = new Packr({ useRecords: false, moreTypes: false, variableMapSize: true })
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })

/** Values of every encoding form: fix/8/16/32 strings, maps and arrays, ints of each width, floats, binary. */
const zoo: unknown[] = [
  0,
  127,
  128,
  255,
  256,
  65_535,
  65_536,
  2 ** 32 - 1,
  2 ** 40,
  -1,
  -32,
  -33,
  -128,
  -129,
  -32_768,
  -32_769,
  -(2 ** 31),
  -(2 ** 40),
  1.5,
  Math.fround(2.25),
  null,
  true,
  false,
  '',
  'x'.repeat(31),
  'x'.repeat(32),
  'y'.repeat(255),
  'y'.repeat(256),
  'z'.repeat(65_536),
  new Uint8Array(3),
  new Uint8Array(300),
  new Uint8Array(70_000),
  Array.from({ length: 15 }, (_, i) => i),
  Array.from({ length: 16 }, (_, i) => i),
  Array.from({ length: 70_000 }, () => 1),
  Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, i])),
  Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, [i, { deep: 'x' }]])),
  Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, null])),
]

test('every value of every encoding form is walked to its exact end', () => {
  const scan = new MsgpackScan()
  for (const v of zoo) {
    const bytes = packr.pack(v)
    scan.reset(bytes).skip()
    expect(scan.pos).toBe(bytes.length)
    // msgpackr writes integers beyond 32 bits as doubles
    if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 32) expect(scan.reset(bytes).int()).toBe(v)
  }
  const int64 = (tag: number, v: bigint) => {
    const b = Buffer.alloc(9)
    b[0] = tag
    if (tag === 0xcf) b.writeBigUInt64BE(v, 1)
    else b.writeBigInt64BE(v, 1)
    return b
  }
  expect(scan.reset(int64(0xcf, 2n ** 40n)).int()).toBe(2 ** 40)
  expect(scan.reset(int64(0xd3, -(2n ** 40n))).int()).toBe(-(2 ** 40))
  // extension types, which msgpackr writes only for its own types: fixext 1-16, ext 8/16/32
  for (const ext of [
    [0xd4, 1, 0],
    [0xd5, 1, 0, 0],
    [0xd6, 1, ...Array(4).fill(0)],
    [0xd7, 1, ...Array(8).fill(0)],
    [0xd8, 1, ...Array(16).fill(0)],
    [0xc7, 3, 1, 0, 0, 0],
    [0xc8, 0, 3, 1, 0, 0, 0],
    [0xc9, 0, 0, 0, 3, 1, 0, 0, 0],
  ]) {
    scan.reset(Uint8Array.from(ext)).skip()
    expect(scan.pos).toBe(ext.length)
  }
  const all = packr.pack(zoo)
  scan.reset(all).skip()
  expect(scan.pos).toBe(all.length)
})

test('a MESSAGE frame: its action and every data string, in order, whatever else the messages carry', () => {
  const messages = [
    { id: 'c:0:0', name: 'bench', data: '3.17.1795258547989000:pad', extras: { headers: { a: zoo[30] } } },
    { data: 'ü'.repeat(40), serial: '01726585978590-000001', timestamp: 2 ** 41 },
    { name: 'binary', data: new Uint8Array([1, 2, 3]) }, // not a string: reported without a range
    { name: 'no data' },
    Object.fromEntries([...Array.from({ length: 20 }, (_, i) => [`f${i}`, zoo[i]]), ['data', 'y'.repeat(300)]]),
  ]
  const frame = packr.pack({ action: 15, channel: 'c', channelSerial: 's', messages, extra: zoo })
  expect(frameAction(frame)).toBe(15)
  const seen: Array<string | null> = []
  const count = scanMessages(frame, (bytes, start, end) =>
    seen.push(start < 0 ? null : Buffer.from(bytes.subarray(start, end)).toString()),
  )
  const decoded = (unpackr.unpack(frame) as { messages: Array<{ data?: unknown }> }).messages
  expect(count).toBe(messages.length)
  expect(seen).toEqual(decoded.map((m) => (typeof m.data === 'string' ? m.data : null)))
})

test('a truncated frame, bytes after the frame, or a non-map frame are refused', () => {
  const frame = packr.pack({ action: 15, messages: [{ data: 'x'.repeat(100) }] })
  for (let cut = 1; cut < frame.length; cut += 7)
    expect(() => scanMessages(frame.subarray(0, cut), () => {})).toThrow('truncated')
  expect(() => scanMessages(Buffer.concat([frame, Buffer.from([0xc0])]), () => {})).toThrow(
    'after the protocol message',
  )
  expect(() => frameAction(packr.pack([15]))).toThrow('expected map')
  expect(() => new MsgpackScan().reset(Buffer.from([0xc1])).skip()).toThrow('0xc1')
})
