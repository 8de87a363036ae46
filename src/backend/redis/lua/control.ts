/**
 * Bootstrap as one atomic step across nodes (ControlStore.bootstrap): the first node to run it
 * on an empty Redis writes the seed's records and the epoch; every other node finds the epoch and
 * writes nothing. A store with accounts but no epoch (from before epochs) only gets the epoch; a
 * store marked lost is refused unless the operator accepts the loss.
 *
 * KEYS[1] epoch, KEYS[2] data-lost mark, KEYS[3..6] control hashes: account, app, key, token
 * ARGV[1] epoch, ARGV[2] '1' to accept a lost store, ARGV[3..10] id, JSON of account, app, key, token
 * Returns { status ('seeded' | 'existing' | 'lost'), epoch }.
 */
export const BOOTSTRAP_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current then return { 'existing', current } end
if redis.call('EXISTS', KEYS[2]) == 1 and ARGV[2] ~= '1' then return { 'lost', '' } end
local fresh = redis.call('HLEN', KEYS[3]) == 0
if fresh then
  for i = 0, 3 do redis.call('HSET', KEYS[3 + i], ARGV[3 + 2 * i], ARGV[4 + 2 * i]) end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
if fresh then return { 'seeded', ARGV[1] } end
return { 'existing', ARGV[1] }
`
