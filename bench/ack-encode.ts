/**
 * An ACK's msgpack encoding in a loop: msgpackr's `pack` (as frames.ts packs every frame) against
 * the hand-written `packAck` (api/wire/ack-frame.ts), alternated round by round in one process:
 * `bun bench/ack-encode.ts [--acks 1000000] [--rounds 6] [--per-ack 4]` (`--per-ack`: protocol
 * messages answered by one ACK, as many `res` entries). Checks first that packAck's bytes
 * decode to the ACK; reports ns per ACK.
 */
import { Packr } from 'msgpackr'
import { parseFlags } from './lib/args'
import { packAck, type AckMessage } from '../src/api/wire/ack-frame'
import { formatSerial } from '../src/core/model/serial'

const f = parseFlags(process.argv.slice(2), { acks: 'number', rounds: 'number', 'per-ack': 'number' })
const acks = f.acks ?? 1_000_000
const rounds = f.rounds ?? 6
const perAck = f['per-ack'] ?? 4
const packr = new Packr({ useRecords: false, moreTypes: false })

/** 1,000 ACKs of the shape the core sends, serials as the embedded store makes them. */
const samples: AckMessage[] = Array.from({ length: 1000 }, (_, i) => ({
  action: 1,
  msgSerial: i * perAck,
  count: perAck,
  res: Array.from({ length: perAck }, (_, j) => ({ serials: [formatSerial(1_796_061_094_880 + i, j)] })),
}))
// the same value either way (msgpackr writes every map with a 16-bit length, packAck the short forms)
for (const a of samples)
  if (!Bun.deepEquals(packr.unpack(packAck(a)!), a, true))
    throw new Error(`packAck's bytes are not the ACK: ${Buffer.from(packAck(a)!).toString('hex')}`)

const sides: Record<string, (a: AckMessage) => Uint8Array | undefined> = {
  msgpackr: (a) => packr.pack(a),
  packAck,
}
const ns: Record<string, number[]> = { msgpackr: [], packAck: [] }
for (let r = 0; r < rounds; r++)
  for (const [name, fn] of r % 2 ? Object.entries(sides).reverse() : Object.entries(sides)) {
    let bytes = 0
    const t = Bun.nanoseconds()
    for (let i = 0; i < acks; i++) bytes += fn(samples[i % 1000]!)!.length
    ns[name]!.push((Bun.nanoseconds() - t) / acks)
    if (bytes === 0) throw new Error('nothing encoded')
  }
for (const [name, list] of Object.entries(ns))
  console.log(`${name.padEnd(9)} ${list.map((x) => x.toFixed(0)).join(' / ')} ns per ACK of ${perAck}`)
