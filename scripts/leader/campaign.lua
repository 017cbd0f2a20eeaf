-- Leader election: one attempt to become the role's leader.
-- KEYS[1] holder (hash: owner, value, term; PX lease), KEYS[2] term counter
-- (never expires), KEYS[3] channel; ARGV[1] lease ms, ARGV[2] owner
-- "UUID:TID", ARGV[3] value, ARGV[4] the lowest term this client may accept
-- (one above the highest it has seen), ARGV[5] publish command.
-- Reply: {term, regressed} when elected, else the holder's PTTL.
-- The holder already this owner's: an attempt whose reply was lost (or an
-- abandoned one whose give-back is still to come) won; its term is
-- reported, not a new one. An owner id is one object's, which campaigns
-- once at a time.
-- Terms: an absent counter (a restart without persistence, or the role's
-- first election) is seeded from the server's clock in microseconds, never
-- below the floor, before the INCR; an existing one is only INCRed. A
-- counter found below the floor (set back while present) is lifted to it
-- and the election reported as regressed (the client refuses it), as
-- scripts/lock/acquire_fenced.lua does for lock tokens.
local owner = redis.call('hget', KEYS[1], 'owner')
if owner == ARGV[2] then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {tonumber(redis.call('hget', KEYS[1], 'term')), 0}
end
if owner or redis.call('exists', KEYS[1]) == 1 then
  return redis.call('pttl', KEYS[1])
end
if redis.call('exists', KEYS[2]) == 0 then
  local clock = redis.call('time')
  local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
  if tonumber(seed) < tonumber(ARGV[4]) then
    seed = ARGV[4]
  end
  redis.call('set', KEYS[2], seed)
end
local term = redis.call('incr', KEYS[2])
local regressed = 0
if term < tonumber(ARGV[4]) then
  redis.call('set', KEYS[2], ARGV[4])
  term = tonumber(ARGV[4])
  regressed = 1
end
-- As text from %d: Lua's own number to text conversion (%.14g) would
-- write a 16-digit term in exponent form.
local text = string.format('%d', term)
redis.call('hset', KEYS[1], 'owner', ARGV[2])
redis.call('hset', KEYS[1], 'value', ARGV[3])
redis.call('hset', KEYS[1], 'term', text)
redis.call('pexpire', KEYS[1], ARGV[1])
-- pcall: a user without channel permission still gets elected; observers
-- then see the change at their next re-poll.
redis.pcall(ARGV[5], KEYS[3], 'E' .. text .. ':' .. ARGV[3])
return {term, regressed}
