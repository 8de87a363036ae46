/** Keeps the higher of a hash field and ARGV[2] (stats peaks). KEYS[1] hash; ARGV field, value. */
export const HASH_MAX_SCRIPT = `
local v = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > v then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1
`
