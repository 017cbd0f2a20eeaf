-- RedLock fencing: after winning a quorum, the token T chosen for the win
-- (one above the largest token the granting masters handed out) is written
-- back to each granting master, so that any later quorum, which shares at
-- least one master with this one, INCRs from at least T. Only ever raises the
-- counter (Redisson RFencedLock's key: a string that never expires).
-- A counter found absent (the master restarted without persistence since
-- the acquire) is set to the larger of T and the server's clock in
-- microseconds, as the acquire scripts seed it (docs/lock.md, "Fencing
-- tokens"). Values stay below 2^53 (exact in Lua's numbers); the key is only
-- ever SET from strings.
-- KEYS[1] token key; ARGV[1] T.
-- Reply: the counter's value afterwards (>= T).
local t = tonumber(ARGV[1])
local raw = redis.call('get', KEYS[1])
if not raw then
  local clock = redis.call('time')
  local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
  if tonumber(seed) < t then
    seed = ARGV[1]
  end
  redis.call('set', KEYS[1], seed)
  return tonumber(seed)
end
local now = tonumber(raw)
if now == nil then
  return redis.error_reply('WRONGTYPE fencing token key is not a number')
end
if now < t then
  redis.call('set', KEYS[1], ARGV[1])
  return t
end
return now
