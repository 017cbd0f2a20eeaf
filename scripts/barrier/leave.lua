#!lua flags=allow-oom
-- Double barrier: a member leaves (or is taken out), and learns whether
-- every member of its round has left (docs/barrier.md). Runs under
-- maxmemory too: leaving must never be refused.
-- KEYS as scripts/barrier/enter.lua. ARGV[1] member, ARGV[2] the round it
-- entered (0: whatever round is current, for taking out a member whose
-- enter did not answer), ARGV[3] publish command, ARGV[4] how long idle
-- keys are kept, ms, ARGV[5] 'l' leave, 'w' take out (after a failed or
-- canceled enter, or a close).
-- Reply: {1, dropped during the leave phase} the round is over (or, for
-- 'w' and a round not yet released, this member is out); {0, ms until the
-- next lease deadline of a member still in (-1: none)} others are still in;
-- {-1} ('l' only) this member had been dropped.
-- Re-sent after a lost reply it is applied once: ZREM of the same member.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local round = tonumber(redis.call('hget', KEYS[1], 'round') or '0') or 0
local me, r = ARGV[1], tonumber(ARGV[2])
if r == 0 then
  r = round
end

local function dropped(rr)
  local out, prefix = {}, rr .. ':l:'
  for _, d in ipairs(redis.call('zrangebyscore', KEYS[3], rr, rr)) do
    if string.sub(d, 1, #prefix) == prefix then
      out[#out + 1] = string.sub(d, #prefix + 1)
    end
  end
  return out
end

-- The round is over already (or the state is gone: nobody waits in it).
if round == 0 or r ~= round then
  return {1, dropped(r)}
end
local released = redis.call('hget', KEYS[1], 'released') == '1'
local was_in = redis.call('zrem', KEYS[2], me) == 1
if ARGV[5] == 'l' and not was_in and redis.call('zscore', KEYS[3], r .. ':l:' .. me) then
  return {-1}
end
local gone = redis.call('zrangebyscore', KEYS[2], '-inf', now)
local tag = round .. (released and ':l:' or ':e:')
for _, m in ipairs(gone) do
  redis.call('zrem', KEYS[2], m)
  redis.call('zadd', KEYS[3], round, tag .. m)
end
for i = 1, 3 do
  redis.call('pexpire', KEYS[i], ARGV[4])
end
if not released then
  return {1, {}}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if #first > 0 then
  local left = tonumber(first[2]) - now
  return {0, left > 0 and left or 0}
end
-- The last member left: the round ends, the next one starts empty. The
-- dropped records of this round stay until the next one ends, for leavers
-- that look late.
redis.call('zremrangebyscore', KEYS[3], '-inf', round - 1)
redis.call('hset', KEYS[1], 'round', round + 1, 'released', 0)
redis.call('hdel', KEYS[1], 'n')
redis.pcall(ARGV[3], KEYS[4], 'F' .. round)
return {1, dropped(round)}
