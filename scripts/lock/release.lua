#!lua flags=allow-oom
-- Drops n holds. Runs under maxmemory too (allow-oom): a release must work
-- when acquires are refused. Replies as Redisson's unlock: nil = this owner
-- holds nothing, 0 = still held, 1 = released and waiters told; and 1 + k =
-- released while k connections listened for it (so the releasing client can
-- let a waiter in before taking the lock straight back, and knows how many
-- processes contend for the name).
-- KEYS[1] lock name; ARGV[1] lease ms (re-applied while still held),
-- ARGV[2] owner, ARGV[3] publish command, ARGV[4] the count before the
-- first attempt when this is a resend after a lost reply (else -1), ARGV[5]
-- n, ARGV[6] 'exact' when ARGV[4] is a give-back's condition instead: drop
-- n holds only if the count is exactly ARGV[4] (the hold an abandoned or
-- unanswered acquire may have added), else nothing; ARGV[7] the channel.
-- The channel is not a key (Redisson's unlock names it as KEYS[2]; the data
-- and the message are the same): a one-key script is served during a slot
-- migration, by the source while it has the lock and by the target through
-- ASK once it moved, where naming the channel made every release meet
-- TRYAGAIN until the migration ended. It shares the lock's slot (its hash
-- tag), so publishing it from here stays within the slot on a cluster.
local held = redis.call('hget', KEYS[1], ARGV[2])
local before = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
if before >= 0 and ARGV[6] == 'exact' then
  local now = held and tonumber(held) or 0
  if now ~= before then
    if held then return 0 end
    return nil
  end
elseif before >= 0 then
  local now = held and tonumber(held) or 0
  if now == before - n or (now == 0 and before <= n) then
    -- The lost attempt was applied already.
    if now > 0 then return 0 end
    return 1
  end
end
if not held then
  return nil
end
local left = tonumber(held) - n
if left > 0 then
  redis.call('hset', KEYS[1], ARGV[2], left)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
-- pcall: a user without channel permission still releases (the DEL stays).
local heard = redis.pcall(ARGV[3], ARGV[7], '0')
if type(heard) == 'number' and heard > 0 then
  return 1 + heard
end
return 1
