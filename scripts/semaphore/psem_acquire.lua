-- Permit-expirable semaphore: take n permits with ids and a lease (Redisson
-- RPermitExpirableSemaphore's layout: string NAME = available permits, zset
-- {NAME}:timeout of raw 16-byte permit ids scored by expiry in epoch ms).
-- Expired permits are reclaimed first. Time is the server's (TIME), so
-- clients' clocks do not matter.
-- KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3] channel.
-- ARGV[1] n, ARGV[2] the n ids, 16 bytes each, back to back, ARGV[3] lease
-- ms, ARGV[4] publish command.
-- Reply (private): {1, available after} acquired (now, or by an earlier
-- attempt with the same ids: a resend never takes twice); else ms until the
-- nearest lease ends, or -1 when no lease is due to end.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
if expired > 0 then
  local v = redis.call('incrby', KEYS[1], expired)
  redis.pcall(ARGV[4], KEYS[3], v)
end
local ids = ARGV[2]
if redis.call('zscore', KEYS[2], string.sub(ids, 1, 16)) then
  return {1, tonumber(redis.call('get', KEYS[1]) or '0')}
end
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
local n = tonumber(ARGV[1])
if avail >= n then
  redis.call('decrby', KEYS[1], n)
  local expiry = now + tonumber(ARGV[3])
  local args = {}
  for i = 1, n do
    args[2 * i - 1] = expiry
    args[2 * i] = string.sub(ids, 16 * i - 15, 16 * i)
  end
  redis.call('zadd', KEYS[2], unpack(args))
  -- A semaphore set up with a TTL lends it to its permits (as Redisson does).
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1, avail - n}
end
-- Redisson marks a permit without lease with this score: it never ends.
local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if head[2] and tonumber(head[2]) < 922337203685477 then
  return tonumber(head[2]) - now
end
return -1
