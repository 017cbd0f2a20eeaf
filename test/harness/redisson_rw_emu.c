/* The Redisson read/write lock emulator (see redisson_rw_emu.h). The scripts
 * are our own, written from the description there (with the unlock latch of
 * redisson_emu.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redisson_rw_emu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Read lock: KEYS[1] NAME, KEYS[2] this thread's hold-key prefix
 * "{NAME}:UUID:TID:rwlock_timeout"; ARGV[1] lease, ARGV[2] reader field,
 * ARGV[3] writer field. Free: read mode, first hold. Read mode, or write
 * mode held by this thread's writer field: one more hold with its own key,
 * and the hash lives at least the lease. Otherwise the PTTL. */
static const char read_acquire[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('set', KEYS[2] .. ':1', 1)\n"
    "  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if mode == 'read' or (mode == 'write' and\n"
    "    redis.call('hexists', KEYS[1], ARGV[3]) == 1) then\n"
    "  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  local k = KEYS[2] .. ':' .. n\n"
    "  redis.call('set', k, 1)\n"
    "  redis.call('pexpire', k, ARGV[1])\n"
    "  local left = redis.call('pttl', KEYS[1])\n"
    "  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Read unlock: KEYS[1] NAME, KEYS[2] channel, KEYS[3] hold-key prefix,
 * KEYS[4] the key prefix of every reader ("{NAME}"), KEYS[5] this call's
 * latch; ARGV[1] "0", ARGV[2] reader field, ARGV[3] publish command, ARGV[4]
 * the latch's life. A latch answers for an earlier run. No lock: the
 * message anyway, nil. Not a reader: nil. Otherwise one hold fewer (its key
 * goes); if anything else remains the hash's TTL becomes the longest
 * remaining hold key's (every field, every index: the O(holds) scan), or it
 * stays as it is in write mode; when nothing lives on, delete and publish. */
static const char read_unlock[] =
    "local earlier = redis.call('get', KEYS[5])\n"
    "if earlier then return tonumber(earlier) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "  redis.call('set', KEYS[5], 1, 'px', ARGV[4])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end\n"
    "local c = redis.call('hincrby', KEYS[1], ARGV[2], -1)\n"
    "if c == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end\n"
    "redis.call('del', KEYS[3] .. ':' .. (c + 1))\n"
    "if redis.call('hlen', KEYS[1]) > 1 then\n"
    "  local longest = -3\n"
    "  for _, f in ipairs(redis.call('hkeys', KEYS[1])) do\n"
    "    local n = tonumber(redis.call('hget', KEYS[1], f))\n"
    "    if n then\n"
    "      for i = n, 1, -1 do\n"
    "        local t = redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i)\n"
    "        longest = math.max(longest, t)\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if longest > 0 then\n"
    "    redis.call('pexpire', KEYS[1], longest)\n"
    "    redis.call('set', KEYS[5], 0, 'px', ARGV[4])\n"
    "    return 0\n"
    "  end\n"
    "  if mode == 'write' then\n"
    "    redis.call('set', KEYS[5], 0, 'px', ARGV[4])\n"
    "    return 0\n"
    "  end\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[5], 1, 'px', ARGV[4])\n"
    "return 1\n";

/* Write lock: KEYS[1] NAME; ARGV[1] lease, ARGV[2] writer field. Free:
 * write mode, first hold. Write mode held by this writer: one more hold and
 * the lease ADDED to the time left (Redisson's quirk). Otherwise the PTTL. */
static const char write_acquire[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call('hset', KEYS[1], 'mode', 'write')\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  local left = redis.call('pttl', KEYS[1])\n"
    "  redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Write unlock: KEYS[1] NAME, KEYS[2] channel, KEYS[3] latch; ARGV[1] "1",
 * ARGV[2] lease, ARGV[3] writer field, ARGV[4] publish command, ARGV[5] the
 * latch's life. Latch first; no lock: the message anyway, nil; read mode or
 * not the writer: nil. One hold fewer; holds left: lease re-applied, 0. The
 * last: the field goes; nothing else left: delete and publish, else the
 * thread's reads stay and the mode turns to read WITHOUT a message (the
 * downgrade); 1. */
static const char write_unlock[] =
    "local earlier = redis.call('get', KEYS[3])\n"
    "if earlier then return tonumber(earlier) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "  redis.call('set', KEYS[3], 1, 'px', ARGV[5])\n"
    "  return nil\n"
    "end\n"
    "if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], 0, 'px', ARGV[5])\n"
    "  return 0\n"
    "end\n"
    "redis.call('hdel', KEYS[1], ARGV[3])\n"
    "if redis.call('hlen', KEYS[1]) == 1 then\n"
    "  redis.call('del', KEYS[1])\n"
    "  redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "else\n"
    "  redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "end\n"
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5])\n"
    "return 1\n";

/* ---- helpers ---- */

/* suffixName(name, s): "name:s" when name has a '{', else "{name}:s". */
static char *suffix_name(const char *name, const char *s) {
  if (strchr(name, '{') != NULL)
    return rt_emu_asprintf("%s:%s", name, s);
  return rt_emu_asprintf("{%s}:%s", name, s);
}

/* A reading thread's ids: reader UUID:TID, writer UUID:TID:write, and tp,
 * its timeout key prefix {NAME}:UUID:TID:rwlock_timeout. */
typedef struct {
  char *reader, *writer, *tp;
} reader_ids_t;

