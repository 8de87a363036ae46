/**
 * The soak's mixed traffic, all through the official `ably` client (and `fetch` for event
 * streams), at a modest rate: steady realtime subscribers (msgpack and JSON, token auth renewed
 * through the run, one presence member each) and event streams that reconnect, all attached to
 * the steady channels throughout; realtime connections that come and go (key or short tokens,
 * presence enter / update / leave, ACKed publishes); REST publishes and REST reads (history,
 * presence, presence history, channel status). Every publish to a steady channel is in the ledger.
 */
import Ably from 'ably'
import { SoakLedger } from './soak-ledger'
import { ReconnectingStream } from './soak-sse'

export interface TrafficOptions {
  /** Gateway nodes (http://127.0.0.1:port): REST publishes go to the first, steady subscribers to the last. */
  nodes: string[]
  key: string
  steadyChannels: string[]
  churnChannels: string[]
  /** Realtime connections that come and go, at most this many at once. */
  connections: number
  /** REST publishes per second (to the steady channels, in turn). */
  publishRate: number
  /** REST reads per second. */
  readRate: number
  /** Life of the steady subscribers' tokens (ms): they renew them through the run. */
  tokenTtlMs: number
}

const CHURN_TOKEN_TTL_MS = 20_000
const rand = (min: number, max: number) => min + Math.random() * (max - min)
const pick = <T>(a: T[]) => a[Math.floor(Math.random() * a.length)]!
const where = (base: string) => {
  const u = new URL(base)
  return { endpoint: u.hostname, port: Number(u.port), tls: false, logLevel: 0 }
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

function reach(client: Ably.Realtime, state: 'connected' | 'closed', ms: number): Promise<void> {
  if (client.connection.state === state) return Promise.resolve()
  return within(
    new Promise<void>((resolve, reject) => {
      const on = (c: Ably.ConnectionStateChange) => {
        if (c.current === state) resolve()
        else if (c.current === 'failed') reject(new Error(`failed: ${c.reason?.code} ${c.reason?.message}`))
        else return
        client.connection.off(on)
      }
      client.connection.on(on)
    }),
    ms,
    state,
  )
}

export class SoakTraffic {
  readonly ledger = new SoakLedger()
  readonly counts = {
    connectionsOpened: 0,
    connectionErrors: 0,
    presenceEvents: 0,
    restPublishes: 0,
    realtimePublishes: 0,
    reads: 0,
    readErrors: 0,
    tokensMinted: 0,
    steadyRenewals: 0,
    steadyDisconnects: 0,
    sseReconnects: 0,
  }
  readonly errors: string[] = []
  private readonly minter: Ably.Rest
  private readonly rests: Ably.Rest[]
  private readonly steady: Ably.Realtime[] = []
  private readonly streams: ReconnectingStream[] = []
  private readonly churners = new Set<Promise<void>>()
  private readonly inflight = new Set<Promise<unknown>>()
  private timers: Array<ReturnType<typeof setInterval>> = []
  private stopping = false
  private n = 0
  private churned = 0

  constructor(private readonly o: TrafficOptions) {
    this.minter = new Ably.Rest({ key: o.key, ...where(o.nodes[0]!) })
    this.rests = [true, false].map(
      (binary) => new Ably.Rest({ key: o.key, useBinaryProtocol: binary, ...where(o.nodes[0]!) }),
    )
  }

  private error(what: string, e: unknown) {
    if (this.errors.length < 20) this.errors.push(`${what}: ${(e as Error)?.message ?? e}`)
  }

  /** A signed token request for `clientId` (the client exchanges it at the gateway: a nonce each). */
  private authCallback(clientId: string, ttl: number, onCall?: () => void): Ably.ClientOptions['authCallback'] {
    return (_params, cb) => {
      onCall?.()
      this.counts.tokensMinted++
      this.minter.auth.createTokenRequest({ clientId, ttl }).then(
        (tr) => cb(null, tr),
        (e) => cb(e as Ably.ErrorInfo, null),
      )
    }
  }

  /** Opens the steady subscribers and event streams (attached before anything is published), then starts the load. */
  async start(): Promise<void> {
    const { o } = this
    const subscribeTo = o.nodes[o.nodes.length - 1]!
    for (const [i, binary] of [true, false].entries()) {
      const clientId = `steady-${i}`
      let calls = 0
      const client = new Ably.Realtime({
        ...where(subscribeTo),
        useBinaryProtocol: binary,
        clientId,
        authCallback: this.authCallback(clientId, o.tokenTtlMs, () => {
          if (calls++ > 0) this.counts.steadyRenewals++
        }),
        disconnectedRetryTimeout: 500,
      })
      this.steady.push(client)
      const receiver = this.ledger.receiver(`realtime ${binary ? 'msgpack' : 'json'} subscriber`, o.steadyChannels)
      client.connection.on((c) => {
        if (c.current === 'disconnected') this.counts.steadyDisconnects++
        if (c.current === 'suspended' || c.current === 'failed')
          receiver.error(`${c.current}: ${c.reason?.code} ${c.reason?.message}`)
      })
      await reach(client, 'connected', 15_000)
      for (const name of o.steadyChannels) {
        const ch = client.channels.get(name)
        ch.on((c) => {
          if (c.current === 'failed' || (c.current === 'attached' && c.resumed === false && c.previous === 'attached'))
            receiver.error(`${name} ${c.current}${c.reason ? `: ${c.reason.code} ${c.reason.message}` : ''}`)
        })
        await ch.subscribe((m) => receiver.receive(name, m.data))
      }
      await client.channels.get(o.steadyChannels[0]!).presence.enter({ steady: i })
    }
    for (let i = 0; i < 2; i++) {
      let turn = i
      const s = new ReconnectingStream(
        () => o.nodes[turn++ % o.nodes.length]!,
        o.key,
        this.ledger.receiver(`event stream ${i}`, o.steadyChannels),
        [20_000, 60_000],
      )
      this.streams.push(s)
      await s.start()
    }
    this.timers.push(setInterval(() => this.restPublish(), 1000 / o.publishRate))
    this.timers.push(setInterval(() => this.restRead(), 1000 / o.readRate))
    this.timers.push(setInterval(() => this.churn(), 500))
  }

  private track<T>(p: Promise<T>) {
    this.inflight.add(p)
    void p.finally(() => this.inflight.delete(p)).catch(() => {})
  }

  private restPublish() {
    if (this.inflight.size > 100) return
    const channel = this.o.steadyChannels[this.n++ % this.o.steadyChannels.length]!
    const seq = this.ledger.next()
    this.counts.restPublishes++
    this.track(
      within(pick(this.rests).channels.get(channel).publish('soak', `s${seq}`), 15_000, 'REST publish').then(
        () => this.ledger.ack(channel, seq),
        (e) => this.ledger.fail(e),
      ),
    )
  }

  private restRead() {
    if (this.inflight.size > 100) return
    const rest = pick(this.rests)
    const steady = rest.channels.get(pick(this.o.steadyChannels))
    const churn = rest.channels.get(pick(this.o.churnChannels))
    const read = pick([
      () => steady.history({ limit: 100 }),
      () => churn.presence.get(),
      () => churn.presence.history({ limit: 100 }),
      () => steady.status(),
    ])
    this.counts.reads++
    this.track(
      within(read() as Promise<unknown>, 15_000, 'REST read').catch((e) => {
        this.counts.readErrors++
        this.error('REST read', e)
      }),
    )
  }

  private churn() {
    if (this.stopping || this.churners.size >= this.o.connections) return
    const p = this.churner(this.churned++).catch((e) => {
      this.counts.connectionErrors++
      this.error('connection', e)
    })
    this.churners.add(p)
    void p.finally(() => this.churners.delete(p))
  }

  /** A connection that comes and goes: presence on a churn channel, ACKed publishes to a steady one. */
  private async churner(i: number) {
    const { o } = this
    const clientId = `churn-${i}`
    const token = i % 3 !== 0
    const client = new Ably.Realtime({
      ...where(o.nodes[i % o.nodes.length]!),
      useBinaryProtocol: i % 2 === 0,
      clientId,
      ...(token ? { authCallback: this.authCallback(clientId, CHURN_TOKEN_TTL_MS) } : { key: o.key }),
      disconnectedRetryTimeout: 500,
    })
    try {
      await reach(client, 'connected', 15_000)
      this.counts.connectionsOpened++
      const own = client.channels.get(pick(o.churnChannels))
      const steady = client.channels.get(pick(o.steadyChannels))
      await within(own.presence.enter({ i }), 15_000, 'presence enter')
      this.counts.presenceEvents++
      const end = Date.now() + rand(5_000, 40_000)
      while (Date.now() < end && !this.stopping) {
        await Bun.sleep(rand(1_000, 5_000))
        const seq = this.ledger.next()
        this.counts.realtimePublishes++
        await within(steady.publish('soak', `s${seq}`), 15_000, 'realtime publish').then(
          () => this.ledger.ack(steady.name, seq),
          (e) => this.ledger.fail(e),
        )
        if (Math.random() < 0.5) {
          await within(own.presence.update({ i, at: Date.now() }), 15_000, 'presence update')
          this.counts.presenceEvents++
        }
      }
      // half leave first; the others leave by closing
      if (Math.random() < 0.5) {
        await within(own.presence.leave(), 15_000, 'presence leave')
        this.counts.presenceEvents++
      }
    } finally {
      client.close()
      await reach(client, 'closed', 15_000).catch((e) => this.error('close', e))
    }
  }

  /** Stops the load (the steady subscribers stay): churners closed, publishes answered. */
  async stopLoad(): Promise<void> {
    this.stopping = true
    for (const t of this.timers) clearInterval(t)
    await Promise.all([...this.churners])
    await Promise.all([...this.inflight])
  }

  /** Closes the steady subscribers (leaving presence) and the event streams. */
  async close(): Promise<void> {
    for (const s of this.streams) {
      await s.stop()
      this.counts.sseReconnects += s.reconnects
    }
    await Promise.all(
      this.steady.map(async (c) => {
        await within(c.channels.get(this.o.steadyChannels[0]!).presence.leave(), 15_000, 'leave').catch((e) =>
          this.error('steady leave', e),
        )
        c.close()
        await reach(c, 'closed', 15_000).catch((e) => this.error('steady close', e))
      }),
    )
  }

  /** Realtime connections of the load open now. */
  get churning() {
    return this.churners.size
  }
}
