import { LOG_LUA } from './log'

/**
 * The atomic steps of the plugin's LiveObjects on Redis. Layout (every key in the channel's slot):
 * - heads: one hash per channel, object id -> msgpack LiveHead (a record without its entries);
 * - entries: one hash per map, key -> msgpack StoredEntry (`<prefix>loe:{<app>:<channel>}:<id>`);
 * - the channel's total object size: field `b` of a hash per channel.
 * A write reads and writes only the entries its operations name, the heads of their objects and
 * the total: what it changes, never a whole map (before, every set unpacked, changed and packed
 * the map's one record inside the script, ~350 ms for a map of 1,000 values of 60 KB, and held
 * Redis that long). Sizes (live-size.ts) are computed by the node and come with the operations.
 */

/**
 * A publish: check and apply the operations (core/objects/live-state.ts `applyOps`, the same
 * rules in Lua), append one stream entry per operation to the channel's stream and notify the
 * nodes through the log fragment every appending script shares (lua/log.ts), so the operations take their serials from the channel's one sequence and reach
 * subscribers in channel order. Serials are written as placeholders while applying (nothing is
 * written when an operation is refused) and replaced by the entries' serials once they exist.
 *
 * KEYS[1] stream, KEYS[2] heads hash, KEYS[3] the channel's last id key (batch-publish.ts),
 * KEYS[4] the channel's totals hash
 * ARGV[1] notify channel, ARGV[2] retention ms, ARGV[3] idempotency window ms, ARGV[4] idempotency
 * key ('' when the batch has no client ids), ARGV[5] max objects, ARGV[6] max map keys,
 * ARGV[7] max channel bytes, ARGV[8] prefix of the entries keys, ARGV[9] operation count n, then
 * per operation: its msgpack Operation (with `z`, the size of a set's entry, and of each create
 * entry), its msgpack entry body.
 * Returns { 1, id... } applied; { 0, id... } a duplicate batch (not applied again);
 * { -1, code, message } refused; { -2, objectId } an object of the earlier layout (migrate it first).
 */
