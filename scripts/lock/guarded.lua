-- A guarded write (docs/guarded.md): runs one command of a fixed list only
-- while the owner holds the lock (Redisson RLock's layout: hash NAME, field
-- OWNER) and, for a fenced hold, only while its token is the newest the
-- name's counter issued. Atomic: nothing runs between the check and the
-- write, so a holder whose lease ran out (a paused process) cannot write
-- over the next holder's data.
-- KEYS[1] lock name, KEYS[2] the name's fencing-token key, KEYS[3..] the
-- command's keys (one slot with the lock: core/guard.c checks it first);
-- ARGV[1] owner, ARGV[2] the hold's token or '0' (not fenced), ARGV[3] the
-- command, ARGV[4] 'keys' when every argument is a key (DEL), else 'first'
-- (KEYS[3] is its first argument, ARGV[5..] the rest).
-- Reply: the command's; an error whose first word is LK_GUARD when refused
-- (nothing was written).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return redis.error_reply('LK_GUARD the lock is not held by this owner')
end
if ARGV[2] ~= '0' and redis.call('get', KEYS[2]) ~= ARGV[2] then
  return redis.error_reply('LK_GUARD a newer fencing token was issued for the lock')
end
if ARGV[4] == 'keys' then
  return redis.call(ARGV[3], unpack(KEYS, 3))
end
return redis.call(ARGV[3], KEYS[3], unpack(ARGV, 5))
