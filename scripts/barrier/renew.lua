#!lua flags=allow-oom
-- Double barrier: renews a member's lease while it is in its round
-- (docs/barrier.md). Runs under maxmemory too: staying in must not fail
-- when new writes are refused.
-- KEYS[1] state, KEYS[2] members, KEYS[3] dropped; ARGV[1] member,
-- ARGV[2] its round, ARGV[3] lease ms, ARGV[4] how long idle keys are kept.
-- Reply: 1 renewed, 0 this member is not in its round any more.
if redis.call('hget', KEYS[1], 'round') ~= ARGV[2] or
   not redis.call('zscore', KEYS[2], ARGV[1]) then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zadd', KEYS[2], 'xx', now + tonumber(ARGV[3]), ARGV[1])
for i = 1, 3 do
  redis.call('pexpire', KEYS[i], ARGV[4])
end
return 1
