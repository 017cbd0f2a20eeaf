-- Counting semaphore: take every available permit (Redisson drainPermits).
-- KEYS[1] NAME. Reply: how many were taken. A count at or below zero is left
-- as it is (Redisson would raise a negative count to 0, inventing permits).
local v = redis.call('get', KEYS[1])
if not v then
  return 0
end
local n = tonumber(v)
if n == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
if n <= 0 then
  return 0
end
redis.call('set', KEYS[1], 0, 'keepttl')
return n
