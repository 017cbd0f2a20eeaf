#!lua flags=allow-oom
-- Counting semaphore: settle an acquire or a drain whose outcome the object
-- never learnt (its reply was lost, or it was canceled or timed out in
-- flight). If request r took permits they go back now; either way the mark
-- moves to 2r+1, so a copy of the attempt still on its way does nothing.
-- KEYS[1] NAME, KEYS[2] channel, KEYS[3] the object's request mark.
-- ARGV[1] n (an acquire's count; a drain's is in the mark, "2r:n"),
-- ARGV[2] request number r, ARGV[3] mark TTL in ms, ARGV[4] publish command.
-- Reply: 1 permits given back, 0 nothing was taken.
local m = redis.call('get', KEYS[3]) or '0'
local mark = tonumber(string.match(m, '^%d+'))
local req = tonumber(ARGV[2])
if mark > 2 * req then
  return 0
end
redis.call('set', KEYS[3], 2 * req + 1, 'px', ARGV[3])
local n = string.match(m, ':(%d+)$') or ARGV[1]
if mark == 2 * req and tonumber(n) > 0 then
  local v = redis.call('incrby', KEYS[1], n)
  redis.pcall(ARGV[4], KEYS[2], v)
  return 1
end
return 0
