/* The Redisson RLock emulator (see redisson_emu.h). The two scripts below are
 * our own, written from a description of what Redisson's lock and unlock do
 * on the wire: they are not Redisson's text and may differ from it in
 * anything that description does not pin down (compatibility is about the
 * data and messages both sides see, not the scripts' text). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdatomic.h>
#include "redisson_emu.h"
#include "redisson_fair_lua.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <uv.h>

#include "test.h"

/* tryLock: KEYS[1] the lock hash; ARGV[1] lease in ms; ARGV[2] "UUID:TID".
 * Nobody holds it, or the caller already does: one more hold for the caller
 * and a fresh lease, reply nil. Someone else holds it: reply the PTTL. */
static const char acquire_script[] =
    "if redis.call('exists', KEYS[1]) == 0\n"
    "   or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* RFencedLock's token-returning acquire: KEYS[1] the lock hash, KEYS[2] the
 * token counter; ARGV[1] lease in ms; ARGV[2] "UUID:TID". Acquired (first
 * hold or re-entry): {-1, token}, the counter INCRed; else {PTTL, -1}. */
static const char fenced_acquire_script[] =
    "if redis.call('exists', KEYS[1]) == 0\n"
    "   or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return {-1, redis.call('incr', KEYS[2])}\n"
    "end\n"
    "return {redis.call('pttl', KEYS[1]), -1}\n";

/* unlock: KEYS[1] the lock hash, KEYS[2] its channel, KEYS[3] this call's
 * latch key; ARGV[1] the message (always "0"), ARGV[2] the lease to re-apply
 * while holds remain, ARGV[3] "UUID:TID", ARGV[4] the publish command,
 * ARGV[5] the latch's time to live in ms.
 * A latch left by an earlier run of the same request answers for it. No hold
 * of the caller's: nil. Otherwise one hold fewer; holds left: lease renewed,
 * latch "0", reply 0; none left: hash deleted, message published, latch "1",
 * reply 1. */
static const char unlock_script[] =
    "local earlier = redis.call('get', KEYS[3])\n"
    "if earlier then\n"
    "  return tonumber(earlier)\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], '0', 'px', ARGV[5])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[3], '1', 'px', ARGV[5])\n"
    "return 1\n";

/* ---- helpers ------------------------------------------------------------------------ */

char *rt_emu_asprintf(const char *fmt, ...) {
  va_list ap;
  char *out = NULL;
  va_start(ap, fmt);
  int n = vasprintf(&out, fmt, ap);
  va_end(ap);
  if (n < 0 || out == NULL)
    FAIL("redisson_emu: out of memory");
  return out;
}

char *rt_rlock_prefix_name(const char *prefix, const char *name) {
  if (strchr(name, '{') != NULL)
    return rt_emu_asprintf("%s:%s", prefix, name);
  return rt_emu_asprintf("%s:{%s}", prefix, name);
}

char *rt_rlock_channel(const char *name) {
  return rt_rlock_prefix_name("redisson_lock__channel", name);
}

char *rt_rlock_latch_key(const char *name, const char *req) {
  char *base = rt_rlock_prefix_name("redisson_unlock_latch", name);
  char *key = rt_emu_asprintf("%s:%s", base, req);
  free(base);
  return key;
}

static char *owner_of(const char *uuid, long long tid) { return rt_emu_asprintf("%s:%lld", uuid, tid); }

/* 16 random bytes as 32 lower-case hex characters (Redisson's request id). */
void rt_emu_random_req(char out[33]) {
  unsigned char b[16];
  int rc = uv_random(NULL, NULL, b, sizeof b, 0, NULL);
  if (rc != 0)
    FAIL("redisson_emu: uv_random: %s", uv_strerror(rc));
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

redisContext *rt_rlock_connect(int port) {
  int64_t ms = rt_scaled_ms(5000);
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == NULL)
    FAIL("redisson_emu: cannot allocate a connection");
  if (c->err) {
    char why[128];
    snprintf(why, sizeof why, "%s", c->errstr);
    redisFree(c);
    FAIL("redisson_emu: connect to port %d: %s", port, why);
  }
  if (redisSetTimeout(c, tv) != REDIS_OK)
    FAIL("redisson_emu: setting the I/O timeout failed");
  return c;
}

redisReply *rt_emu_command(redisContext *ctx, int argc, const char **argv, const char *what) {
  size_t lens[16];
  if (argc > 16)
    FAIL("redisson_emu: too many arguments");
  for (int i = 0; i < argc; i++)
    lens[i] = strlen(argv[i]);
  redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
  if (r == NULL)
    FAIL("redisson_emu: %s: %s", what, ctx->errstr[0] ? ctx->errstr : "no reply");
  if (r->type == REDIS_REPLY_ERROR) {
    char text[256];
    snprintf(text, sizeof text, "%.*s", (int)r->len, r->str);
    freeReplyObject(r);
    FAIL("redisson_emu: %s: server error: %s", what, text);
  }
  return r;
}

