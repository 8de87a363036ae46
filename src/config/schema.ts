/**
 * Every setting of the gateway: environment name, default, meaning and parser. The README's
 * settings table and the binary's --help are generated from this list, so it is the only place
 * a setting is declared.
 */
export type Parser<T> = (raw: string) => T

const int = (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> => (raw) => {
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
const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!(values as string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`)
  return raw as T
}

const httpUrl: Parser<string> = (raw) => {
  if (raw === '') return raw
  let u: URL
  try { u = new URL(raw) } catch { throw new Error('must be an http(s) URL') }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must be an http(s) URL')
  return raw
}

interface Setting<T> { env: string; default: string; description: string; parse: Parser<T>; secret?: boolean }
const setting = <T>(env: string, def: string, description: string, parse: Parser<T>, secret = false): Setting<T> =>
  ({ env, default: def, description, parse, secret })

export const SETTINGS = {
  port: setting('PORT', '8080', 'TCP port the server listens on (all five interfaces share it).', int(0, 65535)),
  host: setting('HOST', '0.0.0.0', 'Address the server binds to.', str),
  dataDir: setting('DATA_DIR', './data', 'Directory of the embedded SQLite store (accounts, apps, keys, persisted history).', str),
  redisUrl: setting('REDIS_URL', '', 'Redis URL; empty runs the embedded single-node backend.', str, true),
  redisPrefix: setting('REDIS_PREFIX', 'gw:', 'Prefix of every Redis key and pub/sub channel (several gateways can share one Redis).', str),
  redisTimeoutMs: setting('REDIS_TIMEOUT_MS', '2000', 'A Redis command slower than this fails the request with 503 (ms); connecting uses it too.', int(50)),
  bootstrapKey: setting('BOOTSTRAP_KEY', '', 'Root API key `appId.keyId:secret` created on a fresh data dir (random when empty).', str, true),
  bootstrapAccessToken: setting('BOOTSTRAP_ACCESS_TOKEN', '', 'Management access token created on a fresh data dir (random when empty).', str, true),
  bootstrapAccountId: setting('BOOTSTRAP_ACCOUNT_ID', '', 'Account id created on a fresh data dir (random when empty).', str),
  logLevel: setting('LOG_LEVEL', 'info', 'Log level: debug, info, warn, error or silent.', oneOf('debug', 'info', 'warn', 'error', 'silent')),
  historyTtlMs: setting('HISTORY_TTL_MS', '120000', 'History retention of channels outside persisted namespaces (ms).', int(1000)),
  persistedHistoryTtlMs: setting('PERSISTED_HISTORY_TTL_MS', '86400000', 'History retention of channels in `persisted` namespaces (ms).', int(1000)),
  ringSize: setting('RING_SIZE', '2000', 'Messages kept in memory per channel for history, rewind and resume.', int(16, 1_000_000)),
  channelIdleMs: setting('CHANNEL_IDLE_MS', '300000', 'A channel with no subscriber and no message for this long is evicted from memory (ms).', int(1000)),
  maxMessageSize: setting('MAX_MESSAGE_SIZE', '65536', 'Maximum size of the messages of one publish (bytes, as the hosted service counts it).', int(1)),
  maxBodySize: setting('MAX_BODY_SIZE', '2097152', 'Maximum HTTP request body (bytes); larger bodies get 413.', int(1024)),
  idempotencyWindowMs: setting('IDEMPOTENCY_WINDOW_MS', '120000', 'Window in which a repeated client-supplied message id is not published again (ms).', int(1000)),
  tokenDefaultTtlMs: setting('TOKEN_DEFAULT_TTL_MS', '3600000', 'Lifetime of a token when the request names none (ms).', int(1000)),
  tokenMaxTtlMs: setting('TOKEN_MAX_TTL_MS', '86400000', 'Longest token lifetime a request may ask for (ms).', int(1000)),
  tokenRequestWindowMs: setting('TOKEN_REQUEST_WINDOW_MS', '120000', 'Allowed clock skew of a signed token request timestamp (ms).', int(1000)),
  sseKeepaliveMs: setting('SSE_KEEPALIVE_MS', '15000', 'Interval of keepalives (newline or heartbeat event) on idle event streams (ms).', int(100)),
  sseMaxChannels: setting('SSE_MAX_CHANNELS', '100', 'Most channels one event-stream connection may subscribe to.', int(1, 10_000)),
  sseBufferBytes: setting('SSE_BUFFER_BYTES', '524288', 'Unsent bytes allowed per event-stream client before it is cut as too slow.', int(4096)),
  sandboxProvisioning: setting('SANDBOX_PROVISIONING', 'false', 'Serve the sandbox endpoints (POST /apps without credentials, DELETE /apps/{id}, POST /stats) for test suites and load tests.', bool),
  shutdownTimeoutMs: setting('SHUTDOWN_TIMEOUT_MS', '10000', 'On SIGTERM/SIGINT, how long in-flight requests may take before connections are closed (ms).', int(0)),
  tlsCertFile: setting('TLS_CERT_FILE', '', 'PEM certificate (chain) file: when set with TLS_KEY_FILE the server speaks HTTPS.', str),
  tlsKeyFile: setting('TLS_KEY_FILE', '', 'PEM private key file of TLS_CERT_FILE.', str, true),
  rateLimits: setting('RATE_LIMITS', 'on', 'Rate limits per account: `off` disables every limit at once (load tests, benchmarks).', onOff),
  rateLimitBurstSeconds: setting('RATE_LIMIT_BURST_SECONDS', '1', 'Token-bucket capacity of every limit, in seconds of its rate (a steady load at the limit always passes).', positive),
  limitMessagesPerSecond: setting('LIMIT_MESSAGES_PER_SECOND', '2000', 'Messages published per account per second (channel publish, batch publish, chat send).', positive),
  limitHistoryPerSecond: setting('LIMIT_HISTORY_PER_SECOND', '50', 'History queries per account per second (channel and chat).', positive),
  limitTokenRequestsPerSecond: setting('LIMIT_TOKEN_REQUESTS_PER_SECOND', '50', 'Token requests per account per second.', positive),
  limitObjectReadsPerSecond: setting('LIMIT_OBJECT_READS_PER_SECOND', '50', 'LiveObjects state queries per account per second.', positive),
  limitObjectWritesPerSecond: setting('LIMIT_OBJECT_WRITES_PER_SECOND', '2000', 'LiveObjects state updates per account per second.', positive),
  limitManagementPerMinute: setting('LIMIT_MANAGEMENT_PER_MINUTE', '100', 'Management interface standard operations per account per minute.', positive),
  limitManagementStatsPerMinute: setting('LIMIT_MANAGEMENT_STATS_PER_MINUTE', '20', 'Management interface statistics queries per account per minute.', positive),
  basicAuthRequiresTls: setting('BASIC_AUTH_REQUIRES_TLS', 'false', 'Refuse Basic auth over plain HTTP with 40103, as the hosted service does.', bool),
  pushWebhookUrl: setting('PUSH_WEBHOOK_URL', '', 'URL that APNs, FCM and web push notifications are POSTed to (a relay); empty: only the ablyChannel push transport delivers.', httpUrl),
}

export type SettingName = keyof typeof SETTINGS
export type Config = { [K in SettingName]: ReturnType<(typeof SETTINGS)[K]['parse']> }
