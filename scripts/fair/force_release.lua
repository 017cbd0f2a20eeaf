#!lua flags=allow-oom
-- Deletes the fair lock whoever holds it (Redisson forceUnlock) and wakes the
-- next waiter, but never touches a key of another type that carries the name.
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] channel base, KEYS[5] V
-- (latchkey's waiters, see acquire); ARGV[1] publish command. Reply: 1
-- deleted, 0 there was no lock.
local name, q, t, v = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local ty = redis.call('type', name)['ok']
if ty ~= 'none' and ty ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
-- As in acquire: drop the silent waiters at the head (a latchkey waiter by
-- its V deadline, any other entry by its T deadline, as Redisson judges it),
-- and give a live latchkey head a T deadline no earlier than its V one, so
-- Redisson's scripts keep it too. What remains is next.
local head
while true do
  head = redis.call('lindex', q, 0)
  if not head then break end
  local live = tonumber(redis.call('zscore', v, head))
  local due = tonumber(redis.call('zscore', t, head))
  if live then
    if live > now then
      if not due or due < live then
        redis.call('zadd', t, live, head)
      end
      break
    end
  elseif due and due > now then
    break
  end
  redis.call('lpop', q)
  redis.call('zrem', t, head)
  redis.call('zrem', v, head)
end
if ty == 'none' then
  return 0
end
redis.call('del', name)
if head then
  redis.pcall(ARGV[1], KEYS[4] .. ':' .. head, '0')
end
return 1
