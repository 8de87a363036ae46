/**
 * The steps of presence on Redis (key layout in keys.ts). Members are keyed
 * `<connectionId>\0<clientId>` in a channel's presence hash and listed per connection as
 * `<app>\0<channel>\0<clientId>`; a connection has one holder node; nodes renew a lease in a
 * sorted set scored by its expiry (Redis time, so node clocks do not matter).
 *
 * Each script touches one hash slot (so they run on Redis Cluster): a channel's presence hash and
 * history share the channel's slot; the bookkeeping of a connection (member list, holder, the
 * holder's set of the bucket's connections) shares the slot of the connection's bucket; the
 * leases have a slot of their own. An operation that spans several is a sequence of steps,
 * ordered so that a crash between two of them leaves only what a later step or the reaper
 * repairs, or what is harmless (RedisPresenceStore says which).
 */

const NOW_LUA = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

/**
 * Applies presence events to a channel. KEYS[1] presence hash, KEYS[2] history list.
 * ARGV: history cap, retention ms, then per event: action, member field, packed member (as
 * present), packed event. The history is kept as the channel's stream is: at most the cap, none
 * older than the retention (by the events' timestamps, Redis time as the stream ids are), and the
 * list expires with its newest event's retention (so a list an earlier version wrote without an
 * expiry gets one at its next write).
 */
export const APPLY_PRESENCE_SCRIPT = `${NOW_LUA}
local n = (#ARGV - 2) / 4
for i = 0, n - 1 do
  local b = 3 + i * 4
  if tonumber(ARGV[b]) == 3 then
    redis.call('HDEL', KEYS[1], ARGV[b + 1])
  else
    redis.call('HSET', KEYS[1], ARGV[b + 1], ARGV[b + 2])
  end
  redis.call('RPUSH', KEYS[2], ARGV[b + 3])
end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[1]), -1)
local ttl = tonumber(ARGV[2])
local since = now_ms() - ttl
while true do
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then break end
  local ok, e = pcall(cmsgpack.unpack, head)
  local at = ok and type(e) == 'table' and tonumber(e.timestamp)
  if not at or at >= since then break end
  redis.call('LPOP', KEYS[2])
end
redis.call('PEXPIRE', KEYS[2], ttl)
return n
`

/**
 * Removes members from a channel's presence hash and returns what each held (false where it was
 * gone): of several callers taking the same member, exactly one gets it.
 * KEYS[1] presence hash; ARGV the member fields.
 */
export const TAKE_MEMBERS_SCRIPT = `
local out = {}
for i = 1, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v then redis.call('HDEL', KEYS[1], ARGV[i]) end
  out[i] = v
end
return out
`

/**
 * This node holds a connection now (its lease is renewed apart, on a timer). KEYS[1] the
 * connection's holder. ARGV: the bucket's prefix of a node's connections, node, connection id.
 */
export const CLAIM_SCRIPT = `
local node_conns, node, conn = ARGV[1], ARGV[2], ARGV[3]
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], node)
if old and old ~= node then redis.call('SREM', node_conns .. old, conn) end
redis.call('SADD', node_conns .. node, conn)
return 1
`

/**
 * First step of taking a connection's members: its holder and member list, if `node` (or nobody,
 * or `node` '' for any) holds it; nothing is removed yet. KEYS[1] holder, KEYS[2] member list.
 * ARGV[1] node. Returns { holder or '', entry... }, or { false } when another node holds it.
 */
export const TAKE_BEGIN_SCRIPT = `
local holder = redis.call('GET', KEYS[1])
if holder and ARGV[1] ~= '' and holder ~= ARGV[1] then return { false } end
local out = { holder or '' }
for _, e in ipairs(redis.call('SMEMBERS', KEYS[2])) do out[#out + 1] = e end
return out
`

/**
 * Last step of taking a connection's members (after they left their channels): forgets the
 * entries taken; once none is left, forgets the connection and its holder, if that is still the
 * one the first step saw. KEYS[1] member list, KEYS[2] holder. ARGV: the bucket's prefix of a
 * node's connections, connection id, the holder seen ('' for none), the node whose set to drop it
 * from ('' for the holder's), entries.
 */
export const TAKE_END_SCRIPT = `
local node_conns, conn, seen, from = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
for i = 5, #ARGV do redis.call('SREM', KEYS[1], ARGV[i]) end
if from ~= '' then redis.call('SREM', node_conns .. from, conn) end
if redis.call('SCARD', KEYS[1]) > 0 then return 0 end
local holder = redis.call('GET', KEYS[2]) or ''
if holder ~= seen then return 0 end
redis.call('DEL', KEYS[2])
if holder ~= '' then redis.call('SREM', node_conns .. holder, conn) end
return 1
`

/** Renews this node's lease. KEYS[1] nodes zset. ARGV: node, lease ms. */
export const LEASE_SCRIPT = `${NOW_LUA}
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[2]), ARGV[1])
return 1
`

/**
 * Whether node ARGV[1]'s lease has not run out: 1 or 0. KEYS[1] nodes zset. A reaped node is gone
 * from the zset: not live.
 */
export const LIVE_NODE_SCRIPT = `${NOW_LUA}
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expires and tonumber(expires) > now_ms() then return 1 end
return 0
`

/** First step of reaping: a node whose lease ran out, or false. KEYS[1] nodes zset. */
export const DEAD_NODE_SCRIPT = `${NOW_LUA}
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, 1)
return dead[1] or false
`

/**
 * A step of reaping a dead node in one bucket: up to ARGV[4] of the node's connections of the
 * bucket with their member lists, nothing removed yet (TAKE_END_SCRIPT removes each once its
 * members left their channels; a crash between leaves them to the next reap). Connections another
 * node holds now are dropped from the dead node's set here. KEYS[1] the node's set of the
 * bucket's connections. ARGV: the bucket's prefixes of member lists and holders, node, step.
 * Returns { how many were in the set (0: none left), then per connection it still holds: id,
 * entry count, entries... }.
 */
export const REAP_BUCKET_SCRIPT = `
local conn_p, holder_p, node = ARGV[1], ARGV[2], ARGV[3]
local conns = redis.call('SRANDMEMBER', KEYS[1], tonumber(ARGV[4]))
local out = { #conns }
for _, conn in ipairs(conns) do
  local holder = redis.call('GET', holder_p .. conn)
  if holder and holder ~= node then
    redis.call('SREM', KEYS[1], conn)
  else
    local entries = redis.call('SMEMBERS', conn_p .. conn)
    out[#out + 1] = conn
    out[#out + 1] = #entries
    for _, e in ipairs(entries) do out[#out + 1] = e end
  end
end
return out
`

/**
 * Last step of reaping a dead node, once every bucket's set of it was found empty: forgets it,
 * unless it renewed its lease since (it was not dead, only late). KEYS[1] nodes zset, ARGV[1] node.
 */
export const FORGET_NODE_SCRIPT = `${NOW_LUA}
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expires and tonumber(expires) <= now_ms() then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
`
