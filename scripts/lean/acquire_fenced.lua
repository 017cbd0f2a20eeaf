-- The lean layout (see scripts/lean/acquire.lua) that also takes a
-- fencing token from Redisson RFencedLock's counter key, exactly as
-- scripts/lock/acquire_fenced.lua does (read it for the counter's rules).
-- KEYS[1] lock name, KEYS[2] token key; ARGV[1] lease ms, ARGV[2] owner,
-- ARGV[3] hold count before this call or -1, ARGV[4] the lowest token this
-- client may accept, ARGV[5] '1' on a resend after a lost reply.
-- Reply: {count, token, regressed} when acquired, else the holder's PTTL.
-- A resend that finds its own value gets a fresh token (a token is never
-- handed out twice).
local function token()
  if redis.call('exists', KEYS[2]) == 0 then
    local clock = redis.call('time')
    local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
    if tonumber(seed) < tonumber(ARGV[4]) then
      seed = ARGV[4]
    end
    redis.call('set', KEYS[2], seed)
  end
  local t = redis.call('incr', KEYS[2])
  if t < tonumber(ARGV[4]) then
    redis.call('set', KEYS[2], ARGV[4])
    return tonumber(ARGV[4]), 1
  end
  return t, 0
end

local before = tonumber(ARGV[3])
local count = nil
if before <= 0 and redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
  count = 1
else
  local v = redis.call('get', KEYS[1])
  if v == ARGV[2] then
    redis.call('pexpire', KEYS[1], ARGV[1])
    count = before < 0 and 1 or before + 1
  elseif not v then
    return {0}
  else
    return redis.call('pttl', KEYS[1])
  end
end
local t, regressed = token()
return {count, t, regressed}
