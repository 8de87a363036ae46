import type { Charge } from '../../core/ports'
import { LOG_LUA } from './lua/log'

/**
 * Token bucket shared by all nodes (rate limits), the same arithmetic as core/limits/token-bucket.ts:
 * `take_tokens(key, cost, rate per second, burst, now ms)` returns { ok, remaining*1000, retryAfterMs }.
 * The bucket's time never goes back (a node whose clock is behind refills nothing).
 */
const TAKE_TOKENS_LUA = `
local function take_tokens(key, cost, rate, burst, now)
  local b = redis.call('HMGET', key, 't', 'a')
  local tokens, at = burst, now
  if b[1] then
    local last = tonumber(b[2])
    if last > at then at = last end
    tokens = math.min(burst, tonumber(b[1]) + (at - last) * rate / 1000)
  end
  local ok, retry = 0, 0
  if tokens >= cost then tokens = tokens - cost; ok = 1 else retry = math.ceil((cost - tokens) * 1000 / rate) end
  redis.call('HSET', key, 't', tostring(tokens), 'a', tostring(at))
  redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
  return { ok, math.floor(tokens * 1000), retry }
end
`

/** A charge as script arguments, in take_tokens' order (cost, rate per second, burst, now ms). */
export const chargeArgs = (c: Charge): string[] => [String(c.cost), String(c.rate), String(c.burst), String(c.now)]

/** KEYS[1] bucket hash; ARGV: chargeArgs. Returns { ok, remaining*1000, retryAfterMs }. */
export const TAKE_TOKENS_SCRIPT = `${TAKE_TOKENS_LUA}
return take_tokens(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
`

/*
 * The channel publish (dedupe by client id, append, notify) is in batch-publish-script.ts: the
 * publishes made while their shard has a call in flight share the next call of it (PublishBatcher).
 */

/**
 * An ephemeral publish (`extras.ephemeral`): the messages get ids in the channel's order and go
 * to the subscribed nodes, but nothing is stored. The ids are the ones XADD would have given
 * (after the stream's last generated id, which XSETID then moves past them), so a later message
 * still gets a greater one, and a notification's previous id stays the last stored entry: a node
 * that delivered an ephemeral message sees no gap. A channel without a stream gets an empty one
 * (its deleted-entry mark cleared, so a resume finds no loss). Every key is the channel's slot.
 *
 * KEYS[1] stream; ARGV[1] notify channel, ARGV[2] retention ms, ARGV[3] message count n, then the
 * n msgpack bodies. Returns the id per message.
 */
export const EPHEMERAL_PUBLISH_SCRIPT = `${LOG_LUA}
local n = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms, seq = 0, 0
local created = redis.call('EXISTS', KEYS[1]) == 0
if created then
  redis.call('XADD', KEYS[1], 'MAXLEN', '0', '0-1', 'm', '')
  seq = 1
else
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      local g = info[i + 1]
      local d = string.find(g, '-', 1, true)
      ms, seq = tonumber(string.sub(g, 1, d - 1)), tonumber(string.sub(g, d + 1))
    end
  end
end
local prev = log_before(KEYS[1], nil)
local ids = {}
for i = 1, n do
  if now > ms then ms, seq = now, 0 else seq = seq + 1 end
  local id = string.format('%d-%d', ms, seq)
  ids[#ids + 1] = id
  log_note(1, id, ARGV[3 + i])
end
if created then
  redis.call('XSETID', KEYS[1], ids[#ids], 'MAXDELETEDID', '0-0')
else
  redis.call('XSETID', KEYS[1], ids[#ids])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
log_notify(1, ARGV[1], KEYS[1], nil, nil, prev)
return ids
`

/**
 * Shared part of the LiveObjects scripts. State is stored as a "tree": JSON objects are Lua
 * tables, every other value is a string leaf holding that value's JSON text, so the Lua JSON
 * library never re-encodes a number, an array or an empty array (which it cannot do faithfully).
 * `merge` is RFC 7396 on trees (a cjson.null in the patch removes the key); `size` is the byte
 * length of the state's JSON text; `stamp` gives the change its timestamp (never below the
 * object's previous one) and a new version; `record` appends the change to the object's stream,
 * trimmed to ARGV max length and retention.
 */