/* ---- tryLock / unlock ------------------------------------------------------------------ */

long long rt_rlock_try(redisContext *ctx, const char *name, const char *uuid, long long tid,
                       int64_t lease_ms) {
  char lease[24];
  char *owner = owner_of(uuid, tid);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *argv[] = {"EVAL", acquire_script, "1", name, lease, owner};
  redisReply *r = rt_emu_command(ctx, 6, argv, "tryLock");
  free(owner);
  return rt_emu_try_reply(r, "redisson_emu: tryLock");
}

long long rt_emu_try_reply(redisReply *r, const char *what) {
  long long out;
  if (r->type == REDIS_REPLY_NIL) {
    out = RT_RLOCK_ACQUIRED;
  } else if (r->type == REDIS_REPLY_INTEGER) {
    out = r->integer;
    if (out == -1) {
      out = RT_RLOCK_BUSY_NO_TTL;
    } else if (out < 0) { /* -2: the key vanished between EXISTS and PTTL; cannot happen in a script */
      freeReplyObject(r);
      FAIL("%s replied %lld", what, out);
    }
  } else {
    int type = r->type;
    freeReplyObject(r);
    FAIL("%s: unexpected reply type %d", what, type);
  }
  freeReplyObject(r);
  return out;
}

long long rt_rlock_try_fenced(redisContext *ctx, const char *name, const char *uuid,
                              long long tid, int64_t lease_ms, long long *token) {
  char lease[24];
  char *owner = owner_of(uuid, tid);
  char *key = rt_rlock_prefix_name("redisson_lock_token", name);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *argv[] = {"EVAL", fenced_acquire_script, "2", name, key, lease, owner};
  redisReply *r = rt_emu_command(ctx, 7, argv, "tryLockAndGetToken");
  free(owner);
  free(key);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER) {
    freeReplyObject(r);
    FAIL("redisson_emu: tryLockAndGetToken: unexpected reply");
  }
  long long out = r->element[0]->integer, t = r->element[1]->integer;
  freeReplyObject(r);
  if (out == -1) {
    *token = t;
    return RT_RLOCK_ACQUIRED;
  }
  if (out < 0)
    FAIL("redisson_emu: tryLockAndGetToken replied %lld", out);
  return out;
}

/* An unlock script's reply, r freed: 1 released, 0 decremented, -1 (nil) not
 * the owner; anything else fails the test, naming what. */
static int unlock_reply(redisReply *r, const char *what) {
  int out;
  if (r->type == REDIS_REPLY_NIL) {
    out = -1;
  } else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
    out = (int)r->integer;
  } else {
    int type = r->type;
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    FAIL("redisson_emu: %s: unexpected reply (type %d, value %lld)", what, type, v);
  }
  freeReplyObject(r);
  return out;
}

int rt_rlock_unlock_req(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms, const char *req, int del_latch) {
  char lease[24], latch_ttl[24];
  char *owner = owner_of(uuid, tid);
  char *channel = rt_rlock_channel(name);
  char *latch = rt_rlock_latch_key(name, req);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  snprintf(latch_ttl, sizeof latch_ttl, "%d", RT_RLOCK_LATCH_TTL_MS);
  const char *argv[] = {"EVAL", unlock_script, "3",   name,      channel, latch,
                        "0",    lease,         owner, rt_emu_publish_cmd(), latch_ttl};
  int out = unlock_reply(rt_emu_command(ctx, 11, argv, "unlock"), "unlock");
  if (del_latch) {
    /* Redisson sends this without waiting; here it is simply the next command. */
    const char *del[] = {"DEL", latch};
    freeReplyObject(rt_emu_command(ctx, 2, del, "DEL latch"));
  }
  free(owner);
  free(channel);
  free(latch);
  return out;
}

int rt_rlock_unlock_lease(redisContext *ctx, const char *name, const char *uuid,
                          long long tid, int64_t lease_ms) {
  char req[33];
  rt_emu_random_req(req);
  return rt_rlock_unlock_req(ctx, name, uuid, tid, lease_ms, req, 1);
}

int rt_rlock_unlock(redisContext *ctx, const char *name, const char *uuid, long long tid) {
  return rt_rlock_unlock_lease(ctx, name, uuid, tid, RT_RLOCK_DEFAULT_LEASE_MS);
}

/* ---- pub/sub ------------------------------------------------------------------------------ */

/* Redisson's shardedSubscriptionMode AUTO on a 7+ cluster (redisson_emu.h). */
static int emu_sharded;

