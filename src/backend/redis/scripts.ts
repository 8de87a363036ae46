/**
 * The one multi-step atomic write of the channel path: dedupe by client id, append to the
 * channel stream trimming what is past retention (exact, so the stream knows what it dropped),
 * register the channel and notify subscribed nodes — in one
 * round trip, so all nodes agree on one order per channel.
 *
 * KEYS[1] stream, KEYS[2] channels zset
 * ARGV[1] notify channel, ARGV[2] retention ms, ARGV[3] idempotency window ms,
 * ARGV[4] idempotency key prefix, ARGV[5] channel name, ARGV[6] message count n,
 * then per message: client id ('' when server-generated), msgpack body.
 * Returns { fresh count, id per message }.
 */
export const PUBLISH_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
if #last > 0 then prev = last[1][1] end
local minid = tostring(now - tonumber(ARGV[2]))
local n = tonumber(ARGV[6])
local ids = {}
local parts = { prev, ' ' }
local fresh = 0
for i = 1, n do
  local cid = ARGV[5 + 2 * i]
  local body = ARGV[6 + 2 * i]
  local seen = false
  if cid ~= '' then seen = redis.call('GET', ARGV[4] .. cid) end
  if seen then
    ids[#ids + 1] = seen
  else
    local id = redis.call('XADD', KEYS[1], 'MINID', minid, '*', 'm', body)
    ids[#ids + 1] = id
    fresh = fresh + 1
    if cid ~= '' then redis.call('SET', ARGV[4] .. cid, id, 'PX', ARGV[3]) end
    parts[#parts + 1] = id .. ' ' .. #body .. ' '
    parts[#parts + 1] = body
  end
end
if fresh > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], now, ARGV[5])
  redis.call('PUBLISH', ARGV[1], table.concat(parts))
end
table.insert(ids, 1, fresh)
return ids
`

/**
 * Token bucket shared by all nodes (rate limits), the same arithmetic as core/limits/token-bucket.ts.
 * KEYS[1] bucket hash; ARGV cost, rate per second, burst, now ms. Returns { ok, remaining*1000, retryAfterMs }.
 */
export const TAKE_TOKENS_SCRIPT = `
local cost, rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 't', 'a')
local tokens = burst
if b[1] then
  local elapsed = math.max(0, now - tonumber(b[2]))
  tokens = math.min(burst, tonumber(b[1]) + elapsed * rate / 1000)
end
local ok, retry = 0, 0
if tokens >= cost then tokens = tokens - cost; ok = 1 else retry = math.ceil((cost - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'a', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return { ok, math.floor(tokens * 1000), retry }
`
