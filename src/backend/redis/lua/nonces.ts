/**
 * Claims a token-request nonce within its scope's bound, never dropping a live one: forgets the
 * scope's expired entries, then records the nonce unless it is live or the scope is full. Both
 * keys carry the scope as hash tag (one slot). Time is Redis time, the same for every node.
 * KEYS[1] nonce, KEYS[2] scope index (sorted set: nonce key -> expiry ms); ARGV[1] ttl ms,
 * ARGV[2] most live nonces of the scope. Returns 1 claimed, 0 seen (live), 2 scope full.
 */
export const NONCE_CLAIM_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 2 end
redis.call('SET', KEYS[1], '1', 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, KEYS[1])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`
