#!lua flags=allow-oom
-- Watchdog renewal of write holds for a chunk of locks. Extends only where
-- the owner still holds the write side, and never shortens the hash's life
-- (this owner's read holds may need longer). Runs under maxmemory too.
-- KEYS[i] lock names; ARGV[1] lease ms, ARGV[i + 1] the writer field.
-- Reply: one 1 (extended) or 0 (not held by that owner) per key.
local lease = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
