#!lua flags=allow-oom
-- Leader election: gives the leadership back if this owner has it (any
-- term: an owner id is one object's, and this runs for resign, close, a
-- lost or refused election and the give-back of an abandoned attempt), and
-- tells candidates and observers. Runs under maxmemory too.
-- KEYS[1] holder, KEYS[2] channel; ARGV[1] owner, ARGV[2] publish command.
-- Reply: 1 given back, 0 this owner did not have it.
if redis.call('hget', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local term = redis.call('hget', KEYS[1], 'term')
redis.call('del', KEYS[1])
redis.pcall(ARGV[2], KEYS[2], 'R' .. term)
return 1
