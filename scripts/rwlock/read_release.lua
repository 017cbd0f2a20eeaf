#!lua flags=allow-oom
-- Drops n read holds of one owner. Runs under maxmemory too (allow-oom): a
-- release must work when acquires are refused.
-- KEYS[1] NAME, KEYS[2] channel, KEYS[3] TP = "{NAME}:UUID:TID:rwlock_timeout",
-- KEYS[4] the prefix of every owner's hold keys ("{NAME}", or NAME when it
-- has a brace). ARGV[1] reader field, ARGV[2] publish command, ARGV[3] the
-- count before the first attempt when this is a resend after a lost reply
-- (else -1), ARGV[4] n (0: every hold the owner has), ARGV[5] 'exact' when
-- ARGV[3] is a give-back's condition instead: drop n holds only if the
-- count is exactly ARGV[3], else nothing.
-- Reply (private): the owner's read holds left, or nil when it had none.
-- When no live hold of anyone is left the lock is deleted and '0' published
-- (Redisson's read release message).
--
-- Unlike Redisson, the lock's TTL is never recomputed here (Redisson reads
-- every hold key of every reader on every release: O(holds), docs/rwlock.md
-- "Read release"). Only when this owner's last hold goes does the script
-- look for another live hold, and it stops at the first one it finds: a few
-- fields picked at random first, so the common case costs O(1), then every
-- field, removing the fields of readers whose holds have all expired. Readers
-- that died thus never keep writers out once every live reader has left.
-- Loops over hold indices stop after 10000 keys: only a corrupt count gets
-- there, and keys left over expire with their leases.
local held = redis.call('hget', KEYS[1], ARGV[1])
local now = held and tonumber(held) or 0
local before = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
if before >= 0 and ARGV[5] == 'exact' then
  if now ~= before then
    if held then return now end
    return nil
  end
elseif before >= 0 and (now == before - n or (now == 0 and before <= n)) then
  return now -- the lost attempt was applied already
end
if not held then
  return nil
end
if n <= 0 then n = now end
local left = now - n
if left < 0 then left = 0 end
if left == 0 then
  redis.call('hdel', KEYS[1], ARGV[1])
else
  redis.call('hset', KEYS[1], ARGV[1], left)
end
-- Holds go in the reverse order of their taking: the newest keys go.
for i = math.max(left + 1, now - 9999), now do
  redis.call('del', KEYS[3] .. ':' .. i)
end
if left > 0 then
  return left -- this owner still reads: the lock lives on
end

if redis.call('hlen', KEYS[1]) > 1 then
  if redis.call('hget', KEYS[1], 'mode') == 'write' then
    return left -- the writer (this owner's write side) holds on
  end
  -- field/count pairs, as HGETALL and HRANDFIELD WITHVALUES give them.
  -- With clean set, the field of a reader none of whose hold keys lives is
  -- removed on the way: its leases are over (Redisson's own recomputation
  -- would not count it either), and it costs no later release again.
  local function any_live(pairs, clean)
    for i = 1, #pairs, 2 do
      local count = tonumber(pairs[i + 1])
      if pairs[i] ~= 'mode' and count then
        local prefix = KEYS[4] .. ':' .. pairs[i] .. ':rwlock_timeout:'
        for j = count, math.max(1, count - 9999), -1 do
          if redis.call('exists', prefix .. j) == 1 then
            return true
          end
        end
        if clean then
          redis.call('hdel', KEYS[1], pairs[i])
        end
      end
    end
    return false
  end
  if any_live(redis.call('hrandfield', KEYS[1], 4, 'withvalues'), false) or
     any_live(redis.call('hgetall', KEYS[1]), true) then
    return left
  end
end
redis.call('del', KEYS[1])
-- pcall: a user without channel permission still releases.
redis.pcall(ARGV[2], KEYS[2], '0')
return left
