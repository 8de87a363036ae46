import type { Socket } from 'bun'
import { reconnectDelayMs, topologyMoved } from './errors'
import { RespError, RespReader, type RespValue } from './resp-reader'

/** A channel's notifications as they come: the payload (a view of the bytes read) and the channel. */
export type ShardListener = (message: Buffer, channel: string) => void

/** Where a channel's notifications are served: the one redis-server, or its slot's master. */
export interface ShardPlace {
  host: string
  port: number
  /** `host:port`: one connection per address. */
  address: string
}

export interface ShardSubscriberOptions {
  /** The seed URL: its scheme (`rediss:` for TLS) and credentials are used for every connection. */
  url: string
  /** A subscription not confirmed within it is told failed (it is still made once the server answers). */
  redisTimeoutMs: number
  /** The server that serves a channel's notifications now; undefined while unknown. */
  placeOf(channel: string): ShardPlace | undefined
  /** Asks for the topology to be read again: a channel was refused (MOVED), moved away, or its connection dropped. */
  refresh?(channel: string): void
  /** A connection that carries no channel for this long is closed (default IDLE_CLOSE_MS). */
  idleCloseMs?: number
}

/**
 * How long a connection carrying no channel stays open: a channel subscribed again soon (a
 * subscriber that comes and goes) finds it open, and a server whose slots are all gone from
 * this node's channels does not hold a socket until the node stops.
 */
const IDLE_CLOSE_MS = 30_000

/** A channel wanted by this node: its listeners, and the connection that carries it. */
interface Wanted {
  name: string
  listeners: Set<ShardListener>
  conn?: ShardConnection
  confirmed: boolean
  /** Was confirmed once and lost it (a dropped connection, a slot moved): its confirmation calls the ready hooks. */
  lost: boolean
  /** Callers of `sSubscribe` waiting for the server's confirmation. */
  waiters: Array<() => void>
}

/**
 * Sharded pub/sub (SSUBSCRIBE) on Bun's own sockets: the channel notifications of every publish
 * come through here, so they are read without node-redis's stream layer and reply decoding (a
 * third or less of its CPU per notification). One connection per server (the one redis-server, or
 * each master a subscribed channel's slot is on); each channel subscribed on the server that
 * serves it now (`placeOf`). Whatever breaks (a connection dropped, a server gone, a slot moved:
 * the server's own SUNSUBSCRIBE, or MOVED), every channel is subscribed again where it is served
 * then, with backoff, and once those of a break are confirmed the ready hooks run (a listener
 * catches up from the stream: notifications may have been missed meanwhile), as node-redis's
 * ready event did.
 */
export class ShardSubscriber {
  private readonly wanted = new Map<string, Wanted>()
  private readonly conns = new Map<string, ShardConnection>()
  private readonly ready: Array<() => void> = []
  private readyDue = false
  /** Channels without a connection (their place unknown, or their server unreachable), retried with backoff. */
  private homeless = new Set<Wanted>()
  private homelessTimer?: ReturnType<typeof setTimeout>
  private homelessTries = 0
  private closed = false

  constructor(
    private readonly o: ShardSubscriberOptions,
    private readonly onError: (e: Error) => void,
  ) {}

  /** Resolves once the server confirmed the subscription (at once when it already has). */
  sSubscribe(channel: string, listener: ShardListener): Promise<void> {
    let w = this.wanted.get(channel)
    if (w) {
      w.listeners.add(listener)
      if (w.confirmed) return Promise.resolve()
    } else {
      w = { name: channel, listeners: new Set([listener]), confirmed: false, lost: false, waiters: [] }
      this.wanted.set(channel, w)
      this.place(w)
    }
    const entry = w
    return new Promise<void>((resolve, reject) => {
      // told failed after REDIS_TIMEOUT_MS; the channel stays wanted and is subscribed when the server answers
      const timer = setTimeout(() => {
        const i = entry.waiters.indexOf(waiter)
        if (i < 0) return
        entry.waiters.splice(i, 1)
        reject(new Error(`SSUBSCRIBE ${channel}: Redis did not confirm it within ${this.o.redisTimeoutMs} ms`))
      }, this.o.redisTimeoutMs)
      const waiter = () => {
        clearTimeout(timer)
        resolve()
      }
      entry.waiters.push(waiter)
    })
  }

  /** Removes the listener; the channel's last one unsubscribes it. */
  async sUnsubscribe(channel: string, listener: ShardListener): Promise<void> {
    const w = this.wanted.get(channel)
    if (!w || !w.listeners.delete(listener) || w.listeners.size) return
    this.wanted.delete(channel)
    this.homeless.delete(w)
    for (const x of w.waiters) x()
    w.waiters = []
    w.conn?.drop(w)
  }

