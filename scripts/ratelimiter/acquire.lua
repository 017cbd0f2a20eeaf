-- Rate limiter (Redisson RRateLimiter's layout, docs/ratelimiter.md): take
-- n permits if the sliding window has them.
-- KEYS[1] NAME (config hash: rate, interval, type, keepAliveTime),
-- KEYS[2] {NAME}:value, KEYS[3] {NAME}:value:CLIENTID,
-- KEYS[4] {NAME}:permits, KEYS[5] {NAME}:permits:CLIENTID.
-- ARGV[1] n, ARGV[2] this request's id (16 random bytes).
-- The value key counts the permits left; the permits zset holds one entry
-- per grant (the id's length as one byte, the id, n as 4 bytes), scored by
-- the grant's time in ms. Grants older than the interval leave the window
-- and their permits are counted back in. Time is the server's (TIME), so
-- every latchkey process reads one clock; Redisson passes its own clock.
-- Reply (private): {1, grant time, permits left} granted (now, or by an
-- earlier attempt of the same request: its entry is found), {0, ms until
-- the oldest grant leaves the window} denied, {-1, rate} n exceeds the
-- rate, {-2} no rate set.
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if not rate or not interval or not kind then
  return {-2}
end
rate = tonumber(rate)
interval = tonumber(interval)
local value_key, log_key = KEYS[2], KEYS[4]
if kind == '1' then
  value_key, log_key = KEYS[3], KEYS[5]
end
local n = tonumber(ARGV[1])
if n > rate then
  return {-1, rate}
end
local entry = struct.pack('Bc0I', string.len(ARGV[2]), ARGV[2], n)
local seen = redis.call('zscore', log_key, entry)
if seen then
  return {1, tonumber(seen), tonumber(redis.call('get', value_key) or rate)}
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local left = redis.call('get', value_key)
local reply
if left then
  left = tonumber(left)
  local horizon = now - interval
  local gone = redis.call('zrangebyscore', log_key, 0, horizon)
  local back = 0
  for _, e in ipairs(gone) do
    local _, k = struct.unpack('Bc0I', e)
    back = back + k
  end
  if back > 0 then
    redis.call('zremrangebyscore', log_key, 0, horizon)
    if left + back > rate then
      -- More than the rate (Redisson's release() raised the count): count
      -- what the window still holds.
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
  if left < n then
    local oldest = redis.call('zrange', log_key, 0, 0, 'withscores')
    if oldest[2] == nil then
      -- Too few left with no grant in the window: a state Redisson's
      -- scripts never leave (the zset was lost); nothing is in use.
      left = rate
    else
      reply = {0, 3 + interval - (now - tonumber(oldest[2]))}
    end
  end
else
  left = rate
end
if not reply then
  redis.call('zadd', log_key, now, entry)
  redis.call('set', value_key, string.format('%d', left - n))
  reply = {1, now, left - n}
end
local keep = tonumber(redis.call('hget', KEYS[1], 'keepAliveTime') or '0')
if keep ~= nil and keep > 0 then
  redis.call('pexpire', KEYS[1], keep)
  redis.call('pexpire', value_key, keep)
  redis.call('pexpire', log_key, keep)
else
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', value_key, ttl)
    redis.call('pexpire', log_key, ttl)
  end
end
return reply
