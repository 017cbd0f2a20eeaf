-- Reentrant lock acquire; the data it writes is Redisson RLock's (hash NAME,
-- field OWNER -> hold count, PEXPIRE lease).
-- KEYS[1] lock name; ARGV[1] lease ms, ARGV[2] owner "UUID:TID",
-- ARGV[3] hold count the owner had before this call, or -1 when unknown
-- (owners shared between objects).
-- Reply (private to latchkey): {count} when acquired, else the holder's PTTL.
-- When the count is already one above ARGV[3], an earlier attempt whose reply
-- was lost did acquire: report it instead of counting twice.
local held = redis.call('hget', KEYS[1], ARGV[2])
local before = tonumber(ARGV[3])
if held and before >= 0 and tonumber(held) == before + 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {tonumber(held)}
end
if held or redis.call('exists', KEYS[1]) == 0 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {count}
end
return redis.call('pttl', KEYS[1])
