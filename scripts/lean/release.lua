#!lua flags=allow-oom
-- Release in the lean layout (see scripts/lean/acquire.lua):
-- compare-and-delete. Runs under maxmemory too, as scripts/lock/release.lua.
-- Arguments and replies as scripts/lock/release.lua: KEYS[1] lock name;
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] publish command, ARGV[4] the
-- object's count before the first attempt on a resend (else -1), ARGV[5] n,
-- ARGV[6] 'exact' when ARGV[4] is a give-back's condition instead, ARGV[7]
-- the channel (not a key, as there). Reply: nil = this owner holds nothing, 0 = still held
-- (the object counts holds left), 1 = released and waiters told, 1 + k =
-- released while k connections listened.
-- The server holds no count: the object's count says whether holds remain
-- (ARGV[4] > n). ARGV[6] 'count' marks a first attempt that passes it (a
-- lock object counting re-entries); 'resend' a resend. Without it (-1),
-- every hold of this owner goes.
-- A resend that finds the value not its own reads the lost attempt as
-- applied (as scripts/lock/release.lua does for this owner's count found at
-- 0).
-- A hash on the name fails the GET with WRONGTYPE: left alone.
local v = redis.call('get', KEYS[1])
local before = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
if v ~= ARGV[2] then
  if before >= 0 and ARGV[6] == 'resend' and before <= n then
    return 1
  end
  return nil
end
if before > n then
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
