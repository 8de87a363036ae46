/**
 * Realtime protocol test helpers: the official `ably` client (`Ably.Realtime`) pointed at a test
 * gateway with short timeouts, waits on connection and channel states, message collectors (raw
 * WebSocket clients for wire-level checks are in realtime-raw.ts).
 */
import { afterAll, afterEach, beforeAll } from 'bun:test'
import * as Ably from 'ably'
import type { Config } from '../../src/config'
import { createTestGateway, type TestGateway } from './gateway'
import { closeRawClients } from './realtime-raw'

/** Both wire formats of the official client: msgpack (its Node default) and JSON. */
export const FORMATS = [
  ['msgpack', true],
  ['json', false],
] as const

type Options = Omit<Ably.ClientOptions, 'endpoint' | 'port' | 'tls'>

/** A gateway of a test file, listening on a real port (set once its tests run). */
export interface RealtimeFixture {
  gw: TestGateway
  /** `http://127.0.0.1:<port>` */
  base: string
  port: number
  /** A REST client of the official library (the root key and msgpack unless told; `plugins`: LiveObjects...). */
  rest(o?: { key?: string; binary?: boolean; plugins?: unknown }): Ably.Rest
}

/**
 * Starts a gateway with these settings before the file's tests, closes the clients
 * `realtimeClient` made after each test, and stops the gateway after them all.
 */
export function realtimeGateway(overrides: Partial<Config> = {}): RealtimeFixture {
  const rt = {
    rest: ({ key, binary = true, plugins }: { key?: string; binary?: boolean; plugins?: unknown } = {}) =>
      new Ably.Rest({
        key: key ?? rt.gw.key,
        endpoint: '127.0.0.1',
        port: rt.port,
        tls: false,
        useBinaryProtocol: binary,
        logLevel: 0,
        ...(plugins ? { plugins } : {}),
      } as Ably.ClientOptions),
  } as RealtimeFixture
  beforeAll(async () => {
    rt.gw = await createTestGateway(overrides)
    rt.base = rt.gw.listen()
    rt.port = Number(new URL(rt.base).port)
  })
  afterEach(() => closeClients())
  afterAll(() => rt.gw.close())
  return rt
}

type Credential = Ably.TokenDetails | Ably.TokenRequest | string

/**
 * An authCallback giving what `mint` resolves with (TokenDetails, a signed TokenRequest, or a
 * token string), and the calls it had.
 */
export function authCallbackOf(mint: (params: Ably.TokenParams) => Credential | Promise<Credential>) {
  const calls: Ably.TokenParams[] = []
  const authCallback: NonNullable<Ably.ClientOptions['authCallback']> = (params, cb) => {
    calls.push(params)
    Promise.resolve()
      .then(() => mint(params))
      .then(
        (c) => cb(null, c),
        (e) => cb(e, null),
      )
  }
  return { authCallback, calls }
}

let seq = 0
/** A channel (or other) name no other test uses. */
export const fresh = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

const open = new Set<Ably.Realtime>()

/**
 * An `Ably.Realtime` client of the gateway listening on `port`, with short timeouts (a lost
 * transport is retried within 100 ms; requests time out in 4 s). Closed by `closeClients()`.
 */
export function realtimeClient(port: number, opts: Options, binary = true): Ably.Realtime {
  const client = new Ably.Realtime({
    endpoint: '127.0.0.1',
    port,
    tls: false,
    useBinaryProtocol: binary,
    logLevel: process.env.TEST_DEBUG ? 4 : 0,
    realtimeRequestTimeout: 4000,
    disconnectedRetryTimeout: 100,
    suspendedRetryTimeout: 500,
    ...opts,
  })
  open.add(client)
  return client
}

/** Closes every client `realtimeClient` and `RawClient` made (afterEach/afterAll). */
export function closeClients(): void {
  for (const c of open) {
    try {
      c.close()
    } catch {
      /* already failed or closed */
    }
  }
  open.clear()
  closeRawClients()
}

type Stateful = {
  state: string
  errorReason?: Ably.ErrorInfo | null
  on(listener: (change: { current: string; reason?: Ably.ErrorInfo }) => void): void
  off(listener: (change: { current: string; reason?: Ably.ErrorInfo }) => void): void
}

