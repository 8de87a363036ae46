import type { Connection, ConnectionRegistry, DeliveryFilter, Message, Transport } from '../../core/connections'
import { asGatewayError, GatewayError } from '../../errors'
import { jsonTooDeep } from '../../lib/nesting'
import { readBody, type BodyLimits } from '../http/body'
import { checkQueryEncoding, pathParam } from '../http/params'
import { encodeServerMessage, writeBatch, type Frame } from './frames'

/** Deepest nesting a comet send body may have (an array of protocol messages; one level more than a frame). */
const MAX_DEPTH = 65

/**
 * The comet routes, served outside Elysia (before it, on the same port): `[method, path]`, `*`
 * for any method. Tests that walk every route take them from here.
 */
export const COMET_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['*', '/comet/connect'],
  ['POST', '/comet/:connectionKey/send'],
  ['*', '/comet/:connectionKey/recv'],
  ['*', '/comet/:connectionKey/close'],
  ['*', '/comet/:connectionKey/disconnect'],
]
const PER_CONNECTION = /^\/comet\/[^/]+\/(send|recv|close|disconnect)$/
/** The connection key of a per-connection request, decoded by the one rule of every path parameter (400 when broken). */
const keyOf = pathParam('/comet/:connectionKey/recv', 'connectionKey')

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' }
const noContent = () => new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })
const body = (frames: string[], headers?: Record<string, string>) =>
  new Response('[' + frames.join(',') + ']\n', { headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS })
const decoder = new TextDecoder()

/** A request of a comet connection the node does not know (any more): the client reconnects and resumes. */
export const unknown = () =>
  new Response(
    JSON.stringify([
      {
        action: 6, // DISCONNECTED
        error: new GatewayError(80003, 'Unknown comet connection: reconnect and resume').toBody(),
      },
    ]) + '\n',
    { headers: JSON_HEADERS },
  )

/** What a comet transport needs of its adapter. */
interface CometHost {
  /** The transport is over: its connection key no longer names it. */
  forget(t: CometTransport): void
  /** The bounds of a send body: twice REALTIME_MAX_FRAME_SIZE, REQUEST_BODY_TIMEOUT_MS as on every route. */
  sendLimits: BodyLimits
  /** How long a poll is held open when nothing comes (ms). */
  pollMs: number
  /** How long a connection may go without a poll before it counts as dropped (ms). */
  goneAfterMs: number
  receive(conn: Connection, raw: string): void
}

/**
 * The Transport port over comet (HTTP long polling, as the official clients' `comet` and
 * `xhr_polling` transports speak it): what the connection sends is queued as JSON protocol
 * messages, and a `recv` long poll takes the queue as one JSON array (a newline ends it: the
 * client's streaming reader parses line by line). One poll at a time (a newer one ends the
 * older); the queue counts as the transport's buffered bytes, so deliveries pause over
 * REALTIME_BUFFER_BYTES as on a WebSocket; a connection with no poll for a while is dropped (resumable).
 */
export class CometTransport implements Transport {
  readonly format = 'json'
  open = true
  conn?: Connection
  key?: string
  private queue: string[] = []
  private queued = 0
  private poll?: { answer: (r: Response) => void; timer: ReturnType<typeof setTimeout> }
  private flushing = false
  /** When the last poll ended (ms): a connection without a poll for `goneAfterMs` is dropped. */
  lastPoll = Date.now()
  /** Over once what was queued is taken (CLOSED, ERROR, DISCONNECTED went out). */
  private closing = false

  constructor(private readonly host: CometHost) {}

  get polling(): boolean {
    return this.poll !== undefined
  }

  private push(frame: Frame) {
    const s = frame as string
    this.queue.push(s)
    this.queued += s.length
    if (this.poll && !this.flushing) {
      this.flushing = true
      // the messages of one turn go in one response
      setImmediate(() => {
        this.flushing = false
        this.flush()
      })
    }
  }

  send(pm: object): number {
    const frame = encodeServerMessage(pm, 'json') as string
    this.push(frame)
    return frame.length
  }

  deliver(channel: string, batch: Message[], filter: DeliveryFilter): void {
    writeBatch(batch, channel, 'json', filter, (f) => this.push(f))
  }

  bufferedBytes(): number {
    return this.queued
  }

  /** What is queued, taken (the connection may deliver again when it had paused). */
  take(): string[] {
    const frames = this.queue
    const wasOver = this.conn !== undefined && this.queued > 0
    this.queue = []
    this.queued = 0
    if (wasOver) this.conn!.drained()
    if (this.closing) this.end()
    return frames
  }

  /** Answers the poll under way with what is queued (nothing: an empty array). */
  private flush() {
    const poll = this.poll
    if (!poll) return
    this.poll = undefined
    clearTimeout(poll.timer)
    this.lastPoll = Date.now()
    poll.answer(body(this.take()))
  }

  /** A `recv` (or the `connect` request's wait): answered at once when something is queued, else when something comes. */
  recv(signal: AbortSignal): Response | Promise<Response> {
    if (this.poll) this.flush() // one poll at a time
    if (this.queue.length || !this.open) {
      this.lastPoll = Date.now()
      return body(this.take())
    }
    return new Promise<Response>((answer) => {
      const timer = setTimeout(() => this.flush(), this.host.pollMs)
      this.poll = { answer, timer }
      signal.addEventListener('abort', () => {
        if (this.poll?.answer === answer) this.flush()
      })
    })
  }

