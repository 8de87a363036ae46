/**
 * Every setting of the gateway: environment name, default, meaning and parser. The settings
 * table of docs/settings.md and the binary's --help are generated from this list, so it is the only place
 * a setting is declared.
 */
import { availableParallelism } from 'node:os'

export type Parser<T> = (raw: string) => T

const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> =>
  (raw) => {
    const n = Number(raw)
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`must be an integer in [${min}, ${max}]`)
    return n
  }
const str: Parser<string> = (raw) => raw
const bool: Parser<boolean> = (raw) => {
  const v = raw.toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(v)) return true
  if (['0', 'false', 'no', 'off'].includes(v)) return false
  throw new Error('must be true or false')
}
const onOff: Parser<boolean> = (raw) => {
  const v = raw.toLowerCase()
  if (['on', 'true', '1', 'yes'].includes(v)) return true
  if (['off', 'false', '0', 'no'].includes(v)) return false
  throw new Error('must be on or off')
}
const positive: Parser<number> = (raw) => {
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error('must be a positive number')
  return n
}
const oneOf =
  <T extends string>(...values: T[]): Parser<T> =>
  (raw) => {
    if (!(values as string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`)
    return raw as T
  }

/** The most processes `WORKERS` may ask for. */
export const MAX_WORKERS = 256
/** `auto`: one per CPU this process may use (capped at MAX_WORKERS); else an integer in [1, MAX_WORKERS]. */
const workerCount: Parser<number> = (raw) =>
  raw.trim().toLowerCase() === 'auto' ? Math.min(availableParallelism(), MAX_WORKERS) : int(1, MAX_WORKERS)(raw.trim())
/** Empty: 0 (unset); else an integer in [min, max]. */
const optionalInt =
  (min: number, max: number): Parser<number> =>
  (raw) =>
    raw === '' ? 0 : int(min, max)(raw)

/** Empty, or an absolute directory path short enough for the unix socket paths made in it. */
export const MAX_SOCKET_DIR = 80
const socketDir: Parser<string> = (raw) => {
  if (raw === '') return raw
  if (!raw.startsWith('/')) throw new Error('must be an absolute path')
  if (raw.length > MAX_SOCKET_DIR)
    throw new Error(`must be at most ${MAX_SOCKET_DIR} characters (a unix socket path is at most 107 bytes)`)
  return raw
}

/** `*` (any origin), `none`, or a comma-separated list of origins (`scheme://host[:port]`). */
const origins: Parser<string[]> = (raw) => {
  const v = raw.trim()
  if (v === '*') return ['*']
  if (v === 'none') return []
  const list = v.split(',').map((o) => o.trim())
  for (const o of list) {
    let origin: string | undefined
    try {
      origin = new URL(o).origin
    } catch {}
    if (origin !== o)
      throw new Error(
        `must be *, none or a comma-separated list of origins such as https://app.example.com (got "${o}")`,
      )
  }
  return list
}

/** Empty, or a URL of one of the schemes. */
const urlOf =
  (what: string, ...schemes: string[]): Parser<string> =>
  (raw) => {
    if (raw === '') return raw
    let u: URL | undefined
    try {
      u = new URL(raw)
    } catch {}
    if (!u || !schemes.includes(u.protocol) || !u.hostname) throw new Error(`must be ${what}`)
    return raw
  }
const amqpUrl = urlOf('an amqp:// or amqps:// URL', 'amqp:', 'amqps:')

const httpUrl: Parser<string> = (raw) => {
  if (raw === '') return raw
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new Error('must be an http(s) URL')
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must be an http(s) URL')
  return raw
}

interface Setting<T> {
  env: string
  default: string
  description: string
  parse: Parser<T>
  secret?: boolean
}
const setting = <T>(env: string, def: string, description: string, parse: Parser<T>, secret = false): Setting<T> => ({
  env,
  default: def,
  description,
  parse,
  secret,
})

export const SETTINGS = {
  port: setting('PORT', '8080', 'TCP port the server listens on (all five interfaces share it).', int(0, 65535)),
  host: setting('HOST', '0.0.0.0', 'Address the server binds to.', str),
  reusePort: setting(
    'REUSE_PORT',
    'false',
    'Let several gateway processes listen on the same PORT (SO_REUSEPORT: the kernel spreads connections among them), one per core; each process is a node, so REDIS_URL is required.',
    bool,
  ),
  workers: setting(
    'WORKERS',
    '1',
    'Gateway processes this command runs on this machine, sharing PORT (SO_REUSEPORT) under one supervisor that restarts a worker that dies: an integer up to 256, or `auto` for one per CPU. Each worker is a node, so more than 1 needs REDIS_URL; `auto` without REDIS_URL runs 1.',
    workerCount,
  ),
  workerId: setting(
    'WORKER_ID',
    '',
    'Set by the supervisor (WORKERS above 1) on each worker it starts, 1 to WORKERS: the process serves instead of supervising and its log lines carry `worker`. Not for operators.',
    optionalInt(1, MAX_WORKERS),
  ),
  siblingSocketDir: setting(
    'SIBLING_SOCKET_DIR',
    '',
    'A private directory shared by the processes of one node on one machine (WORKERS, or processes sharing PORT with REUSE_PORT): each listens there on a unix socket named after itself, and a comet (long-polling) request that the kernel hands to another process than the one holding its connection is passed on to that one instead of being answered 80003. WORKERS sets it to a directory it creates and removes; empty: no hand-over. At most 80 characters (a unix socket path is at most 107 bytes).',
    socketDir,
  ),
  dataDir: setting(
    'DATA_DIR',
    './data',
    'Directory of the embedded SQLite store (accounts, apps, keys, persisted history).',
    str,
  ),
  redisUrl: setting(
    'REDIS_URL',
    '',
    'Redis URL; empty runs the embedded single-node backend. With REDIS_CLUSTER, one or more cluster nodes, comma-separated (the rest of the cluster is discovered).',
    str,
    true,
  ),
  redisCluster: setting(
    'REDIS_CLUSTER',
    'false',
    'Use Redis Cluster (node-redis cluster client; REDIS_URL names its seed nodes, comma-separated). Redis 7 or newer. Without it, a REDIS_URL naming a cluster node is refused at start.',
    bool,
  ),
  redisWaitReplicas: setting(
    'REDIS_WAIT_REPLICAS',
    '0',
    "A publish is ACKed only once this many replicas of the channel's Redis (master) have it (WAIT, up to REDIS_TIMEOUT_MS; fewer fails the publish with 503, outcome unknown). 0: ACK after the master alone (replication is asynchronous; a failover can lose the last writes).",
    int(0, 16),
  ),
  redisSkipOwnNotifications: setting(
    'REDIS_SKIP_OWN_NOTIFICATIONS',
    'false',
    'A publish to a channel whose one subscriber is the publishing node (or that has none) is not notified over Redis: that node delivers it itself. Saves the notifications for about what the checks cost Redis; measured worse where several nodes publish the same channels (docs/performance.md).',
    bool,
  ),
  redisPrefix: setting(
    'REDIS_PREFIX',
    'gw:',
    'Prefix of every Redis key and pub/sub channel (several gateways can share one Redis).',
    str,
  ),
  redisTimeoutMs: setting(
    'REDIS_TIMEOUT_MS',
    '2000',
    'A Redis command slower than this fails the request with 503 (ms); connecting uses it too.',
    int(50),
  ),
  bootstrapKey: setting(
    'BOOTSTRAP_KEY',
    '',
    'Root API key `appId.keyId:secret` (capability `{"*":["*"]}`) of a fresh store (data dir or Redis), and added at every start to a used store that lacks it (its app too); a key of that name already there keeps its secret. Empty: a random key on a fresh store, printed once.',
    str,
    true,
  ),
  bootstrapAccessToken: setting(
    'BOOTSTRAP_ACCESS_TOKEN',
    '',
    'Operator (management) access token of a fresh store, and added at every start to a used store that lacks it (earlier tokens stay valid). Empty: a random token on a fresh store, printed once.',
    str,
    true,
  ),
  bootstrapAccountId: setting(
    'BOOTSTRAP_ACCOUNT_ID',
    '',
    "Account id of a fresh store; on a used store, the account BOOTSTRAP_KEY's app and BOOTSTRAP_ACCESS_TOKEN are added to (created when missing). Empty: random on a fresh store; on a used one, the app's owner or the oldest account.",
    str,
  ),
  logLevel: setting(
    'LOG_LEVEL',
    'info',
    'Log level: debug, info, warn, error or silent.',
    oneOf('debug', 'info', 'warn', 'error', 'silent'),
  ),
  historyTtlMs: setting(
    'HISTORY_TTL_MS',
    '120000',
    'History retention (messages and presence events) of channels outside persisted namespaces (ms).',
    int(1000),
  ),
  persistedHistoryTtlMs: setting(
    'PERSISTED_HISTORY_TTL_MS',
    '86400000',
    'History retention (messages and presence events) of channels in `persisted` namespaces (ms).',
    int(1000),
  ),
  ringSize: setting(
    'RING_SIZE',
    '2000',
    'Messages kept in memory per channel for history, rewind and resume (at least; see RESUME_WINDOW_MS).',
    int(16, 1_000_000),
  ),
  resumeWindowMs: setting(
    'RESUME_WINDOW_MS',
    '15000',
    'Beyond RING_SIZE, a channel also keeps every message of this last window (ms), so a slow or reconnecting subscriber resumes exactly at any publish rate (up to RING_MAX_BYTES).',
    int(0, 600_000),
  ),
  ringMaxBytes: setting(
    'RING_MAX_BYTES',
    '16777216',
    'Hard cap of the messages a channel keeps in memory (bytes, encoded); the oldest go first.',
    int(65_536),
  ),
  ringTotalMaxBytes: setting(
    'RING_TOTAL_MAX_BYTES',
    '1073741824',
    'Soft cap of the messages all channels of an embedded node keep in memory (bytes, encoded): past it, the channel being published to gives up what it keeps beyond RING_SIZE (its RESUME_WINDOW_MS extra), then every channel does, the largest first.',
    int(1_048_576),
  ),
  channelIdleMs: setting(
    'CHANNEL_IDLE_MS',
    '300000',
    'A channel with no subscriber and no message for this long is evicted from memory (ms).',
    int(1000),
  ),
  maxMessageSize: setting(
    'MAX_MESSAGE_SIZE',
    '65536',
    'Maximum size of the messages of one publish (bytes, as the hosted service counts it).',
    int(1),
  ),
  annotationSummaryMaxBytes: setting(
    'ANNOTATION_SUMMARY_MAX_BYTES',
    '65536',
    'Largest annotation summary of a message, as JSON, sent to subscribers or read with the message (bytes): past it, client lists are clipped (totals exact, clipped: true), and only when the names alone do not fit are the least annotated names left out.',
    int(1024),
  ),
  annotationSummaryIntervalMs: setting(
    'ANNOTATION_SUMMARY_INTERVAL_MS',
    '250',
    "A message's annotation summary goes out at most once per this interval from each node; changes made in between go out together in the next one (ms, 0: as fast as summaries are read and sent).",
    int(0, 60_000),
  ),
  maxMessageVersions: setting(
    'MAX_MESSAGE_VERSIONS',
    '10000',
    'Most versions one message of a mutableMessages namespace may have (the original, its updates, deletes and appends); further changes get 400.',
    int(2, 1_000_000),
  ),
  maxBodySize: setting(
    'MAX_BODY_SIZE',
    '2097152',
    'Maximum HTTP request body (bytes); larger bodies get 413.',
    int(1024),
  ),
  maxNestingDepth: setting(
    'MAX_NESTING_DEPTH',
    '64',
    'Deepest nesting of objects and arrays in a JSON or msgpack request body; deeper bodies get 400 before they are parsed.',
    int(2, 10_000),
  ),
  requestBodyTimeoutMs: setting(
    'REQUEST_BODY_TIMEOUT_MS',
    '10000',
    'A request body must have arrived within this time after its headers, or the request gets 408 and its connection is closed (ms); must be below IDLE_CONNECTION_TIMEOUT_MS.',
    int(100),
  ),
  idleConnectionTimeoutMs: setting(
    'IDLE_CONNECTION_TIMEOUT_MS',
    '30000',
    'A keep-alive connection with no request in progress is closed after this long (ms, rounded up to whole seconds, at most 255 s; the runtime checks every ~4 s; 0: never). Event streams are exempt.',
    int(0, 255_000),
  ),
  corsOrigins: setting(
    'CORS_ORIGINS',
    '*',
    'Origins whose browser pages may call the gateway: `*` any, `none`, or a comma-separated list (`https://app.example.com,http://localhost:3000`). Credentials are allowed only to requests that carry their own Authorization header.',
    origins,
  ),
  idempotencyWindowMs: setting(
    'IDEMPOTENCY_WINDOW_MS',
    '120000',
    'Window in which a repeated client-supplied message id is not published again (ms).',
    int(1000),
  ),
  tokenDefaultTtlMs: setting(
    'TOKEN_DEFAULT_TTL_MS',
    '3600000',
    'Lifetime of a token when the request names none (ms).',
    int(1000),
  ),
  tokenMaxTtlMs: setting(
    'TOKEN_MAX_TTL_MS',
    '86400000',
    'Longest token lifetime a request may ask for (ms).',
    int(1000),
  ),
  tokenRequestWindowMs: setting(
    'TOKEN_REQUEST_WINDOW_MS',
    '120000',
    'Allowed clock skew of a signed token request timestamp (ms).',
    int(1000),
  ),
  tokenNoncesPerAccount: setting(
    'TOKEN_NONCES_PER_ACCOUNT',
    '20000',
    "Signed token requests one account may have in the replay window at once: each nonce is remembered for twice TOKEN_REQUEST_WINDOW_MS and never forgotten sooner, so past this the account's signed token requests get 429 until its oldest nonces expire.",
    int(1),
  ),
  connectionMarksPerApp: setting(
    'CONNECTION_MARKS_PER_APP',
    '50000',
    "Records one app's realtime connections leave behind for 24 h (closed or expired, so their resume keys are refused; identities they were re-authorised as); past this the app's oldest are forgotten.",
    int(1),
  ),
  sseKeepaliveMs: setting(
    'SSE_KEEPALIVE_MS',
    '15000',
    'Interval of keepalives (newline or heartbeat event) on idle event streams (ms).',
    int(100),
  ),
  realtimeMaxConnections: setting(
    'REALTIME_MAX_CONNECTIONS',
    '100000',
    'Most realtime (WebSocket) connections one node accepts; beyond it new ones get DISCONNECTED (503) and retry.',
    int(1),
  ),
  accountMaxConnections: setting(
    'ACCOUNT_MAX_CONNECTIONS',
    '0',
    "Live connections (realtime WebSocket and comet, event streams) one account may hold on all nodes together (each node's count, shared through the store on Redis; a realtime resume is not new); beyond, a new connect is refused with 403 / 40111 (an ERROR on realtime: the official client's connection fails, as on the hosted service; the HTTP answer of a stream). 0: no bound.",
    int(0, 100_000_000),
  ),
  accountMaxChannels: setting(
    'ACCOUNT_MAX_CHANNELS',
    '0',
    'Active channels one account may have on all nodes together: a channel is active while any node holds an attachment on it (realtime, event stream) and up to 30 s after; an attach that would activate one more is refused with 403 / 40114 (a channel ERROR on realtime; the connection stays). 0: no bound.',
    int(0, 100_000_000),
  ),
  accountMaxNewChannelRate: setting(
    'ACCOUNT_MAX_NEW_CHANNEL_RATE',
    '0',
    'Channels one account may newly activate per second (an attach of a channel active on no node; a second of it as burst; counted across nodes); beyond, the attach is refused with 429 / 90021. 0: no bound.',
    int(0, 1_000_000),
  ),
  realtimeMaxChannels: setting(
    'REALTIME_MAX_CHANNELS',
    '1000',
    'Most channels one realtime connection may have attached (more: a channel ERROR 90010).',
    int(1, 100_000),
  ),
  filterBudgetSteps: setting(
    'FILTER_BUDGET_STEPS',
    '1000000',
    "Work all the filtered-channel subscriptions of one channel may cost a node on one delivered batch, in steps of a filter evaluation (about 5-30 ns each), shared evenly among the channel's distinct filters; a filter needing more than its share fails its attachments with 90000.",
    int(1000),
  ),
  deltaMaxBytes: setting(
    'DELTA_MAX_BYTES',
    '65536',
    'Largest message payload (bytes) sent as a VCDIFF delta, or used as the base of one, to subscribers that asked for deltas (`delta=vcdiff`); larger payloads go whole. Bounds the encoding work per message.',
    int(0, 16 * 1024 * 1024),
  ),
  realtimeMaxInboundRate: setting(
    'REALTIME_MAX_INBOUND_RATE',
    '0',
    'Messages one realtime connection may publish per second (a second of it as burst); beyond, a publish is refused with NACK 42911 and the connection stays. 0: no bound (the connection is told 1000).',
    int(0, 1_000_000),
  ),
  realtimeMaxOutboundRate: setting(
    'REALTIME_MAX_OUTBOUND_RATE',
    '0',
    "Messages one realtime connection may be sent per second, over all its channels (a second of it as burst); beyond, they are dropped and the channel is told of the gap once per run of drops (an ATTACHED without RESUMED carrying 80020, the hosted service's continuity loss for its 42915); the client reads what it missed from history. 0: no bound.",
    int(0, 1_000_000),
  ),
  channelMaxPublishRate: setting(
    'CHANNEL_MAX_PUBLISH_RATE',
    '0',
    'Messages one channel may take per second from all its publishers together (REST, realtime, batch, changes, chat sends; a second of it as burst; counted across nodes); beyond, a publish is refused with 429 / 42913 (a NACK on realtime). 0: no bound.',
    int(0, 1_000_000),
  ),
  accountMaxConnectionRate: setting(
    'ACCOUNT_MAX_CONNECTION_RATE',
    '0',
    "New connections an account may open per second (realtime WebSocket and comet, event streams; a realtime resume is not new; a second of it as burst; counted across nodes); beyond, the connect is refused with 429 / 80021 (an ERROR on realtime: the official client's connection fails, as on the hosted service; the HTTP answer of a stream). 0: no bound.",
    int(0, 1_000_000),
  ),
  appendRollupWindowMs: setting(
    'APPEND_ROLLUP_WINDOW_MS',
    '40',
    'Append rollup window of a subscription to a channel of a mutableMessages namespace whose client sets no `appendRollupWindow` transport param (ms, 0-500; 0: every append as it comes): appends to one message inside a window reach the subscriber as one append of the joined data, so a token stream reaches it at most about 1000/window times a second.',
    int(0, 500),
  ),
  appendRollupMaxMessages: setting(
    'APPEND_ROLLUP_MAX_MESSAGES',
    '100',
    'Messages whose appends one subscription may hold in its rollup window; past it, what is held goes at once.',
    int(1, 100_000),
  ),
  appendRollupMaxBytes: setting(
    'APPEND_ROLLUP_MAX_BYTES',
    '65536',
    'Bytes of appended data one subscription may hold in its rollup window; past it, what is held goes at once.',
    int(1, 16 * 1024 * 1024),
  ),
  deliveryHoldMaxMessages: setting(
    'DELIVERY_HOLD_MAX_MESSAGES',
    '1000',
    'Entries a channel with server-side batching or conflation (namespace rules) may hold on a node during an interval; past it, what is held goes at once.',
    int(1, 1_000_000),
  ),
  deliveryHoldMaxBytes: setting(
    'DELIVERY_HOLD_MAX_BYTES',
    '1048576',
    'Bytes of payloads a channel with server-side batching or conflation may hold on a node during an interval; past it, what is held goes at once.',
    int(1, 256 * 1024 * 1024),
  ),
  realtimeBufferBytes: setting(
    'REALTIME_BUFFER_BYTES',
    '1048576',
    'Unsent bytes a realtime socket may hold before its subscriptions pause; they catch up from the channel log when it drains.',
    int(4096),
  ),
  realtimeMaxIdleIntervalMs: setting(
    'REALTIME_MAX_IDLE_INTERVAL_MS',
    '15000',
    'The server sends realtime clients something at least this often (HEARTBEAT frames or WebSocket pings), as promised in maxIdleInterval (ms).',
    int(1000, 600_000),
  ),
  realtimeMaxFrameSize: setting(
    'REALTIME_MAX_FRAME_SIZE',
    '524288',
    'Largest realtime frame a client may send (bytes); larger ones fail the connection with 40009.',
    int(65_536, 16 * 1024 * 1024),
  ),
  connectionStateTtlMs: setting(
    'CONNECTION_STATE_TTL_MS',
    '120000',
    'How long a dropped realtime connection may be resumed with its identity (ms), as told to clients (connectionStateTtl).',
    int(1000),
  ),
  tokenRenewLeadMs: setting(
    'TOKEN_RENEW_LEAD_MS',
    '30000',
    'A realtime connection authenticated with a token is asked to renew it (AUTH) this long before it expires, once per token, as the hosted service does; a token with less than 1.1 times this left when it arrives is not asked for and expires into DISCONNECTED 40142, after which the client renews and resumes. 0: never asked (ms).',
    int(0),
  ),
  presenceLeaseMs: setting(
    'PRESENCE_LEASE_MS',
    '15000',
    'Redis backend: a node that has not renewed its lease for this long is dead; its presence members leave on the other nodes within this plus half of it, and the connection keys it issued no longer publish on behalf of their connection (ms).',
    int(1000, 600_000),
  ),
  presenceGraceMs: setting(
    'PRESENCE_GRACE_MS',
    '15000',
    'A dropped realtime connection keeps its presence members this long for a resume, unless the client asked otherwise (remainPresentFor, at least 1 s) (ms).',
    int(1000, 600_000),
  ),
  presenceMaxMembers: setting(
    'PRESENCE_MAX_MEMBERS',
    '20000',
    'Most members present on one channel; entering beyond it is refused (91003).',
    int(1),
  ),
  liveObjectsMaxObjects: setting(
    'LIVE_OBJECTS_MAX_OBJECTS',
    '20000',
    'Most LiveObjects (maps and counters, root aside) one channel may hold; an operation creating more is refused (92001).',
    int(1, 1_000_000),
  ),
  liveObjectsMaxMapKeys: setting(
    'LIVE_OBJECTS_MAX_MAP_KEYS',
    '10000',
    'Most live keys one LiveObjects map may hold; an operation adding more is refused (92001).',
    int(1, 1_000_000),
  ),
  liveObjectsMaxChannelBytes: setting(
    'LIVE_OBJECTS_MAX_CHANNEL_BYTES',
    '6815744',
    "Most bytes one channel's LiveObjects may hold together (6.5 MiB, the hosted limit): map keys and values, 8 per counter, removed keys not counted; an operation growing past it is refused (92001). Also bounds what a REST read or an OBJECT_SYNC of the channel carries.",
    int(1024, 1024 * 1024 * 1024),
  ),
  liveObjectsGcGraceMs: setting(
    'LIVE_OBJECTS_GC_GRACE_MS',
    '86400000',
    'How long a removed LiveObjects map key is kept as a tombstone (ms); told to clients as objectsGCGracePeriod.',
    int(120_001),
  ),
  sseMaxChannels: setting(
    'SSE_MAX_CHANNELS',
    '100',
    'Most channels one event-stream connection may subscribe to.',
    int(1, 10_000),
  ),
  sseBufferBytes: setting(
    'SSE_BUFFER_BYTES',
    '524288',
    'Unsent bytes allowed per event-stream client before it is paused: it then catches up from the channel log when it reads again (cut only when its position left retention, or after HISTORY_TTL_MS without reading).',
    int(4096),
  ),
  sandboxProvisioning: setting(
    'SANDBOX_PROVISIONING',
    'false',
    'Serve the sandbox endpoints (POST /apps without credentials, DELETE /apps/{id}, POST /stats) for test suites and load tests.',
    bool,
  ),
  faults: setting(
    'FAULTS',
    'off',
    "Serve the fault-injection control API (the grammar of the hosted service's test proxy, uts-proxy: sessions on their own ports with rules that drop, delay, replace or inject traffic) on FAULTS_HOST:FAULTS_PORT; for test runs only (see docs/testing-your-app.md).",
    onOff,
  ),
  faultsHost: setting(
    'FAULTS_HOST',
    '127.0.0.1',
    'Address the fault control API and its sessions bind to; an address other than loopback is refused at start unless FAULTS_ALLOW_PUBLIC is set.',
    str,
  ),
  faultsPort: setting('FAULTS_PORT', '9100', 'TCP port of the fault control API (0: a free one).', int(0, 65535)),
  faultsAllowPublic: setting(
    'FAULTS_ALLOW_PUBLIC',
    'false',
    'Let FAULTS_HOST be an address other than loopback: anyone who reaches it can cut, forge or read the traffic of its sessions.',
    bool,
  ),
  faultsMaxSessions: setting(
    'FAULTS_MAX_SESSIONS',
    '32',
    'Fault sessions open at once (each listens on a port of its own); one more is refused with 409.',
    int(1, 10_000),
  ),
  faultsMaxRules: setting(
    'FAULTS_MAX_RULES',
    '100',
    'Rules one fault session holds; a request that would pass it is refused with 400.',
    int(1, 100_000),
  ),
  faultsMaxLogEvents: setting(
    'FAULTS_MAX_LOG_EVENTS',
    '10000',
    "Events one fault session's log keeps (the oldest are dropped beyond, and counted).",
    int(10, 10_000_000),
  ),
  faultsMaxLogBytes: setting(
    'FAULTS_MAX_LOG_BYTES',
    '16777216',
    "Bytes of frames and bodies one fault session's log keeps, as their size on the wire (the oldest events are dropped beyond, and counted).",
    int(65_536, 1 << 30),
  ),
  webConsole: setting(
    'CONSOLE',
    'on',
    "Serve the web console at `/console`: a static page that calls this gateway's public interfaces from the browser with a key pasted into it (never stored server-side); `off` to not serve it.",
    onOff,
  ),
  memoryPurgeDelayMs: setting(
    'MEMORY_PURGE_DELAY_MS',
    '-1',
    "How long memory the process has freed stays with it before the allocator (Bun's mimalloc) gives its pages back to the system (ms); -1: never, the process keeps its peak and reuses it. Bun's own default, 10, gives a busy node's freed pages back within milliseconds and faults them in again on other threads soon after: 3-5 us more CPU per realtime message at 40,000 messages/s on a 2-core VM. The allocator reads it only as the process starts, as MIMALLOC_PURGE_DELAY, so a gateway whose environment lacks that value starts itself again with it (same process id, before it loads or listens).",
    int(-1, 3_600_000),
  ),
  shutdownTimeoutMs: setting(
    'SHUTDOWN_TIMEOUT_MS',
    '10000',
    'On SIGTERM/SIGINT, how long in-flight requests may take before connections are closed (ms).',
    int(0),
  ),
  tlsCertFile: setting(
    'TLS_CERT_FILE',
    '',
    'PEM certificate (chain) file: when set with TLS_KEY_FILE the server speaks HTTPS.',
    str,
  ),
  tlsKeyFile: setting('TLS_KEY_FILE', '', 'PEM private key file of TLS_CERT_FILE.', str, true),
  http2: setting(
    'HTTP2',
    'on',
    'HTTP/2 on the TLS listener (clients offering `h2` by ALPN get it, the others HTTP/1.1, WebSockets included): its streams share one connection, so a browser is not held to ~6 event streams per origin. `off`: HTTP/1.1 only. No effect without TLS.',
    onOff,
  ),
  http2MaxRequestsPerSecond: setting(
    'HTTP2_MAX_REQUESTS_PER_SECOND',
    '5000',
    'Requests one connection may make per second on the HTTP/2 listener (its streams share one connection); beyond, 429 / 42910 at once, before any work: bounds a rapid-reset flood, whose every stream Bun hands to the handler.',
    int(1, 10_000_000),
  ),
  http3: setting(
    'HTTP3',
    'off',
    'HTTP/3 (QUIC, UDP on PORT) beside the TLS listener, announced to clients by an `Alt-Svc` header on every answer. Experimental in Bun, and its bounds against hostile QUIC clients are untested here: see docs/security.md. No effect without TLS.',
    onOff,
  ),
  limitsProfile: setting(
    'LIMITS_PROFILE',
    'default',
    "Defaults of the limit settings: `default` (this gateway's), or `hosted` (the hosted service's documented limits of its Standard package: 200 channels per connection, 50 messages/s in and out per connection, 50 messages/s per channel, 200 presence members, 10,000 connections and 10,000 channels per account, 2,500 messages/s per account...; see docs/limits.md). A limit set explicitly wins over its profile.",
    oneOf('default', 'hosted'),
  ),
  rateLimits: setting(
    'RATE_LIMITS',
    'on',
    'Rate limits per account: `off` disables every limit at once (load tests, benchmarks).',
    onOff,
  ),
  rateLimitBurstSeconds: setting(
    'RATE_LIMIT_BURST_SECONDS',
    '1',
    'Token-bucket capacity of every limit, in seconds of its rate (a steady load at the limit always passes).',
    positive,
  ),
  limitMessagesPerSecond: setting(
    'LIMIT_MESSAGES_PER_SECOND',
    '2000',
    'Messages published per account per second (channel publish, batch publish, chat send).',
    positive,
  ),
  limitHistoryPerSecond: setting(
    'LIMIT_HISTORY_PER_SECOND',
    '50',
    'History queries per account per second (channel and chat).',
    positive,
  ),
  limitTokenRequestsPerSecond: setting(
    'LIMIT_TOKEN_REQUESTS_PER_SECOND',
    '50',
    'Token requests per account per second.',
    positive,
  ),
  limitObjectReadsPerSecond: setting(
    'LIMIT_OBJECT_READS_PER_SECOND',
    '50',
    'LiveObjects state queries per account per second.',
    positive,
  ),
  limitObjectWritesPerSecond: setting(
    'LIMIT_OBJECT_WRITES_PER_SECOND',
    '2000',
    'LiveObjects state updates per account per second.',
    positive,
  ),
  limitManagementPerMinute: setting(
    'LIMIT_MANAGEMENT_PER_MINUTE',
    '100',
    'Management interface standard operations per account per minute.',
    positive,
  ),
  limitManagementStatsPerMinute: setting(
    'LIMIT_MANAGEMENT_STATS_PER_MINUTE',
    '20',
    'Management interface statistics queries per account per minute.',
    positive,
  ),
  basicAuthRequiresTls: setting(
    'BASIC_AUTH_REQUIRES_TLS',
    'false',
    'Refuse Basic auth over plain HTTP with 40103, as the hosted service does.',
    bool,
  ),
  refusedCredentialsCacheSize: setting(
    'REFUSED_CREDENTIALS_CACHE_SIZE',
    '4096',
    'Refused credentials (an expired, forged or revoked token; an unknown key) a node remembers, so the same one sent again is refused at the cost of a lookup, not a verification; the oldest are forgotten first, all on any key or app change. Credentials over 4,096 characters are not remembered. 0: none.',
    int(0, 1_000_000),
  ),
  refusedCredentialsCacheMs: setting(
    'REFUSED_CREDENTIALS_CACHE_MS',
    '60000',
    'How long a refused credential is remembered (ms; see REFUSED_CREDENTIALS_CACHE_SIZE).',
    int(0),
  ),
  pushWebhookUrl: setting(
    'PUSH_WEBHOOK_URL',
    '',
    'URL that APNs, FCM and web push notifications are POSTed to (a relay); empty: only the ablyChannel push transport delivers.',
    httpUrl,
  ),
  webhookAllowPrivateTargets: setting(
    'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    'false',
    'Let rule webhooks reach loopback, private, link-local and unspecified addresses (refused by default: tenants could reach Redis, cloud metadata or the gateway itself).',
    bool,
  ),
  webhookMaxAttempts: setting(
    'WEBHOOK_MAX_ATTEMPTS',
    '15',
    'Attempts of one webhook request (no answer, 408, 429, 5xx are retried) before its messages are dropped.',
    int(1, 1000),
  ),
  webhookRetryMs: setting(
    'WEBHOOK_RETRY_MS',
    '300000',
    'How long after its first attempt a webhook request may still be retried (ms).',
    int(0),
  ),
  webhookBufferBytes: setting(
    'WEBHOOK_BUFFER_BYTES',
    '1048576',
    'Bytes (as JSON) of messages one webhook rule may hold waiting; beyond, new messages are dropped and counted.',
    int(1024),
  ),
  amqpUrl: setting(
    'AMQP_URL',
    '',
    "AMQP 0-9-1 broker (RabbitMQ) of the app queues, e.g. amqp://guest:guest@127.0.0.1:5672 (its user declares queues and publishes, each app's in a vhost `app.<appId>` of its own; its vhost is where earlier versions kept every app's queues, moved from there at start); empty: queues are embedded and read over HTTP.",
    amqpUrl,
    true,
  ),
  amqpManagementUrl: setting(
    'AMQP_MANAGEMENT_URL',
    '',
    "RabbitMQ management API (plugin rabbitmq_management), where each app's consumer user is created, e.g. http://guest:guest@127.0.0.1:15672; empty: AMQP_URL's host and credentials on port 15672.",
    urlOf('an http(s) URL', 'http:', 'https:'),
    true,
  ),
  amqpPublicUrl: setting(
    'AMQP_PUBLIC_URL',
    '',
    "Scheme, host and port that queue records tell consumers to connect to (the app's credentials and vhost are added), e.g. amqps://queues.example.com:5671; empty: those of AMQP_URL.",
    amqpUrl,
  ),
  amqpBufferMessages: setting(
    'AMQP_BUFFER_MESSAGES',
    '10000',
    "Queue messages one node holds while the broker is unreachable or has not confirmed them, shared fairly between accounts: when it is full, the account holding the most loses its oldest waiting message (a message of that account itself is dropped); every drop is counted, also in the app's stats.",
    int(1, 10_000_000),
  ),
  amqpIdleConnectionMs: setting(
    'AMQP_IDLE_CONNECTION_MS',
    '60000',
    "An app's AMQP connection (one per app with queue traffic on this node, to its vhost) is closed after this long without a message once it holds none.",
    int(1000, 86_400_000),
  ),
  redisAcceptDataLoss: setting(
    'REDIS_ACCEPT_DATA_LOSS',
    'false',
    'Start on a Redis whose data was lost (a node found its epoch gone) and bootstrap it anew; without it such a node refuses to start. Set once, then remove.',
    bool,
  ),
}

export type SettingName = keyof typeof SETTINGS
export type Config = { [K in SettingName]: ReturnType<(typeof SETTINGS)[K]['parse']> }
