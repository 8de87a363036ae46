import type { Charge } from '../../../core/ports'

/**
 * Token buckets shared by all nodes (rate limits), the same arithmetic as core/limits/token-bucket.ts,
 * for the scripts that charge them: `take(key, cost, rate per second, burst, now ms)` returns ok,
 * remaining*1000 and retryAfterMs. A bucket is read (HMGET) at its first charge of the call, its
 * charges applied one after the other in memory, and written once (`save_buckets`, with its
 * expiry): as many calls of one charge each would leave it. The bucket's time never goes back (a
 * node whose clock is behind refills nothing).
 */
export const BUCKETS_LUA = `
local buckets = {}

local function take(key, cost, rate, burst, at0)
  local b = buckets[key]
  if not b then
    local h = redis.call('HMGET', key, 't', 'a')
    if h[1] then b = { tokens = tonumber(h[1]), at = tonumber(h[2]) } else b = { tokens = burst, at = at0 } end
    buckets[key] = b
  end
  local at = b.at
  if at0 > at then at = at0 end
  local tokens = math.min(burst, b.tokens + (at - b.at) * rate / 1000)
  local ok, retry = false, 0
  if tokens >= cost then tokens = tokens - cost; ok = true else retry = math.ceil((cost - tokens) * 1000 / rate) end
  b.tokens, b.at, b.ttl = tokens, at, math.ceil(burst * 1000 / rate) + 1000
  return ok, math.floor(tokens * 1000), retry
end

local function save_buckets()
  for key, b in pairs(buckets) do
    redis.call('HSET', key, 't', tostring(b.tokens), 'a', tostring(b.at))
    redis.call('PEXPIRE', key, b.ttl)
  end
end
`

/** A charge as script arguments, in `take`'s order (cost, rate per second, burst, now ms). */
export const chargeArgs = (c: Charge): string[] => [String(c.cost), String(c.rate), String(c.burst), String(c.now)]

/**
 * Charges of one bucket, in order: KEYS[1] the bucket hash; ARGV: chargeArgs of each charge, one
 * after the other. Returns { ok, remaining*1000, retryAfterMs } of each, flat (three per charge).
 */
export const TAKE_TOKENS_SCRIPT = `${BUCKETS_LUA}
local out = {}
for i = 1, #ARGV, 4 do
  local ok, remaining, retry = take(KEYS[1], tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]))
  out[#out + 1] = ok and 1 or 0
  out[#out + 1] = remaining
  out[#out + 1] = retry
end
save_buckets()
return out
`
