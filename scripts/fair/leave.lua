#!lua flags=allow-oom
-- A waiter stops waiting (canceled, timed out, closed, or an attempt was
-- left behind): it leaves the queue and the deadline set, and gives back
-- holds an abandoned attempt may have taken. Runs under maxmemory too.
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] channel base, KEYS[5] V
-- (latchkey's waiters, see acquire); ARGV[1] owner,
-- ARGV[2] publish command, ARGV[3] condition: -1 always, else only when the
-- owner's count is exactly this, ARGV[4] holds to drop: 0 none, -1 all.
-- Reply: 1 when holds were dropped, else 0.
local name, q, t, v = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local owner = ARGV[1]
local held = redis.call('hget', name, owner)
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local was_next = redis.call('lindex', q, 0) == owner
redis.call('lrem', q, 0, owner)
redis.call('zrem', t, owner)
redis.call('zrem', v, owner)
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

local dropped = 0
local cond, n = tonumber(ARGV[3]), tonumber(ARGV[4])
if held and n ~= 0 and (cond < 0 or tonumber(held) == cond) then
  local left = 0
  if n > 0 then left = tonumber(held) - n end
  if left > 0 then
    redis.call('hset', name, owner, left)
  else
    redis.call('del', name)
  end
  dropped = 1
end
-- The lock is free and the next waiter may be waiting on us (we were next,
-- or we just released): wake it rather than let it wait for a re-poll.
if (was_next or dropped == 1) and redis.call('exists', name) == 0 then
  if head then
    redis.pcall(ARGV[2], KEYS[4] .. ':' .. head, '0')
  end
end
return dropped
