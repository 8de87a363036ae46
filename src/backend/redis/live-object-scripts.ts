/**
 * The atomic step of a LiveObjects publish on Redis: check and apply the operations to the
 * channel's objects (core/objects/live-state.ts `applyOps`, the same rules in Lua), append one
 * stream entry per operation to the channel's stream and notify the nodes, as the publish script
 * does (scripts.ts: same entry field, trimming and notification text), so the operations take
 * their serials from the channel's one sequence and reach subscribers in channel order. Every key
 * carries the channel's hash tag: one slot, so it runs on Redis Cluster.
 *
 * Objects are one hash per channel: object id -> msgpack record (LiveObjectRecord). Serials are
 * written as placeholders while applying (nothing is appended when an operation is refused) and
 * replaced by the entries' serials (stream ids in the channel serial form) once they exist.
 *
 * KEYS[1] stream, KEYS[2] objects hash, KEYS[3] the channel's last id key (batch-publish-script.ts)
 * ARGV[1] notify channel, ARGV[2] retention ms, ARGV[3] idempotency window ms, ARGV[4] idempotency
 * key ('' when the batch has no client ids), ARGV[5] max objects, ARGV[6] max map keys,
 * ARGV[7] tombstone grace ms, ARGV[8] operation count n, then per operation: its msgpack
 * Operation, its msgpack entry body.
 * Returns { 1, id... } applied; { 0, id... } a duplicate batch (not applied again);
 * { -1, code, message } refused.
 */
export const LIVE_PUBLISH_SCRIPT = `
local n = tonumber(ARGV[8])
if ARGV[4] ~= '' then
  local seen = redis.call('GET', ARGV[4])
  if seen then
    local out = { 0 }
    for id in string.gmatch(seen, '%S+') do out[#out + 1] = id end
    return out
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxObjects, maxKeys, grace = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local count = redis.call('HLEN', KEYS[2]) - redis.call('HEXISTS', KEYS[2], 'root')
local touched, order, added = {}, {}, 0

local function token(i) return '\\0' .. i end
local function live_keys(rec)
  local seen, c = {}, 0
  if type(rec.createEntries) == 'table' then
    for k, e in pairs(rec.createEntries) do if not e.tombstone and e.data then seen[k] = true end end
  end
  if type(rec.entries) == 'table' then
    for k, e in pairs(rec.entries) do
      if e.tombstone or not e.data then seen[k] = nil else seen[k] = true end
    end
  end
  for _ in pairs(seen) do c = c + 1 end
  return c
end
local function collect(rec)
  if type(rec.entries) ~= 'table' then return end
  for k, e in pairs(rec.entries) do
    if e.tombstone and (tonumber(e.serialTimestamp) or 0) < now - grace then rec.entries[k] = nil end
  end
end

for i = 1, n do
  local op = cmsgpack.unpack(ARGV[7 + 2 * i])
  local oid = op.objectId
  local rec = touched[oid]
  if not rec then
    local blob = redis.call('HGET', KEYS[2], oid)
    if blob then
      rec = cmsgpack.unpack(blob)
    else
      rec = { objectId = oid }
      if oid ~= 'root' then
        added = added + 1
        if count + added > maxObjects then
          return { -1, 92001, 'Channel object limit exceeded: a channel holds at most ' .. maxObjects .. ' objects' }
        end
      end
    end
    touched[oid] = rec
    order[#order + 1] = oid
  end
  if rec.tombstone then
    return { -1, 92002, 'Object ' .. oid .. ' has been deleted (tombstoned); operations on it are refused' }
  end
  local s = token(i)
  rec.serial = s
  local a = op.action
  local keysOver = false
  if a == 0 then
    if not rec.created then
      rec.created = true
      rec.createEntries = op.mapCreate.entries
      keysOver = live_keys(rec) > maxKeys
    end
  elseif a == 3 then
    if not rec.created then
      rec.created = true
      rec.createCount = op.counterCreate.count
    end
  elseif a == 1 then
    collect(rec)
    if type(rec.entries) ~= 'table' then rec.entries = {} end
    rec.entries[op.mapSet.key] = { data = op.mapSet.value, timeserial = s }
    keysOver = live_keys(rec) > maxKeys
  elseif a == 2 then
    collect(rec)
    if type(rec.entries) ~= 'table' then rec.entries = {} end
    rec.entries[op.mapRemove.key] = { timeserial = s, tombstone = true, serialTimestamp = 0 }
  elseif a == 4 then
    rec.count = (tonumber(rec.count) or 0) + op.counterInc.number
  elseif a == 5 then
    if oid ~= 'root' then
      rec.tombstone = true
      rec.tombstonedAt = 0
      rec.entries, rec.createEntries, rec.count, rec.createCount = nil, nil, nil, nil
    end
  end
  if keysOver then
    return { -1, 92001, 'Map key limit exceeded: map ' .. oid .. ' holds at most ' .. maxKeys .. ' keys' }
  end
end

local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
if #last > 0 then prev = last[1][1] end
local minid = tostring(now - tonumber(ARGV[2]))
local ids, parts = {}, { prev, ' ' }
for i = 1, n do
  local body = ARGV[8 + 2 * i]
  local id = redis.call('XADD', KEYS[1], 'MINID', minid, '*', 'm', body)
  ids[i] = id
  parts[#parts + 1] = id .. ' ' .. #body .. ' '
  parts[#parts + 1] = body
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > 0 then redis.call('SET', KEYS[3], ids[n], 'PX', ARGV[2]) end
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
  local rec = touched[oid]
  local s, fresh = settle(rec.serial)
  rec.serial = s
  if fresh and rec.tombstone then rec.tombstonedAt = ts end
  if type(rec.entries) == 'table' then
    for _, e in pairs(rec.entries) do
      local es, efresh = settle(e.timeserial)
      e.timeserial = es
      if efresh and e.tombstone then e.serialTimestamp = ts end
    end
  end
  fields[#fields + 1] = oid
  fields[#fields + 1] = cmsgpack.pack(rec)
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('SPUBLISH', ARGV[1], table.concat(parts))
if ARGV[4] ~= '' then redis.call('SET', ARGV[4], table.concat(ids, ' '), 'PX', ARGV[3]) end
table.insert(ids, 1, 1)
return ids
`
