/**
 * Indexes a mark in its scope and forgets the scope's oldest past its bound: KEYS[1] scope index
 * (sorted set: mark key -> expiry ms); ARGV[1] mark key, ARGV[2] ttl ms, ARGV[3] most marks of
 * the scope. Returns the mark keys forgotten, for the caller to delete (marks live in other
 * slots, so they are deleted outside the script).
 */
export const MARK_INDEX_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over <= 0 then return {} end
local gone = {}
for i, v in ipairs(redis.call('ZPOPMIN', KEYS[1], over)) do
  if i % 2 == 1 then gone[#gone + 1] = v end
end
return gone
`
