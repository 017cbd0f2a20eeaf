#!lua flags=allow-oom
-- Watchdog renewal for a chunk of locks (Redisson's multi-key renewal):
-- extends only where the owner still holds the key. Runs under maxmemory
-- too: keeping a held lock alive must not fail when acquires are refused.
-- KEYS[i] lock names; ARGV[1] lease ms, ARGV[i + 1] the owner of KEYS[i].
-- Reply: one 1 (extended) or 0 (not held by that owner) per key.
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
