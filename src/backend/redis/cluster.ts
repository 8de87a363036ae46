import { RedisClient as BunRedisClient } from 'bun'
import { createCluster } from 'redis'
import { commanderOf, type CommandOptions, type RedisConnections, type RedisSettings, type Sender } from './clients'
import { reconnectDelayMs, topologyMoved, withTimeout } from './errors'
import { ShardSubscriber } from './shard-subscriber'

type NativeCluster = ReturnType<typeof createCluster>

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

/** The key a command is routed by on a cluster: the first key of a script, else the first argument (PUBLISH's channel). */
export function firstKey(args: Array<string | Buffer>): string | Buffer | undefined {
  const name = String(args[0]).toUpperCase()
  if (name === 'EVAL' || name === 'EVALSHA' || name === 'EVAL_RO' || name === 'EVALSHA_RO')
    return Number(args[2]) > 0 ? args[3] : undefined
  if (name === 'PING' || name === 'TIME' || name === 'INFO') return undefined
  // PUBLISH (any node takes it) by its channel: the cluster bus keeps the order of what one master
  // broadcasts, not across masters, so every publish of one channel leaves from the same master
  // and its subscribers hear them in the order they were sent
  // a subcommand before the key
  if (name === 'XINFO' || name === 'OBJECT' || name === 'MEMORY') return args[2]
  return args[1]
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
        reconnectStrategy: reconnectDelayMs,
      },
    },
  })
  cluster.on('error', onError)
  await withTimeout(cluster.connect(), s.redisTimeoutMs * 2)
  const seedHost = new URL(rootNodes[0]!.url).hostname
  const send = (args: Array<string | Buffer>, options?: CommandOptions) =>
    String(args[0]).toUpperCase() === 'PUBLISH'
      ? // node-redis sends a command without keys to a random node: PUBLISH goes to its channel's master
        cluster.getNodeClientForKey(String(args[1]), false).then((c) => c.sendCommand(args, options as never))
      : cluster.sendCommand(firstKey(args), false, args, options as never)
  const fast = s.redisWaitReplicas
    ? { send: (args: Array<string | Buffer>) => send(args), close() {} }
    : fastClusterSender(cluster, rootNodes[0]!.url, send, s)
  const shards = new ShardSubscriber(
    {
      url: rootNodes[0]!.url,
      redisTimeoutMs: s.redisTimeoutMs,
      placeOf: (channel) => masterOfSlot(cluster, keySlot(channel), seedHost),
      // a command routed by the channel's slot: node-redis follows a MOVED and reads the topology again
      refresh: (channel) => void cluster.sendCommand(channel, false, ['EXISTS', channel]).catch(() => {}),
    },
    onError,
  )
  return {
    cmd: commanderOf({ sendCommand: send }),
    sub: {
      subscribe: (c, l, b) => cluster.subscribe(c, l, b),
      sSubscribe: (c, l) => shards.sSubscribe(c, l),
      sUnsubscribe: (c, l) => shards.sUnsubscribe(c, l),
      onReady: (fn) => void cluster.on('node-ready', fn),
      onShardsReady: (fn) => shards.onReady(fn),
    },
    fast,
    // WAIT must run on the connection that wrote: with REDIS_WAIT_REPLICAS the publish path is on node-redis too
    sendTo: (key, args) => cluster.sendCommand(key, false, args),
    shardOf: (key, slot = keySlot(key)) => masterOfSlot(cluster, slot, seedHost)?.address ?? `slot ${slot}`,
    async quit() {
      fast.close()
      shards.close()
      await Promise.allSettled([cluster.close()])
    },
  }
}

/**
 * The master owning a slot in node-redis's view of the topology, undefined while unknown. An
 * empty host (a node that never learned its address, e.g. alone in its cluster) means the address
 * the topology was read from: the seed's host, where node-redis connects too.
 */
function masterOfSlot(
  cluster: NativeCluster,
  slot: number,
  seedHost: string,
): { host: string; port: number; address: string } | undefined {
  const m = cluster.getSlotMaster(slot) as { host?: string; port?: number } | undefined
  if (!m?.port) return undefined
  const host = m.host || seedHost
  return { host, port: m.port, address: `${host}:${m.port}` }
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
    const master = masterOfSlot(cluster, keySlot(key), seedHost)
    if (!master) return undefined
    const { host, port, address } = master
    let c = clients.get(address)
    if (!c) {
      if ((retryAt.get(address) ?? 0) > Date.now()) return undefined
      // the seed's scheme and credentials, the master's address
      const url = new URL(seed)
      url.hostname = host
      url.port = String(port)
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
        if (topologyMoved(String((e as Error).message))) return fallback(args)
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
