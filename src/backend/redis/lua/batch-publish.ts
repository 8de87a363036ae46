import { LOG_LUA } from './log'
import { BUCKETS_LUA } from './rate-limit'

/**
 * Many publishes in one script call (PublishBatcher): the publishes of one shard made while its
 * previous call was in flight. Each publish keeps the single-publish script's semantics (dedupe by client id,
 * append to the channel's stream, notify the subscribed nodes), and what can be shared is done
 * once per batch: each channel is described once (its keys and notification channel), its
 * previous id swapped in its last id key (one SET ... GET instead of reading the stream's last
 * entry) and its notification sent once (one SPUBLISH carrying every message the batch appended
 * to it, in order); a rate bucket is read and written once (its charges applied one after the
 * other: lua/rate-limit.ts). What the node asks at most once a second per channel is listed
 * apart, for the channels it concerns: the trim of what is past retention (XADD MINID at the
 * channel's first append; the clock is read only then), the stream's expiry (and the last id
 * key's: between two, SET ... KEEPTTL keeps it), the index entry. So a stream holds entries up
 * to about a second past its retention, as it did between two publishes anyway: readers bound
 * what they read by time (history, idempotency lookups), and a resume from an entry still there
 * is served. Each publish runs under pcall (a plain one, under redis.pcall): one that fails is
 * answered its error alone, its batch-mates are not affected. redis-server's time per argument
 * and per redis.call is most of a publish's cost (docs/performance.md): a plain publish (one
 * message, no client id, no charge or one of 1 on its bucket's terms) takes two arguments, its
 * channel number and its body: a bucket's terms are named once per call, and a plain publish
 * charged on them names its bucket in its channel number (s + S × j for the call's j-th bucket).
 *
 * Keys K (KEYS; on a cluster at the end of ARGV): per channel (S of them) its stream and its
 *   last id key (K[2s-1], K[2s]), then the batch's rate buckets and channel indexes.
 * ARGV[1] idempotency window ms, ARGV[2] channel count S, ARGV[3] publish count P, ARGV[4] the
 *   publishing node's id ('': none, every notification sent), ARGV[4+s] channel s's
 *   notification channel, then four lists, each its length first:
 *   the channels due for a trim and expiry (channel number, retention ms, expiry ms), the
 *   channels whose index entry to write (channel number, index key index, score, channel name),
 *   the channels with client ids (channel number, idempotency key prefix), the buckets that
 *   charge plain publishes (bucket key index, rate per second, burst, now ms);
 *   then per publish: when plain, the channel number s (s + S × j when charged 1 on the j-th of
 *     those buckets), followed by its body; otherwise -s,
 *     its message count n (-n: each message with its client id), bucket key index (0: no
 *     charge)[, cost, rate per second, burst, now ms], then n bodies or n × (client id or '', body).
 * Returns per publish its id alone when plain and appended (charged or not); else { fresh, id
 * per message[, remaining*1000 when charged] }, { -1, remaining*1000, retryAfterMs } when its
 * charge was refused (nothing appended), { -3 } when its charge's bucket is not on this master (a
 * cluster whose slots moved: nothing appended, the node charges it apart), or { -2, error text }
 * when it failed; then per channel the id of its entry before the call's first append ('' when nothing
 * was appended to it; after a `!` when no notification was sent: the nodes subscribed to the
 * channel are the publishing node or none): with the answer's ids, the previous-id chain of what
 * the call appended, so that the node that published can deliver its messages itself, in the
 * chain's order (subscriptions.ts).
 *
 * On Redis Cluster the keys of one batch are in several slots of one master: the call declares
 * only the first stream and passes the keys in ARGV (CLUSTER_BATCH_PUBLISH_SCRIPT); a batch that
 * the cluster refuses (a slot moved meanwhile) is sent again one publish per call.
 */
