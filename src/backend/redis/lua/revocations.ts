/**
 * Drops key names from the revocation index whose hash is gone (expired), atomically with that
 * check, so a name written meanwhile (hash first, then index) stays. KEYS[1] index, KEYS[2..]
 * the hashes; ARGV the names, in KEYS order. All in the `{ctl}` slot.
 */
export const REVOCATION_FORGET_SCRIPT = `
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then redis.call('SREM', KEYS[1], ARGV[i - 1]) end
end
return 1
`
