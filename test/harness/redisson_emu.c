/* The Redisson RLock emulator (see redisson_emu.h). The two scripts below are
 * our own reading of research/redisson.md §1.2, written from that prose: they
 * are not Redisson's text and may differ from it in anything the spec does
 * not pin down (Redisson's compatibility is about semantics, §0.3). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redisson_emu.h"

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

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...) {
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
    return xasprintf("%s:%s", prefix, name);
  return xasprintf("%s:{%s}", prefix, name);
}

char *rt_rlock_channel(const char *name) {
  return rt_rlock_prefix_name("redisson_lock__channel", name);
}

char *rt_rlock_latch_key(const char *name, const char *req) {
  char *base = rt_rlock_prefix_name("redisson_unlock_latch", name);
  char *key = xasprintf("%s:%s", base, req);
  free(base);
  return key;
}

static char *owner_of(const char *uuid, long long tid) { return xasprintf("%s:%lld", uuid, tid); }

/* 16 random bytes as 32 lower-case hex characters (Redisson's request id). */
static void random_req(char out[33]) {
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

static redisReply *command(redisContext *ctx, int argc, const char **argv, const char *what) {
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
  redisReply *r = command(ctx, 6, argv, "tryLock");
  free(owner);
  long long out;
  if (r->type == REDIS_REPLY_NIL) {
    out = RT_RLOCK_ACQUIRED;
  } else if (r->type == REDIS_REPLY_INTEGER) {
    out = r->integer;
    if (out == -1)
      out = RT_RLOCK_BUSY_NO_TTL;
    else if (out < 0) /* -2: the key vanished between EXISTS and PTTL; cannot happen in a script */
      FAIL("redisson_emu: tryLock replied %lld", out);
  } else {
    int type = r->type;
    freeReplyObject(r);
    FAIL("redisson_emu: tryLock: unexpected reply type %d", type);
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
                        "0",    lease,         owner, "PUBLISH", latch_ttl};
  redisReply *r = command(ctx, 11, argv, "unlock");
  int out;
  if (r->type == REDIS_REPLY_NIL) {
    out = -1;
  } else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
    out = (int)r->integer;
  } else {
    int type = r->type;
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    FAIL("redisson_emu: unlock: unexpected reply (type %d, value %lld)", type, v);
  }
  freeReplyObject(r);
  if (del_latch) {
    /* Redisson sends this without waiting; here it is simply the next command. */
    const char *del[] = {"DEL", latch};
    freeReplyObject(command(ctx, 2, del, "DEL latch"));
  }
  free(owner);
  free(channel);
  free(latch);
  return out;
}

int rt_rlock_unlock_lease(redisContext *ctx, const char *name, const char *uuid,
                          long long tid, int64_t lease_ms) {
  char req[33];
  random_req(req);
  return rt_rlock_unlock_req(ctx, name, uuid, tid, lease_ms, req, 1);
}

int rt_rlock_unlock(redisContext *ctx, const char *name, const char *uuid, long long tid) {
  return rt_rlock_unlock_lease(ctx, name, uuid, tid, RT_RLOCK_DEFAULT_LEASE_MS);
}

/* ---- pub/sub ------------------------------------------------------------------------------ */

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
    if (is_push(r, "message"))
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
  int64_t deadline = rt_now_ms() + timeout_ms;
  long long ttl = rt_rlock_try(ctx, name, uuid, tid, lease_ms);
  if (ttl == RT_RLOCK_ACQUIRED)
    return 0;
  /* Subscribe only after a failed try, then try again before sleeping: a
   * release published before the subscription took effect is not missed. */
  char *channel = rt_rlock_channel(name);
  sub_cmd(sub, "SUBSCRIBE", "subscribe", channel);
  int acquired = 0;
  for (;;) {
    ttl = rt_rlock_try(ctx, name, uuid, tid, lease_ms);
    if (ttl == RT_RLOCK_ACQUIRED) {
      acquired = 1;
      break;
    }
    int64_t left = deadline - rt_now_ms();
    if (left <= 0)
      break;
    int64_t sleep = ttl >= 0 && ttl < left ? ttl : left;
    redisReply *m = rt_sub_next_message(sub, sleep);
    if (m != NULL)
      freeReplyObject(m); /* "0" wakes one waiter in Redisson; we are the only one */
  }
  sub_cmd(sub, "UNSUBSCRIBE", "unsubscribe", channel);
  free(channel);
  return acquired ? 0 : -1;
}
