#!lua flags=allow-oom
-- Watchdog renewal of one permit-expirable semaphore holder while its slot
-- is being migrated with its keys split between the two nodes
-- (src/core/watchdog.c): it names only {NAME}:timeout, so the source serves
-- it while it has the set and the target does through ASK once it moved,
-- where psem_renew.lua, which names NAME too, meets TRYAGAIN for as long as
-- the split lasts. Expired permits are not reclaimed here (that writes
-- NAME); every other script reclaims them. Runs under maxmemory too.
-- KEYS[1] {NAME}:timeout; ARGV[1] lease ms, ARGV[2] the holder's ids, 16
-- bytes each, back to back.
-- Reply: {1} renewed, {0} some permit is gone or expired (psem_renew.lua's
-- reply for one holder).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = ARGV[2]
for j = 1, #ids, 16 do
  local score = redis.call('zscore', KEYS[1], string.sub(ids, j, j + 15))
  -- An expired permit is as good as gone: another script reclaims it.
  if not score or tonumber(score) <= now then
    return {0}
  end
end
local expiry = now + tonumber(ARGV[1])
for j = 1, #ids, 16 do
  redis.call('zadd', KEYS[1], 'XX', expiry, string.sub(ids, j, j + 15))
end
return {1}
