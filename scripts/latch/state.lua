#!lua flags=no-writes
-- Reads what an awaiter or get_count decides on, in one round trip.
-- KEYS[1] latch name (Redisson's count), KEYS[2] latchkey's "opened" marker,
-- KEYS[3] latchkey's deletion tombstone.
-- Reply (private to latchkey): {count or nil, marker 1/0, tombstone or nil}.
-- GET fails with WRONGTYPE when the name holds something else.
local count = redis.call('get', KEYS[1])
return {count, redis.call('exists', KEYS[2]), redis.call('get', KEYS[3])}