const BODY = `
local window, nchan, count, me = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
if me == '' then me = nil end
local pos = 5 + nchan

-- the channels due for a trim and an expiry: their trim's MINID (at their first append: lua/log.ts)
-- and their expiry (ms)
local expire = {}
local nd = tonumber(ARGV[pos])
pos = pos + 1
if nd > 0 then
  local now = log_time()
  for _ = 1, nd do
    local s = tonumber(ARGV[pos])
    log_minid[s], expire[s] = tostring(now - tonumber(ARGV[pos + 1])), ARGV[pos + 2]
    pos = pos + 3
  end
end
-- the channels whose index entry to write: where their (key index, score, name) are
local index = {}
local ni = tonumber(ARGV[pos])
pos = pos + 1
for _ = 1, ni do
  index[tonumber(ARGV[pos])] = pos + 1
  pos = pos + 4
end
-- the channels with client ids: their idempotency key prefix
local idem = {}
local nq = tonumber(ARGV[pos])
pos = pos + 1
for _ = 1, nq do
  idem[tonumber(ARGV[pos])] = ARGV[pos + 1]
  pos = pos + 2
end
-- the buckets that charge plain publishes: key index and terms
local terms = {}
local nb = tonumber(ARGV[pos])
pos = pos + 1
for j = 1, nb do
  terms[j] = { tonumber(ARGV[pos]), tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2]), tonumber(ARGV[pos + 3]) }
  pos = pos + 4
end

-- stored: a publish to channel s ran
local stored = {}
${BUCKETS_LUA}
-- n messages of channel s from ARGV[m]: bodies alone, or (client id, body) pairs when ids
local function publish(s, n, ids, m)
  local out = { 0 }
  local fresh = 0
  local step = ids and 2 or 1
  for i = 0, n - 1 do
    local at = m + step * i
    local cid, body = '', ARGV[at]
    if ids then cid, body = body, ARGV[at + 1] end
    local seen, marker = false, nil
    if cid ~= '' then
      marker = idem[s] .. cid
      seen = redis.call('GET', marker)
    end
    if seen then
      out[#out + 1] = seen
    else
      local id = log_append(s, K[2 * s - 1], body)
      if type(id) == 'table' then error(id) end
      out[#out + 1] = id
      fresh = fresh + 1
      if marker then redis.call('SET', marker, id, 'PX', window) end
      log_note(s, id, body)
    end
  end
  stored[s] = true
  out[1] = fresh
  return out
end

local function message(e)
  if type(e) == 'table' and e.err then return e.err end
  return tostring(e)
end

-- takes a charge: nil and what the bucket holds when taken, else the publish's answer: refused,
-- its bucket not on this master (a cluster whose slots moved), or an error
local function charge(key, cost, rate, burst, now)
  local okc, ok, remaining, retry = pcall(take, key, cost, rate, burst, now)
  if okc and ok then return nil, remaining end
  if okc then return { -1, remaining, retry } end
  local text = message(ok)
  if string.find(text, 'non local key', 1, true) then return { -3 } end
  return { -2, text }
end

local out = {}
for p = 1, count do
  local s = tonumber(ARGV[pos])
  if s > 0 then
    -- plain: nothing to look up; charged 1 on the j-th bucket's terms when s is past the channels
    local body = ARGV[pos + 1]
    pos = pos + 2
    local refusal = nil
    if s > nchan then
      local j = math.floor((s - 1) / nchan)
      local c = terms[j]
      s = s - j * nchan
      refusal = charge(K[c[1]], 1, c[2], c[3], c[4])
    end
    if refusal then
      out[p] = refusal
    else
      local id = log_append(s, K[2 * s - 1], body)
      if type(id) == 'table' then
        out[p] = { -2, message(id) }
      else
        out[p] = id
        log_note(s, id, body)
        stored[s] = true
      end
    end
  else
    s = -s
    local n, bk = tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2])
    local ids = n < 0
    if ids then n = -n end
    local m = pos + 3
    local refusal, remaining = nil, nil
    if bk > 0 then
      refusal, remaining = charge(K[bk], tonumber(ARGV[m]), tonumber(ARGV[m + 1]), tonumber(ARGV[m + 2]), tonumber(ARGV[m + 3]))
      m = m + 4
    end
    pos = m + (ids and 2 * n or n)
    if refusal then
      out[p] = refusal
    else
      local ok, r = pcall(publish, s, n, ids, m)
      if not ok then
        out[p] = { -2, message(r) }
      else
        if remaining then r[#r + 1] = remaining end
        out[p] = r
      end
    end
  end
end

-- per channel: its index entry and expiry when due and a publish of it was stored (with
-- REDIS_WAIT_REPLICAS the node asks on every publish: a batch whose messages were all
-- duplicates then still writes, and the WAIT after it also covers the earlier publish that
-- stored them, whose answer may have been lost); one notification with every message appended
for s = 1, nchan do
  local key, exp = K[2 * s - 1], expire[s]
  if stored[s] then
    local ix = index[s]
    if ix then redis.call('ZADD', K[tonumber(ARGV[ix])], ARGV[ix + 1], ARGV[ix + 2]) end
    if exp then redis.call('PEXPIRE', key, exp) end
  end
  local prev, quiet = log_notify(s, ARGV[4 + s], key, K[2 * s], exp, nil, me)
  out[count + s] = quiet and ('!' .. prev) or prev or ''
end
save_buckets()
return out
`

/** One redis-server: the keys are declared, of any slot. */
export const BATCH_PUBLISH_SCRIPT = `local K = KEYS
${LOG_LUA}
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
${LOG_LUA}
${BODY}`
