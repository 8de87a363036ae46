/**
 * Versions of a mutable message: records a version and the latest version if the record still
 * holds the expected number of versions (0: none, and the original is recorded first), and keeps
 * the message's keys for the retention window. The count is kept in the hash beside the latest
 * version ('n'), so one HMGET reads both as of one write.
 * KEYS[1] record hash, KEYS[2] version index; ARGV[1] expected count, ARGV[2] original serial,
 * ARGV[3] original body, ARGV[4] version serial, ARGV[5] version body, ARGV[6] latest body,
 * ARGV[7] retention ms. Returns 1, or 0 (nothing written).
 */
export const VERSION_PUT_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], 'n')
if cur then cur = tonumber(cur)
elseif redis.call('EXISTS', KEYS[1]) == 1 then cur = redis.call('ZCARD', KEYS[2]) -- written before 'n' was kept
else cur = 0 end
if cur ~= tonumber(ARGV[1]) then return 0 end
if cur == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], 0, ARGV[2])
end
redis.call('ZADD', KEYS[2], 0, ARGV[4])
redis.call('HSET', KEYS[1], ARGV[4], ARGV[5], 'l', ARGV[6], 'n', redis.call('ZCARD', KEYS[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
return 1
`
