/**
 * The atomic steps of presence on Redis (key layout in keys.ts). Members are keyed
 * `<connectionId>\0<clientId>` in a channel's presence hash and listed per connection as
 * `<app>\0<channel>\0<clientId>`; a connection has one holder node; nodes renew a lease in a
 * sorted set scored by its expiry (Redis time, so node clocks do not matter).
 */

/** `take_connection(prefixes, conn, node)`: removes a connection's members if `node` (or nobody) holds it; returns app, channel, member triples. */
const TAKE_CONNECTION_LUA = `
local function split3(s)
  local a = string.find(s, '\\0', 1, true)
  local b = string.find(s, '\\0', a + 1, true)
  return string.sub(s, 1, a - 1), string.sub(s, a + 1, b - 1), string.sub(s, b + 1)
end
local function take_connection(p, conn, node)
  local holder_key = p.holder .. conn
  local holder = redis.call('GET', holder_key)
  if holder and node ~= '' and holder ~= node then return {} end
  local conn_key = p.conn .. conn
  local out = {}
  for _, e in ipairs(redis.call('SMEMBERS', conn_key)) do
    local app, channel, client = split3(e)
    local hash = p.presence .. app .. ':' .. channel
    local field = conn .. '\\0' .. client
    local v = redis.call('HGET', hash, field)
    if v then
      redis.call('HDEL', hash, field)
      out[#out + 1] = app
      out[#out + 1] = channel
      out[#out + 1] = v
    end
  end
  redis.call('DEL', conn_key, holder_key)
  if holder then redis.call('SREM', p.node_conns .. holder, conn) end
  return out
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

/** Prefixes the scripts build keys from, in ARGV order. */
const PREFIXES = `local p = { presence = ARGV[1], conn = ARGV[2], holder = ARGV[3], node_conns = ARGV[4] }`

/**
 * Applies presence events to a channel. KEYS[1] presence hash, KEYS[2] history list.
 * ARGV: the 4 prefixes, app, channel, history cap, then per event: action, connection id,
 * client id, packed member (as present), packed event.
 */
export const APPLY_PRESENCE_SCRIPT = `${PREFIXES}
local n = (#ARGV - 7) / 5
for i = 0, n - 1 do
  local b = 8 + i * 5
  local conn, client = ARGV[b + 1], ARGV[b + 2]
  local field = conn .. '\\0' .. client
  local entry = ARGV[5] .. '\\0' .. ARGV[6] .. '\\0' .. client
  if tonumber(ARGV[b]) == 3 then
    redis.call('HDEL', KEYS[1], field)
    redis.call('SREM', p.conn .. conn, entry)
  else
    redis.call('HSET', KEYS[1], field, ARGV[b + 3])
    redis.call('SADD', p.conn .. conn, entry)
  end
  redis.call('RPUSH', KEYS[2], ARGV[b + 4])
end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[7]), -1)
return n
`

/** This node holds a connection now and renews its lease. KEYS[1] nodes zset. ARGV: prefixes, node, connection id, lease ms. */
export const CLAIM_SCRIPT = `${TAKE_CONNECTION_LUA}${PREFIXES}
local node, conn = ARGV[5], ARGV[6]
local old = redis.call('GET', p.holder .. conn)
redis.call('SET', p.holder .. conn, node)
if old and old ~= node then redis.call('SREM', p.node_conns .. old, conn) end
redis.call('SADD', p.node_conns .. node, conn)
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[7]), node)
return 1
`

/** A connection's present members, left in place. ARGV: prefixes, node, connection id. */
export const OF_CONNECTION_SCRIPT = `${TAKE_CONNECTION_LUA}${PREFIXES}
local conn = ARGV[6]
local out = {}
for _, e in ipairs(redis.call('SMEMBERS', p.conn .. conn)) do
  local app, channel, client = split3(e)
  local v = redis.call('HGET', p.presence .. app .. ':' .. channel, conn .. '\\0' .. client)
  if v then
    out[#out + 1] = app
    out[#out + 1] = channel
    out[#out + 1] = v
  end
end
return out
`

/** Takes a connection's members if this node holds it. ARGV: prefixes, node, connection id. */
export const TAKE_SCRIPT = `${TAKE_CONNECTION_LUA}${PREFIXES}
return take_connection(p, ARGV[6], ARGV[5])
`

/** Renews this node's lease. KEYS[1] nodes zset. ARGV: prefixes, node, lease ms. */
export const LEASE_SCRIPT = `${TAKE_CONNECTION_LUA}${PREFIXES}
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[6]), ARGV[5])
return 1
`

/**
 * Reaps up to ARGV[5] connections of one node whose lease ran out: their members are removed
 * and returned (app, channel, member triples) to this caller only; a node with none left is
 * forgotten. KEYS[1] nodes zset. Returns { more (1 when another call may find more), ... }.
 */
export const REAP_SCRIPT = `${TAKE_CONNECTION_LUA}${PREFIXES}
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, 1)
if #dead == 0 then return { 0 } end
local node = dead[1]
local conns = redis.call('SPOP', p.node_conns .. node, tonumber(ARGV[5]))
if #conns == 0 then
  redis.call('ZREM', KEYS[1], node)
  return { 1 }
end
local out = { 1 }
for _, conn in ipairs(conns) do
  for _, v in ipairs(take_connection(p, conn, node)) do out[#out + 1] = v end
end
return out
`
