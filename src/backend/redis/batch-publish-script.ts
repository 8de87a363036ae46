/**
 * Many publishes in one script call (PublishBatcher): the publishes of one shard made while its
 * previous call was in flight. Each publish keeps the single-publish script's semantics (dedupe by client id,
 * append to the channel's stream trimming what is past retention, notify the subscribed nodes),
 * and what can be shared is done once per batch: the clock is read once; a channel's previous
 * entry is read, its stream trimmed, its expiry set (when the node asks: it refreshes it at most
 * once a second) and its notification sent once (one SPUBLISH carrying every
 * message the batch appended to it, in order); a rate bucket is read and written once (its
 * charges applied one after the other, as take_tokens would). Each publish runs under pcall: one
 * that fails is answered its error alone, its batch-mates are not affected.
 *
 * KEYS: the batch's streams, rate buckets and channel indexes (each named once).
 * ARGV[1] idempotency window ms, ARGV[2] publish count P, then per publish:
 *   stream key index, notify channel, retention ms, idempotency key prefix, channel name,
 *   message count n, bucket key index (0: no charge), index key index (0: none), index score,
 *   the stream's expiry ms, whether to set it now ('1' or '0'),
 *   [cost, rate per second, burst, now ms when charged], then n × (client id or '', body).
 * Returns per publish { fresh, id per message[, remaining*1000 when charged] },
 * { -1, remaining*1000, retryAfterMs } when its charge was refused (nothing appended),
 * or { -2, error text } when it failed.
 *
 * On Redis Cluster the keys of one batch are in several slots of one master: the call declares
 * only the first stream and passes the keys in ARGV (CLUSTER_BATCH_PUBLISH_SCRIPT); a batch that
 * the cluster refuses (a slot moved meanwhile) is sent again one publish per call.
 */
const BODY = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = ARGV[1]
local count = tonumber(ARGV[2])
local chans, order, buckets = {}, {}, {}

local function take(key, cost, rate, burst, at0)
  local b = buckets[key]
  if not b then
    local h = redis.call('HMGET', key, 't', 'a')
    if h[1] then b = { tokens = tonumber(h[1]), at = tonumber(h[2]) } else b = { tokens = burst, at = at0 } end
    buckets[key] = b
  end
  local at = b.at
  if at0 > at then at = at0 end
  local tokens = math.min(burst, b.tokens + (at - b.at) * rate / 1000)
  local ok, retry = false, 0
  if tokens >= cost then tokens = tokens - cost; ok = true else retry = math.ceil((cost - tokens) * 1000 / rate) end
  b.tokens, b.at, b.ttl = tokens, at, math.ceil(burst * 1000 / rate) + 1000
  return ok, math.floor(tokens * 1000), retry
end

local function publish(sk, notify, ttl, idem, n, m, expire, due)
  local c = chans[sk]
  if not c then
    local last = redis.call('XREVRANGE', sk, '+', '-', 'COUNT', 1)
    local prev = '0-0'
    if #last > 0 then prev = last[1][1] end
    c = { parts = { prev, ' ' }, fresh = 0 }
    chans[sk] = c
    order[#order + 1] = sk
  end
  c.notify, c.expire = notify, expire
  if due == '1' then c.due = true end
  local minid = tostring(now - tonumber(ttl))
  local ids = { 0 }
  local fresh = 0
  for i = 0, n - 1 do
    local cid = ARGV[m + 2 * i]
    local body = ARGV[m + 2 * i + 1]
    local seen = false
    if cid ~= '' then seen = redis.call('GET', idem .. cid) end
    if seen then
      ids[#ids + 1] = seen
    else
      -- trimmed at the channel's first append of the batch: the clock stands still in a script,
      -- so later appends would trim nothing more
      local id
      if c.trimmed then
        id = redis.call('XADD', sk, '*', 'm', body)
      else
        id = redis.call('XADD', sk, 'MINID', minid, '*', 'm', body)
        c.trimmed = true
      end
      ids[#ids + 1] = id
      fresh = fresh + 1
      if cid ~= '' then redis.call('SET', idem .. cid, id, 'PX', window) end
      c.parts[#c.parts + 1] = id .. ' ' .. #body .. ' '
      c.parts[#c.parts + 1] = body
    end
  end
  c.fresh = c.fresh + fresh
  ids[1] = fresh
  return ids
end

local function message(e)
  if type(e) == 'table' and e.err then return e.err end
  return tostring(e)
end

local out = {}
local pos = 3
for p = 1, count do
  local sk = K[tonumber(ARGV[pos])]
  local notify, ttl, idem, name = ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3], ARGV[pos + 4]
  local n, bk, ik, score = tonumber(ARGV[pos + 5]), tonumber(ARGV[pos + 6]), tonumber(ARGV[pos + 7]), ARGV[pos + 8]
  local expire, due = ARGV[pos + 9], ARGV[pos + 10]
  local m = pos + 11
  local charged, remaining, retry = true, nil, 0
  if bk > 0 then
    local okc, a, b, c = pcall(take, K[bk], tonumber(ARGV[m]), tonumber(ARGV[m + 1]), tonumber(ARGV[m + 2]), tonumber(ARGV[m + 3]))
    if not okc then charged, remaining = nil, message(a) else charged, remaining, retry = a, b, c end
    m = m + 4
  end
  pos = m + 2 * n
  if charged == nil then
    out[p] = { -2, remaining }
  elseif not charged then
    out[p] = { -1, remaining, retry }
  else
    local ok, r = pcall(publish, sk, notify, ttl, idem, n, m, expire, due)
    if not ok then
      out[p] = { -2, message(r) }
    else
      if ik > 0 then redis.call('ZADD', K[ik], score, name) end
      if remaining then r[#r + 1] = remaining end
      out[p] = r
    end
  end
end

-- the expiry when the node asks for it (at most once a second per channel and node), and always a
-- write when every message was a duplicate: a WAIT after it (REDIS_WAIT_REPLICAS) then also
-- covers the earlier publish that stored them, whose answer may have been lost
for _, sk in ipairs(order) do
  local c = chans[sk]
  if c.due or c.fresh == 0 then redis.call('PEXPIRE', sk, c.expire) end
  if c.fresh > 0 then redis.call('SPUBLISH', c.notify, table.concat(c.parts)) end
end
for key, b in pairs(buckets) do
  redis.call('HSET', key, 't', tostring(b.tokens), 'a', tostring(b.at))
  redis.call('PEXPIRE', key, b.ttl)
end
return out
`

/** One redis-server: the keys are declared, of any slot. */
export const BATCH_PUBLISH_SCRIPT = `local K = KEYS
${BODY}`

/**
 * Redis Cluster: the keys of one batch are in slots of one master. A cluster refuses a call whose
 * DECLARED keys are in several slots (CROSSSLOT, whatever the script's flags), so the call
 * declares only the first stream (it routes the call) and passes every key at the end of ARGV,
 * followed by their count: allow-cross-slot-keys (Redis 7) lets the script touch undeclared keys
 * of any slot of this master.
 */
export const CLUSTER_BATCH_PUBLISH_SCRIPT = `#!lua flags=allow-cross-slot-keys
local nk = tonumber(ARGV[#ARGV])
local K = {}
for i = 1, nk do K[i] = ARGV[#ARGV - nk - 1 + i] end
${BODY}`
