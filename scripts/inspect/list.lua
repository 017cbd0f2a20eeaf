#!lua flags=no-writes,allow-cross-slot-keys
-- One SCAN step of lk_list (docs/inspect.md, "Listing"). Writes nothing.
-- ARGV[1] cursor, ARGV[2] MATCH pattern, ARGV[3] COUNT.
-- Reply: {next cursor, {name, kind, name, kind, ...}} with kind one of
-- 'lock', 'fair', 'rwlock', 'count', 'psem', 'token'. The parts of a
-- structure (queues, deadline and permit sets, read-hold keys, channels,
-- latchkey's private keys) are skipped; a token counter or a fair queue
-- whose lock hash is absent is listed under the lock's name (as 'token',
-- 'fair'), else only the lock is. A hash is a lock only when it has a "mode"
-- field (read/write lock) or at most 64 fields that all hold counts, so a
-- Redisson map or any other hash is not listed.
local function braced(name)
  if string.find(name, '{', 1, true) then return name end
  return '{' .. name .. '}'
end
local function starts(s, p) return string.sub(s, 1, #p) == p end
local r = redis.call('scan', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local out = {}
for _, k in ipairs(r[2]) do
  local kind = nil
  local orphan = nil
  if starts(k, 'redisson_lock_token:') then
    orphan = 'token'
  elseif starts(k, 'redisson_lock_queue:') then
    orphan = 'fair'
  end
  if orphan then
    -- A counter or a queue whose lock hash is gone: listed under the name.
    local base = string.sub(k, string.find(k, ':', 1, true) + 1)
    if starts(base, '{') and string.sub(base, -1) == '}' and
        not string.find(string.sub(base, 2, -2), '[{}]') then
      base = string.sub(base, 2, -2)
    end
    if redis.call('exists', base) == 0 then
      kind = orphan
      k = base
    end
  elseif starts(k, 'redisson_') or starts(k, 'latchkey_') or
      string.find(k, ':rwlock_timeout:', 1, true) then
    kind = nil
  else
    local t = redis.call('type', k).ok
    if t == 'hash' then
      if redis.call('hexists', k, 'mode') == 1 then
        kind = 'rwlock'
      elseif redis.call('hlen', k) <= 64 then
        kind = 'lock'
        for _, v in ipairs(redis.call('hvals', k)) do
          if not tonumber(v) then kind = nil break end
        end
        if kind and redis.call('exists', 'redisson_lock_queue:' .. braced(k)) == 1 then
          kind = 'fair'
        end
      end
    elseif t == 'string' then
      if tonumber(redis.call('get', k)) then
        kind = 'count'
        local pk = braced(k) .. ':timeout'
        if redis.call('type', pk).ok == 'zset' then kind = 'psem' end
      end
    end
  end
  if kind then
    out[#out + 1] = k
    out[#out + 1] = kind
  end
end
return {r[1], out}
