#!lua flags=allow-oom
-- Watchdog renewal for a chunk of holds in the lean layout (see
-- scripts/lean/acquire.lua), batched as scripts/lock/renew.lua batches the hash
-- layout's: extends only where the value is still the owner.
-- KEYS[i] lock names; ARGV[1] lease ms, ARGV[i + 1] the owner of KEYS[i].
-- Reply: one 1 (extended), 0 (the key is gone) or -1 (the key is another
-- owner's, or not a string: a WRONGTYPE here is not this owner's) per key.
local out = {}
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if v == ARGV[i + 1] then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  elseif v == false then
    out[i] = 0
  else
    out[i] = -1
  end
end
return out
