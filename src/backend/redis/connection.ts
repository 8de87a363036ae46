import { RedisClient as BunRedisClient } from 'bun'
import { RESP_TYPES, createClient, createCluster } from 'redis'
import { GatewayError } from '../../errors'
import { metrics, NO_LABELS } from '../../lib/metrics'
import { settleWithin } from '../../lib/sleep'

type NativeClient = ReturnType<typeof createClient>
type NativeCluster = ReturnType<typeof createCluster>
export type CommandOptions = Parameters<NativeClient['sendCommand']>[1]
/** A node-redis client of one redis-server. */
export type RedisClient = NativeClient

/**
 * What the stores send commands through: a node-redis client on one redis-server, or the cluster
 * client behind `clusterCommander` (routed by the command's first key). Every command names its
 * keys where Redis expects them, and every script's keys share one hash slot (keys.ts).
 */
export interface RedisCommander {
  sendCommand(args: Array<string | Buffer>, options?: CommandOptions): Promise<any>
}

type Listener = (message: any, channel: any) => void

/**
 * The pub/sub side: broadcast channels (control changes, revocations: every node hears them) and
 * sharded channels (SSUBSCRIBE: a channel's notifications, heard by the nodes that subscribe to
 * them; on a cluster, from the master owning the channel's slot). `onReady` runs after each
 * (re)connection, when notifications may have been missed.
 */
export interface RedisSubscriber {
  subscribe(channel: string, listener: Listener, bufferMode?: boolean): Promise<void>
  sSubscribe(channel: string, listener: Listener, bufferMode?: boolean): Promise<void>
  sUnsubscribe(channel: string, listener: Listener, bufferMode?: boolean): Promise<void>
  onReady(fn: () => void): void
}

export interface RedisConnections {
  cmd: RedisCommander
  sub: RedisSubscriber
  /** The publish path's sender (Bun's native client on one redis-server; the cluster client on a cluster). */
  fast: { send: Sender; close(): void }
  /** Sends a command to the master owning `key`'s slot (WAIT after a write to that key). */
  sendTo(key: string, args: string[]): Promise<unknown>
  /** Names the shard (master) owning `key`: the publishes of one shard are batched together. */
  shardOf(key: string): string
  quit(): Promise<void>
}

/** Sends one raw command (`[name, ...args]`) and resolves with the reply. */
export type Sender = (args: Array<string | Buffer>) => Promise<unknown>

export interface RedisSettings {
  redisUrl: string
  redisTimeoutMs: number
  /** Publishes wait for replicas (WAIT): on a cluster the publish path then stays on node-redis (see connectCluster). */
  redisWaitReplicas?: number
}

/** CRC16 (XMODEM) of Redis Cluster key hashing. */
const CRC16 = (() => {
  const t = new Uint16Array(256)
  for (let i = 0; i < 256; i++) {
    let c = i << 8
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff
    t[i] = c
  }
  return t
})()

/**
 * The hash slot of a key: CRC16 of its hash tag (between the first `{` and the next `}`, if not
 * empty) mod 16384, over the key's UTF-8 bytes. Read from the string itself (no Buffer per key:
 * it runs for every publish); a key with a character beyond ASCII is encoded first.
 */
export function keySlot(key: string): number {
  let from = 0
  let to = key.length
  const open = key.indexOf('{')
  if (open >= 0) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) {
      from = open + 1
      to = close
    }
  }
  let crc = 0
  for (let i = from; i < to; i++) {
    const c = key.charCodeAt(i)
    if (c > 0x7f) return slotOfBytes(Buffer.from(key.slice(from, to)))
    crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ c) & 0xff]!
  }
  return crc & 16383
}

/** CRC16 mod 16384 of bytes (a hash tag or key beyond ASCII; its braces are ASCII, so found the same). */
function slotOfBytes(bytes: Uint8Array): number {
  let crc = 0
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ bytes[i]!) & 0xff]!
  return crc & 16383
}

/** Replies as Buffers (message bodies are binary msgpack). */
export const BUFFERS = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const

/**
 * A client that fails fast while Redis is unreachable (no offline queue) and reconnects by
 * itself with capped backoff; errors are logged by the caller, never thrown at random.
 */
export async function connectRedis(s: RedisSettings, onError: (e: Error) => void): Promise<NativeClient> {
  const client = createClient({
    url: s.redisUrl,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: s.redisTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
    },
  })
  client.on('error', onError)
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return client as NativeClient
}

/** The key a command is routed by on a cluster: the first key of a script, else the first argument. */
export function firstKey(args: Array<string | Buffer>): string | Buffer | undefined {
  const name = String(args[0]).toUpperCase()
  if (name === 'EVAL' || name === 'EVALSHA' || name === 'EVAL_RO' || name === 'EVALSHA_RO')
    return Number(args[2]) > 0 ? args[3] : undefined
  if (name === 'PING' || name === 'TIME' || name === 'PUBLISH' || name === 'INFO') return undefined
  // a subcommand before the key
  if (name === 'XINFO' || name === 'OBJECT' || name === 'MEMORY') return args[2]
  return args[1]
}