const OBJECT_LIB = `
local function merge(target, patch)
  if type(patch) ~= 'table' then return patch end
  if type(target) ~= 'table' then target = {} end
  for k, v in pairs(patch) do
    if v == cjson.null then target[k] = nil else target[k] = merge(target[k], v) end
  end
  return target
end
local function size(t)
  if type(t) ~= 'table' then return #t end
  local n, count = 2, 0
  for k, v in pairs(t) do
    n = n + #cjson.encode(k) + 1 + size(v)
    count = count + 1
  end
  if count > 1 then n = n + count - 1 end
  return n
end
local function int(x) return string.format('%d', x) end
local function stamp(hist, versions, now, floor)
  local ts = math.max(now, floor)
  local last = redis.call('XREVRANGE', hist, '+', '-', 'COUNT', 1)
  local lastid = false
  if #last > 0 then
    lastid = last[1][1]
  elseif redis.call('EXISTS', hist) == 1 then
    local info = redis.call('XINFO', 'STREAM', hist)
    for i = 1, #info, 2 do if info[i] == 'last-generated-id' then lastid = info[i + 1] end end
  end
  if lastid then ts = math.max(ts, tonumber(string.match(lastid, '^(%d+)'))) end
  return ts, redis.call('INCR', versions)
end
local function record(hist, ts, version, maxlen, ttl, action, patch, data)
  if patch then
    redis.call('XADD', hist, 'MAXLEN', maxlen, int(ts) .. '-' .. int(version), 'a', action, 'p', patch, 'd', data)
  else
    redis.call('XADD', hist, 'MAXLEN', maxlen, int(ts) .. '-' .. int(version), 'a', action)
  end
  redis.call('XTRIM', hist, 'MINID', int(ts - ttl))
  redis.call('PEXPIRE', hist, ttl)
end
`

/**
 * LiveObjects PATCH, atomic across nodes: check the expected version, merge, bound the size, write
 * the state, append the change, maintain the namespace's object index, count and last activity.
 * KEYS[1] state hash, KEYS[2] history stream, KEYS[3] namespace id index, KEYS[4] counts hash,
 * KEYS[5] activity hash, KEYS[6] version counter.
 * ARGV[1] patch tree JSON, ARGV[2] expected version ('' for none), ARGV[3] now ms, ARGV[4] history
 * max length, ARGV[5] retention ms, ARGV[6] namespace, ARGV[7] object id, ARGV[8] max state bytes,
 * ARGV[9] patch JSON as sent.
 * Returns { 'ok', version, timestamp, state tree JSON, created 0|1 } | { 'conflict', current version
 * or '' } | { 'too-large', size }.
 */
export const OBJECT_UPDATE_SCRIPT =
  OBJECT_LIB +
  `
local cur = redis.call('HMGET', KEYS[1], 'd', 'v', 't')
local exists = cur[1] ~= false
if ARGV[2] ~= '' and (not exists or cur[2] ~= ARGV[2]) then return { 'conflict', cur[2] or '' } end
local state = merge(exists and cjson.decode(cur[1]) or {}, cjson.decode(ARGV[1]))
local n = size(state)
if n > tonumber(ARGV[8]) then return { 'too-large', n } end
local ts, version = stamp(KEYS[2], KEYS[6], tonumber(ARGV[3]), exists and tonumber(cur[3]) or 0)
local encoded = cjson.encode(state)
redis.call('HSET', KEYS[1], 'd', encoded, 'v', int(version), 't', int(ts))
record(KEYS[2], ts, version, ARGV[4], tonumber(ARGV[5]), 'update', ARGV[9], encoded)
if not exists then
  redis.call('ZADD', KEYS[3], 0, ARGV[7])
  redis.call('HINCRBY', KEYS[4], ARGV[6], 1)
end
redis.call('HSET', KEYS[5], ARGV[6], int(ts))
return { 'ok', int(version), ts, encoded, exists and 0 or 1 }
`

/**
 * LiveObjects DELETE, atomic across nodes; same KEYS as the update. ARGV[1] now ms, ARGV[2]
 * history max length, ARGV[3] retention ms, ARGV[4] namespace, ARGV[5] object id.
 * Returns { 'ok', version, timestamp } | { 'missing' }.
 */
export const OBJECT_DELETE_SCRIPT =
  OBJECT_LIB +
  `
local cur = redis.call('HMGET', KEYS[1], 'v', 't')
if not cur[1] then return { 'missing' } end
local ts, version = stamp(KEYS[2], KEYS[6], tonumber(ARGV[1]), tonumber(cur[2]))
record(KEYS[2], ts, version, ARGV[2], tonumber(ARGV[3]), 'delete')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[5])
if redis.call('HINCRBY', KEYS[4], ARGV[4], -1) <= 0 then
  redis.call('HDEL', KEYS[4], ARGV[4])
  redis.call('HDEL', KEYS[5], ARGV[4])
else
  redis.call('HSET', KEYS[5], ARGV[4], int(ts))
end
return { 'ok', int(version), ts }
`

/**
 * Chat: adds or removes one reaction record of a message with the kind's rule (unique and
 * multiple replace the record, multiple adding its count; distinct keeps the first) and returns
 * every record after it. Values are `<count> <record JSON>`.
 * KEYS[1] message hash; ARGV[1] '1' remove / '0' add, ARGV[2] kind, ARGV[3] field, ARGV[4] count,
 * ARGV[5] record JSON, ARGV[6] retention ms, ARGV[7] most records per message.
 * Returns { changed (1/0, or -1 when full), value... }. Fields `n` and `v` (a version, kept here
 * before chat edits went to the version store) are not records; they end with the retention.
 */
