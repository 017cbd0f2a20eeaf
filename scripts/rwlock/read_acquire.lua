-- Read side acquire. The data is Redisson RReadWriteLock's: hash NAME with
-- field 'mode' = 'read' / 'write', reader field "UUID:TID" -> hold count,
-- writer field "UUID:TID:write" -> hold count; every read hold i has its own
-- key "<TP>:i" (value 1) carrying that hold's lease.
-- KEYS[1] NAME, KEYS[2] TP = "{NAME}:UUID:TID:rwlock_timeout", KEYS[3] the
-- fencing token key (fenced acquisitions only).
-- ARGV[1] lease ms, ARGV[2] reader field, ARGV[3] writer field, ARGV[4] the
-- read count this owner had before the call, or -1 when unknown (owners
-- shared between objects), ARGV[5] '1' on a resend after a lost reply,
-- ARGV[6] the lowest acceptable token (fenced).
-- Reply (private to latchkey): {reads, writes[, token, regressed]} when
-- granted, where writes is this owner's write count; else the holder's PTTL.
-- Tokens: see write_acquire.lua (an absent counter is seeded from the
-- server's clock; one below the floor is lifted and reported).
local function token()
  if #KEYS < 3 then return nil end
  if redis.call('exists', KEYS[3]) == 0 then
    local clock = redis.call('time')
    local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
    if tonumber(seed) < tonumber(ARGV[6]) then
      seed = ARGV[6]
    end
    redis.call('set', KEYS[3], seed)
  end
  local t = redis.call('incr', KEYS[3])
  if t < tonumber(ARGV[6]) then
    -- The counter went backwards while present (set back by hand, say):
    -- lift it so tokens never go backwards again, and say so.
    redis.call('set', KEYS[3], ARGV[6])
    return tonumber(ARGV[6]), 1
  end
  return t, 0
end

local function granted(reads)
  local writes = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
  if #KEYS < 3 then return {reads, writes} end
  local t, regressed = token()
  return {reads, writes, t, regressed}
end

local before = tonumber(ARGV[4])
local held = redis.call('hget', KEYS[1], ARGV[2])

-- True when every hold the object counts (1..before, the newest 10000 at
-- most: the loops' bound, see read_release.lua) still has its key.
local function counted_live()
  for i = before, math.max(1, before - 9999), -1 do
    if redis.call('exists', KEYS[2] .. ':' .. i) == 0 then
      return false
    end
  end
  return true
end

if held and before >= 0 and ARGV[5] == '1' and tonumber(held) == before + 1 and
   redis.call('exists', KEYS[2] .. ':' .. held) == 1 and counted_live() then
  -- A resend: the earlier attempt whose reply was lost took this hold.
  -- Report it instead of counting twice. Only while that hold's own key
  -- lives, and every hold the object counts too: a field left from holds
  -- that expired is no grant (another owner's release may count it dead
  -- and delete the lock at any moment), and dead holds are never revived;
  -- it is counted afresh below, and the object sees the count jump and
  -- reports the loss. On a first attempt such a count is a stale one, never
  -- this attempt's grant (below). The lost attempt's token never reached
  -- anyone, and other readers may have taken tokens since (the counter's
  -- value may be theirs): this grant gets a fresh one. The hold's lease
  -- starts again now, as the object dates it from this resend.
  local lease = tonumber(ARGV[1])
  redis.call('pexpire', KEYS[2] .. ':' .. held, lease)
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return granted(before + 1)
end

-- A re-entry (the object counts read holds) that finds none of this
-- owner's: they were lost and someone else may have held the lock since.
-- Nothing is granted (see write_acquire.lua); the object reports the loss.
-- The keys of the holds it counted are dead with the field: they go too.
if not held and before > 0 then
  for i = before, math.max(1, before - 9999), -1 do
    redis.call('del', KEYS[2] .. ':' .. i)
  end
  return {0, tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')}
end

local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  if redis.call('exists', KEYS[1]) == 1 then
    -- A hash without a mode is not a read/write lock (an RLock of the same
    -- name, say): never take it over.
    return redis.call('pttl', KEYS[1])
  end
  redis.call('hset', KEYS[1], 'mode', 'read')
elseif mode == 'write' then
  -- Only the writer itself may read while the lock is write-locked.
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return redis.call('pttl', KEYS[1])
  end
elseif mode ~= 'read' then
  return redis.call('pttl', KEYS[1])
end

if held and before >= 0 and tonumber(held) > before and counted_live() then
  -- Holds of this owner the object no longer counts (a give-back that was
  -- lost). Every hold it does count lives, so the owner read all along and
  -- nobody wrote in between: restart the count from the object's (the
  -- uncounted holds' keys go with it), so its releases free the lock, and
  -- take a fresh token. When a counted hold's key is gone the count is not
  -- restarted: those holds are lost, never revived; it is counted on from
  -- the stale value below, and the object sees the count jump and reports
  -- the loss.
  for i = before + 1, math.min(tonumber(held), before + 10000) do
    redis.call('del', KEYS[2] .. ':' .. i)
  end
  redis.call('hset', KEYS[1], ARGV[2], before)
end
local lease = tonumber(ARGV[1])
local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', lease)
-- The hash lives as long as its longest hold: extend it, never shorten it.
if redis.call('pttl', KEYS[1]) < lease then
  redis.call('pexpire', KEYS[1], lease)
end
return granted(n)
