/**
 * Many publishes in one script call (PublishBatcher): the publishes of one shard made while its
 * previous call was in flight. Each publish keeps the single-publish script's semantics (dedupe by client id,
 * append to the channel's stream trimming what is past retention, notify the subscribed nodes),
 * and what can be shared is done once per batch: the clock is read once; each channel is
 * described once (its keys, retention, expiry, index entry), its previous id swapped in its last
 * id key (one SET ... GET instead of reading the stream's last entry), its stream
 * trimmed, its index entry written and its expiry set (when the node asks: each at most once a
 * second) and its notification sent once (one SPUBLISH carrying every message the batch appended
 * to it, in order); a rate bucket is read and written once (its charges applied one after the
 * other, as take_tokens would). Each publish runs under pcall: one that fails is answered its
 * error alone, its batch-mates are not affected. A publish costs the script its header (3
 * arguments), its bodies and its appends: redis-server's time per argument and per redis.call
 * is most of a publish's cost (docs/performance.md).
 *
 * Keys K (KEYS; on a cluster at the end of ARGV): per channel (S of them) its stream and its
 *   last id key (K[2s-1], K[2s]), then the batch's rate buckets and channel indexes.
 * ARGV[1] idempotency window ms, ARGV[2] channel count S, ARGV[3] publish count P, then
 *   per channel: notify channel, idempotency key prefix, retention ms, the stream's expiry ms,
 *     whether to set it now ('1' or '0'), index key index (0: none)[, index score, channel name];
 *   per publish: channel number (1..S), message count n (-n: each message with its client id),
 *     bucket key index (0: no charge)[, cost, rate per second, burst, now ms], then n bodies or
 *     n × (client id or '', body).
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
local nchan, count = tonumber(ARGV[2]), tonumber(ARGV[3])
local chans, buckets = {}, {}

-- the batch's channels, each described once
local pos = 4
for s = 1, nchan do
  local ik = tonumber(ARGV[pos + 5])
  local c = { key = K[2 * s - 1], last = K[2 * s], notify = ARGV[pos], idem = ARGV[pos + 1], minid = tostring(now - tonumber(ARGV[pos + 2])),
    expire = ARGV[pos + 3], due = ARGV[pos + 4] == '1', fresh = 0 }
  if ik > 0 then c.index, c.score, c.name = K[ik], ARGV[pos + 6], ARGV[pos + 7]; pos = pos + 8 else pos = pos + 6 end
  chans[s] = c
end

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

-- n messages from ARGV[m]: bodies alone, or (client id, body) pairs when ids
local function publish(c, n, ids, m)
  local sk = c.key
  -- parts[1]: the previous id, known once the batch's appends are done
  if not c.parts then c.parts = { '', ' ' } end
  local out = { 0 }
  local fresh = 0
  local step = ids and 2 or 1
  for i = 0, n - 1 do
    local at = m + step * i
    local cid, body = '', ARGV[at]
    if ids then cid, body = body, ARGV[at + 1] end
    local seen = false
    if cid ~= '' then seen = redis.call('GET', c.idem .. cid) end
    if seen then
      out[#out + 1] = seen
    else
      -- trimmed at the channel's first append of the batch: the clock stands still in a script,
      -- so later appends would trim nothing more
      local id
      if c.trimmed then
        id = redis.call('XADD', sk, '*', 'm', body)
      else
        id = redis.call('XADD', sk, 'MINID', c.minid, '*', 'm', body)
        c.trimmed = true
      end
      out[#out + 1] = id
      if not c.first then c.first = id end
      c.lastid = id
      fresh = fresh + 1
      if cid ~= '' then redis.call('SET', c.idem .. cid, id, 'PX', window) end
      local parts = c.parts
      parts[#parts + 1] = id .. ' ' .. #body .. ' '
      parts[#parts + 1] = body
    end
  end
  c.fresh = c.fresh + fresh
  c.stored = true
  out[1] = fresh
  return out
end

local function message(e)
  if type(e) == 'table' and e.err then return e.err end
  return tostring(e)
end

local out = {}
for p = 1, count do
  local c = chans[tonumber(ARGV[pos])]
  local n, bk = tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2])
  local ids = n < 0
  if ids then n = -n end
  local m = pos + 3
  local charged, remaining, retry = true, nil, 0
  if bk > 0 then
    local okc, a, b, r = pcall(take, K[bk], tonumber(ARGV[m]), tonumber(ARGV[m + 1]), tonumber(ARGV[m + 2]), tonumber(ARGV[m + 3]))
    if not okc then charged, remaining = nil, message(a) else charged, remaining, retry = a, b, r end
    m = m + 4
  end
  pos = m + (ids and 2 * n or n)
  if charged == nil then
    out[p] = { -2, remaining }
  elseif not charged then
    out[p] = { -1, remaining, retry }
  else
    local ok, r = pcall(publish, c, n, ids, m)
    if not ok then
      out[p] = { -2, message(r) }
    else
      if remaining then r[#r + 1] = remaining end
      out[p] = r
    end
  end
end

-- per channel: its index entry when asked and a publish of it was stored; the expiry when the
-- node asks for it (at most once a second per channel and node), and always a write when every
-- message was a duplicate: a WAIT after it (REDIS_WAIT_REPLICAS) then also covers the earlier
-- publish that stored them, whose answer may have been lost; one notification with every
-- message appended
for s = 1, nchan do
  local c = chans[s]
  if c.stored then
    if c.index then redis.call('ZADD', c.index, c.score, c.name) end
    if c.due or c.fresh == 0 then redis.call('PEXPIRE', c.key, c.expire) end
  end
  if c.lastid then
    -- the previous id: the last id key, swapped for the batch's last (every script that appends
    -- keeps it); gone (expired, or a stream written before it existed): read from the stream
    -- (a key of another type fails alone: the appends are made, their publishes must be answered)
    local ok, prev = pcall(redis.call, 'SET', c.last, c.lastid, 'PX', c.expire, 'GET')
    if not ok or not prev then
      local before = redis.call('XREVRANGE', c.key, '(' .. c.first, '-', 'COUNT', 1)
      prev = '0-0'
      if #before > 0 then prev = before[1][1] end
    end
    c.parts[1] = prev
    redis.call('SPUBLISH', c.notify, table.concat(c.parts))
  end
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
