#!lua flags=no-writes
-- Waiters in the fair lock's queue that are live: a latchkey waiter whose V
-- deadline has not passed (whatever a Redisson acquisition did to its T
-- one), any other entry whose T deadline has not passed. (The dead ones are
-- dropped by the next write that meets them at the head.)
-- KEYS[1] Q, KEYS[2] T, KEYS[3] V (see acquire). Reply: the count.
local q, t, v = KEYS[1], KEYS[2], KEYS[3]
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local n, len, i = 0, redis.call('llen', q), 0
-- In slices, within Lua's unpack limit.
while i < len do
  local ids = redis.call('lrange', q, i, i + 511)
  if #ids == 0 then break end
  local live = redis.call('zmscore', v, unpack(ids))
  local due = redis.call('zmscore', t, unpack(ids))
  for k = 1, #ids do
    local d = live[k] or due[k]
    if d and tonumber(d) > now then
      n = n + 1
    end
  end
  i = i + #ids
end
return n
