-- Fair lock acquire: Redisson RFairLock's data (hash NAME with OWNER -> hold
-- count and a PEXPIRE lease; list Q of waiting owners in arrival order; zset
-- T of owner -> deadline in epoch ms after which the waiter counts as gone).
-- KEYS[1] NAME, KEYS[2] Q, KEYS[3] T, KEYS[4] fencing token key (fenced only).
-- ARGV[1] lease ms, ARGV[2] owner "UUID:TID", ARGV[3] the owner's hold count
-- before this call or -1 when unknown (owners shared between objects),
-- ARGV[4] waiter timeout ms, ARGV[5] 'wait' (join or stay in the queue) or
-- 'last' (take it if it is our turn, else leave the queue), ARGV[6] '1' on
-- a resend after a lost reply, ARGV[7] the lowest acceptable fencing token
-- (fenced only): one above the highest this client has seen.
-- Deadlines use the server's clock (TIME), so clients never disagree on them.
-- Replies (private to latchkey):
--   {0, count[, token, regressed]}  acquired (count = holds now)
--   {1, hint, position}  queued at position (0 = next); retry within hint ms
--                        (-1: no hint)
--   {2, pttl}            not acquired and not queued ('last')
local name, q, t = KEYS[1], KEYS[2], KEYS[3]
local owner = ARGV[2]
-- Read first: a key of the wrong type fails here, before anything is written.
local held = redis.call('hget', name, owner)
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- Waiters at the head whose deadline passed (or who have none) stopped
-- refreshing it: they are gone, and must not block the ones behind them.
-- What remains at the head (if anything) is live until head_deadline.
local head, head_deadline
while true do
  head = redis.call('lindex', q, 0)
  if not head then break end
  head_deadline = tonumber(redis.call('zscore', t, head))
  if head_deadline and head_deadline > now then break end
  redis.call('lpop', q)
  redis.call('zrem', t, head)
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
local function granted(count)
  redis.call('pexpire', name, ARGV[1])
  if not KEYS[4] then
    return {count}
  end
  if redis.call('exists', KEYS[4]) == 0 then
    local seed = clock[1] .. string.rep('0', 6 - #clock[2]) .. clock[2]
    if tonumber(seed) < tonumber(ARGV[7]) then
      seed = ARGV[7]
    end
    redis.call('set', KEYS[4], seed)
  end
  local token = redis.call('incr', KEYS[4])
  if token < tonumber(ARGV[7]) then
    redis.call('set', KEYS[4], ARGV[7])
    return {count, tonumber(ARGV[7]), 1}
  end
  return {count, token, 0}
end

local function reply_granted(g)
  table.insert(g, 1, 0)
  return g
end

local before = tonumber(ARGV[3])
if held and before >= 0 then
  if ARGV[6] == '1' and tonumber(held) == before + 1 then
    -- A resend: the attempt whose reply was lost did acquire.
    return reply_granted(granted(tonumber(held)))
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
  return reply_granted(granted(redis.call('hincrby', name, owner, 1)))
end
local pttl = redis.call('pttl', name) -- -2: free
if pttl == -2 and (not head or head == owner) then
  if head then
    redis.call('lpop', q)
  end
  redis.call('zrem', t, owner)
  return reply_granted(granted(redis.call('hincrby', name, owner, 1)))
end

if ARGV[5] == 'last' then
  -- Not our turn and the caller stops waiting. Leaving from the head cannot
  -- happen here: the head is granted a free lock above, and a held lock is
  -- handed to the head by its release.
  redis.call('lrem', q, 0, owner)
  redis.call('zrem', t, owner)
  return {2, pttl}
end

-- Join the queue, or stay in it: either way the deadline is refreshed, so it
-- means "this long since the waiter last showed it is alive".
local pos = redis.call('lpos', q, owner)
if not pos then
  pos = redis.call('rpush', q, owner) - 1
end
redis.call('zadd', t, now + tonumber(ARGV[4]), owner)
local hint = -1
if pttl >= 0 and pos == 0 then
  hint = pttl -- next in line: the holder's lease bounds the wait
elseif pttl == -2 then
  -- Free, but someone else is next and about to take it; if it never does,
  -- its deadline ends its turn.
  hint = head_deadline - now + 1
end
return {1, hint, pos}
