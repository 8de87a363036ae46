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
