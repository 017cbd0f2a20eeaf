-- Rate limiter: set the configuration unless one is set (Redisson's
-- trySetRate). KEYS[1] NAME; ARGV[1] rate, ARGV[2] interval ms, ARGV[3]
-- type (0 OVERALL, 1 PER_CLIENT), ARGV[4] keepAliveTime ms (0 = none).
-- Each field is set only where absent, in Redisson's order; the reply is
-- whether the type was set (1) or found (0). A keep-alive is applied to the
-- hash when this call set it.
redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
return set
