-- Semaphore (both kinds): set the number of permits if the semaphore does not
-- exist yet (Redisson trySetPermits), and tell waiters.
-- KEYS[1] NAME, KEYS[2] channel; ARGV[1] permits, ARGV[2] publish command.
-- Reply: 1 set, 0 it existed (left alone).
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.pcall(ARGV[2], KEYS[2], ARGV[1])
return 1
