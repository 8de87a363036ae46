/**
 * Versions of a mutable message: records a version and the latest version if the newest version
 * serial recorded is still the expected one (none: the original is recorded first), and keeps the
 * message's keys for the retention window.
 * KEYS[1] record hash, KEYS[2] version index; ARGV[1] expected newest serial ('' for none),
 * ARGV[2] original serial, ARGV[3] original body, ARGV[4] version serial, ARGV[5] version body,
 * ARGV[6] latest serial, ARGV[7] latest body, ARGV[8] retention ms. Returns 1, or 0 (nothing written).
 */
export const VERSION_PUT_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], 'u')
if (cur or '') ~= ARGV[1] then return 0 end
if not cur then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], 0, ARGV[2])
end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[5], 'l', ARGV[7], 'u', ARGV[6])
redis.call('ZADD', KEYS[2], 0, ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
return 1
`