export const LIVE_PUBLISH_SCRIPT = `${LOG_LUA}
local n = tonumber(ARGV[9])
if ARGV[4] ~= '' then
  local seen = redis.call('GET', ARGV[4])
  if seen then
    local out = { 0 }
    for id in string.gmatch(seen, '%S+') do out[#out + 1] = id end
    return out
  end
end
local now = log_time()
local maxObjects, maxKeys, maxBytes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local eprefix = ARGV[8]
local count = redis.call('HLEN', KEYS[2]) - redis.call('HEXISTS', KEYS[2], 'root')
local heads, order, added, delta = {}, {}, 0, 0
local written, worder, cleared = {}, {}, {}

local function token(i) return '\\0' .. i end
local function live(e) return e ~= nil and not e.tombstone and e.data ~= nil end
local function entry_of(oid, key)
  local w = written[oid]
  if w and w[key] ~= nil then return w[key] end
  if cleared[oid] then return nil end
  local b = redis.call('HGET', eprefix .. oid, key)
  if b then return cmsgpack.unpack(b) end
  return nil
end
local function put(oid, key, e)
  local w = written[oid]
  if not w then
    w = {}
    written[oid] = w
    worder[#worder + 1] = oid
  end
  w[key] = e
end
local function grow(h, d)
  h.bytes = (tonumber(h.bytes) or 0) + d
  delta = delta + d
end
local function clear(h)
  grow(h, -(tonumber(h.bytes) or 0))
  h.keys = 0
  if written[h.objectId] then written[h.objectId] = {} end
  cleared[h.objectId] = true
end
local keysOver = nil
local function set_entry(h, key, e)
  local cur = entry_of(h.objectId, key)
  if live(cur) then grow(h, -(tonumber(cur.z) or 0)) else h.keys = (tonumber(h.keys) or 0) + 1 end
  grow(h, tonumber(e.z) or 0)
  put(h.objectId, key, e)
  if h.keys > maxKeys then keysOver = h.objectId end
end
local function finite(h)
  local v = (tonumber(h.createCount) or 0) + (tonumber(h.count) or 0)
  return v == v and v ~= math.huge and v ~= -math.huge
end

for i = 1, n do
  local op = cmsgpack.unpack(ARGV[8 + 2 * i])
  local oid = op.objectId
  local h = heads[oid]
  if not h then
    local blob = redis.call('HGET', KEYS[2], oid)
    if blob then
      h = cmsgpack.unpack(blob)
      if type(h.entries) == 'table' or type(h.createEntries) == 'table' then return { -2, oid } end
    else
      h = { objectId = oid }
      if oid ~= 'root' then
        added = added + 1
        if count + added > maxObjects then
          return { -1, 92001, 'Channel object limit exceeded: a channel holds at most ' .. maxObjects .. ' objects' }
        end
      end
      if string.sub(oid, 1, 8) == 'counter:' then grow(h, 8) end
    end
    heads[oid] = h
    order[#order + 1] = oid
  end
  if h.tombstone then
    return { -1, 92002, 'Object ' .. oid .. ' has been deleted (tombstoned); operations on it are refused' }
  end
  local s = token(i)
  h.serial = s
  local a = op.action
  if a == 0 then
    if not h.created then
      h.created = true
      if h.clearTimeserial == nil and type(op.mapCreate.entries) == 'table' then
        for k, e in pairs(op.mapCreate.entries) do
          if not e.tombstone and e.data ~= nil and entry_of(oid, k) == nil then
            set_entry(h, k, { data = e.data, c = true, z = e.z })
          end
        end
      end
    end
  elseif a == 3 then
    if not h.created then
      h.created = true
      h.createCount = op.counterCreate.count
      if not finite(h) then
        return { -1, 92000, 'Invalid object message: counter ' .. oid .. ' would not hold a finite number' }
      end
    end
  elseif a == 1 then
    set_entry(h, op.mapSet.key, { data = op.mapSet.value, timeserial = s, z = op.z })
  elseif a == 2 then
    local key = op.mapRemove.key
    local cur = entry_of(oid, key)
    if live(cur) then
      grow(h, -(tonumber(cur.z) or 0))
      h.keys = (tonumber(h.keys) or 1) - 1
    end
    put(oid, key, { timeserial = s, tombstone = true, serialTimestamp = 0 })
  elseif a == 4 then
    h.count = (tonumber(h.count) or 0) + op.counterInc.number
    if not finite(h) then
      return { -1, 92000, 'Invalid object message: counter ' .. oid .. ' would not hold a finite number' }
    end
  elseif a == 6 then
    h.clearTimeserial = s
    clear(h)
  elseif a == 5 then
    if oid ~= 'root' then
      h.tombstone = true
      h.tombstonedAt = 0
      clear(h)
      h.count, h.createCount = nil, nil
    end
  end
  if keysOver then
    return { -1, 92001, 'Map key limit exceeded: map ' .. keysOver .. ' holds at most ' .. maxKeys .. ' keys' }
  end
end
if delta > 0 and (tonumber(redis.call('HGET', KEYS[4], 'b')) or 0) + delta > maxBytes then
  return { -1, 92001, 'channel object total size limit ' .. maxBytes .. ' exceeded' }
end

log_minid[1] = tostring(now - tonumber(ARGV[2]))
local ids = {}
for i = 1, n do
  local body = ARGV[9 + 2 * i]
  local id = log_append(1, KEYS[1], body)
  if type(id) == 'table' then return id end
  ids[i] = id
  log_note(1, id, body)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local ts = tonumber(string.match(ids[1], '^(%d+)'))

-- a stream id as a channel serial (core/model/serial.ts formatSerial): fixed width, so string order is channel order
local serials = {}
for i, id in ipairs(ids) do
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  serials[i] = string.format('%014d-%06d', tonumber(ms), tonumber(seq))
end
local function settle(s)
  if type(s) == 'string' and string.byte(s, 1) == 0 then return serials[tonumber(string.sub(s, 2))], true end
  return s, false
end
local fields = {}
for _, oid in ipairs(order) do
  local h = heads[oid]
  local s, fresh = settle(h.serial)
  h.serial = s
  if fresh and h.tombstone then h.tombstonedAt = ts end
  h.clearTimeserial = settle(h.clearTimeserial)
  fields[#fields + 1] = oid
  fields[#fields + 1] = cmsgpack.pack(h)
  if cleared[oid] then redis.call('UNLINK', eprefix .. oid) end
end
redis.call('HSET', KEYS[2], unpack(fields))
for _, oid in ipairs(worder) do
  local ef = {}
  for k, e in pairs(written[oid]) do
    local es, efresh = settle(e.timeserial)
    e.timeserial = es
    if efresh and e.tombstone then e.serialTimestamp = ts end
    ef[#ef + 1] = k
    ef[#ef + 1] = cmsgpack.pack(e)
  end
  if #ef > 0 then redis.call('HSET', eprefix .. oid, unpack(ef)) end
end
if delta ~= 0 then redis.call('HINCRBY', KEYS[4], 'b', delta) end
log_notify(1, ARGV[1], KEYS[1], KEYS[3], ARGV[2])
if ARGV[4] ~= '' then redis.call('SET', ARGV[4], table.concat(ids, ' '), 'PX', ARGV[3]) end
table.insert(ids, 1, 1)
return ids
`

