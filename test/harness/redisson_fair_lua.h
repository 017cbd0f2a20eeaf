/* The Lua steps the emulated Redisson fair locks share (issue 29:
 * redisson_emu.c's RFairLock and redisson_nr_emu.c's non-reentrant fair
 * lock each had a copy). Every step runs with KEYS[1] the lock hash,
 * KEYS[2] the queue, KEYS[3] the deadlines, and the Lua locals owner, wait
 * and now set by the script; ARGV[1] is the lease. Our own reading of what
 * Redisson does on the wire, not its scripts' text. */
#ifndef LK_TEST_HARNESS_REDISSON_FAIR_LUA_H
#define LK_TEST_HARNESS_REDISSON_FAIR_LUA_H

/* Purge: while the queue has a head whose deadline exists and is not after
 * NOW, that head is dropped from both structures. */
#define RFAIR_PURGE                                                             \
  "while true do\n"                                                             \
  "  local first = redis.call('lindex', KEYS[2], 0)\n"                          \
  "  if not first then break end\n"                                             \
  "  local due = redis.call('zscore', KEYS[3], first)\n"                        \
  "  if not due or tonumber(due) > now then break end\n"                        \
  "  redis.call('lpop', KEYS[2])\n"                                             \
  "  redis.call('zrem', KEYS[3], first)\n"                                      \
  "end\n"

/* Free and our turn: when the lock is free and the queue is empty or headed
 * by the caller, the caller leaves the queue, everyone else's deadline moves
 * WAIT earlier, and it takes the lock (one hold, the lease); nil. */
#define RFAIR_TAKE_IF_FREE                                                      \
  "if redis.call('exists', KEYS[1]) == 0 then\n"                                \
  "  local first = redis.call('lindex', KEYS[2], 0)\n"                          \
  "  if not first or first == owner then\n"                                     \
  "    redis.call('lpop', KEYS[2])\n"                                           \
  "    redis.call('zrem', KEYS[3], owner)\n"                                    \
  "    for _, m in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do\n"           \
  "      redis.call('zincrby', KEYS[3], -wait, m)\n"                            \
  "    end\n"                                                                   \
  "    redis.call('hset', KEYS[1], owner, 1)\n"                                 \
  "    redis.call('pexpire', KEYS[1], ARGV[1])\n"                               \
  "    return nil\n"                                                            \
  "  end\n"                                                                     \
  "end\n"

/* Not taken, the waiting form: a caller already queued gets the holder's
 * PTTL (never below 0); otherwise it joins at the tail with the deadline
 * "its predecessor's deadline (or now + the holder's PTTL) + WAIT", and the
 * reply is that predecessor's remaining time (or the PTTL). */
#define RFAIR_QUEUE                                                             \
  "if redis.call('zscore', KEYS[3], owner) then\n"                              \
  "  local ttl = redis.call('pttl', KEYS[1])\n"                                 \
  "  if ttl < 0 then ttl = 0 end\n"                                             \
  "  return ttl\n"                                                              \
  "end\n"                                                                       \
  "local base\n"                                                                \
  "local last = redis.call('lindex', KEYS[2], -1)\n"                            \
  "local last_due = last and last ~= owner and redis.call('zscore', KEYS[3], last)\n" \
  "if last_due then\n"                                                          \
  "  base = tonumber(last_due) - now\n"                                         \
  "else\n"                                                                      \
  "  base = redis.call('pttl', KEYS[1])\n"                                      \
  "end\n"                                                                       \
  "if redis.call('zadd', KEYS[3], base + wait + now, owner) == 1 then\n"        \
  "  redis.call('rpush', KEYS[2], owner)\n"                                     \
  "end\n"                                                                       \
  "return base\n"

#endif /* LK_TEST_HARNESS_REDISSON_FAIR_LUA_H */
