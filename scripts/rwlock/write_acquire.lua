-- Write side acquire (Redisson RReadWriteLock layout, see read_acquire.lua).
-- KEYS[1] NAME, KEYS[2] the fencing token key (fenced acquisitions only).
-- ARGV[1] lease ms, ARGV[2] writer field, ARGV[3] reader field, ARGV[4] the
-- write count this owner had before the call, or -1 when unknown, ARGV[5]
-- '1' on a resend after a lost reply, ARGV[6] the lowest acceptable token
-- (fenced).
-- Reply (private to latchkey): {writes, reads[, token, regressed]} when
-- granted, where reads is this owner's read count; 'upgrade' when this owner
-- holds the lock for reading only (waiting would be waiting for itself);
-- else the holder's PTTL.
-- Tokens (both sides share the counter): an absent counter (a restart
-- without persistence, or the name's first fenced use) is seeded from the
-- server's clock in microseconds, never below the floor, so it restarts
-- above every token handed out before, for every client (docs/rwlock.md,
-- "Fencing tokens"); one that exists is only INCRed, as Redisson does.
-- regressed = 1: it existed below the floor (it went backwards while
-- present) and is lifted to it. Values stay below 2^53 (exact in Lua's
-- numbers); the key is only ever SET from strings.
local function granted(writes)
  local reads = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
  if #KEYS < 2 then return {writes, reads} end
  if redis.call('exists', KEYS[2]) == 0 then
    local clock = redis.call('time')
    local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
    if tonumber(seed) < tonumber(ARGV[6]) then
      seed = ARGV[6]
    end
    redis.call('set', KEYS[2], seed)
  end
  local t = redis.call('incr', KEYS[2])
  if t < tonumber(ARGV[6]) then
    -- Went backwards while present: lift the counter, report it.
    redis.call('set', KEYS[2], ARGV[6])
    return {writes, reads, tonumber(ARGV[6]), 1}
  end
  return {writes, reads, t, 0}
end

local before = tonumber(ARGV[4])
local held = redis.call('hget', KEYS[1], ARGV[2])
if held and before >= 0 and ARGV[5] == '1' and tonumber(held) == before + 1 then
  -- A resend: the earlier attempt whose reply was lost took this hold. On a
  -- first attempt such a count is a stale one (below), never this attempt's
  -- grant. The grant takes a fresh token: the counter's current value is
  -- the lost attempt's only if that attempt did apply, which the count
  -- cannot prove in every case, and a token is never handed out twice.
  -- The lease starts again now, as the object dates it from this resend
  -- (never shortened: as for a re-entry below).
  local lease = tonumber(ARGV[1])
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return granted(before + 1)
end

-- A re-entry (the object counts write holds) that finds none of this
-- owner's: they were lost (expired, deleted, force-released) and someone
-- else may have held the lock since. Nothing is granted: a grant here,
-- taken by an attempt whose caller stopped waiting for it, would let the
-- object's next re-entry go on counting across that gap. The object
-- reports the loss.
if not held and before > 0 then
  return {0, tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')}
end

local lease = tonumber(ARGV[1])
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  if redis.call('exists', KEYS[1]) == 1 then
    -- Not a read/write lock (a hash without a mode): never take it over.
    return redis.call('pttl', KEYS[1])
  end
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return granted(1)
end
if mode == 'write' and held then
  if before >= 0 and tonumber(held) > before then
    -- Holds of this owner the object no longer counts (a give-back that was
    -- lost, a release whose outcome stayed unknown). The owner still writes,
    -- so nobody else held the lock in between: restart the count from the
    -- object's, so its releases free the lock, and take a fresh token.
    -- (Fewer than the object counts is counted on: the object sees the
    -- jump and reports the loss.)
    redis.call('hset', KEYS[1], ARGV[2], before)
  end
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  -- Re-entry: the lease is at least the new one; a longer time left (this
  -- owner's read holds, an earlier longer lease) is kept.
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return granted(n)
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return 'upgrade'
end
return redis.call('pttl', KEYS[1])
