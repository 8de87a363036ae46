/**
 * Names a channel active on its account (ActiveChannelStore.add): KEYS[1] the account's sorted set
 * (`<app>:<channel>` -> when last named, ms); ARGV[1] member, ARGV[2] now (ms), ARGV[3] most
 * active channels (0: no bound), ARGV[4] staleness (ms). Forgets the stale members first; returns
 * 'known', 'added' or 'full' (nothing recorded). A member's time never goes back (ZADD GT).
 */
export const ADD_ACTIVE_CHANNEL_SCRIPT = `
local now, max, stale = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - stale)
local known = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not known and max > 0 and redis.call('ZCARD', KEYS[1]) >= max then return 'full' end
redis.call('ZADD', KEYS[1], 'GT', now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], stale * 2)
if known then return 'known' end
return 'added'
`
