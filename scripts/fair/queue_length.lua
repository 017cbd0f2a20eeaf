#!lua flags=no-writes
-- Waiters in the fair lock's queue whose deadline has not passed (the dead
-- ones are dropped by the next write that meets them at the head).
-- KEYS[1] T (the deadline zset). Reply: the count.
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
return redis.call('zcount', KEYS[1], '(' .. now, '+inf')
