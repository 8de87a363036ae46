/**
 * Subscriber process of the event-stream scenarios (an agent, see lib/agent.ts): holds many
 * event streams on raw `Bun.connect` sockets (GET written by hand, optionally from several
 * loopback source addresses), counts `message` records and checks, per subscriber and publisher
 * lane, that sequence numbers arrive exactly once and in order (sse-stream-parser.ts,
 * sequence-payload.ts). Streams may be grouped (each group its own channels, key and lanes). In
 * latency mode it also records publish-to-delivery times. Driven by lib/sse-subscriber-client.ts.
 */
import type { Socket } from 'bun'
import { serveAgent } from './lib/agent'
import { wallMicros } from './lib/sequence-payload'
import {
  DeliveryLedger,
  ledgerOperations,
  type OpenResult,
  type SettleResult,
  type Snapshot,
} from './lib/delivery-ledger'
import { SseStreamParser, type SseSink } from './lib/sse-stream-parser'

export interface OpenArgs {
  host: string
  port: number
  /** Request target of every stream, e.g. `/sse?v=1.2&channels=c&key=...` (unless `groups`). */
  path: string
  count: number
  /**
   * Streams of different channels: stream i of this process belongs to group (first + i) % groups.length,
   * opens that group's path and must receive exactly the messages of its lanes (publisher ids).
   * Without groups every stream must receive every lane 0 .. publishers-1.
   */
  groups?: Array<{ path: string; lanes: number[] }>
  /** Index of this process's first stream among all processes (default 0). */
  first?: number
  /** Local addresses to connect from, used round robin (empty: the OS picks). */
  sources: string[]
  /** Connections being opened at once. */
  concurrency: number
  /** Publisher ids in the data are 0 .. publishers-1. */
  publishers: number
  latency: boolean
  timeoutMs: number
}

export type { OpenResult, SettleResult, Snapshot }

const REQUEST_TAIL = '\r\nAccept: text/event-stream\r\n\r\n'

let parsers: SseStreamParser[] = []
const sockets: Array<Socket<number> | undefined> = []
let ledger: DeliveryLedger
let readAt = 0
let established = 0
let failed = 0

const sink: SseSink = {
  message(sub, publisher, seq, stamp) {
    ledger.message(sub, publisher, seq, stamp, readAt)
  },
}

function markLost(i: number, why: string): void {
  const err = parsers[i]!.lastError()
  ledger.markLost(i, `${why}${err ? `; last error record: ${err}` : ''}`)
}

function open(a: OpenArgs): Promise<OpenResult> {
  parsers = Array.from({ length: a.count }, (_, i) => new SseStreamParser(i, sink))
  const groups = a.groups?.length
    ? a.groups
    : [{ path: a.path, lanes: Array.from({ length: a.publishers }, (_, p) => p) }]
  ledger = new DeliveryLedger(
    a.count,
    a.publishers,
    a.groups?.map((g) => g.lanes),
    a.first,
    (i) => parsers[i]!.status === 200 && sockets[i] !== undefined,
  )
  const { groupOf } = ledger
  const requests = groups.map((g) => Buffer.from(`GET ${g.path} HTTP/1.1\r\nHost: ${a.host}:${a.port}${REQUEST_TAIL}`))
  const t0 = performance.now()
  let next = 0
  let inFlight = 0

  return new Promise<OpenResult>((resolve) => {
    const finish = () =>
      resolve({ established, failed, ms: performance.now() - t0, errorSamples: ledger.snapshot().errorSamples })
    const timer = setTimeout(finish, a.timeoutMs)
    const settled = () => {
      inFlight--
      if (established + failed === a.count) {
        clearTimeout(timer)
        finish()
      } else launch()
    }
    const launch = () => {
      while (inFlight < a.concurrency && next < a.count) {
        inFlight++
        connect(next++)
      }
    }
    const connect = (i: number) => {
      let headSeen = false
      const fail = (why: string) => {
        if (headSeen) return markLost(i, why)
        headSeen = true
        failed++
        ledger.sample(`subscriber ${i}: ${why}`)
        settled()
      }
      const source = a.sources.length ? a.sources[i % a.sources.length] : undefined
      Bun.connect<number>({
        hostname: a.host,
        port: a.port,
        data: i,
        // not in Bun's typings, but Bun 1.4 binds the socket to it before connecting
        ...(source ? { localAddress: source } : {}),
        socket: {
          open(s) {
            sockets[i] = s
            s.write(requests[groupOf[i]!]!)
          },
          data(s, chunk) {
            const p = parsers[i]!
            if (a.latency) readAt = wallMicros()
            try {
              p.feed(chunk)
            } catch (e) {
              ledger.protocolErrors++
              fail(`protocol error: ${(e as Error).message}`)
              s.end()
              return
            }
            if (!headSeen && p.status !== 0) {
              if (p.status === 200) {
                headSeen = true
                established++
                settled()
              } else {
                fail(`answered ${p.headText.replace(/\r\n/g, ' | ').slice(0, 300)}`)
                s.end()
                return
              }
            }
            if (p.ended) {
              markLost(i, 'the server ended the stream')
              s.end()
            }
          },
          end(s) {
            fail('the server closed the connection (FIN)')
            s.end()
          },
          close(_s, err) {
            sockets[i] = undefined
            fail(`connection closed${err ? `: ${err.message}` : ''}`)
          },
          connectError(_s, err) {
            fail(`connect${source ? ` from ${source}` : ''}: ${err.message}`)
          },
        },
      }).catch(() => {
        /* reported by connectError */
      })
    }
    launch()
  })
}

/** Stops counting closes as losses; with `end` also closes every stream (else the server is expected to). */
function close({ end = true }: { end?: boolean } = {}): number {
  ledger.closing = true
  let n = 0
  if (end)
    for (const s of sockets)
      if (s) {
        s.end()
        n++
      }
  return n
}

serveAgent({ open, ...ledgerOperations(() => ledger), close })
