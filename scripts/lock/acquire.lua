-- Reentrant lock acquire; the data it writes is Redisson RLock's (hash NAME,
-- field OWNER -> hold count, PEXPIRE lease).
-- KEYS[1] lock name; ARGV[1] lease ms, ARGV[2] owner "UUID:TID",
-- ARGV[3] hold count the owner had before this call, or -1 when unknown
-- (owners shared between objects), ARGV[4] '1' on a resend after a lost
-- reply, ARGV[5] '0' for a non-reentrant acquire (else '1').
-- Reply (private to latchkey): {count} when acquired, else the holder's PTTL;
-- a non-reentrant acquire that finds the owner holding gets an error whose
-- first word is NON_REENTRANT_REACQUIRE, as from Redisson's non-reentrant
-- lock, and changes nothing.
-- On a resend, a count already one above ARGV[3] means the attempt whose
-- reply was lost did acquire: reported instead of counting twice. On a first
-- attempt that count is a stale one, and is not taken for a grant.
-- PTTL first: a free name (-2, no key) has no hold to read, so an
-- uncontended acquire runs three commands (PTTL, HINCRBY, PEXPIRE), not
-- four; on a busy name the same PTTL is the try's reply. A key that is
-- not a hash still fails the HGET with WRONGTYPE.
local ttl = redis.call('pttl', KEYS[1])
local held = false
if ttl ~= -2 then
  held = redis.call('hget', KEYS[1], ARGV[2])
end
local before = tonumber(ARGV[3])
-- Non-reentrant (Redisson's non-reentrant lock): any hold of this owner
-- refuses, before anything is written, except the one a resend finds one
-- above the count the object had: its own attempt whose reply was lost. (A
-- counted owner comes with 0 holds: the object refuses its own re-entry
-- before sending.)
if held and ARGV[5] == '0'
    and not (ARGV[4] == '1' and before >= 0 and tonumber(held) == before + 1) then
  return redis.error_reply('NON_REENTRANT_REACQUIRE the owner already holds the lock')
end
if held and before >= 0 then
  if ARGV[4] == '1' and tonumber(held) == before + 1 then
    -- A resend: the attempt whose reply was lost did acquire.
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {tonumber(held)}
  end
  if tonumber(held) > before then
    -- Holds of this owner the object no longer counts (a release whose
    -- outcome stayed unknown did not apply). The owner still holds the lock,
    -- so nobody else held it in between: restart the count from the
    -- object's, so the next release frees it. (Fewer than the object counts
    -- is counted on: the object sees the jump and reports the loss.)
    redis.call('hset', KEYS[1], ARGV[2], before)
  end
end
-- A re-entry (the object counts holds) that finds none of this owner's:
-- they were lost (expired, deleted, force-released) and someone else may
-- have held the lock since. Nothing is granted: a grant here, taken by an
-- attempt whose caller stopped waiting for it, would let the object's next
-- re-entry go on counting across that gap. The object reports the loss.
if not held and before > 0 then
  return {0}
end
if held or ttl == -2 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {count}
end
return ttl
