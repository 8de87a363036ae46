/**
 * Subscriber process of the append-rollup and conflation scenarios (an agent, see lib/agent.ts):
 * realtime connections (lib/realtime-client.ts, msgpack, with the transport params asked for),
 * connection i attached to channel i mod the channels given, counting the MESSAGE frames,
 * messages and bytes they receive (messages counted by scanning, not decoding). The first
 * connection decodes what it receives and keeps, per message serial, the text a client holds
 * (a create or update sets it, an append adds to it) and the latest data per message name, which
 * the scenario checks against what was published.
 */
import { Packr } from 'msgpackr'
import { serveAgent } from './lib/agent'
import { scanMessages } from './lib/realtime-frames'
import { RealtimeClient } from './lib/realtime-client'

const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })
const clients: RealtimeClient[] = []
let frames = 0
let messages = 0
let bytes = 0
const faults: string[] = []
const texts = new Map<string, string>()
const latest = new Map<string, string>()
const noop = () => {}

interface WireMessage {
  serial?: string
  name?: string
  action?: number
  data?: string
}

function onFrame(i: number, frame: Uint8Array) {
  frames++
  bytes += frame.byteLength
  try {
    if (i !== 0) {
      messages += scanMessages(frame, noop)
      return
    }
    const pm = unpackr.unpack(frame) as { messages?: WireMessage[] }
    for (const m of pm.messages ?? []) {
      messages++
      const data = typeof m.data === 'string' ? m.data : ''
      // the text of streamed messages (`response`, and the changes of a message: action 1 or more)
      if (m.serial && (m.name === 'response' || (m.action ?? 0) > 0))
        texts.set(m.serial, m.action === 5 ? (texts.get(m.serial) ?? '') + data : data)
      if (m.name !== undefined) latest.set(m.name, data)
    }
  } catch (e) {
    faults.push(String(e))
  }
}

async function open(a: {
  base: string
  key: string
  channels: string[]
  count: number
  params?: Record<string, string>
}) {
  let next = 0
  const worker = async () => {
    while (next < a.count) {
      const i = next++
      const c = await RealtimeClient.connect({
        base: a.base,
        key: a.key,
        params: a.params,
        onMessageFrame: (f) => onFrame(i, f),
        onFault: (why) => faults.push(why),
      })
      clients.push(c)
      const att = await c.attach(a.channels[i % a.channels.length]!)
      if (att.error) throw new Error(`ATTACHED with error ${att.error.code}`)
    }
  }
  await Promise.all(Array.from({ length: 20 }, worker))
  return { established: clients.length }
}

const stats = () => ({
  frames,
  messages,
  bytes,
  texts: Object.fromEntries(texts),
  latest: Object.fromEntries(latest),
  faults: faults.slice(0, 5),
})

async function close() {
  await Promise.all(clients.map((c) => c.close()))
  return clients.length
}

serveAgent({ open, stats, close })
