/**
 * Enqueues messages and keeps the queue at its bound in one step, so concurrent pushes never
 * trim twice. KEYS[1] zset tag -> visible-at, KEYS[2] hash tag -> item, KEYS[3] sequence,
 * KEYS[4] hash tag -> deliveries; ARGV now (ms), now zero-padded to 14 digits, maxLength, then
 * the packed items. Tags are the padded enqueue time and a queue-wide sequence, so equal scores
 * still sort first-in first-out. Returns how many of the oldest were dropped.
 */
export const QUEUE_PUSH_SCRIPT = `
local n = #ARGV - 3
local last = redis.call('INCRBY', KEYS[3], n)
for i = 1, n do
  local tag = ARGV[2] .. string.format('%012d', last - n + i)
  redis.call('HSET', KEYS[2], tag, ARGV[i + 3])
  redis.call('ZADD', KEYS[1], ARGV[1], tag)
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over <= 0 then return 0 end
local popped = redis.call('ZPOPMIN', KEYS[1], over)
for j = 1, #popped, 2 do
  redis.call('HDEL', KEYS[2], popped[j])
  redis.call('HDEL', KEYS[4], popped[j])
end
return #popped / 2
`

/**
 * Hands out up to ARGV[2] visible, unexpired messages of a queue, hiding each for ARGV[3] ms and
 * counting the delivery. KEYS[1] zset tag -> visible-at, KEYS[2] hash tag -> item, KEYS[3] hash
 * tag -> deliveries; ARGV now, max, visibility, ttl. Expired items met on the way are removed.
 * Returns tag, item, earlier-deliveries triples.
 */
export const QUEUE_RECEIVE_SCRIPT = `
local now, max, vis, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
local tags = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, max * 4 + 16)
for _, tag in ipairs(tags) do
  if #out >= max * 3 then break end
  local item = redis.call('HGET', KEYS[2], tag)
  local enq = tonumber(string.sub(tag, 1, 14))
  if (not item) or enq < now - ttl then
    redis.call('ZREM', KEYS[1], tag)
    redis.call('HDEL', KEYS[2], tag)
    redis.call('HDEL', KEYS[3], tag)
  else
    redis.call('ZADD', KEYS[1], now + vis, tag)
    out[#out + 1] = tag
    out[#out + 1] = item
    out[#out + 1] = tostring(redis.call('HINCRBY', KEYS[3], tag, 1) - 1)
  end
end
return out
`
