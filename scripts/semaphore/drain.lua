-- Counting semaphore: take every available permit (Redisson drainPermits).
-- A count at or below zero is left as it is (Redisson would raise a
-- negative count to 0, inventing permits).
-- KEYS[1] NAME, KEYS[2] this object's request mark (private, with a TTL).
-- ARGV[1] request number r, ARGV[2] mark TTL in ms.
-- The mark is numbered as for acquire (2r applied, 2r+1 settled); a drain
-- that took permits writes "2r:n", so a resend reports what the first
-- attempt took instead of taking more, and a settle (settle.lua) knows how
-- many to give back. A drain that took none writes nothing.
-- Reply (private): {1, n} n permits taken (now, or by an earlier attempt of
-- the same request); {0} the request was settled already.
local m = redis.call('get', KEYS[2]) or '0'
local mark = tonumber(string.match(m, '^%d+'))
local req = tonumber(ARGV[1])
if mark == 2 * req then
  return {1, tonumber(string.match(m, ':(%d+)$') or '0')}
end
if mark > 2 * req then
  return {0}
end
local v = redis.call('get', KEYS[1])
if not v then
  return {1, 0}
end
local n = tonumber(v)
if n == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
if n <= 0 then
  return {1, 0}
end
redis.call('set', KEYS[1], 0, 'keepttl')
redis.call('set', KEYS[2], string.format('%d:%d', 2 * req, n), 'px', ARGV[2])
return {1, n}
