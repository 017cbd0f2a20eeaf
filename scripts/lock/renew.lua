#!lua flags=allow-oom
-- Watchdog renewal for a chunk of locks (Redisson's multi-key renewal):
-- extends only where the owner still holds the key. Runs under maxmemory
-- too: keeping a held lock alive must not fail when acquires are refused.
-- KEYS[i] lock names; ARGV[1] lease ms, ARGV[i + 1] the owner of KEYS[i].
-- Reply: one 1 (extended), 0 (the key is gone) or -1 (the key is another
-- owner's) per key; 0 and -1 both mean lost, the sign says why
-- (docs/metrics.md).
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = -redis.call('exists', KEYS[i])
  end
end
return out