  /** Runs `fn` after channels lost and subscribed again (not after the first subscriptions). */
  onReady(fn: () => void): void {
    this.ready.push(fn)
  }

  close(): void {
    this.closed = true
    clearTimeout(this.homelessTimer)
    for (const c of this.conns.values()) c.close()
    this.conns.clear()
    for (const w of this.wanted.values()) for (const x of w.waiters) x()
    this.wanted.clear()
    this.homeless.clear()
  }

  /** Hands a notification to the channel's listeners. */
  deliver(channel: string, message: Buffer): void {
    const w = this.wanted.get(channel)
    if (!w) return
    for (const l of w.listeners) {
      try {
        l(message, channel)
      } catch (e) {
        this.onError(e as Error)
      }
    }
  }

  /** The server confirmed `w` on `conn`. */
  confirmed(w: Wanted): void {
    w.confirmed = true
    this.homelessTries = 0
    const waiters = w.waiters
    w.waiters = []
    for (const x of waiters) x()
    if (w.lost) {
      w.lost = false
      this.scheduleReady()
    }
  }

  /** `w` is no longer carried by its connection (dropped, moved, refused): subscribed again where it is served now. */
  unplaced(w: Wanted): void {
    if (w.confirmed) w.lost = true
    w.confirmed = false
    w.conn = undefined
    if (this.closed || this.wanted.get(w.name) !== w) return
    // once per backoff, not per channel: a dropped connection may have carried thousands
    if (!this.homelessTimer) this.o.refresh?.(w.name)
    this.homeless.add(w)
    this.retryHomeless()
  }

  /** A connection that carries nothing more and is closed. */
  forget(conn: ShardConnection): void {
    if (this.conns.get(conn.place.address) === conn) this.conns.delete(conn.place.address)
  }

  private place(w: Wanted): void {
    if (this.closed) return
    const where = this.o.placeOf(w.name)
    if (!where) {
      this.homeless.add(w)
      this.retryHomeless()
      return
    }
    let c = this.conns.get(where.address)
    if (!c)
      this.conns.set(
        where.address,
        (c = new ShardConnection(
          this,
          where,
          this.o.url,
          this.o.redisTimeoutMs,
          this.o.idleCloseMs ?? IDLE_CLOSE_MS,
          this.onError,
        )),
      )
    w.conn = c
    c.add(w)
  }

  /** The homeless channels placed again after a backoff (node-redis learns the topology meanwhile). */
  private retryHomeless(): void {
    if (this.homelessTimer || this.closed) return
    this.homelessTimer = setTimeout(() => {
      this.homelessTimer = undefined
      const waiting = [...this.homeless]
      this.homeless.clear()
      this.homelessTries++
      for (const w of waiting) if (this.wanted.get(w.name) === w && !w.conn) this.place(w)
    }, reconnectDelayMs(this.homelessTries))
    this.homelessTimer.unref?.()
  }

  private scheduleReady(): void {
    if (this.readyDue) return
    this.readyDue = true
    // the confirmations of one break come in one or a few reads: one catch-up for them
    setTimeout(() => {
      this.readyDue = false
      for (const fn of this.ready) fn()
    }, 0)
  }
}

/** One command sent and not answered yet (answers come in order). */
interface Sent {
  kind: 'auth' | 'ssubscribe' | 'sunsubscribe'
  w?: Wanted
}

/** The connection to one server: the channels it carries, subscribed again after each reconnection. */
class ShardConnection {
  private socket?: Socket<undefined>
  private readonly reader = new RespReader(
    (v) => this.answer(v),
    (buf, from, to, payload) => this.owner.deliver(buf.toString('utf8', from, to), payload),
  )
  private readonly carried = new Set<Wanted>()
  private sent: Sent[] = []
  private closed = false
  private connecting = false
  /** Set while the connection carries nothing: it is closed when it fires. */
  private idleTimer?: ReturnType<typeof setTimeout>

  constructor(
    private readonly owner: ShardSubscriber,
    readonly place: ShardPlace,
    private readonly url: string,
    /** A connection not open within it is given up (a host that never answers would hold its channels). */
    private readonly connectTimeoutMs: number,
    private readonly idleCloseMs: number,
    private readonly onError: (e: Error) => void,
  ) {}

  add(w: Wanted): void {
    this.carried.add(w)
    clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    if (this.socket) this.subscribe([w])
    else this.connect()
  }