void rt_emu_set_sharded(int on) { emu_sharded = on != 0; }
int rt_emu_sharded(void) { return emu_sharded; }
const char *rt_emu_publish_cmd(void) { return emu_sharded ? "SPUBLISH" : "PUBLISH"; }

redisReply *rt_sub_next(redisContext *sub, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    void *reply = NULL;
    if (redisReaderGetReply(sub->reader, &reply) != REDIS_OK)
      FAIL("redisson_emu: protocol error on the subscriber connection");
    if (reply != NULL)
      return reply;
    int64_t left = deadline - rt_now_ms();
    struct pollfd p = {sub->fd, POLLIN, 0};
    int n = poll(&p, 1, (int)(left > 0 ? left : 0));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      FAIL("redisson_emu: poll: %s", strerror(errno));
    if (n == 0)
      return NULL; /* nothing came in time */
    /* Readable: this read() does not block. */
    if (redisBufferRead(sub) != REDIS_OK)
      FAIL("redisson_emu: subscriber connection: %s", sub->errstr);
  }
}

static int is_push(const redisReply *r, const char *kind) {
  return r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
         r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, kind) == 0;
}

redisReply *rt_sub_next_message(redisContext *sub, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  for (;;) {
    int64_t left = deadline - rt_now_ms();
    redisReply *r = rt_sub_next(sub, left > 0 ? left : 0);
    if (r == NULL)
      return NULL;
    if (is_push(r, "message") || is_push(r, "smessage"))
      return r;
    freeReplyObject(r);
  }
}

/* Sends (UN)SUBSCRIBE channel and reads until its confirmation; messages that
 * arrive first are dropped (a retry follows any of them anyway). */
static void sub_cmd(redisContext *sub, const char *verb, const char *confirm,
                    const char *channel) {
  const char *argv[] = {verb, channel};
  size_t lens[] = {strlen(verb), strlen(channel)};
  if (redisAppendCommandArgv(sub, 2, argv, lens) != REDIS_OK)
    FAIL("redisson_emu: %s: %s", verb, sub->errstr);
  int done = 0;
  while (!done) { /* flush the output buffer */
    if (redisBufferWrite(sub, &done) != REDIS_OK)
      FAIL("redisson_emu: %s: %s", verb, sub->errstr);
  }
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  for (;;) {
    int64_t left = deadline - rt_now_ms();
    redisReply *r = left > 0 ? rt_sub_next(sub, left) : NULL;
    if (r == NULL)
      FAIL("redisson_emu: no %s confirmation for %s", verb, channel);
    if (r->type == REDIS_REPLY_ERROR) {
      char text[256];
      snprintf(text, sizeof text, "%.*s", (int)r->len, r->str);
      freeReplyObject(r);
      FAIL("redisson_emu: %s: %s", verb, text);
    }
    int ok = is_push(r, confirm) && r->element[1]->type == REDIS_REPLY_STRING &&
             strcmp(r->element[1]->str, channel) == 0;
    freeReplyObject(r);
    if (ok)
      return;
  }
}

/* ---- lock() ------------------------------------------------------------------------------ */

int rt_rlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                           const char *uuid, long long tid, int64_t lease_ms,
                           int64_t timeout_ms) {
  return rt_rlock_lock_blocking_counted(ctx, sub, name, uuid, tid, lease_ms, timeout_ms, NULL);
}

int rt_rlock_lock_blocking_counted(redisContext *ctx, redisContext *sub, const char *name,
                                   const char *uuid, long long tid, int64_t lease_ms,
                                   int64_t timeout_ms, atomic_int *sleeps) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  rt_emu_lock_try_t t = {rt_rlock_try, ctx, name, uuid, tid, lease_ms};
  if (rt_rlock_try(ctx, name, uuid, tid, lease_ms) == RT_RLOCK_ACQUIRED)
    return 0;
  char *channel = rt_rlock_channel(name);
  int acquired = rt_emu_wait_on_channel(sub, channel, deadline, rt_emu_lock_try, &t, sleeps);
  free(channel);
  return acquired ? 0 : -1;
}

int rt_emu_lock_try(void *arg, int64_t *sleep_ms) {
  rt_emu_lock_try_t *t = arg;
  long long ttl = t->try_fn(t->ctx, t->name, t->uuid, t->tid, t->lease_ms);
  if (ttl == RT_RLOCK_ACQUIRED)
    return 1;
  if (ttl >= 0 && ttl < *sleep_ms)
    *sleep_ms = ttl; /* the holder's lease ends first */
  return 0;
}

/* ---- RFairLock --------------------------------------------------------------------------
 * Our reading of what Redisson's RFairLock does on the wire; the steps it
 * shares with the non-reentrant fair lock are in redisson_fair_lua.h. */

/* The steps shared by both acquire forms: the lock taken when free and the
 * caller's turn, else an owner already holding re-enters. Both reply nil. */
