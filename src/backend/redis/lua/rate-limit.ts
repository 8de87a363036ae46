import type { Charge } from '../../../core/ports'

/**
 * Token bucket shared by all nodes (rate limits), the same arithmetic as core/limits/token-bucket.ts:
 * `take_tokens(key, cost, rate per second, burst, now ms)` returns { ok, remaining*1000, retryAfterMs }.
 * The bucket's time never goes back (a node whose clock is behind refills nothing).
 */
const TAKE_TOKENS_LUA = `
local function take_tokens(key, cost, rate, burst, now)
  local b = redis.call('HMGET', key, 't', 'a')
  local tokens, at = burst, now
  if b[1] then
    local last = tonumber(b[2])
    if last > at then at = last end
    tokens = math.min(burst, tonumber(b[1]) + (at - last) * rate / 1000)
  end
  local ok, retry = 0, 0
  if tokens >= cost then tokens = tokens - cost; ok = 1 else retry = math.ceil((cost - tokens) * 1000 / rate) end
  redis.call('HSET', key, 't', tostring(tokens), 'a', tostring(at))
  redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
  return { ok, math.floor(tokens * 1000), retry }
end
`

/** A charge as script arguments, in take_tokens' order (cost, rate per second, burst, now ms). */
export const chargeArgs = (c: Charge): string[] => [String(c.cost), String(c.rate), String(c.burst), String(c.now)]

/** KEYS[1] bucket hash; ARGV: chargeArgs. Returns { ok, remaining*1000, retryAfterMs }. */
export const TAKE_TOKENS_SCRIPT = `${TAKE_TOKENS_LUA}
return take_tokens(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
`
