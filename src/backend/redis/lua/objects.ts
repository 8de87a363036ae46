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