#define RFAIR_TAKE                                                              \
  RFAIR_TAKE_IF_FREE                                                            \
  "if redis.call('hexists', KEYS[1], owner) == 1 then\n"                        \
  "  redis.call('hincrby', KEYS[1], owner, 1)\n"                                \
  "  redis.call('pexpire', KEYS[1], ARGV[1])\n"                                 \
  "  return nil\n"                                                              \
  "end\n"

/* Waiting acquire: KEYS NAME, queue, deadlines; ARGV lease, owner, WAIT,
 * NOW. Not taken: the caller waits in the queue (RFAIR_QUEUE). */
static const char rfair_acquire_script[] =
    "local owner = ARGV[2]\n"
    "local wait, now = tonumber(ARGV[3]), tonumber(ARGV[4])\n" RFAIR_PURGE RFAIR_TAKE
        RFAIR_QUEUE;

/* tryLock without waiting: ARGV lease, owner, NOW, WAIT (note the order);
 * the same steps, and 1 instead of joining the queue. */
static const char rfair_nowait_script[] =
    "local owner = ARGV[2]\n"
    "local now, wait = tonumber(ARGV[3]), tonumber(ARGV[4])\n" RFAIR_PURGE RFAIR_TAKE
    "return 1\n";

/* acquireFailed: KEYS queue, deadlines; ARGV owner, WAIT. Everyone queued
 * after the owner moves WAIT earlier; the owner leaves both structures. */
static const char rfair_failed_script[] =
    "local members = redis.call('lrange', KEYS[1], 0, -1)\n"
    "local seen = false\n"
    "for _, m in ipairs(members) do\n"
    "  if seen then\n"
    "    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), m)\n"
    "  elseif m == ARGV[1] then\n"
    "    seen = true\n"
    "  end\n"
    "end\n"
    "redis.call('zrem', KEYS[2], ARGV[1])\n"
    "redis.call('lrem', KEYS[1], 0, ARGV[1])\n"
    "return 1\n";

/* unlock: KEYS NAME, queue, deadlines, channel base, latch; ARGV "0",
 * lease, owner, NOW, publish command, latch TTL. The latch answers a
 * repeated request; a missing lock replies 1 after waking the head; a
 * missing owner nil; otherwise one hold fewer (0) or the lock deleted and
 * the head told (1). */
static const char rfair_unlock_script[] =
    "local earlier = redis.call('get', KEYS[5])\n"
    "if earlier then return tonumber(earlier) end\n"
    "local now = tonumber(ARGV[4])\n" RFAIR_PURGE
    "local function tell_head()\n"
    "  local first = redis.call('lindex', KEYS[2], 0)\n"
    "  if first then redis.call(ARGV[5], KEYS[4] .. ':' .. first, ARGV[1]) end\n"
    "end\n"
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  tell_head()\n"
    "  redis.call('set', KEYS[5], '1', 'px', ARGV[6])\n"
    "  return 1\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[5], '0', 'px', ARGV[6])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('set', KEYS[5], '1', 'px', ARGV[6])\n"
    "tell_head()\n"
    "return 1\n";

long long rt_emu_wall_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

char *rt_rfair_queue_key(const char *name) {
  return rt_rlock_prefix_name("redisson_lock_queue", name);
}

char *rt_rfair_timeout_key(const char *name) {
  return rt_rlock_prefix_name("redisson_lock_timeout", name);
}

char *rt_rfair_channel(const char *name, const char *uuid, long long tid) {
  char *base = rt_rlock_channel(name);
  char *ch = rt_emu_asprintf("%s:%s:%lld", base, uuid, tid);
  free(base);
  return ch;
}

/* Runs a fair script with KEYS NAME, queue, deadlines and the given ARGV. */
static redisReply *rfair_eval(redisContext *ctx, const char *script, const char *name,
                              int nargs, const char **args, const char *what) {
  const char *argv[16];
  char *q = rt_rfair_queue_key(name), *t = rt_rfair_timeout_key(name);
  int n = 0;
  argv[n++] = "EVAL";
  argv[n++] = script;
  argv[n++] = "3";
  argv[n++] = name;
  argv[n++] = q;
  argv[n++] = t;
  for (int i = 0; i < nargs; i++)
    argv[n++] = args[i];
  redisReply *r = rt_emu_command(ctx, n, argv, what);
  free(q);
  free(t);
  return r;
}

/* One try of a fair script: ARGV lease, owner, then the wait and the time
 * now (ms) in the script's order; nil is acquired, an integer (into *ttl) is
 * not. what names the call in a failure. */