  /** Stops carrying `w` (its last listener left). */
  drop(w: Wanted): void {
    if (!this.carried.delete(w)) return
    if (this.socket) {
      this.sent.push({ kind: 'sunsubscribe', w })
      this.socket.write(command('SUNSUBSCRIBE', w.name))
    }
    if (this.carried.size || this.idleTimer) return
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined
      if (this.carried.size || this.closed) return
      // retired: a channel placed on this server later gets a new connection
      this.owner.forget(this)
      this.close()
    }, this.idleCloseMs)
    this.idleTimer.unref?.()
  }

  close(): void {
    this.closed = true
    clearTimeout(this.idleTimer)
    this.carried.clear()
    this.socket?.end()
    this.socket = undefined
  }

  private subscribe(ws: Wanted[]): void {
    let out = ''
    for (const w of ws) {
      this.sent.push({ kind: 'ssubscribe', w })
      out += command('SSUBSCRIBE', w.name)
    }
    if (out) this.socket!.write(out)
  }

  private connect(): void {
    if (this.connecting || this.socket || this.closed) return
    this.connecting = true
    const u = new URL(this.url)
    const deadline = setTimeout(() => {
      if (!this.connecting) return
      this.onError(
        new Error(`Redis at ${this.place.address} did not accept a connection within ${this.connectTimeoutMs} ms`),
      )
      this.lost()
    }, this.connectTimeoutMs)
    Bun.connect({
      hostname: this.place.host,
      port: this.place.port,
      tls: u.protocol === 'rediss:',
      socket: {
        open: (s) => {
          clearTimeout(deadline)
          // given up meanwhile (the deadline, or closed): its channels are placed elsewhere
          if (this.closed) return void s.end()
          this.connecting = false
          this.socket = s
          this.reader.reset()
          this.sent = []
          const user = decodeURIComponent(u.username)
          const password = decodeURIComponent(u.password)
          if (password) {
            this.sent.push({ kind: 'auth' })
            s.write(user ? command('AUTH', user, password) : command('AUTH', password))
          }
          this.subscribe([...this.carried])
        },
        data: (_s, chunk) => {
          try {
            this.reader.feed(chunk)
          } catch (e) {
            this.onError(e as Error)
            this.socket?.end()
          }
        },
        close: (s) => {
          if (s === this.socket || this.connecting) this.lost()
        },
        error: (_s, e) => this.onError(e),
        connectError: (_s, e) => {
          clearTimeout(deadline)
          if (!this.connecting) return
          this.onError(e)
          this.lost()
        },
      },
    }).catch(() => {
      // connectError has seen it
    })
  }

  /**
   * The connection is gone: it is retired, and every channel it carried is placed again after a
   * backoff (the server may be back in a moment, or its slots elsewhere: a new connection then).
   */
  private lost(): void {
    this.connecting = false
    this.socket = undefined
    this.sent = []
    this.reader.reset()
    if (this.closed) return
    this.closed = true
    this.owner.forget(this)
    const carried = [...this.carried]
    this.carried.clear()
    for (const w of carried) this.owner.unplaced(w)
  }

  private answer(v: RespValue): void {
    if (Array.isArray(v)) {
      const kind = v[0]
      if (!Buffer.isBuffer(kind)) return
      // smessage: read by the reader's own path (onSMessage)
      const name = kind.toString()
      if (name === 'ssubscribe') {
        const s = this.sent.shift()
        if (s?.w && this.carried.has(s.w)) this.owner.confirmed(s.w)
      } else if (name === 'sunsubscribe') {
        const channel = Buffer.isBuffer(v[1]) ? v[1].toString() : ''
        const head = this.sent[0]
        if (head?.kind === 'sunsubscribe' && head.w?.name === channel) {
          this.sent.shift()
          return
        }
        // the server's own: the channel's slot is no longer served here
        for (const w of this.carried)
          if (w.name === channel) {
            this.carried.delete(w)
            this.owner.unplaced(w)
          }
      }
      return
    }
    if (v instanceof RespError) {
      const s = this.sent.shift()
      if (s?.kind === 'auth') {
        this.onError(new Error(`Redis refused the subscriber's AUTH: ${v.message}`))
        return
      }
      if (s?.w && this.carried.delete(s.w)) {
        // MOVED (the slot is another master's) or another refusal: placed again after a refresh
        if (!topologyMoved(v.message)) this.onError(new Error(`SSUBSCRIBE: ${v.message}`))
        this.owner.unplaced(s.w)
      }
      return
    }
    // +OK of AUTH
    if (this.sent[0]?.kind === 'auth') this.sent.shift()
  }
}

/** A command in RESP (names and values as UTF-8 bulk strings). */
function command(...parts: string[]): string {
  let out = `*${parts.length}\r\n`
  for (const p of parts) out += `$${Buffer.byteLength(p)}\r\n${p}\r\n`
  return out
}
