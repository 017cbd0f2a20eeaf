#!lua flags=allow-oom
-- Leader election: renews the leadership's lease while it is still this
-- owner's, for this term. Runs under maxmemory too: keeping a leadership
-- must not fail when new writes are refused.
-- KEYS[1] holder; ARGV[1] lease ms, ARGV[2] owner, ARGV[3] term.
-- Reply: 1 renewed, 0 the leadership is gone (expired, taken, deleted).
if redis.call('hget', KEYS[1], 'owner') == ARGV[2] and
   redis.call('hget', KEYS[1], 'term') == ARGV[3] then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
