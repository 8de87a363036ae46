import { RedisClient as BunRedisClient } from 'bun'
import { RESP_TYPES, createClient } from 'redis'
import { reconnectDelayMs, withTimeout } from './errors'
import { ShardSubscriber, type ShardListener, type ShardPlace } from './shard-subscriber'

type NativeClient = ReturnType<typeof createClient>
export type CommandOptions = Parameters<NativeClient['sendCommand']>[1]
/** A node-redis client of one redis-server. */
export type RedisClient = NativeClient

/**
 * What the stores send commands through: a node-redis client on one redis-server, or the cluster
 * client (routed by the command's first key: cluster.ts). Every command names its keys where
 * Redis expects them, and every script's keys share one hash slot (keys.ts).
 */
export interface RedisCommander {
  /**
   * The one typed call: sends a command and resolves with its reply as the caller names it (`T`:
   * Redis replies carry no type of their own; RESP2 arrays, strings or Buffers with BUFFERS).
   */
  sendCommand<T = unknown>(args: Array<string | Buffer>, options?: CommandOptions): Promise<T>
}

/** A node-redis client as a RedisCommander: its replies typed by the caller (the one place they become typed). */
export const commanderOf = (client: {
  sendCommand(args: Array<string | Buffer>, options?: never): Promise<unknown>
}): RedisCommander => ({
  sendCommand: <T>(args: Array<string | Buffer>, options?: CommandOptions) =>
    client.sendCommand(args, options as never) as Promise<T>,
})

type Listener = (message: any, channel: any) => void

/**
 * The pub/sub side: broadcast channels (control changes, revocations: every node hears them;
 * node-redis) and sharded channels (SSUBSCRIBE: a channel's notifications, heard by the nodes
 * that subscribe to them; on a cluster, from the master owning the channel's slot; read on Bun's
 * sockets, shard-subscriber.ts). A sharded listener is given the payload as a Buffer. Each side
 * has its own hook for after a reconnection, when its notifications may have been missed:
 * `onReady` for the broadcast channels, `onShardsReady` once the sharded channels lost are
 * subscribed again.
 */
export interface RedisSubscriber {
  subscribe(channel: string, listener: Listener, bufferMode?: boolean): Promise<void>
  sSubscribe(channel: string, listener: ShardListener): Promise<void>
  sUnsubscribe(channel: string, listener: ShardListener): Promise<void>
  onReady(fn: () => void): void
  onShardsReady(fn: () => void): void
}

export interface RedisConnections {
  cmd: RedisCommander
  sub: RedisSubscriber
  /** The publish path's sender (Bun's native client on one redis-server; the cluster client on a cluster). */
  fast: { send: Sender; close(): void }
  /** Sends a command to the master owning `key`'s slot (WAIT after a write to that key). */
  sendTo(key: string, args: string[]): Promise<unknown>
  /**
   * Names the shard (master) owning `key`: the publishes of one shard are batched together.
   * `slot`: the key's slot (cluster.ts `keySlot`) where the caller keeps it, not hashed again.
   */
  shardOf(key: string, slot?: number): string
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
      reconnectStrategy: reconnectDelayMs,
    },
  })
  client.on('error', onError)
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return client as NativeClient
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
  const server = placeOfUrl(s.redisUrl)
  const shards = new ShardSubscriber(
    { url: s.redisUrl, redisTimeoutMs: s.redisTimeoutMs, placeOf: () => server },
    onError,
  )
  return {
    cmd: commanderOf(cmd),
    sub: {
      subscribe: (c, l, b) => sub.subscribe(c, l, b),
      sSubscribe: (c, l) => shards.sSubscribe(c, l),
      sUnsubscribe: (c, l) => shards.sUnsubscribe(c, l),
      onReady: (fn) => void sub.on('ready', fn),
      onShardsReady: (fn) => shards.onReady(fn),
    },
    fast,
    sendTo: (_key, args) => fast.send(args),
    shardOf: () => '',
    async quit() {
      fast.close()
      shards.close()
      await Promise.allSettled([sub.quit(), cmd.quit()])
    },
  }
}

/** The server a `redis://` or `rediss://` URL names (6379 when it names no port). */
export function placeOfUrl(url: string): ShardPlace {
  const u = new URL(url.includes('://') ? url : `redis://${url}`)
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1'
  const port = Number(u.port || 6379)
  return { host, port, address: `${host}:${port}` }
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
