#!lua flags=allow-oom
-- Watchdog renewal of write holds for a chunk of locks. Extends only where
-- the owner still holds the write side, and never shortens the hash's life
-- (this owner's read holds may need longer). Runs under maxmemory too.
-- KEYS[i] lock names; ARGV[1] lease ms, ARGV[i + 1] the writer field.
-- Reply: one 1 (extended), 0 (the key is gone) or -1 (the key is another
-- owner's) per key; 0 and -1 both mean lost (docs/metrics.md).
local lease = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    out[i] = 1
  else
    out[i] = -redis.call('exists', KEYS[i])
  end
end
return out
