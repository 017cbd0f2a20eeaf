#!lua flags=allow-oom
-- Counts down by one (Redisson countDown): DECR; at zero or below the key
-- is deleted (absent = open); exactly the call that reaches zero publishes
-- "0" (opened). Runs under maxmemory too: a worker that finished must be
-- able to say so, or awaiters would wait for nothing.
-- KEYS[1] latch name, KEYS[2] channel, KEYS[3] this object's request record,
-- KEYS[4] "opened" marker, KEYS[5] deletion tombstone.
-- ARGV[1] publish command, ARGV[2] request sequence number, ARGV[3] request
-- record TTL ms, ARGV[4] marker TTL ms in strict mode, "0" in interop mode.
-- Reply: count left (> 0); 0 this call opened the latch; -1 it was open
-- already; strict mode only: -2 neither armed nor marked opened (lost),
-- -3 the same after a latchkey delete.
-- The request record ("seq:reply") makes a resend after a lost reply return
-- the first attempt's answer instead of counting twice; a record with a
-- higher sequence means this is a stale copy of an older request.
local rec = redis.call('get', KEYS[3])
if rec then
  local seq, reply = string.match(rec, '^(%d+):(%-?%d+)$')
  if seq and tonumber(seq) >= tonumber(ARGV[2]) then
    return tonumber(reply)
  end
end
local strict = ARGV[4] ~= '0'
local reply
-- GET fails with WRONGTYPE on another kind of key; a string that is not a
-- decimal count is not a latch either: both are left alone.
local count = redis.call('get', KEYS[1])
if count and not string.match(count, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if count then
  local left = redis.call('decr', KEYS[1])
  if left > 0 then
    reply = left
  else
    redis.call('del', KEYS[1])
    reply = -1
    if left == 0 then
      if strict then
        redis.call('set', KEYS[4], '1', 'px', ARGV[4])
      end
      redis.pcall(ARGV[1], KEYS[2], '0')
      reply = 0
    end
  end
elseif strict and redis.call('exists', KEYS[4]) == 0 then
  reply = redis.call('exists', KEYS[5]) == 1 and -3 or -2
else
  reply = -1
end
redis.call('set', KEYS[3], ARGV[2] .. ':' .. reply, 'px', ARGV[3])
return reply