/** One redis-server: a command client, a subscriber client, and Bun's native client for publishes. */
export async function connectStandalone(s: RedisSettings, onError: (e: Error) => void): Promise<RedisConnections> {
  const cmd = await connectRedis(s, onError)
  // a cluster node answers MOVED for most keys: say so at start, not on every other request
  const info = String(await withTimeout(cmd.sendCommand(['INFO', 'cluster']), s.redisTimeoutMs))
  if (/cluster_enabled:1/.test(info)) {
    await cmd.quit().catch(() => {})
    throw new Error(
      'REDIS_URL names a Redis Cluster node: set REDIS_CLUSTER=true (the cluster client routes each key to its shard)',
    )
  }
  const sub = await connectRedis(s, onError)
  const fast = await connectFastSender(s, onError)
  return {
    cmd: cmd as unknown as RedisCommander,
    sub: {
      subscribe: (c, l, b) => sub.subscribe(c, l, b),
      sSubscribe: (c, l, b) => sub.sSubscribe(c, l, b),
      sUnsubscribe: (c, l, b) => sub.sUnsubscribe(c, l, b),
      onReady: (fn) => void sub.on('ready', fn),
    },
    fast,
    sendTo: (_key, args) => fast.send(args),
    shardOf: () => '',
    async quit() {
      fast.close()
      await Promise.allSettled([sub.quit(), cmd.quit()])
    },
  }
}

/**
 * Redis Cluster through node-redis's cluster client (REDIS_URL: comma-separated seed nodes). It
 * routes each command by its first key's slot, follows MOVED/ASK, keeps one pub/sub client per
 * shard for SSUBSCRIBE, and rediscovers the topology after a failover. Commands fail fast while
 * a slot's master is unreachable (no offline queue), as on one redis-server.
 */
export async function connectCluster(s: RedisSettings, onError: (e: Error) => void): Promise<RedisConnections> {
  const rootNodes = s.redisUrl
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean)
    .map((url) => ({ url: url.includes('://') ? url : `redis://${url}` }))
  const cluster: NativeCluster = createCluster({
    rootNodes,
    defaults: {
      disableOfflineQueue: true,
      socket: {
        connectTimeout: s.redisTimeoutMs,
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
      },
    },
  })
  cluster.on('error', onError)
  await withTimeout(cluster.connect(), s.redisTimeoutMs * 2)
  const send = (args: Array<string | Buffer>, options?: CommandOptions) =>
    cluster.sendCommand(firstKey(args), false, args, options as never)
  const fast = s.redisWaitReplicas
    ? { send: (args: Array<string | Buffer>) => send(args), close() {} }
    : fastClusterSender(cluster, rootNodes[0]!.url, send, s)
  return {
    cmd: { sendCommand: send },
    sub: {
      subscribe: (c, l, b) => cluster.subscribe(c, l, b),
      sSubscribe: (c, l, b) => cluster.sSubscribe(c, l, b),
      sUnsubscribe: (c, l, b) => cluster.sUnsubscribe(c, l, b),
      onReady: (fn) => void cluster.on('node-ready', fn),
    },
    fast,
    // WAIT must run on the connection that wrote: with REDIS_WAIT_REPLICAS the publish path is on node-redis too
    sendTo: (key, args) => cluster.sendCommand(key, false, args),
    shardOf: (key) => {
      const slot = keySlot(key)
      const m = cluster.getSlotMaster(slot) as { host?: string; port?: number } | undefined
      return m?.host && m.port ? `${m.host}:${m.port}` : `slot ${slot}`
    },
    async quit() {
      fast.close()
      await Promise.allSettled([cluster.close()])
    },
  }
}

/**
 * The publish path on a cluster: Bun's native client (a sixth of node-redis's CPU per command,
 * see connectFastSender) to each master, picked by the key's slot in node-redis's view of the
 * topology. While that master's client is not connected, and for a reply that says the topology
 * moved (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), the command goes through node-redis, which follows
 * redirections and rediscovers the cluster. Replies come back as strings, as from the standalone
 * fast sender.
 */
