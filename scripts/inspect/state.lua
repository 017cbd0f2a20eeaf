#!lua flags=no-writes,allow-cross-slot-keys
-- Reads what a name holds, for lk_inspect (docs/inspect.md). Writes nothing.
-- KEYS[1] NAME, KEYS[2] redisson_lock_queue:{NAME}, KEYS[3]
-- redisson_lock_timeout:{NAME}, KEYS[4] {NAME}:timeout (expirable permits),
-- KEYS[5] redisson_lock_token:{NAME}, KEYS[6] latchkey_latch_open:{NAME},
-- KEYS[7] the prefix of a read/write lock's hold keys ("{NAME}", or NAME
-- when it has a brace). ARGV[1] the most entries of each list to read.
-- Reply: {type, pttl, now ms, token or -1, latch marker 0/1, value,
-- holders {field, count, ttl, ...}, holders total, queue {owner, deadline
-- score or '', ...}, queue total, permits {id, score, ...}, permits total}.
-- value: a string's text, a hash's "mode" field, else ''.
-- Auxiliary keys of another type are read as absent (pcall): inspection
-- must answer for any name.
local cap = tonumber(ARGV[1])
local function ok(r)
  if type(r) == 'table' and r.err then return nil end
  return r
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ktype = redis.call('type', KEYS[1]).ok
local pttl = redis.call('pttl', KEYS[1])
local value = ''
local holders, htotal = {}, 0
if ktype == 'string' then
  value = redis.call('get', KEYS[1])
elseif ktype == 'hash' then
  value = redis.call('hget', KEYS[1], 'mode') or ''
  htotal = redis.call('hlen', KEYS[1])
  local flat
  if htotal <= cap + 1 then
    flat = redis.call('hgetall', KEYS[1])
  else
    flat = redis.call('hscan', KEYS[1], '0', 'COUNT', cap)[2]
  end
  for i = 1, #flat, 2 do
    local f, v = flat[i], flat[i + 1]
    if f ~= 'mode' and #holders < 3 * cap then
      local ttl = pttl
      if value == 'read' or value == 'write' then
        if string.sub(f, -6) ~= ':write' then
          -- A reader: its longest-lived hold key (bounded: 1000 keys).
          ttl = -2
          local n = tonumber(v) or 0
          if n > 1000 then n = 1000 end
          for j = 1, n do
            local k = KEYS[7] .. ':' .. f .. ':rwlock_timeout:' .. j
            local kt = redis.call('pttl', k)
            if kt == -1 or (ttl ~= -1 and kt > ttl) then ttl = kt end
          end
        end
      end
      holders[#holders + 1] = f
      holders[#holders + 1] = v
      holders[#holders + 1] = ttl
    end
  end
  if value ~= '' then htotal = htotal - 1 end
end
local token = -1
local tv = ok(redis.pcall('get', KEYS[5]))
if tv then token = tonumber(tv) or -1 end
local marker = redis.call('exists', KEYS[6])
local queue, qtotal = {}, ok(redis.pcall('llen', KEYS[2])) or 0
if qtotal > 0 then
  for _, w in ipairs(redis.call('lrange', KEYS[2], 0, cap - 1)) do
    queue[#queue + 1] = w
    queue[#queue + 1] = ok(redis.pcall('zscore', KEYS[3], w)) or ''
  end
end
local permits, ptotal = {}, ok(redis.pcall('zcard', KEYS[4])) or 0
if ptotal > 0 then
  permits = redis.call('zrange', KEYS[4], 0, cap - 1, 'withscores')
end
return {ktype, pttl, now, token, marker, value, holders, htotal, queue, qtotal,
        permits, ptotal}
