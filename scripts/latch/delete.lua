#!lua flags=allow-oom
-- Deletes the latch (Redisson delete: DEL NAME, publish "1" when it
-- existed) and latchkey's "opened" marker. Leaves a tombstone naming this
-- deletion, so latchkey awaiters that saw the latch armed learn it was
-- deleted rather than opened (both leave the key absent).
-- KEYS[1] latch name, KEYS[2] channel, KEYS[3] this object's request record,
-- KEYS[4] "opened" marker, KEYS[5] tombstone.
-- ARGV[1] publish command, ARGV[2] request sequence number, ARGV[3] request
-- record TTL ms, ARGV[4] tombstone value (unique per deletion),
-- ARGV[5] tombstone TTL ms.
-- Reply: 1 something was deleted, 0 nothing was there.
local rec = redis.call('get', KEYS[3])
if rec then
  local seq, reply = string.match(rec, '^(%d+):(%-?%d+)$')
  if seq and tonumber(seq) >= tonumber(ARGV[2]) then
    return tonumber(reply)
  end
end
-- Anything but an absent key or a decimal count is not a latch: left alone.
local t = redis.call('type', KEYS[1])['ok']
if (t ~= 'none' and t ~= 'string')
   or (t == 'string' and not string.match(redis.call('get', KEYS[1]), '^%-?%d+$')) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local armed = redis.call('del', KEYS[1])
local marked = redis.call('del', KEYS[4])
local reply = 0
if armed == 1 or marked == 1 then
  redis.call('set', KEYS[5], ARGV[4], 'px', ARGV[5])
  reply = 1
end
if armed == 1 then
  redis.pcall(ARGV[1], KEYS[2], '1')
end
redis.call('set', KEYS[3], ARGV[2] .. ':' .. reply, 'px', ARGV[3])
return reply