static int rfair_try(redisContext *ctx, const char *script, const char *name, const char *uuid,
                     long long tid, int64_t lease_ms, int64_t wait_ms, int now_before_wait,
                     long long *ttl, const char *what) {
  char lease[24], wait[24], now[24], label[64];
  char *owner = owner_of(uuid, tid);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  snprintf(wait, sizeof wait, "%" PRId64, wait_ms);
  snprintf(now, sizeof now, "%lld", rt_emu_wall_ms());
  snprintf(label, sizeof label, "redisson_emu: %s", what);
  const char *args[] = {lease, owner, now_before_wait ? now : wait, now_before_wait ? wait : now};
  redisReply *r = rfair_eval(ctx, script, name, 4, args, what);
  free(owner);
  return rt_emu_fair_reply(r, ttl, label);
}

int rt_rfair_attempt(redisContext *ctx, const char *name, const char *uuid, long long tid,
                     int64_t lease_ms, int64_t wait_ms, long long *ttl) {
  return rfair_try(ctx, rfair_acquire_script, name, uuid, tid, lease_ms, wait_ms, 0, ttl,
                   "fair lock");
}

int rt_emu_fair_reply(redisReply *r, long long *ttl, const char *what) {
  if (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_INTEGER) {
    int type = r->type;
    freeReplyObject(r);
    FAIL("%s: unexpected reply type %d", what, type);
  }
  int acquired = r->type == REDIS_REPLY_NIL;
  if (!acquired && ttl != NULL)
    *ttl = r->integer;
  freeReplyObject(r);
  return acquired;
}

int rt_rfair_try_nowait(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms, int64_t wait_ms) {
  return rfair_try(ctx, rfair_nowait_script, name, uuid, tid, lease_ms, wait_ms, 1, NULL,
                   "fair tryLock");
}

void rt_rfair_acquire_failed(redisContext *ctx, const char *name, const char *uuid,
                             long long tid, int64_t wait_ms) {
  char wait[24];
  char *owner = owner_of(uuid, tid);
  char *q = rt_rfair_queue_key(name), *t = rt_rfair_timeout_key(name);
  snprintf(wait, sizeof wait, "%" PRId64, wait_ms);
  const char *argv[] = {"EVAL", rfair_failed_script, "2", q, t, owner, wait};
  freeReplyObject(rt_emu_command(ctx, 7, argv, "fair acquireFailed"));
  free(owner);
  free(q);
  free(t);
}

int rt_rfair_unlock(redisContext *ctx, const char *name, const char *uuid, long long tid) {
  char req[33], lease[24], now[24], latch_ttl[24];
  rt_emu_random_req(req);
  char *owner = owner_of(uuid, tid);
  char *q = rt_rfair_queue_key(name), *t = rt_rfair_timeout_key(name);
  char *base = rt_rlock_channel(name);
  char *latch = rt_rlock_latch_key(name, req);
  snprintf(lease, sizeof lease, "%d", RT_RLOCK_DEFAULT_LEASE_MS);
  snprintf(now, sizeof now, "%lld", rt_emu_wall_ms());
  snprintf(latch_ttl, sizeof latch_ttl, "%d", RT_RLOCK_LATCH_TTL_MS);
  const char *argv[] = {"EVAL", rfair_unlock_script, "5", name, q, t, base, latch,
                        "0",    lease,               owner, now, rt_emu_publish_cmd(), latch_ttl};
  int out = unlock_reply(rt_emu_command(ctx, 14, argv, "fair unlock"), "fair unlock");
  const char *del[] = {"DEL", latch};
  freeReplyObject(rt_emu_command(ctx, 2, del, "DEL latch"));
  free(owner);
  free(q);
  free(t);
  free(base);
  free(latch);
  return out;
}

void rt_sub_subscribe(redisContext *sub, const char *channel) {
  if (emu_sharded)
    sub_cmd(sub, "SSUBSCRIBE", "ssubscribe", channel);
  else
    sub_cmd(sub, "SUBSCRIBE", "subscribe", channel);
}

void rt_sub_unsubscribe(redisContext *sub, const char *channel) {
  if (emu_sharded)
    sub_cmd(sub, "SUNSUBSCRIBE", "sunsubscribe", channel);
  else
    sub_cmd(sub, "UNSUBSCRIBE", "unsubscribe", channel);
}

/* The waiting loop both lock() and tryLock(wait) run (RedissonLock's lock
 * and tryLock): one attempt; on failure subscribe to the own channel, then
 * attempt again, and after each failed attempt wait for a message at most
 * the returned ttl when it is >= 0 (0: poll again at once; 1 ms here), for a
 * message only when it is < 0, until acquired or timeout_ms passed. Only
 * tryLock gives up with acquireFailed; lock() never gives up (here it stops
 * at the bound and leaves its entry, as an interrupted lock() does). */
