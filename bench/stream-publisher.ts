/**
 * Publisher process of the append-rollup and conflation scenarios (an agent, see lib/agent.ts):
 * realtime connections (lib/realtime-client.ts, msgpack) publishing at a steady rate per channel,
 * paced every 10 ms, one protocol message per publish as the official client sends them, with
 * every ACK counted (at most MAX_IN_FLIGHT unanswered; publishes due past it are skipped and
 * counted, the gateway being the bound):
 * - `appends`: each channel gets one message (an empty `response`), then tokens appended to it
 *   (MESSAGE action 5 with its serial), as an AI agent streams an answer;
 * - `messages`: each channel gets messages named by a key, round-robin over `keys`, each with a
 *   counter as data (a price feed for conflation).
 * `stop` ends the pacing, waits for the answers, and reports what was published (the text of the
 * first channel's message, the latest data per key of the first channel).
 */
import { serveAgent } from './lib/agent'
import { describeError, RealtimeClient } from './lib/realtime-client'

/** Publishes sent and not yet answered, at most. */
const MAX_IN_FLIGHT = 5000
const clients: RealtimeClient[] = []
let timer: ReturnType<typeof setInterval> | undefined
let sent = 0
let acked = 0
const faults: string[] = []
let skipped = 0
let text = ''
const latest: Record<string, string> = {}

async function open(a: { base: string; key: string; connections: number }) {
  for (let i = 0; i < a.connections; i++)
    clients.push(await RealtimeClient.connect({ base: a.base, key: a.key, onFault: (w) => faults.push(w) }))
  return { established: clients.length }
}

const answer = (error: { code?: number; message?: string } | undefined) => {
  if (error) faults.push(`NACK ${describeError(error)}`)
  else acked++
}

/** The serial of a new message on each channel (`response`, empty). */
async function create(channels: string[]): Promise<string[]> {
  return Promise.all(
    channels.map(
      (ch, i) =>
        new Promise<string>((resolve, reject) =>
          clients[i % clients.length]!.publish(ch, [{ name: 'response', data: '' }], (err, serials) =>
            err || !serials?.[0] ? reject(new Error(`create: ${describeError(err)}`)) : resolve(serials[0]),
          ),
        ),
    ),
  )
}

async function start(a: { mode: 'appends' | 'messages'; channels: string[]; rate: number; keys?: number }) {
  const serials = a.mode === 'appends' ? await create(a.channels) : []
  const started = performance.now()
  const done = new Array<number>(a.channels.length).fill(0)
  const keys = a.keys ?? 1
  timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * a.rate)
    for (let c = 0; c < a.channels.length; c++) {
      const client = clients[c % clients.length]!
      for (; done[c]! < due; done[c]!++) {
        const n = done[c]!
        // at most MAX_IN_FLIGHT unanswered: past it the publisher is the bound, what is due is skipped
        if (sent - acked - faults.length >= MAX_IN_FLIGHT) {
          skipped++
          continue
        }
        sent++
        if (a.mode === 'appends') {
          const token = ` tok${n}`
          if (c === 0) text += token
          client.publish(a.channels[c]!, [{ action: 5, serial: serials[c], data: token }], answer)
        } else {
          const name = `k${n % keys}`
          const data = String(n)
          if (c === 0) latest[name] = data
          client.publish(a.channels[c]!, [{ name, data }], answer)
        }
      }
    }
  }, 10)
  return { channels: a.channels.length }
}

async function stop() {
  if (timer) clearInterval(timer)
  timer = undefined
  for (let i = 0; i < 2000 && acked + faults.length < sent; i++) await Bun.sleep(5)
  return { sent, acked, skipped, text, latest, faults: faults.slice(0, 5) }
}

const counts = () => ({ sent, acked, skipped })

async function close() {
  await Promise.all(clients.map((c) => c.close()))
  return clients.length
}

serveAgent({ open, start, stop, counts, close })
