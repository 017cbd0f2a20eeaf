#!lua flags=allow-oom
-- Deletes the fair lock whoever holds it (Redisson forceUnlock) and wakes the
-- next waiter, but never touches a key of another type that carries the name.
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] channel base; ARGV[1] publish
-- command. Reply: 1 deleted, 0 there was no lock.
local name, q, t = KEYS[1], KEYS[2], KEYS[3]
local ty = redis.call('type', name)['ok']
if ty ~= 'none' and ty ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
while true do
  local head = redis.call('lindex', q, 0)
  if not head then break end
  local deadline = redis.call('zscore', t, head)
  if deadline and tonumber(deadline) > now then break end
  redis.call('lpop', q)
  redis.call('zrem', t, head)
end
if ty == 'none' then
  return 0
end
redis.call('del', name)
local head = redis.call('lindex', q, 0)
if head then
  redis.pcall(ARGV[1], KEYS[4] .. ':' .. head, '0')
end
return 1
