#!lua flags=allow-oom
-- Permit-expirable semaphore: give back permits by id. Expired permits are
-- reclaimed first, so a permit whose lease ended comes back once (through
-- the reclaim), never twice. An id that is gone adds nothing: a resend
-- after a lost reply never creates a permit.
-- KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3] channel.
-- ARGV[1] ids, 16 bytes each, back to back, ARGV[2] publish command.
-- Reply (private): {released by this call, available after}.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
local removed = 0
local ids = ARGV[1]
for i = 1, #ids, 16 do
  removed = removed + redis.call('zrem', KEYS[2], string.sub(ids, i, i + 15))
end
if expired + removed > 0 then
  local v = redis.call('incrby', KEYS[1], expired + removed)
  redis.pcall(ARGV[2], KEYS[3], v)
  return {removed, v}
end
return {0, tonumber(redis.call('get', KEYS[1]) or '0') or 0}
