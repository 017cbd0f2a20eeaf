-- RedLock fencing: after winning a quorum, the token T chosen for the win
-- (one above the largest token the granting masters handed out) is written
-- back to each granting master, so that any later quorum, which shares at
-- least one master with this one, INCRs from at least T. Only ever raises the
-- counter (Redisson RFencedLock's key: a string that never expires).
-- KEYS[1] token key; ARGV[1] T.
-- Reply: the counter's value afterwards (>= T).
local t = tonumber(ARGV[1])
local now = tonumber(redis.call('get', KEYS[1]) or '0')
if now == nil then
  return redis.error_reply('WRONGTYPE fencing token key is not a number')
end
if now < t then
  redis.call('set', KEYS[1], ARGV[1])
  return t
end
return now
