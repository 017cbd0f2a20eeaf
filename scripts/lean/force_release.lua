#!lua flags=allow-oom
-- Force release in the lean layout (see scripts/lean/acquire.lua): deletes
-- the lock whoever holds it and tells waiters, as scripts/lock/force_release.lua
-- does for Redisson's hash. KEYS[1] lock name; ARGV[1] publish command,
-- ARGV[2] the channel (an argument, not a key: a one-key script gets through
-- a slot migration). Reply: 1 deleted, 0 no lock; a key that is not a
-- string (Redisson's hash, anything else) is not this layout's lock: a
-- WRONGTYPE error, left alone.
local t = redis.call('type', KEYS[1])['ok']
if t == 'none' then
  return 0
end
if t ~= 'string' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
redis.call('del', KEYS[1])
redis.pcall(ARGV[1], ARGV[2], '0')
return 1
