-- Rate limiter: overwrite the configuration (Redisson's setRate). KEYS as
-- in acquire.lua; ARGV as in try_set_rate.lua. As Redisson does, the window
-- of the NEW type starts afresh (its value key and permits zset go: for
-- PER_CLIENT, this client's only); a keep-alive is applied to the hash.
redis.call('hset', KEYS[1], 'rate', ARGV[1])
redis.call('hset', KEYS[1], 'interval', ARGV[2])
redis.call('hset', KEYS[1], 'type', ARGV[3])
redis.call('hset', KEYS[1], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
if ARGV[3] == '1' then
  redis.call('del', KEYS[3], KEYS[5])
else
  redis.call('del', KEYS[2], KEYS[4])
end
return 1
