-- Arms the latch if it is not armed (Redisson trySetCount): SET NAME count,
-- publish "1" (re-armed). Also drops a strict-mode "opened" marker, which
-- must never outlive the next arming.
-- KEYS[1] latch name, KEYS[2] channel, KEYS[3] this object's request record,
-- KEYS[4] "opened" marker.
-- ARGV[1] count, ARGV[2] publish command, ARGV[3] request sequence number,
-- ARGV[4] request record TTL ms.
-- Reply: 1 armed, 0 already armed. The request record ("seq:reply") makes a
-- resend after a lost reply return the first attempt's answer.
local rec = redis.call('get', KEYS[3])
if rec then
  local seq, reply = string.match(rec, '^(%d+):(%-?%d+)$')
  if seq and tonumber(seq) >= tonumber(ARGV[3]) then
    return tonumber(reply)
  end
end
-- Anything but an absent key or a decimal count is not a latch: left alone.
local t = redis.call('type', KEYS[1])['ok']
if (t ~= 'none' and t ~= 'string')
   or (t == 'string' and not string.match(redis.call('get', KEYS[1]), '^%-?%d+$')) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local reply = 0
if t == 'none' then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call('del', KEYS[4])
  -- pcall: a user without channel permission still arms (awaiters poll).
  redis.pcall(ARGV[2], KEYS[2], '1')
  reply = 1
end
redis.call('set', KEYS[3], ARGV[3] .. ':' .. reply, 'px', ARGV[4])
return reply