  /**
   * A `send`: a JSON array of protocol messages, each handed to the connection in order. A body
   * over its bounds (too large: 40009; not all there within REQUEST_BODY_TIMEOUT_MS: 40800) fails
   * the connection unread, and its TCP connection is closed after the answer.
   */
  async sendRequest(request: Request): Promise<Response> {
    const conn = this.conn
    if (!conn) return unknown()
    let text: string
    try {
      text = decoder.decode(await readBody(request, this.host.sendLimits))
    } catch (e) {
      const err = asGatewayError(e)
      conn.fail(err)
      return body(this.take(), err.headers)
    }
    let items: unknown
    try {
      if (jsonTooDeep(text, MAX_DEPTH)) throw new Error('too deep')
      items = JSON.parse(text)
    } catch {
      items = undefined
    }
    if (!Array.isArray(items)) {
      conn.fail(new GatewayError(40000, 'Invalid protocol message: a comet send is a JSON array of protocol messages'))
      return body(this.take())
    }
    for (const pm of items) this.host.receive(conn, JSON.stringify(pm))
    return noContent()
  }

  /** The client closes (`/close`): CLOSE, answered with CLOSED. */
  closeRequest(): Response {
    this.conn?.receive({ action: 7 })
    return body(this.take())
  }

  close(): void {
    if (!this.open) return
    this.open = false
    this.closing = true
    if (this.poll) this.flush()
    else if (!this.queue.length) this.end()
  }

  terminate(): void {
    this.open = false
    this.queue = []
    this.queued = 0
    if (this.poll) this.flush()
    this.end()
  }

  /** No poll for too long: the client went away, as a socket that closed (it may resume). */
  check(now: number): void {
    if (!this.poll && now - this.lastPoll > this.host.goneAfterMs) this.terminate()
  }

  /** The transport is over: its connection drops (resumable, unless it ended already) and its key is forgotten. */
  private end() {
    this.closing = false
    this.open = false
    this.host.forget(this)
    this.conn?.closedByTransport('comet')
  }

  ping(): boolean {
    return false
  }
}

/** How a comet request is served: `hold` exempts it from the idle timeout (a long poll). */
export interface CometRequestOptions {
  hold(): void
  /** A request for a connection this process does not hold: its owner's answer, or undefined (80003). */
  elsewhere?(key: string, request: Request): Promise<Response> | undefined
}

/**
 * The comet requests of the realtime protocol: `GET /comet/connect?<connect params>` (the
 * response starts with CONNECTED), `POST /comet/<connectionKey>/send`, `GET .../recv`,
 * `.../close` and `.../disconnect`, as the official client's comet transports make them. The
 * query and the key are decoded by the rule of every route (a malformed escape: 400 / 40003).
 */
export function cometRoutes(
  registry: ConnectionRegistry,
  host: Omit<CometHost, 'forget'>,
  connect: (
    url: URL,
    request: Request,
  ) => { params: Parameters<ConnectionRegistry['open']>[0]; refusal?: GatewayError },
) {
  const byKey = new Map<string, CometTransport>()
  const forget = (t: CometTransport) => {
    if (t.key !== undefined && byKey.get(t.key) === t) byKey.delete(t.key)
  }
  const full: CometHost = { ...host, forget }
  const checker = setInterval(
    () => {
      const now = Date.now()
      for (const t of byKey.values()) t.check(now)
    },
    Math.max(100, Math.floor(host.goneAfterMs / 4)),
  )
  ;(checker as { unref?: () => void }).unref?.()

  async function open(url: URL, request: Request): Promise<Response> {
    const t = new CometTransport(full)
    const { params, refusal } = connect(url, request)
    if (refusal) {
      registry.refuse(t, refusal)
      return body(t.take())
    }
    const conn = await registry.open(params, t)
    if (conn) {
      t.conn = conn
      t.key = conn.key
      byKey.set(conn.key, t)
    }
    return body(t.take())
  }

  return {
    /**
     * A comet request: its response, or undefined when the request is not one. Throws a
     * GatewayError for a malformed query or key (the caller answers it in the spec's shape).
     */
    handle(request: Request, url: URL, o: CometRequestOptions): Response | Promise<Response> | undefined {
      const path = url.pathname
      if (path === '/comet/connect') {
        checkQueryEncoding(request.url)
        o.hold()
        return open(url, request)
      }
      const m = PER_CONNECTION.exec(path)
      if (!m) return undefined
      const action = m[1]!
      if (action === 'send' && request.method !== 'POST') return undefined
      checkQueryEncoding(request.url)
      const key = keyOf(request.url)!
      if (action === 'recv') o.hold()
      const t = byKey.get(key)
      if (!t) return o.elsewhere?.(key, request) ?? unknown()
      switch (action) {
        case 'send':
          return t.sendRequest(request)
        case 'recv':
          return t.recv(request.signal)
        case 'close':
          return t.closeRequest()
        default:
          t.terminate()
          return noContent()
      }
    },
    close() {
      clearInterval(checker)
    },
  }
}
