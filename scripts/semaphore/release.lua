#!lua flags=allow-oom
-- Counting semaphore: give back n permits and tell waiters the new count on
-- Redisson's channel. Runs under maxmemory too: giving back must work when
-- taking is refused.
-- KEYS[1] NAME, KEYS[2] channel, KEYS[3] this object's request mark.
-- ARGV[1] n, ARGV[2] request number r, ARGV[3] mark TTL in ms, ARGV[4]
-- publish command, ARGV[5] the largest count allowed.
-- A mark at 2r or above means this request (or a later one) was applied
-- already: a resend after a lost reply never adds permits twice.
-- Reply (private): {available after, 0} released now; {available, 1}
-- released by an earlier attempt. ERANGE error: the count would pass the
-- limit (nothing changed).
-- (A drain's mark carries its count after a colon: "2r:n".)
local mark = tonumber(string.match(redis.call('get', KEYS[3]) or '0', '^%d+'))
local req = tonumber(ARGV[2])
if mark >= 2 * req then
  return {tonumber(redis.call('get', KEYS[1]) or '0'), 1}
end
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
local n = tonumber(ARGV[1])
if avail + n > tonumber(ARGV[5]) then
  return redis.error_reply('ERANGE semaphore count would pass ' .. ARGV[5])
end
local v = redis.call('incrby', KEYS[1], n)
redis.call('set', KEYS[3], 2 * req, 'px', ARGV[3])
-- pcall: a user without channel permission still releases.
redis.pcall(ARGV[4], KEYS[2], v)
return {v, 0}
