import { NODES_SUFFIX } from '../keys'

/**
 * The channel log's append-and-notify in Lua: the one fragment every script that appends to a
 * channel's stream (or hands entries to its subscribers) is composed with, so the entry field, the
 * trim, the last id key and the notification text exist once. What a notification carries
 * (codec.ts `parseNotification`): the id of the channel's newest stored entry before it, then per
 * entry `<id> <length> <body>`, space-separated; a node that delivered up to that previous id
 * misses nothing, else it reads the gap from the stream first.
 *
 * A script composed with it numbers the channels it notifies (1..S) and, per channel s:
 * - `log_append(s, stream, body)`: XADD of the body as field `m`, the first append of the call
 *   trimming entries below `log_minid[s]` when the script set it (the clock stands still in a
 *   script: one trim per call is all there is); the id, or redis.pcall's error (a table) for the
 *   caller to answer;
 * - `log_note(s, id, body)`: adds an entry to channel s's notification, in order;
 * - `log_notify(s, channel, stream, lastkey, exp[, prev[, me]])`: when entries were noted, moves
 *   the channel's last id key to the last of them (PX `exp`, or its expiry kept), which gives the
 *   previous id (read from the stream when the key is gone), and publishes the notification to
 *   `channel` (SPUBLISH: the nodes subscribed); with `prev` (entries handed out but not stored:
 *   ephemeral messages) that is the previous id and the key stays; with `me` (the publishing
 *   node's id) nothing is published when no node but that one hears the channel (no subscriber,
 *   or one and the channel's set of nodes, keys.ts `nodes`, is that node alone); returns the
 *   previous id (nil when nothing was noted), and true when the notification was left to the
 *   publishing node;
 * - `log_before(stream, id)`: the id of the newest stored entry before `id` (nil: newest of all),
 *   or '0-0';
 * - `log_time()`: Redis's clock in ms (one TIME per call).
 * Every script that appends keeps the last id key, so a notification's previous id is one SET.
 */
export const LOG_LUA = `
local log_first, log_last, log_body1, log_parts = {}, {}, {}, {}

-- ' <length> ' of a body, formatted once per call and length (a number's formatting is a sprintf in Lua)
local log_lens = {}
local function log_len(body)
  local n = #body
  local l = log_lens[n]
  if not l then
    l = ' ' .. n .. ' '
    log_lens[n] = l
  end
  return l
end

-- channel s's trim bound, set by the script for its first append (then forgotten)
local log_minid = {}
local function log_append(s, stream, body)
  local m = log_minid[s]
  if m then
    log_minid[s] = nil
    return redis.pcall('XADD', stream, 'MINID', m, '*', 'm', body)
  end
  return redis.pcall('XADD', stream, '*', 'm', body)
end

local function log_note(s, id, body)
  if not log_first[s] then
    log_first[s], log_body1[s] = id, body
  else
    local p = log_parts[s]
    if not p then
      -- p[1]: the previous id, known once the call's appends are done
      p = { '', ' ', log_first[s], log_len(log_body1[s]), log_body1[s] }
      log_parts[s] = p
    end
    local k = #p
    p[k + 1], p[k + 2], p[k + 3] = id, log_len(body), body
  end
  log_last[s] = id
end

-- Redis's clock (ms), read once per call (the clock stands still in a script)
local log_now
local function log_time()
  if not log_now then
    local t = redis.call('TIME')
    log_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return log_now
end

-- whether no node but the publishing one (me) hears the channel: no subscriber on this master,
-- or one, and the channel's set of nodes is me alone; a node is in that set only while its
-- SSUBSCRIBE stands (subscriptions.ts), so the one subscriber is it. An entry whose time ran out
-- (a node that stopped without leaving) still counts here until a join drops it: a notification
-- sent, never one left out. No score is read: a number crossing between Lua and Redis is
-- formatted and parsed (ZRANGEBYSCORE by time cost ~3 us a call, ZCARD and ZRANK ~0.5 each).
-- (A read that fails, e.g. of a slot moved away, is no answer: the notification is sent.)
local function log_quiet(channel, me)
  local n = redis.pcall('PUBSUB', 'SHARDNUMSUB', channel)
  if type(n) ~= 'table' then return false end
  local count = tonumber(n[2])
  if count == 0 then return true end
  if count ~= 1 then return false end
  local set = channel .. '${NODES_SUFFIX}'
  return redis.pcall('ZCARD', set) == 1 and redis.pcall('ZRANK', set, me) == 0
end

local function log_before(stream, id)
  local e = redis.call('XREVRANGE', stream, id and ('(' .. id) or '+', '-', 'COUNT', 1)
  if #e > 0 then return e[1][1] end
  return '0-0'
end

local function log_notify(s, channel, stream, lastkey, exp, prev, me)
  local id = log_last[s]
  if not id then return end
  if not prev then
    -- the previous id: the last id key, swapped for this call's last; gone (expired, or a
    -- stream written before it existed): read from the stream (a key of another type fails
    -- alone: the appends are made, they must be announced)
    if exp then
      prev = redis.pcall('SET', lastkey, id, 'PX', exp, 'GET')
    else
      prev = redis.pcall('SET', lastkey, id, 'KEEPTTL', 'GET')
      if prev == false then
        -- created now: it expires with the stream
        local ttl = redis.call('PTTL', stream)
        if ttl > 0 then redis.call('PEXPIRE', lastkey, ttl) end
      end
    end
    if type(prev) ~= 'string' then prev = log_before(stream, log_first[s]) end
  end
  if me and log_quiet(channel, me) then return prev, true end
  local p = log_parts[s]
  if p then
    p[1] = prev
    redis.call('SPUBLISH', channel, table.concat(p))
  else
    local b = log_body1[s]
    redis.call('SPUBLISH', channel, prev .. ' ' .. id .. log_len(b) .. b)
  end
  return prev
end
`