/**
 * Resolves with the reason of the change when a connection or channel reaches `state` (at once
 * when it is there already); rejects after `ms` or when it reaches one of `unless` instead.
 */
export function reach(
  target: Ably.Connection | Ably.RealtimeChannel,
  state: string,
  ms = 8000,
  unless: string[] = ['failed'],
): Promise<Ably.ErrorInfo | undefined> {
  const t = target as unknown as Stateful
  if (t.state === state) return Promise.resolve(t.errorReason ?? undefined)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      t.off(listener)
      reject(new Error(`still ${t.state} after ${ms} ms, waiting for ${state}; reason: ${t.errorReason?.message}`))
    }, ms)
    const listener = (change: { current: string; reason?: Ably.ErrorInfo }) => {
      if (change.current !== state && !unless.includes(change.current)) return
      clearTimeout(timer)
      t.off(listener)
      if (change.current === state) resolve(change.reason)
      else
        reject(
          new Error(`reached ${change.current} instead of ${state}: ${change.reason?.code} ${change.reason?.message}`),
        )
    }
    t.on(listener)
  })
}

/** A client that is connected: created, then awaited until CONNECTED. */
export async function connectedClient(port: number, opts: Options, binary = true): Promise<Ably.Realtime> {
  const client = realtimeClient(port, opts, binary)
  await reach(client.connection, 'connected')
  return client
}

/** Messages a channel subscription received, with a wait for a count. */
export interface Collected {
  messages: Ably.InboundMessage[]
  /** Resolves when at least `n` arrived (rejects after `ms`). */
  until(n: number, ms?: number): Promise<Ably.InboundMessage[]>
}

/** Subscribes (attaching the channel) and collects what arrives. */
export async function collect(channel: Ably.RealtimeChannel, name?: string): Promise<Collected> {
  const c = collector()
  if (name === undefined) await channel.subscribe(c.push)
  else await channel.subscribe(name, c.push)
  return c
}

/** A collector without a subscription (for a listener given elsewhere). */
export function collector(): Collected & { push: (m: Ably.InboundMessage) => void } {
  const messages: Ably.InboundMessage[] = []
  const waiters = new Set<() => void>()
  return {
    messages,
    push: (m) => {
      messages.push(m)
      for (const w of [...waiters]) w()
    },
    until(n, ms = 8000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < n) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve(messages)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`got ${messages.length} of ${n} messages: ${messages.map((m) => m.data).join(',')}`))
        }, ms)
        waiters.add(check)
        check()
      })
    },
  }
}

/** The attach serial the client keeps for a channel (`properties` is not in the client's typings). */
export const attachSerial = (channel: Ably.RealtimeChannel): string | undefined =>
  (channel as unknown as { properties: { attachSerial?: string } }).properties.attachSerial

/** Cuts a realtime connection's socket on the server side, with no goodbye (as a network would). */
export function cutSocket(gw: TestGateway, connectionId: string): void {
  const conn = gw.server!.realtime.connection(connectionId)
  if (!conn) throw new Error(`no live connection ${connectionId} on this node`)
  conn.terminate()
}

/**
 * On Redis (TEST_BACKEND=redis or redis-cluster), a second node of `rt`'s deployment (same Redis,
 * same key prefix), started before the file's tests and stopped after them; `port` stays
 * undefined on the embedded backend, which is one node.
 */
export function secondNode(rt: RealtimeFixture): { gw?: TestGateway; port?: number } {
  const other: { gw?: TestGateway; port?: number } = {}
  beforeAll(async () => {
    if (!rt.gw.config.redisUrl) return
    other.gw = await createTestGateway({ redisUrl: rt.gw.config.redisUrl, redisPrefix: rt.gw.config.redisPrefix })
    other.port = Number(new URL(other.gw.listen()).port)
  })
  afterAll(() => other.gw?.close())
  return other
}

/** Resolves with the first item `check` accepts among those `subscribe` hands over; rejects after `ms` (a stall). */
export function firstOf<T>(subscribe: (cb: (x: T) => void) => void, check: (x: T) => boolean, ms = 15000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nothing matching within ${ms} ms`)), ms)
    subscribe((x) => {
      if (!check(x)) return
      clearTimeout(timer)
      resolve(x)
    })
  })
}
