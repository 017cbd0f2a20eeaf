-- Counting semaphore: add delta permits, delta may be negative (Redisson
-- addPermits), and tell waiters the new count.
-- KEYS[1] NAME; ARGV[1] delta, ARGV[2] publish command, ARGV[3] the largest
-- count allowed (either sign), ARGV[4] the channel: not a key, so this
-- one-key script is served during a slot migration (by the source while it
-- has NAME, else by the target through ASK).
-- Reply: the new count. ERANGE error: it would pass the limit.
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
local v = avail + tonumber(ARGV[1])
if v > tonumber(ARGV[3]) or v < -tonumber(ARGV[3]) then
  return redis.error_reply('ERANGE semaphore count would pass ' .. ARGV[3])
end
v = redis.call('incrby', KEYS[1], ARGV[1])
redis.pcall(ARGV[2], ARGV[4], v)
return v
