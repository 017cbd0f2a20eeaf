#!lua flags=allow-oom
-- Leader election: gives the leadership back if this owner has it (any
-- term: an owner id is one object's, and this runs for resign, close, a
-- lost or refused election and the give-back of an abandoned attempt), and
-- tells candidates and observers. Runs under maxmemory too.
-- KEYS[1] holder; ARGV[1] owner, ARGV[2] publish command, ARGV[3] the
-- channel: not a key, so this one-key script is served during a slot
-- migration (by the source while it has the holder, else by the target
-- through ASK) where naming the channel met TRYAGAIN until the migration
-- ended. It shares the holder's hash tag, so the publish stays in the slot.
-- Reply: 1 given back, 0 this owner did not have it.
if redis.call('hget', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local term = redis.call('hget', KEYS[1], 'term')
redis.call('del', KEYS[1])
redis.pcall(ARGV[2], ARGV[3], 'R' .. term)
return 1
