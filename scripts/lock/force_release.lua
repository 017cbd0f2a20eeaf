#!lua flags=allow-oom
-- Deletes the lock whoever holds it (Redisson forceUnlock), but never a key
-- of another type that happens to carry the name.
-- KEYS[1] lock name; ARGV[1] publish command, ARGV[2] the channel (not a
-- key, as in release.lua: a one-key script is served during a slot
-- migration).
local t = redis.call('type', KEYS[1])['ok']
if t == 'none' then
  return 0
end
if t ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
redis.call('del', KEYS[1])
redis.pcall(ARGV[1], ARGV[2], '0')
return 1
