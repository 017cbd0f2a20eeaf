-- Permit-expirable semaphore: available and acquired permits, after
-- reclaiming the expired ones.
-- KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3] channel; ARGV[1] publish
-- command. Reply: {available, acquired}.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
if expired > 0 then
  local v = redis.call('incrby', KEYS[1], expired)
  redis.pcall(ARGV[1], KEYS[3], v)
end
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
return {avail, redis.call('zcard', KEYS[2])}
