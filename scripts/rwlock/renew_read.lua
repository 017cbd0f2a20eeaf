#!lua flags=allow-oom
-- Watchdog renewal of read holds, for a chunk of (lock, owner) entries. Only
-- the given owners' own hold keys are extended: a reader that died is never
-- kept alive by a live one (Redisson's "zombie reader"). Runs under
-- maxmemory too.
-- KEYS[2i-1] lock name, KEYS[2i] that owner's TP prefix; ARGV[1] lease ms,
-- ARGV[i + 1] the owner's reader field.
-- Reply: per entry 1 (every hold of the owner extended), 0 (the owner's
-- field or one of its hold keys is gone: the holds are lost) or -1 (the
-- field is gone and the lock is other owners': lost too; docs/metrics.md).
local lease = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 2 do
  local name, tp = KEYS[2 * i - 1], KEYS[2 * i]
  local count = tonumber(redis.call('hget', name, ARGV[i + 1]) or '0') or 0
  local ok = count > 0 and 1 or 0
  -- The newest 10000 holds at most (the loops' bound, see read_release.lua).
  for j = count, math.max(1, count - 9999), -1 do
    if redis.call('pexpire', tp .. ':' .. j, lease) == 0 then
      ok = 0
    end
  end
  if ok == 1 and redis.call('pttl', name) < lease then
    redis.call('pexpire', name, lease)
  end
  if count == 0 and redis.call('exists', name) == 1 then
    ok = -1
  end
  out[i] = ok
end
return out
