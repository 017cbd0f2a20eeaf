#!lua flags=allow-oom
-- Fair lock release: drops n holds; the last one deletes the lock and wakes
-- the next waiter in line (only that one: its own channel). Runs under
-- maxmemory too (allow-oom): a release must work when acquires are refused.
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] channel base (waiter channels
-- are base:OWNER), KEYS[5] V (latchkey's waiters, see acquire); ARGV[1]
-- lease ms (re-applied while still held), ARGV[2] owner, ARGV[3] publish
-- command, ARGV[4] the count before the first attempt when this is a resend
-- after a lost reply (else -1), ARGV[5] n.
-- Reply: nil = this owner holds nothing, 0 = still held, 1 = released.
local name, q, t, v = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local held = redis.call('hget', name, ARGV[2])

-- Wakes the next waiter once the lock is free. As in acquire: first drop
-- the silent waiters at the head (a latchkey waiter by its V deadline, any
-- other entry by its T deadline, as Redisson judges it), and give a live
-- latchkey head a T deadline no earlier than its V one back, so Redisson's
-- scripts keep it too. What remains is next: only that one is told (its own
-- channel). A release that leaves the lock held touches none of this.
local function wake_next()
  local clock = redis.call('time')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local head
  while true do
    head = redis.call('lindex', q, 0)
    if not head then return end
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
  -- pcall: a user without channel permission still releases; waiters
  -- then find out by polling.
  redis.pcall(ARGV[3], KEYS[4] .. ':' .. head, '0')
end

local before = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
if before >= 0 then
  local count = held and tonumber(held) or 0
  if count == before - n or (count == 0 and before <= n) then
    -- The lost attempt was applied already.
    if count > 0 then return 0 end
    return 1
  end
end
if not held then
  if redis.call('exists', name) == 0 then
    wake_next() -- free: whoever is next should not wait for a re-poll
  end
  return nil
end
local left = tonumber(held) - n
if left > 0 then
  redis.call('hset', name, ARGV[2], left)
  redis.call('pexpire', name, ARGV[1])
  return 0
end
redis.call('del', name)
wake_next()
return 1
