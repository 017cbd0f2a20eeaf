-- Counting semaphore: take n permits (Redisson RSemaphore's layout: string
-- NAME = available permits; absent = 0).
-- KEYS[1] NAME, KEYS[2] this object's request mark (private, with a TTL).
-- ARGV[1] n, ARGV[2] request number r, ARGV[3] mark TTL in ms.
-- The mark holds 2r once request r of this object was applied and 2r+1 once
-- it was settled (given back or voided). Requests of one object are
-- numbered in order and never overlap, so one number tells whether a resent
-- attempt already took its permits, and a stale copy of a settled request
-- does nothing.
-- Reply (private): {1, available after} acquired (now, or by an earlier
-- attempt of the same request); {0} the request was settled already;
-- -1 not enough permits.
-- (A drain's mark carries its count after a colon: "2r:n".)
local mark = tonumber(string.match(redis.call('get', KEYS[2]) or '0', '^%d+'))
local req = tonumber(ARGV[2])
if mark == 2 * req then
  return {1, tonumber(redis.call('get', KEYS[1]) or '0')}
end
if mark > 2 * req then
  return {0}
end
local avail = tonumber(redis.call('get', KEYS[1]) or '0')
if avail == nil then
  return redis.error_reply('ERR semaphore value is not an integer')
end
local n = tonumber(ARGV[1])
if avail < n then
  return -1
end
redis.call('decrby', KEYS[1], n)
redis.call('set', KEYS[2], 2 * req, 'px', ARGV[3])
return {1, avail - n}
