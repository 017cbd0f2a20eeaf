#!lua flags=allow-oom
-- Watchdog renewal for a chunk of permit-expirable semaphore holders: each
-- holder's permits get a fresh lease only if every one of them is still
-- held, so a holder that lost any is told so. Expired permits are reclaimed
-- on the way. Runs under maxmemory too.
-- KEYS[2i-1] NAME, KEYS[2i] {NAME}:timeout of holder i; ARGV[1] lease ms,
-- ARGV[i + 1] holder i's ids, 16 bytes each, back to back, ARGV[n + 2] (n
-- holders) the client's publish command.
-- Reply: one 1 (renewed) or 0 (some permit is gone) per holder.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 2 do
  local name, zset = KEYS[2 * i - 1], KEYS[2 * i]
  local expired = redis.call('zremrangebyscore', zset, '-inf', now)
  if expired > 0 then
    local v = redis.call('incrby', name, expired)
    -- The channel is Redisson's prefixName('redisson_sc', NAME): same slot.
    local channel
    if string.find(name, '{', 1, true) then
      channel = 'redisson_sc:' .. name
    else
      channel = 'redisson_sc:{' .. name .. '}'
    end
    -- Published the way the client's waiters listen (src/core/pubsub.c).
    redis.pcall(ARGV[#KEYS / 2 + 2], channel, v)
  end
  local ids = ARGV[i + 1]
  local held = 1
  for j = 1, #ids, 16 do
    if not redis.call('zscore', zset, string.sub(ids, j, j + 15)) then
      held = 0
      break
    end
  end
  if held == 1 then
    for j = 1, #ids, 16 do
      redis.call('zadd', zset, 'XX', expiry, string.sub(ids, j, j + 15))
    end
  end
  out[i] = held
end
return out
