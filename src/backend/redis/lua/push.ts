/**
 * The multi-step atomic writes of push state (keys: RedisKeys.push*). A subscription is a member
 * `<channel>\0<kind>\0<id>` of the app's subscription set plus the channel in the subscriber's
 * channel set; a device is its hash plus its id in the app's and its client's id sets.
 */

/**
 * Creates or replaces a device, moving it between client id sets when its clientId changes.
 * KEYS[1] device hash, KEYS[2] app device ids; ARGV[1] id, ARGV[2] record JSON, ARGV[3] clientId
 * ('' none), ARGV[4] state, ARGV[5] failures, ARGV[6] error JSON ('' none), ARGV[7] client sets prefix.
 */
export const PUSH_PUT_DEVICE_SCRIPT = `
local old = redis.call('HGET', KEYS[1], 'c')
if old and old ~= '' and old ~= ARGV[3] then redis.call('ZREM', ARGV[7] .. old, ARGV[1]) end
redis.call('HSET', KEYS[1], 'd', ARGV[2], 'c', ARGV[3], 's', ARGV[4], 'f', ARGV[5], 'e', ARGV[6])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if ARGV[3] ~= '' then redis.call('ZADD', ARGV[7] .. ARGV[3], 0, ARGV[1]) end
return 1
`

/**
 * Removes a device (only if its clientId is ARGV[3], when that is not '') and its device
 * subscriptions. KEYS[1] device hash, KEYS[2] app device ids, KEYS[3] app subscriptions,
 * KEYS[4] the device's channel set; ARGV[1] id, ARGV[2] client sets prefix, ARGV[3] clientId.
 * Returns 1 when removed.
 */
export const PUSH_DELETE_DEVICE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local c = redis.call('HGET', KEYS[1], 'c')
if ARGV[3] ~= '' and c ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if c and c ~= '' then redis.call('ZREM', ARGV[2] .. c, ARGV[1]) end
for _, ch in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('ZREM', KEYS[3], ch .. '\\0d\\0' .. ARGV[1]) end
redis.call('DEL', KEYS[4])
return 1
`

/**
 * Records a delivery on an existing device: ACTIVE after a success; FAILING, or FAILED after
 * ARGV[3] failures in a row, after a failure. KEYS[1] device hash; ARGV[1] '1' ok / '0' failed,
 * ARGV[2] error JSON. Returns HMGET d s f e, or nil when the device does not exist.
 */
export const PUSH_RECORD_DELIVERY_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 's', 'ACTIVE', 'f', '0', 'e', '')
else
  local f = redis.call('HINCRBY', KEYS[1], 'f', 1)
  local s = 'FAILING'
  if f >= tonumber(ARGV[3]) then s = 'FAILED' end
  redis.call('HSET', KEYS[1], 's', s, 'e', ARGV[2])
end
return redis.call('HMGET', KEYS[1], 'd', 's', 'f', 'e')
`

/** Adds a subscription. KEYS[1] app subscriptions, KEYS[2] subscriber's channel set; ARGV[1] member, ARGV[2] channel. */
export const PUSH_SUBSCRIBE_SCRIPT = `
redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
return 1
`

/**
 * Removes subscriptions: of one subscriber (ARGV[3] kind, ARGV[4] id), on one channel
 * (ARGV[2]) or everywhere (ARGV[2] ''); or, with no subscriber (ARGV[3] ''), every one of the
 * channel ARGV[2]. KEYS[1] app subscriptions; ARGV[1] channel sets prefix. Returns the count.
 */
export const PUSH_UNSUBSCRIBE_SCRIPT = `
local removed = 0
local function drop(ch, kind, id)
  removed = removed + redis.call('ZREM', KEYS[1], ch .. '\\0' .. kind .. '\\0' .. id)
  redis.call('SREM', ARGV[1] .. kind .. ':' .. id, ch)
end
if ARGV[3] ~= '' then
  local chans = { ARGV[2] }
  if ARGV[2] == '' then chans = redis.call('SMEMBERS', ARGV[1] .. ARGV[3] .. ':' .. ARGV[4]) end
  for _, ch in ipairs(chans) do drop(ch, ARGV[3], ARGV[4]) end
else
  local ms = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[2] .. '\\0', '[' .. ARGV[2] .. '\\1')
  for _, m in ipairs(ms) do
    local at = string.len(ARGV[2]) + 2
    drop(ARGV[2], string.sub(m, at, at), string.sub(m, at + 2))
  end
end
return removed
`

/**
 * Distinct channels of the app's subscriptions after ARGV[1] ('' from the start), at most
 * ARGV[2], by jumping over each channel's members. KEYS[1] app subscriptions.
 */
export const PUSH_CHANNELS_SCRIPT = `
local out = {}
local from = '-'
if ARGV[1] ~= '' then from = '[' .. ARGV[1] .. '\\1' end
local limit = tonumber(ARGV[2])
while #out < limit do
  local m = redis.call('ZRANGEBYLEX', KEYS[1], from, '+', 'LIMIT', 0, 1)
  if #m == 0 then break end
  local ch = string.sub(m[1], 1, string.find(m[1], '\\0', 1, true) - 1)
  out[#out + 1] = ch
  from = '[' .. ch .. '\\1'
end
return out
`
