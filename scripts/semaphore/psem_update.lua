#!lua flags=allow-oom
-- Permit-expirable semaphore: set a new lease on permits still held
-- (Redisson updateLeaseTime). Expired permits are reclaimed first: a lease
-- that ended is not brought back.
-- KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3] channel.
-- ARGV[1] ids, 16 bytes each, back to back, ARGV[2] lease ms, ARGV[3]
-- publish command.
-- Reply: one 1 (updated) or 0 (not held any more) per id.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
if expired > 0 then
  local v = redis.call('incrby', KEYS[1], expired)
  redis.pcall(ARGV[3], KEYS[3], v)
end
local expiry = now + tonumber(ARGV[2])
local ids = ARGV[1]
local out = {}
for i = 1, #ids, 16 do
  local id = string.sub(ids, i, i + 15)
  if redis.call('zscore', KEYS[2], id) then
    redis.call('zadd', KEYS[2], 'XX', expiry, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
