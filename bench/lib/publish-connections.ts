/**
 * The two ways the sequence publisher (bench/publisher.ts) sends a publish and learns its outcome:
 * an HTTP/1.1 keep-alive connection (`POST /channels/{channel}/messages`, written by hand,
 * answers framed by ResponseParser in request order), or a realtime connection (a MESSAGE
 * protocol message per publish, answered by ACK or NACK; realtime-client.ts). Both keep several
 * publishes in flight and report each outcome to the callback given with it.
 */
import type { Socket } from 'bun'
import { ResponseParser } from './http-response-parser'
import { RealtimeClient } from './realtime-client'

export type PublishTransport = 'http' | 'realtime'

export interface Outcome {
  /** e.g. "201", "429" (HTTP) or "ACK", "NACK 42910" (realtime). */
  status: string
  ok: boolean
  /** Refused by the rate limits (429, or a NACK 42910): nothing of it was stored. */
  refused: boolean
}

export interface PublishConnection {
  readonly open: boolean
  /** Publishes written and not answered yet. */
  readonly inFlight: number
  /** Publishes `data` strings as messages named `bench`, in one request or protocol message. */
  send(channel: string, data: string[], done: (o: Outcome) => void): void
  end(): void
}

export interface ConnectionHooks {
  /** The connection closed (or was cut) with publishes in flight, or while the publisher was still sending. */
  connectionError(why: string, inFlight: number): void
  protocolError(why: string): void
}

export interface Endpoint {
  host: string
  port: number
  key: string
}

export function openPublishConnection(
  transport: PublishTransport,
  e: Endpoint,
  hooks: ConnectionHooks,
): Promise<PublishConnection> {
  return transport === 'http' ? openHttp(e, hooks) : openRealtime(e, hooks)
}

const httpBody = (data: string[]) =>
  data.length === 1
    ? `{"name":"bench","data":"${data[0]}"}`
    : `[${data.map((d) => `{"name":"bench","data":"${d}"}`).join(',')}]`

function openHttp(e: Endpoint, hooks: ConnectionHooks): Promise<PublishConnection> {
  const auth = `Basic ${Buffer.from(e.key).toString('base64')}`
  /** Request bytes up to `Content-Length: `, per channel. */
  const prefixes = new Map<string, string>()
  /** Answer callbacks of the publishes in flight, oldest first (HTTP/1.1 answers in order). */
  const queue: Array<(o: Outcome) => void> = []
  const parser = new ResponseParser((status) =>
    queue.shift()!({ status: String(status), ok: status === 201, refused: status === 429 }),
  )
  let socket: Socket<undefined> | undefined
  let pending: Buffer | null = null
  let ended = false
  const conn: PublishConnection = {
    get open() {
      return socket !== undefined
    },
    get inFlight() {
      return queue.length
    },
    send(channel, data, done) {
      let prefix = prefixes.get(channel)
      if (prefix === undefined)
        prefixes.set(
          channel,
          (prefix =
            `POST /channels/${encodeURIComponent(channel)}/messages HTTP/1.1\r\nHost: ${e.host}:${e.port}\r\n` +
            `Authorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: `),
        )
      const body = httpBody(data)
      const bytes = Buffer.from(`${prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`)
      queue.push(done)
      if (pending) {
        pending = Buffer.concat([pending, bytes])
        return
      }
      const n = socket!.write(bytes)
      pending = n >= bytes.length ? null : bytes.subarray(Math.max(0, n))
    },
    end() {
      ended = true
      socket?.end()
    },
  }
  return new Promise((resolve, reject) => {
    Bun.connect({
      hostname: e.host,
      port: e.port,
      socket: {
        open(s) {
          socket = s
          s.setNoDelay(true)
          resolve(conn)
        },
        data(s, chunk) {
          try {
            parser.feed(chunk)
          } catch (err) {
            hooks.protocolError((err as Error).message)
            s.end()
          }
        },
        drain(s) {
          if (!pending) return
          const n = s.write(pending)
          pending = n >= pending.length ? null : pending.subarray(Math.max(0, n))
        },
        close(_s, err) {
          socket = undefined
          if (!ended || queue.length) hooks.connectionError(`closed${err ? `: ${err.message}` : ''}`, queue.length)
        },
        connectError(_s, err) {
          reject(new Error(`connect: ${err.message}`))
        },
      },
    }).catch(reject)
  })
}

async function openRealtime(e: Endpoint, hooks: ConnectionHooks): Promise<PublishConnection> {
  let ended = false
  let pending = () => 0
  const client = await RealtimeClient.connect({
    base: `http://${e.host}:${e.port}`,
    key: e.key,
    onLost: (why) => {
      if (!ended || pending()) hooks.connectionError(why, pending())
    },
    onFault: (why) => hooks.protocolError(why),
  })
  pending = () => client.pendingCount
  return {
    get open() {
      return client.open
    },
    get inFlight() {
      return client.pendingCount
    },
    send(channel, data, done) {
      client.publish(
        channel,
        data.map((d) => ({ name: 'bench', data: d })),
        (err, serials) => {
          if (err) return done({ status: `NACK ${err.code ?? '?'}`, ok: false, refused: err.code === 42910 })
          if (serials?.length !== data.length)
            hooks.protocolError(`ACK of ${data.length} messages with ${serials?.length ?? 0} serials`)
          done({ status: 'ACK', ok: true, refused: false })
        },
      )
    },
    end() {
      ended = true
      void client.close()
    },
  }
}
