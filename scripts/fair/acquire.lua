-- Fair lock acquire: Redisson RFairLock's data (hash NAME with OWNER -> hold
-- count and a PEXPIRE lease; list Q of waiting owners in arrival order; zset
-- T of owner -> deadline in epoch ms after which the waiter counts as gone)
-- and latchkey's own zset V of its waiters' liveness (owner -> epoch ms).
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] V, KEYS[5] fencing token key
-- (fenced only).
-- ARGV[1] lease ms, ARGV[2] owner "UUID:TID", ARGV[3] the owner's hold count
-- before this call or -1 when unknown (owners shared between objects),
-- ARGV[4] waiter timeout ms, ARGV[5] 'wait' (join or stay in the queue) or
-- 'last' (take it if it is our turn, else leave the queue), ARGV[6] '1' on
-- a resend after a lost reply, ARGV[7] the Redisson wait allowed for per
-- Redisson waiter ahead (ms), ARGV[8] '0' for a non-reentrant acquire (else
-- '1'), ARGV[9] the lowest acceptable fencing token (fenced only): one above
-- the highest this client has seen.
-- Deadlines use the server's clock (TIME), so clients never disagree on them.
--
-- Why V: a Redisson acquisition moves every deadline in T earlier by its
-- wait (fairLockWaitTimeout, 5 minutes by default), and Redisson's scripts
-- drop a head whose T deadline passed. So T cannot tell latchkey whether one
-- of its own waiters is alive. V can: only latchkey writes it, each waiter
-- at every refresh. A waiter in V is judged by V alone; any other entry by
-- T, as Redisson judges it. A waiter's T deadline is set above its V one by
-- one allowed wait per Redisson waiter ahead of it (each can move it once,
-- when it takes the lock or gives up), so Redisson's scripts see it alive
-- for as long as latchkey does (docs/fair.md, "Queues shared with Redisson
-- clients").
-- Replies (private to latchkey):
--   {0, count[, token, regressed]}  acquired (count = holds now)
--   {1, hint, position}  queued at position (0 = next); retry within hint ms
--                        (-1: no hint)
--   {2, pttl}            not acquired and not queued ('last')
--   an error whose first word is NON_REENTRANT_REACQUIRE: non-reentrant and
--   this owner holds the lock (as from Redisson's non-reentrant fair lock);
--   nothing changed
local name, q, t, v = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner = ARGV[2]
-- A free lock (no key) holds nothing of this owner's, so the hold count is
-- read only from a key that exists. A key of the wrong type fails there,
-- before anything is written.
local pttl = redis.call('pttl', name) -- -2: free
local held = false
if pttl ~= -2 then
  held = redis.call('hget', name, owner)
end
-- The server's clock, read once and only by the paths that need it (the
-- grant of a free lock to a waiter already at the head needs none).
local clock, now
local function time_now()
  if not now then
    clock = redis.call('time')
    now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  end
  return now
end

-- Every grant takes a fresh token, a resend's too: the counter's current
-- value is a lost attempt's only if that attempt did apply, which the count
-- cannot prove in every case, and a token must never be handed out twice.
-- An absent counter (a restart without persistence, or the name's first
-- fenced use) is seeded from the server's clock in microseconds, never below
-- the floor, so it restarts above every token handed out before, for every
-- client (docs/fair.md, "Fencing tokens"); one that exists is only INCRed,
-- as Redisson does. regressed = 1: it existed below the floor (it went
-- backwards while present) and is lifted to it. Values stay below 2^53
-- (exact in Lua's numbers); the key is only ever SET from strings.
-- Reply: {0, count[, token, regressed]}.
local function granted(count)
  redis.call('pexpire', name, ARGV[1])
  if not KEYS[5] then
    return {0, count}
  end
  if redis.call('exists', KEYS[5]) == 0 then
    time_now()
    local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
    if tonumber(seed) < tonumber(ARGV[9]) then
      seed = ARGV[9]
    end
    redis.call('set', KEYS[5], seed)
  end
  local token = redis.call('incr', KEYS[5])
  if token < tonumber(ARGV[9]) then
    redis.call('set', KEYS[5], ARGV[9])
    return {0, count, tonumber(ARGV[9]), 1}
  end
  return {0, count, token, 0}
end

local before = tonumber(ARGV[3])
-- Non-reentrant: any hold of this owner refuses, before anything is written
-- or queued, except the one a resend finds one above the count the object
-- had: its own attempt whose reply was lost (scripts/lock/acquire.lua).
if held and ARGV[8] == '0'
    and not (ARGV[6] == '1' and before >= 0 and tonumber(held) == before + 1) then
  return redis.error_reply('NON_REENTRANT_REACQUIRE the owner already holds the lock')
end
if held and before >= 0 then
  if ARGV[6] == '1' and tonumber(held) == before + 1 then
    -- A resend: the attempt whose reply was lost did acquire.
    return granted(tonumber(held))
  end
  if tonumber(held) > before then
    -- Holds of this owner the object no longer counts (a release whose
    -- outcome stayed unknown did not apply, or a give-back was lost). The
    -- owner still holds the lock, so nobody else held it in between:
    -- restart the count from the object's, so its next release frees it.
    -- (On a first attempt a count one above is such a stale one too, not
    -- this attempt's grant. Fewer than the object counts is counted on:
    -- the object sees the jump and reports the loss.)
    redis.call('hset', name, owner, before)
  end
end
-- A re-entry (the object counts holds) that finds none of this owner's:
-- they were lost (expired, deleted, force-released) and someone else may
-- have held the lock since. Nothing is granted: a grant here, taken by an
-- attempt whose caller stopped waiting for it, would let the object's next
-- re-entry go on counting across that gap. The object reports the loss.
if not held and before > 0 then
  return {0, 0}
end
if held then
  return granted(redis.call('hincrby', name, owner, 1))
end

-- Silent waiters at the head are gone and must not block the ones behind
-- them: a latchkey waiter whose V deadline passed, any other entry whose T
-- deadline passed or that has none. The caller is never one (it is calling).
-- What remains at the head (if anything) is live until head_deadline. (The
-- same loop is in release, leave and force_release.) Only a free lock needs
-- it here: it decides who may take the lock now. While the lock is held, the
-- release that frees it runs the loop before it wakes anyone. A live
-- latchkey head is taken as it is: its T deadline is put back (no earlier
-- than its V one, so Redisson's scripts do not drop it) by that release, by
-- leave and force_release, and by its own refreshes, not by others' joins.
local head, head_deadline
if pttl == -2 then
  while true do
    head, head_deadline = redis.call('lindex', q, 0), nil
    if not head or head == owner then break end
    local live = tonumber(redis.call('zscore', v, head))
    if live then
      if live > time_now() then
        head_deadline = live
        break
      end
    else
      local due = tonumber(redis.call('zscore', t, head))
      if due and due > time_now() then
        head_deadline = due
        break
      end
    end
    redis.call('lpop', q)
    redis.call('zrem', t, head)
    redis.call('zrem', v, head)
  end
  if not head or head == owner then
    if head then
      redis.call('lpop', q)
    end
    redis.call('zrem', t, owner)
    redis.call('zrem', v, owner)
    return granted(redis.call('hincrby', name, owner, 1))
  end
end

if ARGV[5] == 'last' then
  -- Not our turn and the caller stops waiting. Leaving from the head cannot
  -- happen here: the head is granted a free lock above, and a held lock is
  -- handed to the head by its release.
  redis.call('lrem', q, 0, owner)
  redis.call('zrem', t, owner)
  redis.call('zrem', v, owner)
  return {2, pttl}
end

-- Join the queue, or stay in it where it is: either way both deadlines are
-- refreshed, so they mean "this long since the waiter last showed it is
-- alive". (A waiter Redisson's scripts dropped meanwhile joins again at the
-- tail.)
local timeout = tonumber(ARGV[4])
local pos = redis.call('lpos', q, owner)
local joined = not pos
if joined then
  pos = redis.call('rpush', q, owner) - 1
end
redis.call('zadd', v, time_now() + timeout, owner)
-- Redisson waiters ahead: the entries ahead that are not latchkey's. A
-- waiter that has just joined is at the tail, so everyone queued is ahead
-- of it: when the live entries of V (its own included) are at least as many
-- as the queue, every entry is a live latchkey waiter's and there is none
-- to count, for one command whatever the queue's length. (V holds queued
-- waiters only, but for a live one that Redisson's scripts dropped from the
-- queue until it joins again; so that count can only mistake a Redisson
-- entry for such a one.) Otherwise, and on a refresh, the entries ahead are
-- looked up: ZMSCORE in slices, within Lua's unpack limit.
local redisson_ahead = 0
if pos > 0 and not (joined and redis.call('zcount', v, '(' .. now, '+inf') > pos) then
  local i = 0
  while i < pos do
    local last = math.min(i + 512, pos) - 1
    local ids = redis.call('lrange', q, i, last)
    local known = redis.call('zmscore', v, unpack(ids))
    for k = 1, #ids do
      if not known[k] then
        redisson_ahead = redisson_ahead + 1
      end
    end
    i = last + 1
  end
end
local allowance = redisson_ahead * tonumber(ARGV[7])
redis.call('zadd', t, now + timeout + allowance, owner)
-- V outlives every T deadline it explains. It is given a waiter timeout to
-- spare, so the joins that follow within that time need not extend it.
if redis.call('pttl', v) < timeout + allowance then
  redis.call('pexpire', v, 2 * timeout + allowance)
end
local hint = -1
if pttl >= 0 and pos == 0 then
  hint = pttl -- next in line: the holder's lease bounds the wait
elseif pttl == -2 and head_deadline then
  -- Free, but someone else is next and about to take it; if it never does,
  -- its deadline ends its turn.
  hint = head_deadline - now + 1
end
return {1, hint, pos}
