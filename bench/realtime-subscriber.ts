/**
 * Subscriber process of the realtime scenarios (an agent, see lib/agent.ts): holds many realtime
 * connections (lib/realtime-client.ts), each attached to its group's channels, reads every
 * delivered MESSAGE frame without decoding it (lib/realtime-frames.ts) and checks, per
 * subscriber and publisher lane, that sequence numbers arrive exactly once and in order
 * (lib/delivery-ledger.ts, the same bookkeeping as the event-stream subscriber). In latency mode
 * it also records publish-to-delivery times. Driven by lib/sse-subscriber-client.ts
 * (`transport: 'realtime'`).
 */
import { serveAgent } from './lib/agent'
import { DeliveryLedger, ledgerOperations, type OpenResult } from './lib/delivery-ledger'
import { RealtimeClient } from './lib/realtime-client'
import { scanMessages } from './lib/realtime-frames'
import { readSequence, wallMicros, type SequenceNumbers } from './lib/sequence-payload'

export interface RealtimeOpenArgs {
  /** http://host:port of the gateway. */
  base: string
  count: number
  /**
   * Subscriber i of this process belongs to group (first + i) % groups.length: it connects with
   * that group's key, attaches its channels and must receive exactly the messages of its lanes.
   */
  groups: Array<{ channels: string[]; key: string; lanes: number[] }>
  /** Index of this process's first subscriber among all processes (default 0). */
  first?: number
  /** Connections being opened (connect and attach) at once. */
  concurrency: number
  /** Publisher ids in the data are 0 .. publishers-1. */
  publishers: number
  latency: boolean
  timeoutMs: number
}

const clients: Array<RealtimeClient | undefined> = []
let ledger: DeliveryLedger
let latency = false
let established = 0
let failed = 0
/** The subscriber whose frame is being read, and when it arrived (µs). */
let current = 0
let readAt = 0
const numbers: SequenceNumbers = { publisher: 0, seq: -1, stamp: 0 }

function visit(frame: Uint8Array, start: number, end: number): void {
  if (start < 0 || readSequence(frame, start, end, numbers) < 0) return ledger.message(current, 0, -1, 0, readAt)
  ledger.message(current, numbers.publisher, numbers.seq, numbers.stamp, readAt)
}

function onFrame(i: number, frame: Uint8Array): void {
  current = i
  if (latency) readAt = wallMicros()
  try {
    scanMessages(frame, visit)
  } catch (e) {
    ledger.protocolErrors++
    ledger.sample(`subscriber ${i}: unreadable MESSAGE frame: ${(e as Error).message}`)
  }
}

function open(a: RealtimeOpenArgs): Promise<OpenResult> {
  latency = a.latency
  ledger = new DeliveryLedger(
    a.count,
    a.publishers,
    a.groups.map((g) => g.lanes),
    a.first,
    (i) => clients[i]?.open ?? false,
  )
  const t0 = performance.now()
  let next = 0
  return new Promise<OpenResult>((resolve) => {
    const finish = () =>
      resolve({ established, failed, ms: performance.now() - t0, errorSamples: ledger.snapshot().errorSamples })
    const timer = setTimeout(finish, a.timeoutMs)
    const subscribe = async (i: number) => {
      const g = a.groups[ledger.groupOf[i]!]!
      const client = await RealtimeClient.connect({
        base: a.base,
        key: g.key,
        connectTimeoutMs: a.timeoutMs,
        onMessageFrame: (frame) => onFrame(i, frame),
        onLost: (why) => ledger.markLost(i, why),
        onFault: (why) => {
          ledger.protocolErrors++
          ledger.sample(`subscriber ${i}: ${why}`)
        },
      })
      clients[i] = client
      for (const channel of g.channels) {
        const att = await client.attach(channel)
        if (att.error) throw new Error(`ATTACHED ${channel} with error ${att.error.code} ${att.error.message}`)
      }
    }
    const worker = async () => {
      while (next < a.count) {
        const i = next++
        try {
          await subscribe(i)
          established++
        } catch (e) {
          failed++
          ledger.sample(`subscriber ${i}: ${(e as Error).message}`)
        }
      }
    }
    void Promise.all(Array.from({ length: Math.max(1, a.concurrency) }, worker)).then(() => {
      clearTimeout(timer)
      finish()
    })
  })
}

/** Stops counting closes as losses; with `end` also closes every connection (CLOSE, CLOSED). */
async function close({ end = true }: { end?: boolean } = {}): Promise<number> {
  ledger.closing = true
  if (!end) return 0
  const open = clients.filter((c): c is RealtimeClient => c?.open ?? false)
  await Promise.all(open.map((c) => c.close()))
  return open.length
}

serveAgent({ open, ...ledgerOperations(() => ledger), close })