export const CHAT_REACT_SCRIPT = `
local changed = 0
local cur = redis.call('HGET', KEYS[1], ARGV[3])
if ARGV[1] == '1' then
  changed = redis.call('HDEL', KEYS[1], ARGV[3])
elseif not (ARGV[2] == 'distinct' and cur) then
  if not cur then
    local records = redis.call('HLEN', KEYS[1]) - redis.call('HEXISTS', KEYS[1], 'n') - redis.call('HEXISTS', KEYS[1], 'v')
    if records >= tonumber(ARGV[7]) then return { -1 } end
  end
  local n = tonumber(ARGV[4])
  if ARGV[2] == 'multiple' and cur then n = n + tonumber(string.match(cur, '^(%d+) ')) end
  redis.call('HSET', KEYS[1], ARGV[3], n .. ' ' .. ARGV[5])
  changed = 1
end
if changed == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[6]) end
local all = redis.call('HGETALL', KEYS[1])
local out = { changed }
for i = 1, #all, 2 do
  if all[i] ~= 'n' and all[i] ~= 'v' then out[#out + 1] = all[i + 1] end
end
return out
`

/**
 * Chat typing: drops typers expired at `now`, then sets (or clears) one client's expiry.
 * KEYS[1] typing zset (score = expiry ms); ARGV[1] now, ARGV[2] clientId ('' for none),
 * ARGV[3] expiry ('' to stop). Returns { was typing 1/0, expired, typers, earliest expiry or '' }.
 */
export const CHAT_TYPING_SCRIPT = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1]) end
local was = 0
if ARGV[2] ~= '' then
  if redis.call('ZSCORE', KEYS[1], ARGV[2]) then was = 1 end
  if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2]) else redis.call('ZREM', KEYS[1], ARGV[2]) end
end
local typers = redis.call('ZRANGE', KEYS[1], 0, -1)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local nxt = ''
if #first > 0 then
  nxt = first[2]
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - tonumber(ARGV[1])) + 60000)
end
return { was, expired, typers, nxt }
`

/**
 * Enqueues messages and keeps the queue at its bound in one step, so concurrent pushes never
 * trim twice. KEYS[1] zset tag -> visible-at, KEYS[2] hash tag -> item, KEYS[3] sequence,
 * KEYS[4] hash tag -> deliveries; ARGV now (ms), now zero-padded to 14 digits, maxLength, then
 * the packed items. Tags are the padded enqueue time and a queue-wide sequence, so equal scores
 * still sort first-in first-out. Returns how many of the oldest were dropped.
 */
export const QUEUE_PUSH_SCRIPT = `
local n = #ARGV - 3
local last = redis.call('INCRBY', KEYS[3], n)
for i = 1, n do
  local tag = ARGV[2] .. string.format('%012d', last - n + i)
  redis.call('HSET', KEYS[2], tag, ARGV[i + 3])
  redis.call('ZADD', KEYS[1], ARGV[1], tag)
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over <= 0 then return 0 end
local popped = redis.call('ZPOPMIN', KEYS[1], over)
for j = 1, #popped, 2 do
  redis.call('HDEL', KEYS[2], popped[j])
  redis.call('HDEL', KEYS[4], popped[j])
end
return #popped / 2
`

/**
 * Hands out up to ARGV[2] visible, unexpired messages of a queue, hiding each for ARGV[3] ms and
 * counting the delivery. KEYS[1] zset tag -> visible-at, KEYS[2] hash tag -> item, KEYS[3] hash
 * tag -> deliveries; ARGV now, max, visibility, ttl. Expired items met on the way are removed.
 * Returns tag, item, earlier-deliveries triples.
 */
export const QUEUE_RECEIVE_SCRIPT = `
local now, max, vis, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
local tags = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, max * 4 + 16)
for _, tag in ipairs(tags) do
  if #out >= max * 3 then break end
  local item = redis.call('HGET', KEYS[2], tag)
  local enq = tonumber(string.sub(tag, 1, 14))
  if (not item) or enq < now - ttl then
    redis.call('ZREM', KEYS[1], tag)
    redis.call('HDEL', KEYS[2], tag)
    redis.call('HDEL', KEYS[3], tag)
  else
    redis.call('ZADD', KEYS[1], now + vis, tag)
    out[#out + 1] = tag
    out[#out + 1] = item
    out[#out + 1] = tostring(redis.call('HINCRBY', KEYS[3], tag, 1) - 1)
  end
end
return out
`

/** Keeps the higher of a hash field and ARGV[2] (stats peaks). KEYS[1] hash; ARGV field, value. */
export const HASH_MAX_SCRIPT = `
local v = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > v then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1
`
