/**
 * Subscriber process of the delta-fanout scenario (an agent, see lib/agent.ts): many realtime
 * connections (lib/realtime-client.ts, msgpack) attached to one channel, with or without
 * `delta=vcdiff`, counting the bytes and messages of the MESSAGE frames they receive. The first
 * connection also decodes every message as a client does (vcdiff against the previous payload,
 * with `@ably/vcdiff-decoder`) and keeps the payloads, which the scenario checks against what it
 * published.
 */
import { Packr } from 'msgpackr'
import { decode } from '@ably/vcdiff-decoder'
import { serveAgent } from './lib/agent'
import { RealtimeClient } from './lib/realtime-client'

const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })
const utf8 = new TextDecoder()
const clients: RealtimeClient[] = []
let bytes = 0
let counts: number[] = []
let decoded: string[] = []
let deltas = 0
let faults: string[] = []
let base: Uint8Array | undefined

interface WireMessage {
  data?: string | Uint8Array
  encoding?: string
  extras?: { delta?: { from: string; format: string } }
}

/** One message as a client decodes it: the vcdiff step against the previous payload, then utf-8; the payload text. */
function decodeOne(m: WireMessage): string {
  const steps = m.encoding ? m.encoding.split('/') : []
  let data: string | Uint8Array = m.data ?? ''
  if (steps.at(-1) === 'vcdiff') {
    data = decode(data as Uint8Array, base!)
    deltas++
    steps.pop()
  }
  base = typeof data === 'string' ? new TextEncoder().encode(data) : data
  if (steps.at(-1) === 'utf-8') data = utf8.decode(data as Uint8Array)
  return typeof data === 'string' ? data : utf8.decode(data)
}

function onFrame(i: number, frame: Uint8Array) {
  bytes += frame.byteLength
  if (i !== 0) {
    counts[i]! += frameCount(frame)
    return
  }
  try {
    const pm = unpackr.unpack(frame) as { messages?: WireMessage[] }
    for (const m of pm.messages ?? []) decoded.push(decodeOne(m))
    counts[0] = decoded.length
  } catch (e) {
    faults.push(String(e))
  }
}

/** Messages in a MESSAGE frame: its `messages` array's length, read with msgpackr (cheap next to the socket). */
const frameCount = (frame: Uint8Array) => ((unpackr.unpack(frame) as { messages?: unknown[] }).messages ?? []).length

async function open(a: { base: string; key: string; channel: string; count: number; delta: boolean }) {
  counts = new Array(a.count).fill(0)
  let next = 0
  const worker = async () => {
    while (next < a.count) {
      const i = next++
      const c = await RealtimeClient.connect({
        base: a.base,
        key: a.key,
        onMessageFrame: (f) => onFrame(i, f),
        onFault: (why) => faults.push(why),
      })
      clients.push(c)
      const att = await c.attach(a.channel, a.delta ? { params: { delta: 'vcdiff' } } : {})
      if (att.error) throw new Error(`ATTACHED with error ${att.error.code}`)
    }
  }
  await Promise.all(Array.from({ length: 20 }, worker))
  return { established: clients.length }
}

const stats = () => ({ bytes, least: Math.min(...counts), decoded, deltas, faults: faults.slice(0, 5) })

async function close() {
  await Promise.all(clients.map((c) => c.close()))
  return clients.length
}

serveAgent({ open, stats, close })