static reader_ids_t reader_ids(const char *name, const char *uuid, long long tid) {
  reader_ids_t id;
  id.reader = rt_emu_asprintf("%s:%lld", uuid, tid);
  id.writer = rt_emu_asprintf("%s:write", id.reader);
  char *tp_suffix = rt_emu_asprintf("%s:rwlock_timeout", id.reader);
  id.tp = suffix_name(name, tp_suffix);
  free(tp_suffix);
  return id;
}

static void reader_ids_free(reader_ids_t *id) {
  free(id->reader);
  free(id->writer);
  free(id->tp);
}

static char *key_prefix(const char *name) {
  if (strchr(name, '{') != NULL)
    return rt_emu_asprintf("%s", name);
  return rt_emu_asprintf("{%s}", name);
}

char *rt_rwlock_channel(const char *name) {
  return rt_rlock_prefix_name("redisson_rwlock", name);
}

char *rt_rwlock_hold_key(const char *name, const char *uuid, long long tid, int i) {
  char *owner = rt_emu_asprintf("%s:%lld:rwlock_timeout:%d", uuid, tid, i);
  char *k = suffix_name(name, owner);
  free(owner);
  return k;
}

static long long try_result(redisReply *r, const char *what) {
  long long out;
  if (r->type == REDIS_REPLY_NIL)
    out = RT_RLOCK_ACQUIRED;
  else if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0)
    out = r->integer;
  else if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
    out = RT_RLOCK_BUSY_NO_TTL;
  else
    FAIL("redisson_rw_emu: %s: unexpected reply type %d", what, r->type);
  freeReplyObject(r);
  return out;
}

static int unlock_result(redisReply *r, const char *what) {
  int out;
  if (r->type == REDIS_REPLY_NIL)
    out = -1;
  else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
    out = (int)r->integer;
  else
    FAIL("redisson_rw_emu: %s: unexpected reply type %d", what, r->type);
  freeReplyObject(r);
  return out;
}

/* ---- tryLock / unlock ---- */

/* Runs an unlock script, then deletes the unlock latch key it set. */
static int unlock_then_drop_latch(redisContext *ctx, int argc, const char **argv,
                                  const char *latch, const char *what) {
  int out = unlock_result(rt_emu_command(ctx, argc, argv, what), what);
  const char *del[] = {"DEL", latch};
  freeReplyObject(rt_emu_command(ctx, 2, del, "DEL latch"));
  return out;
}

long long rt_rwlock_read_try(redisContext *ctx, const char *name, const char *uuid,
                             long long tid, int64_t lease_ms) {
  char lease[24];
  reader_ids_t id = reader_ids(name, uuid, tid);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *argv[] = {"EVAL", read_acquire, "2", name, id.tp, lease, id.reader, id.writer};
  long long out = try_result(rt_emu_command(ctx, 8, argv, "read tryLock"), "read tryLock");
  reader_ids_free(&id);
  return out;
}

long long rt_rwlock_write_try(redisContext *ctx, const char *name, const char *uuid,
                              long long tid, int64_t lease_ms) {
  char lease[24];
  char *writer = rt_emu_asprintf("%s:%lld:write", uuid, tid);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *argv[] = {"EVAL", write_acquire, "1", name, lease, writer};
  long long out = try_result(rt_emu_command(ctx, 6, argv, "write tryLock"), "write tryLock");
  free(writer);
  return out;
}

int rt_rwlock_read_unlock(redisContext *ctx, const char *name, const char *uuid,
                          long long tid) {
  char req[33], ttl[24];
  rt_emu_random_req(req);
  snprintf(ttl, sizeof ttl, "%d", RT_RLOCK_LATCH_TTL_MS);
  reader_ids_t id = reader_ids(name, uuid, tid);
  char *kp = key_prefix(name);
  char *channel = rt_rwlock_channel(name);
  char *latch = rt_rlock_latch_key(name, req);
  const char *argv[] = {"EVAL", read_unlock, "5",       name, channel, id.tp, kp,
                        latch,  "0",         id.reader, rt_emu_publish_cmd(), ttl};
  int out = unlock_then_drop_latch(ctx, 12, argv, latch, "read unlock");
  reader_ids_free(&id);
  free(kp);
  free(channel);
  free(latch);
  return out;
}

int rt_rwlock_write_unlock(redisContext *ctx, const char *name, const char *uuid,
                           long long tid) {
  char req[33], ttl[24], lease[24];
  rt_emu_random_req(req);
  snprintf(ttl, sizeof ttl, "%d", RT_RLOCK_LATCH_TTL_MS);
  snprintf(lease, sizeof lease, "%d", RT_RLOCK_DEFAULT_LEASE_MS);
  char *writer = rt_emu_asprintf("%s:%lld:write", uuid, tid);
  char *channel = rt_rwlock_channel(name);
  char *latch = rt_rlock_latch_key(name, req);
  const char *argv[] = {"EVAL", write_unlock, "3",    name,      channel, latch,
                        "1",    lease,        writer, rt_emu_publish_cmd(), ttl};
  int out = unlock_then_drop_latch(ctx, 11, argv, latch, "write unlock");
  free(writer);
  free(channel);
  free(latch);
  return out;
}

/* ---- lock() ---- */

int rt_rwlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                            const char *uuid, long long tid, int write, int64_t lease_ms,
                            int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  rt_emu_lock_try_t t = {write ? rt_rwlock_write_try : rt_rwlock_read_try, ctx, name, uuid,
                         tid, lease_ms};
  if (t.try_fn(ctx, name, uuid, tid, lease_ms) == RT_RLOCK_ACQUIRED)
    return 0;
  char *channel = rt_rwlock_channel(name);
  int acquired = rt_emu_wait_on_channel(sub, channel, deadline, rt_emu_lock_try, &t, NULL);
  free(channel);
  return acquired ? 0 : -1;
}
