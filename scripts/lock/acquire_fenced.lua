-- Reentrant lock acquire that also takes a fencing token: Redisson
-- RFencedLock's layout (token key INCRed on every acquisition, re-entry
-- included, never expiring).
-- KEYS[1] lock name, KEYS[2] token key; ARGV[1] lease ms, ARGV[2] owner,
-- ARGV[3] hold count before this call or -1 (see acquire.lua), ARGV[4] the
-- lowest token this client may accept (one above the highest it has seen),
-- ARGV[5] '1' on a resend after a lost reply (see acquire.lua), ARGV[6] '0'
-- for a non-reentrant acquire (else '1'; see acquire.lua).
-- Reply: {count, token, regressed} when acquired, else the holder's PTTL, or
-- the NON_REENTRANT_REACQUIRE error (see acquire.lua).
-- An absent counter (a restart without persistence, or the name's first
-- fenced use) is seeded from the server's clock in microseconds, and never
-- below the floor, before the INCR: a restarted counter starts above every
-- token handed out before, for every client (docs/lock.md, "Fencing
-- tokens", says what this assumes). A counter that exists is only ever
-- INCRed, as Redisson RFencedLock does.
-- regressed = 1: the counter existed but was below the floor (it went
-- backwards while present); it is lifted to the floor so tokens never go
-- backwards again. Values stay below 2^53, so Lua's numbers hold them
-- exactly; the key is only ever SET from strings.
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
-- Non-reentrant: any hold of this owner refuses but a resend's own lost
-- grant (see acquire.lua).
if held and ARGV[6] == '0'
    and not (ARGV[5] == '1' and before >= 0 and tonumber(held) == before + 1) then
  return redis.error_reply('NON_REENTRANT_REACQUIRE the owner already holds the lock')
end
if held and before >= 0 then
  if ARGV[5] == '1' and tonumber(held) == before + 1 then
    -- A resend: the attempt whose reply was lost took it. It gets a fresh
    -- token, not the counter's current value: that value is the lost
    -- attempt's only if that attempt did apply, which the count cannot
    -- prove in every case (a stale count one above looks the same), and a
    -- token must never be handed out twice. The lost one is skipped.
    redis.call('pexpire', KEYS[1], ARGV[1])
    local t, regressed = token()
    return {tonumber(held), t, regressed}
  end
  if tonumber(held) > before then
    -- Stale holds of this owner (see acquire.lua): restart the count.
    redis.call('hset', KEYS[1], ARGV[2], before)
  end
end
-- A re-entry that finds none of this owner's holds (see acquire.lua).
if not held and before > 0 then
  return {0}
end
if held or ttl == -2 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local t, regressed = token()
  return {count, t, regressed}
end
return ttl
