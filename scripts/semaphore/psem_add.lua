-- Permit-expirable semaphore: add delta permits (may be negative), after
-- reclaiming the expired ones, and tell waiters the new count.
-- KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3] channel; ARGV[1] delta,
-- ARGV[2] publish command, ARGV[3] the largest count allowed (either sign).
-- Reply: the new count. ERANGE error: it would pass the limit.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
if expired > 0 then
  redis.call('incrby', KEYS[1], expired)
end
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
local v = avail + tonumber(ARGV[1])
if v > tonumber(ARGV[3]) or v < -tonumber(ARGV[3]) then
  return redis.error_reply('ERANGE semaphore count would pass ' .. ARGV[3])
end
v = redis.call('incrby', KEYS[1], ARGV[1])
redis.pcall(ARGV[2], KEYS[3], v)
return v