int rt_emu_fair_wait(rt_emu_fair_attempt_fn attempt, redisContext *ctx, redisContext *sub,
                     const char *name, const char *uuid, long long tid, int64_t lease_ms,
                     int64_t wait_ms, int64_t timeout_ms, int gives_up) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  long long ttl = 0;
  int rc = attempt(ctx, name, uuid, tid, lease_ms, wait_ms, &ttl);
  if (rc != 0)
    return rc == 1 ? 0 : rc;
  char *channel = rt_rfair_channel(name, uuid, tid);
  rt_sub_subscribe(sub, channel);
  int out = -1;
  for (;;) {
    rc = attempt(ctx, name, uuid, tid, lease_ms, wait_ms, &ttl);
    if (rc != 0) {
      out = rc == 1 ? 0 : rc;
      break;
    }
    int64_t left = deadline - rt_now_ms();
    if (left <= 0)
      break;
    int64_t sleep = left;
    if (ttl >= 0 && ttl < left)
      sleep = ttl > 0 ? ttl : 1;
    redisReply *m = rt_sub_next_message(sub, sleep);
    if (m != NULL)
      freeReplyObject(m);
  }
  if (out == -1 && gives_up)
    rt_rfair_acquire_failed(ctx, name, uuid, tid, wait_ms);
  rt_sub_unsubscribe(sub, channel);
  free(channel);
  return out;
}

int rt_rfair_lock_wait(redisContext *ctx, redisContext *sub, const char *name,
                       const char *uuid, long long tid, int64_t lease_ms, int64_t wait_ms,
                       int64_t timeout_ms) {
  return rt_emu_fair_wait(rt_rfair_attempt, ctx, sub, name, uuid, tid, lease_ms, wait_ms,
                          timeout_ms, 1);
}

int rt_rfair_lock(redisContext *ctx, redisContext *sub, const char *name, const char *uuid,
                  long long tid, int64_t lease_ms, int64_t thread_wait_ms, int64_t bound_ms) {
  return rt_emu_fair_wait(rt_rfair_attempt, ctx, sub, name, uuid, tid, lease_ms, thread_wait_ms,
                          bound_ms, 0);
}

/* ---- RSemaphore ---------------------------------------------------------------------- */

/* tryAcquire(n): KEYS[1] NAME; ARGV[1] n. Enough permits: take them, 1;
 * else 0 (absent counts as none). */
static const char rsem_acquire_script[] =
    "local v = redis.call('get', KEYS[1])\n"
    "if v and tonumber(v) >= tonumber(ARGV[1]) then\n"
    "  redis.call('decrby', KEYS[1], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* release(n): KEYS[1] NAME, KEYS[2] channel; ARGV[1] n, ARGV[2] publish
 * command. Add n, publish the new value, reply it. */
static const char rsem_release_script[] =
    "local v = redis.call('incrby', KEYS[1], ARGV[1])\n"
    "redis.call(ARGV[2], KEYS[2], v)\n"
    "return v\n";

/* trySetPermits(n): KEYS[1] NAME, KEYS[2] channel; ARGV[1] n, ARGV[2]
 * publish command. Only when NAME is absent: set, publish n, 1; else 0. */