/**
 * Moves one object of the earlier layout (its entries inside its record, as an earlier version
 * writes them) to the entries hash, once: only while the record is still the one the node read.
 * An entry already in the hash with a serial at least as new stays (a create's entry never
 * replaces one). The head's live key count and size are summed again over the whole hash, and
 * the channel's total moves by the change of the object's size.
 *
 * KEYS[1] heads hash, KEYS[2] the object's entries hash, KEYS[3] the channel's totals hash
 * ARGV[1] object id, ARGV[2] the record as read, ARGV[3] msgpack head (without entries),
 * ARGV[4] msgpack array of [key, entry] (entries with `z`). Returns 1 moved, 0 changed meanwhile.
 */
export const LIVE_MIGRATE_SCRIPT = `
local blob = redis.call('HGET', KEYS[1], ARGV[1])
if blob ~= ARGV[2] then return 0 end
local old = cmsgpack.unpack(blob)
local h = cmsgpack.unpack(ARGV[3])
for _, kv in ipairs(cmsgpack.unpack(ARGV[4])) do
  local k, e = kv[1], kv[2]
  local cur = redis.call('HGET', KEYS[2], k)
  local keep = false
  if cur then
    local c = cmsgpack.unpack(cur)
    keep = e.c or (c.timeserial ~= nil and (e.timeserial == nil or c.timeserial >= e.timeserial))
  end
  if not keep then redis.call('HSET', KEYS[2], k, cmsgpack.pack(e)) end
end
local keys, bytes = 0, 0
if string.sub(ARGV[1], 1, 8) == 'counter:' and not h.tombstone then bytes = 8 end
if h.tombstone then
  redis.call('UNLINK', KEYS[2])
else
  local all = redis.call('HVALS', KEYS[2])
  for _, b in ipairs(all) do
    local e = cmsgpack.unpack(b)
    if not e.tombstone and e.data ~= nil then
      keys = keys + 1
      bytes = bytes + (tonumber(e.z) or 0)
    end
  end
end
h.keys, h.bytes = keys, bytes
redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(h))
local d = bytes - (tonumber(old.bytes) or 0)
if d ~= 0 then redis.call('HINCRBY', KEYS[3], 'b', d) end
return 1
`

/**
 * Forgets removed map keys past the grace period, each only while it is still the tombstone of
 * that serial. KEYS[1] heads hash (the slot); ARGV[1] prefix of the entries keys, then triples
 * object id, key, serial.
 */
export const LIVE_FORGET_SCRIPT = `
for i = 2, #ARGV, 3 do
  local k = ARGV[1] .. ARGV[i]
  local b = redis.call('HGET', k, ARGV[i + 1])
  if b then
    local e = cmsgpack.unpack(b)
    if e.tombstone and e.timeserial == ARGV[i + 2] then redis.call('HDEL', k, ARGV[i + 1]) end
  end
end
return 1
`
