#!lua flags=allow-oom
-- Deletes the lock in either mode, whoever holds it, with the hold keys of
-- its readers, and wakes every waiter ('1'). Never touches a key of another
-- type that carries the name.
-- KEYS[1] NAME, KEYS[2] channel, KEYS[3] the prefix of the hold keys
-- ("{NAME}", or NAME when it has a brace). ARGV[1] publish command.
-- Reply: 1 deleted, 0 there was no lock.
local t = redis.call('type', KEYS[1])['ok']
if t == 'none' then
  return 0
end
if t ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local all = redis.call('hgetall', KEYS[1])
for i = 1, #all, 2 do
  local count = tonumber(all[i + 1])
  if all[i] ~= 'mode' and count then
    local prefix = KEYS[3] .. ':' .. all[i] .. ':rwlock_timeout:'
    -- Bounded: only a corrupt count is larger; leftovers expire.
    for j = 1, math.min(count, 10000) do
      redis.call('del', prefix .. j)
    end
  end
end
redis.call('del', KEYS[1])
redis.pcall(ARGV[1], KEYS[2], '1')
return 1
