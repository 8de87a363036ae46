import { LOG_LUA } from './log'

/*
 * The channel publish (dedupe by client id, append, notify) is in batch-publish.ts: the
 * publishes made while their shard has a call in flight share the next call of it (PublishBatcher).
 */

/**
 * An ephemeral publish (`extras.ephemeral`): the messages get ids in the channel's order and go
 * to the subscribed nodes, but nothing is stored. The ids are the ones XADD would have given
 * (after the stream's last generated id, which XSETID then moves past them), so a later message
 * still gets a greater one, and a notification's previous id stays the last stored entry: a node
 * that delivered an ephemeral message sees no gap. A channel without a stream gets an empty one
 * (its deleted-entry mark cleared, so a resume finds no loss). Every key is the channel's slot.
 *
 * KEYS[1] stream; ARGV[1] notify channel, ARGV[2] retention ms, ARGV[3] message count n, then the
 * n msgpack bodies. Returns the id per message.
 */
export const EPHEMERAL_PUBLISH_SCRIPT = `${LOG_LUA}
local n = tonumber(ARGV[3])
local now = log_time()
local ms, seq = 0, 0
local created = redis.call('EXISTS', KEYS[1]) == 0
if created then
  redis.call('XADD', KEYS[1], 'MAXLEN', '0', '0-1', 'm', '')
  seq = 1
else
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      local g = info[i + 1]
      local d = string.find(g, '-', 1, true)
      ms, seq = tonumber(string.sub(g, 1, d - 1)), tonumber(string.sub(g, d + 1))
    end
  end
end
local prev = log_before(KEYS[1], nil)
local ids = {}
for i = 1, n do
  if now > ms then ms, seq = now, 0 else seq = seq + 1 end
  local id = string.format('%d-%d', ms, seq)
  ids[#ids + 1] = id
  log_note(1, id, ARGV[3 + i])
end
if created then
  redis.call('XSETID', KEYS[1], ids[#ids], 'MAXDELETEDID', '0-0')
else
  redis.call('XSETID', KEYS[1], ids[#ids])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
log_notify(1, ARGV[1], KEYS[1], nil, nil, prev)
return ids
`
