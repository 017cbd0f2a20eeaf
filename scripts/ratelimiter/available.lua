-- Rate limiter: permits left in the window now (Redisson's
-- availablePermits). KEYS as in acquire.lua.
-- Reply (private): the count, or -2 when no rate is set.
-- Grants that left the window are counted back in, capped as acquire.lua
-- caps them (Redisson's own query skips the cap, which only matters after
-- its release() raised the count).
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if not rate or not interval or not kind then
  return -2
end
rate = tonumber(rate)
local value_key, log_key = KEYS[2], KEYS[4]
if kind == '1' then
  value_key, log_key = KEYS[3], KEYS[5]
end
local left = redis.call('get', value_key)
if not left then
  redis.call('set', value_key, string.format('%d', rate))
  return rate
end
left = tonumber(left)
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local horizon = now - tonumber(interval)
local back = 0
for _, e in ipairs(redis.call('zrangebyscore', log_key, 0, horizon)) do
  local _, k = struct.unpack('Bc0I', e)
  back = back + k
end
if back > 0 then
  redis.call('zremrangebyscore', log_key, 0, horizon)
  if left + back > rate then
    local used = 0
    for _, e in ipairs(redis.call('zrange', log_key, 0, -1)) do
      local _, k = struct.unpack('Bc0I', e)
      used = used + k
    end
    left = rate - used
  else
    left = left + back
  end
  redis.call('set', value_key, string.format('%d', left))
end
return left
