-- Double barrier: one attempt of a member to enter (docs/barrier.md).
-- KEYS[1] state (hash: round, released 0/1, n), KEYS[2] members (zset:
-- member -> lease deadline, server ms), KEYS[3] dropped (zset: round ..
-- ':e:' or ':l:' .. member -> round), KEYS[4] channel.
-- ARGV[1] member, ARGV[2] lease ms, ARGV[3] N, ARGV[4] the round this
-- member registered in (0: none yet), ARGV[5] publish command, ARGV[6] how
-- long idle keys are kept, ms.
-- Reply: {1, round, dropped during the enter phase} entered (released);
-- {0, round registered in (0: not registered), ms until the next lease
-- deadline of another member (-1: none)} wait; {-1, round} this member was
-- dropped; {-3, round's N} the round's members were entered with another N.
-- Re-sent after a lost reply it is applied once: ZADD of the same member.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local round = tonumber(redis.call('hget', KEYS[1], 'round') or '0') or 0
if round == 0 then
  round = 1
  redis.call('hset', KEYS[1], 'round', 1, 'released', 0)
end
local released = redis.call('hget', KEYS[1], 'released') == '1'
local me, mine = ARGV[1], tonumber(ARGV[4])

local function keep()
  for i = 1, 3 do
    redis.call('pexpire', KEYS[i], ARGV[6])
  end
end

-- Drops the members whose lease ran out, noting the phase they were in.
local function drop_expired()
  local gone = redis.call('zrangebyscore', KEYS[2], '-inf', now)
  local tag = round .. (released and ':l:' or ':e:')
  for _, m in ipairs(gone) do
    redis.call('zrem', KEYS[2], m)
    redis.call('zadd', KEYS[3], round, tag .. m)
  end
end

local function dropped(phase)
  local out, prefix = {}, round .. phase
  for _, d in ipairs(redis.call('zrangebyscore', KEYS[3], round, round)) do
    if string.sub(d, 1, #prefix) == prefix then
      out[#out + 1] = string.sub(d, #prefix + 1)
    end
  end
  return out
end

local function next_deadline()
  local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
  if #first == 0 then
    return -1
  end
  local left = tonumber(first[2]) - now
  return left > 0 and left or 0
end

-- The round this member registered in was released and ended without it.
if mine > 0 and mine < round then
  return {-1, mine}
end
if released then
  if mine == round then
    if redis.call('zscore', KEYS[2], me) then
      return {1, round, dropped(':e:')}
    end
    return {-1, round}
  end
  -- A late member: it joins the next round, once this one has ended.
  drop_expired()
  if redis.call('zcard', KEYS[2]) > 0 then
    return {0, 0, next_deadline()}
  end
  -- Every member's lease ran out: the round ends here.
  redis.call('zremrangebyscore', KEYS[3], '-inf', round - 1)
  redis.pcall(ARGV[5], KEYS[4], 'F' .. round)
  round = round + 1
  released = false
  redis.call('hset', KEYS[1], 'round', round, 'released', 0)
  redis.call('hdel', KEYS[1], 'n')
end
local n = tonumber(redis.call('hget', KEYS[1], 'n') or '0') or 0
drop_expired()
if n > 0 and n ~= tonumber(ARGV[3]) and redis.call('zcard', KEYS[2]) > 0 and
   not redis.call('zscore', KEYS[2], me) then
  return {-3, n}
end
redis.call('hset', KEYS[1], 'n', ARGV[3])
redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), me)
redis.call('zrem', KEYS[3], round .. ':e:' .. me)
keep()
if redis.call('zcard', KEYS[2]) >= tonumber(ARGV[3]) then
  redis.call('hset', KEYS[1], 'released', 1)
  -- pcall: a user without channel permission still enters; waiters then
  -- see the release at their next re-poll.
  redis.pcall(ARGV[5], KEYS[4], 'R' .. round)
  return {1, round, dropped(':e:')}
end
return {0, round, -1}
