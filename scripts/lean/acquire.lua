-- The lean lock layout (a lock's, docs/lock.md "Lean layout", and
-- RedLock's members', docs/multilock.md "Lean layout"): the lock is a plain
-- string, NAME = OWNER, with a PX lease (SET NX PX, as the Redlock
-- algorithm's reference does). Not Redisson's layout: never mixed with it on
-- one name. The server keeps one hold per owner, no count: a lock object
-- counts its re-entries itself (ARGV[3] > 0: the value must still be this
-- owner's; the lease is extended); RedLock refuses a re-entry.
-- Arguments and reply as scripts/lock/acquire.lua: KEYS[1] lock name;
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] hold count the owner had before
-- this call (or -1), ARGV[4] '1' on a resend after a lost reply.
-- Reply: {count} when acquired, else the holder's PTTL.
-- A resend whose lost attempt did acquire finds its own value: granted,
-- once (the key holds no count to count twice). So does a first attempt
-- finding a stale value of its own (nobody else held it in between).
-- A hash on the name (Redisson's layout) fails the GET with WRONGTYPE:
-- reported, never granted, left alone.
local before = tonumber(ARGV[3])
if before <= 0 and redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
  return {1}
end
local v = redis.call('get', KEYS[1])
if v == ARGV[2] then
  redis.call('pexpire', KEYS[1], ARGV[1])
  if before < 0 then
    return {1}
  end
  return {before + 1}
end
if not v then
  -- A re-entry that finds its hold gone (see scripts/lock/acquire.lua).
  return {0}
end
return redis.call('pttl', KEYS[1])