function fastClusterSender(
  cluster: NativeCluster,
  seed: string,
  fallback: (args: Array<string | Buffer>) => Promise<unknown>,
  s: RedisSettings,
): { send: Sender; close(): void } {
  const clients = new Map<string, BunRedisClient>()
  const seedHost = new URL(seed).hostname
  /** When a master's dropped client may be replaced (ms): no connection storm at a dead address. */
  const retryAt = new Map<string, number>()
  let closed = false
  const clientFor = (key: string): BunRedisClient | undefined => {
    if (closed) return undefined // after close: the fallback (closed too) answers
    const master = cluster.getSlotMaster(keySlot(key)) as { host?: string; port?: number } | undefined
    if (!master?.port) return undefined
    // an empty host (a node that never learned its address, e.g. alone in its cluster) means the
    // address the topology was read from: the seed's host, where node-redis connects too
    const host = master.host || seedHost
    const address = `${host}:${master.port}`
    let c = clients.get(address)
    if (!c) {
      if ((retryAt.get(address) ?? 0) > Date.now()) return undefined
      // the seed's scheme and credentials, the master's address
      const url = new URL(seed)
      url.hostname = host
      url.port = String(master.port)
      const client = new BunRedisClient(url.toString(), {
        enableOfflineQueue: false,
        autoReconnect: false,
        connectionTimeout: s.redisTimeoutMs,
      })
      // a dropped connection is not retried here: node-redis carries the commands meanwhile (and
      // finds the new master after a failover); a later command makes a new one, half a second on
      const drop = () => {
        if (clients.get(address) === client) clients.delete(address)
        retryAt.set(address, Date.now() + 500)
      }
      client.onclose = drop
      client.connect().catch(drop)
      clients.set(address, (c = client))
    }
    return c.connected ? c : undefined
  }
  return {
    send: async (args) => {
      const key = firstKey(args)
      const c = key === undefined ? undefined : clientFor(String(key))
      if (!c) return fallback(args)
      try {
        return await c.send(String(args[0]), args.slice(1) as string[])
      } catch (e) {
        if (/^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(String((e as Error).message))) return fallback(args)
        throw e
      }
    },
    close() {
      closed = true
      for (const c of clients.values()) c.close()
      clients.clear()
    },
  }
}

const latency = metrics.histogram(
  'gateway_redis_command_seconds',
  'Latency of Redis commands.',
  [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
)
/** The histogram's one series, kept: an observation makes no labels key. */
const LATENCY = latency.series(NO_LABELS)
const failures = metrics.counter('gateway_redis_errors_total', 'Redis commands that failed or timed out.')

/**
 * A command that timed out or whose connection failed may still have been applied by Redis (it
 * can be queued there, or its reply lost): the client is told the outcome is unknown and how to
 * retry safely. Message ids make a publish idempotent (IDEMPOTENCY_WINDOW_MS), and the official
 * client supplies them by default.
 */
const RETRY_ADVICE = 'retry with the same message ids: a message id is published only once'
const timedOut = () =>
  new GatewayError(
    50003,
    `Service unavailable: the message store did not answer in time. The outcome is unknown (the request may still take effect): ${RETRY_ADVICE}`,
    { status: 503 },
  )
const unavailable = () =>
  new GatewayError(
    50003,
    `Service unavailable: the message store cannot be reached. If the connection failed during the request its outcome is unknown: ${RETRY_ADVICE}`,
    { status: 503 },
  )

/** A command that did not answer within REDIS_TIMEOUT_MS: 503 / 50003, the outcome unknown (counted as a failure). */
export function commandTimedOut(): GatewayError {
  failures.inc()
  return timedOut()
}

/** A command's failure as the client is told it: a GatewayError as it is, anything else 503 / 50003 (counted). */
export function commandFailed(e: unknown): GatewayError {
  failures.inc()
  return e instanceof GatewayError ? e : unavailable()
}

/** Records a command's latency, `t0` being `performance.now()` when it was sent. */
export function commandAnswered(t0: number): void {
  latency.observeIn(LATENCY, (performance.now() - t0) / 1000)
}

/** What a command's deadline rejects with (told apart from its own errors). */
const TIMED_OUT = Symbol('command deadline')

/** Rejects with 503 / 50003 when `p` takes longer than `ms` or fails: the backend is unavailable, the outcome unknown. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  const t0 = performance.now()
  return settleWithin(p, ms, () => TIMED_OUT).then(
    (v) => {
      commandAnswered(t0)
      return v
    },
    (e) => {
      throw e === TIMED_OUT ? commandTimedOut() : commandFailed(e)
    },
  )
}

/**
 * Bun's native Redis client, for the commands of the publish path (publish and rate-limit
 * scripts): here it costs about a sixth of node-redis per command (its writes go through Node's
 * stream layer). Replies come back as strings, so it serves only commands without binary replies.
 * Fails fast while Redis is unreachable and reconnects by itself.
 */
export async function connectFastSender(
  s: RedisSettings,
  onError: (e: Error) => void,
): Promise<{ send: Sender; close(): void }> {
  const client = new BunRedisClient(s.redisUrl, {
    enableOfflineQueue: false,
    autoReconnect: true,
    maxRetries: 1_000_000,
    connectionTimeout: s.redisTimeoutMs,
  })
  let closed = false
  client.onclose = (e) => {
    if (closed) return
    onError(e)
    // after a give-up (or an idle close) try again, forever, every half second
    setTimeout(() => {
      if (!closed && !client.connected) client.connect().catch(() => {})
    }, 500).unref?.()
  }
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return {
    send: (args) => client.send(String(args[0]), args.slice(1) as string[]),
    close: () => {
      closed = true
      client.close()
    },
  }
}