static const char rsem_try_set_script[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('set', KEYS[1], ARGV[1])\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

char *rt_rsem_channel(const char *name) { return rt_rlock_prefix_name("redisson_sc", name); }

long long rt_emu_int(redisReply *r, const char *what) {
  if (r->type != REDIS_REPLY_INTEGER) {
    int type = r->type;
    freeReplyObject(r);
    FAIL("redisson_emu: %s: unexpected reply type %d, wanted an integer", what, type);
  }
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

long long rt_emu_get_number(redisContext *ctx, const char *key, const char *what) {
  const char *argv[] = {"GET", key};
  redisReply *r = rt_emu_command(ctx, 2, argv, what);
  long long v = 0;
  if (r->type == REDIS_REPLY_STRING)
    v = strtoll(r->str, NULL, 10);
  else if (r->type != REDIS_REPLY_NIL)
    FAIL("redisson_emu: %s: reply type %d", what, r->type);
  freeReplyObject(r);
  return v;
}

int rt_rsem_try_acquire(redisContext *ctx, const char *name, long long n) {
  char num[24];
  snprintf(num, sizeof num, "%lld", n);
  const char *argv[] = {"EVAL", rsem_acquire_script, "1", name, num};
  return (int)rt_emu_int(rt_emu_command(ctx, 5, argv, "semaphore tryAcquire"), "semaphore tryAcquire");
}

long long rt_rsem_release(redisContext *ctx, const char *name, long long n) {
  char num[24];
  char *channel = rt_rsem_channel(name);
  snprintf(num, sizeof num, "%lld", n);
  const char *argv[] = {"EVAL", rsem_release_script, "2", name, channel, num, rt_emu_publish_cmd()};
  long long v = rt_emu_int(rt_emu_command(ctx, 7, argv, "semaphore release"), "semaphore release");
  free(channel);
  return v;
}

int rt_rsem_try_set_permits(redisContext *ctx, const char *name, long long n) {
  char num[24];
  char *channel = rt_rsem_channel(name);
  snprintf(num, sizeof num, "%lld", n);
  const char *argv[] = {"EVAL", rsem_try_set_script, "2", name, channel, num, rt_emu_publish_cmd()};
  int v = (int)rt_emu_int(rt_emu_command(ctx, 7, argv, "trySetPermits"), "trySetPermits");
  free(channel);
  return v;
}

long long rt_rsem_available(redisContext *ctx, const char *name) {
  return rt_emu_get_number(ctx, name, "availablePermits");
}

int rt_emu_wait_on_channel(redisContext *sub, const char *channel, int64_t deadline,
                           int (*done)(void *arg, int64_t *sleep_ms), void *arg,
                           atomic_int *sleeps) {
  int ok = 0;
  rt_sub_subscribe(sub, channel);
  for (long i = 0; i < 1000000L; i++) {
    int64_t left = deadline - rt_now_ms(), sleep = left;
    if (done(arg, &sleep)) {
      ok = 1;
      break;
    }
    left = deadline - rt_now_ms();
    if (left <= 0)
      break;
    if (sleep > left)
      sleep = left;
    if (sleeps != NULL)
      atomic_fetch_add(sleeps, 1);
    redisReply *m = rt_sub_next_message(sub, sleep);
    if (m != NULL)
      freeReplyObject(m); /* "0" wakes one waiter in Redisson; we are the only one */
  }
  rt_sub_unsubscribe(sub, channel);
  return ok;
}

typedef struct rsem_try_s {
  redisContext *ctx;
  const char *name;
  long long n;
} rsem_try_t;

static int rsem_try(void *arg, int64_t *sleep_ms) {
  rsem_try_t *t = arg;
  (void)sleep_ms;
  return rt_rsem_try_acquire(t->ctx, t->name, t->n);
}

int rt_rsem_acquire_blocking(redisContext *ctx, redisContext *sub, const char *name,
                             long long n, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  rsem_try_t t = {ctx, name, n};
  if (rt_rsem_try_acquire(ctx, name, n))
    return 0;
  char *channel = rt_rsem_channel(name);
  int acquired = rt_emu_wait_on_channel(sub, channel, deadline, rsem_try, &t, NULL);
  free(channel);
  return acquired ? 0 : -1;
}

/* ---- RPermitExpirableSemaphore --------------------------------------------------------- */

/* Every script first reclaims: ids scored at or before NOW leave the zset
 * and their number goes back to NAME; a positive new count is published.
 * (Redisson reclaims at most n ids in tryAcquire; all of them here.) */
#define RPSEM_RECLAIM                                                          \
  "local gone = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[3])\n"       \
  "if #gone > 0 then\n"                                                        \
  "  for i = 1, #gone do redis.call('zrem', KEYS[2], gone[i]) end\n"           \
  "  local v = redis.call('incrby', KEYS[1], #gone)\n"                         \
  "  if v > 0 then redis.call(ARGV[5], KEYS[3], v) end\n"                      \
  "end\n"

/* tryAcquire(1, lease): KEYS[1] NAME, KEYS[2] {NAME}:timeout, KEYS[3]
 * channel; ARGV[1] n, ARGV[2] expiry (epoch ms, or the never score), ARGV[3]
 * NOW, ARGV[4] the never score, ARGV[5] publish command, ARGV[6] the id.
 * Enough permits: take n, add the id scored by its expiry, lend NAME's TTL
 * to the zset, reply "OK". Else ":" .. the lowest score when a lease is
 * running, else nil. */
static const char rpsem_acquire_script[] =
    RPSEM_RECLAIM
    "local v = tonumber(redis.call('get', KEYS[1]) or '0')\n"
    "if v >= tonumber(ARGV[1]) then\n"
    "  redis.call('decrby', KEYS[1], ARGV[1])\n"
    "  redis.call('zadd', KEYS[2], ARGV[2], ARGV[6])\n"
    "  local ttl = redis.call('pttl', KEYS[1])\n"
    "  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end\n"
    "  return 'OK'\n"
    "end\n"
    "local low = redis.call('zrange', KEYS[2], 0, 0, 'withscores')\n"
    "if low[2] and low[2] ~= ARGV[4] then return ':' .. low[2] end\n"
    "return nil\n";

/* tryRelease(id): KEYS[1] NAME, KEYS[2] channel, KEYS[3] {NAME}:timeout;
 * ARGV[1] id, ARGV[2] 1, ARGV[3] NOW, ARGV[4] publish command. Not there:
 * 0. Else remove it, add one permit, publish the new count; reply 0 when its
 * lease had ended, else 1. (The -1 of rt_rpsem_release is client-side.) */
static const char rpsem_release_script[] =
    "local s = redis.call('zscore', KEYS[3], ARGV[1])\n"
    "if not s then return -1 end\n"
    "redis.call('zrem', KEYS[3], ARGV[1])\n"
    "local v = redis.call('incrby', KEYS[1], ARGV[2])\n"
    "redis.call(ARGV[4], KEYS[2], v)\n"
    "if tonumber(s) <= tonumber(ARGV[3]) then return 0 end\n"
    "return 1\n";

/* availablePermits(): KEYS as tryAcquire; ARGV[3] NOW, ARGV[5] publish. */
static const char rpsem_available_script[] =
    RPSEM_RECLAIM
    "return tonumber(redis.call('get', KEYS[1]) or '0')\n";

static long long epoch_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static char *rpsem_timeout_key(const char *name) {
  if (strchr(name, '{') != NULL)
    return rt_emu_asprintf("%s:timeout", name);
  return rt_emu_asprintf("{%s}:timeout", name);
}

int rt_rpsem_try_acquire(redisContext *ctx, const char *name, int64_t lease_ms,
                         char id_hex[33]) {
  unsigned char raw[16];
  char expiry[24], now[24], never[24];
  int rc = uv_random(NULL, NULL, raw, sizeof raw, 0, NULL);
  if (rc != 0)
    FAIL("redisson_emu: uv_random: %s", uv_strerror(rc));
  for (int i = 0; i < 16; i++)
    snprintf(id_hex + 2 * i, 3, "%02x", raw[i]);
  long long t = epoch_ms();
  snprintf(now, sizeof now, "%lld", t);
  snprintf(never, sizeof never, "%lld", RT_RPSEM_NEVER);
  snprintf(expiry, sizeof expiry, "%lld", lease_ms > 0 ? t + (long long)lease_ms : RT_RPSEM_NEVER);
  char *zset = rpsem_timeout_key(name);
  char *channel = rt_rsem_channel(name);
  const char *argv[] = {"EVAL", rpsem_acquire_script, "3", name, zset, channel, "1",
                        expiry, now, never, rt_emu_publish_cmd(), (const char *)raw};
  size_t lens[12];
  for (int i = 0; i < 11; i++)
    lens[i] = strlen(argv[i]);
  lens[11] = 16; /* the id is raw bytes */
  redisReply *r = redisCommandArgv(ctx, 12, argv, lens);
  free(zset);
  free(channel);
  if (r == NULL)
    FAIL("redisson_emu: permit tryAcquire: %s", ctx->errstr);
  int out;
  if (r->type == REDIS_REPLY_STATUS || (r->type == REDIS_REPLY_STRING && strcmp(r->str, "OK") == 0))
    out = 1;
  else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL)
    out = 0;
  else {
    int type = r->type;
    freeReplyObject(r);
    FAIL("redisson_emu: permit tryAcquire: reply type %d", type);
  }
  freeReplyObject(r);
  return out;
}

int rt_rpsem_release(redisContext *ctx, const char *name, const char *id_hex) {
  unsigned char raw[16];
  char now[24];
  for (int i = 0; i < 16; i++) {
    unsigned v;
    if (sscanf(id_hex + 2 * i, "%2x", &v) != 1)
      FAIL("redisson_emu: bad permit id %s", id_hex);
    raw[i] = (unsigned char)v;
  }
  snprintf(now, sizeof now, "%lld", epoch_ms());
  char *zset = rpsem_timeout_key(name);
  char *channel = rt_rsem_channel(name);
  const char *argv[] = {"EVAL", rpsem_release_script, "3", name, channel, zset,
                        (const char *)raw, "1", now, rt_emu_publish_cmd()};
  size_t lens[10];
  for (int i = 0; i < 10; i++)
    lens[i] = i == 6 ? 16 : strlen(argv[i]);
  redisReply *r = redisCommandArgv(ctx, 10, argv, lens);
  free(zset);
  free(channel);
  if (r == NULL)
    FAIL("redisson_emu: permit release: %s", ctx->errstr);
  return (int)rt_emu_int(r, "permit release");
}

long long rt_rpsem_available(redisContext *ctx, const char *name) {
  char now[24], never[24];
  snprintf(now, sizeof now, "%lld", epoch_ms());
  snprintf(never, sizeof never, "%lld", RT_RPSEM_NEVER);
  char *zset = rpsem_timeout_key(name);
  char *channel = rt_rsem_channel(name);
  const char *argv[] = {"EVAL", rpsem_available_script, "3", name, zset, channel,
                        "1", "0", now, never, rt_emu_publish_cmd()};
  long long v = rt_emu_int(rt_emu_command(ctx, 11, argv, "permit availablePermits"),
                          "permit availablePermits");
  free(zset);
  free(channel);
  return v;
}
