#!lua flags=allow-oom
-- Drops n write holds of one owner. Runs under maxmemory too (allow-oom).
-- KEYS[1] NAME. ARGV[1] writer field, ARGV[2] publish
-- command, ARGV[3] lease ms (the hash keeps at least this while holds
-- remain), ARGV[4] the count before the first attempt when this is a resend
-- after a lost reply (else -1), ARGV[5] n (0: every hold the owner has),
-- ARGV[6] 'exact' when ARGV[4] is a give-back's condition instead: drop n
-- holds only if the count is exactly ARGV[4], else nothing; ARGV[7] the
-- channel (Redisson's unlock names it as KEYS[2]; the message is the same):
-- not a key, so this one-key script is served during a slot migration, by
-- the source while it has the lock, else by the target through ASK.
-- Reply (private): the owner's write holds left, or nil when it had none.
-- The last write hold: the lock is deleted, or, when this owner still has
-- read holds, it turns to 'read' (the downgrade). Either way '1' (write
-- release) is published, so every waiter tries again: readers can enter in
-- both cases.
local held = redis.call('hget', KEYS[1], ARGV[1])
local now = held and tonumber(held) or 0
local before = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
if before >= 0 and ARGV[6] == 'exact' then
  if now ~= before then
    if held then return now end
    return nil
  end
elseif before >= 0 and (now == before - n or (now == 0 and before <= n)) then
  return now -- the lost attempt was applied already
end
if not held or redis.call('hget', KEYS[1], 'mode') ~= 'write' then
  return nil
end
if n <= 0 then n = now end
local left = now - n
if left > 0 then
  redis.call('hset', KEYS[1], ARGV[1], left)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('pexpire', KEYS[1], ARGV[3])
  end
  return left
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.pcall(ARGV[2], ARGV[7], '1')
return 0
