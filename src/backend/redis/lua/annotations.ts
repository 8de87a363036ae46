/** The version counter's field in a state hash (state fields begin with a letter and a NUL). */
export const VERSION = '#v'

/**
 * Annotations of a message in two keys of its channel's slot: the summary state hash (plus the
 * version counter) and the list of annotations (msgpack), both expiring with the retention.
 *
 * CHANGE: KEYS[1] state hash; ARGV[1] set | del | incr, ARGV[2] field, ARGV[3] value or amount,
 * ARGV[4] retention ms, ARGV[5] most fields. Returns { 1, value before (nil: absent) }, or { -1 }
 * when the state is full.
 */
export const ANNOTATION_CHANGE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[2])
local nxt = false
if ARGV[1] == 'set' then nxt = ARGV[3]
elseif ARGV[1] == 'incr' then
  local n = tonumber(cur or '0') + tonumber(ARGV[3])
  if n > 0 then nxt = string.format('%d', n) end
end
if nxt and not cur and (redis.call('HLEN', KEYS[1]) - redis.call('HEXISTS', KEYS[1], '${VERSION}')) >= tonumber(ARGV[5]) then
  return { -1 }
end
if nxt then redis.call('HSET', KEYS[1], ARGV[2], nxt) else redis.call('HDEL', KEYS[1], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return { 1, cur }
`

/**
 * RECORD: KEYS[1] state hash, KEYS[2] list; ARGV[1] annotation, ARGV[2] retention ms, ARGV[3]
 * annotations kept. Appends the annotation and bumps the version.
 */
export const ANNOTATION_RECORD_SCRIPT = `
redis.call('HINCRBY', KEYS[1], '${VERSION}', 1)
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`

/**
 * MARK: KEYS[1] the channel's marks hash; ARGV[1] field, ARGV[2] serial, ARGV[3] retention ms.
 * Keeps the newer serial (serials are zero-padded: string order is their order).
 */
export const LIVE_ONLY_MARK_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or cur < ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`
