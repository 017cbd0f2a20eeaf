/* The emulator's non-reentrant locks (see redisson_nr_emu.h). Our own
 * scripts, written from a description of what Redisson's non-reentrant
 * lock and fair lock do on the wire; compatibility is about the data,
 * replies and messages both sides see, not the scripts' text. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redisson_nr_emu.h"
#include "redisson_fair_lua.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* tryLock: KEYS[1] the lock hash; ARGV[1] lease ms, ARGV[2] "UUID:TID",
 * ARGV[3] the error word. A free lock: the caller's single hold and a lease,
 * nil. The caller holds it already: the error, nothing changed. Someone
 * else holds it: the PTTL. */
static const char nrlock_script[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  return redis.error_reply(ARGV[3])\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* The fair lock's waiting acquire: KEYS NAME, queue, deadlines; ARGV lease,
 * owner, WAIT, NOW, the error word. As RFairLock's (redisson_emu.c): heads
 * whose deadline passed are dropped; a free lock with nobody ahead of the
 * caller is taken (everyone else's deadline moves WAIT earlier), nil. Then,
 * where RFairLock re-enters, the error for a caller that holds. A caller
 * already queued gets the holder's PTTL (never below 0); a new one joins at
 * the tail with the deadline "predecessor's deadline (or now + PTTL) +
 * WAIT" and gets that predecessor's remaining time (or the PTTL). */
static const char nrfair_script[] =
    "local owner = ARGV[2]\n"
    "local wait, now = tonumber(ARGV[3]), tonumber(ARGV[4])\n" RFAIR_PURGE RFAIR_TAKE_IF_FREE
    "if redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  return redis.error_reply(ARGV[5])\n"
    "end\n" RFAIR_QUEUE;

/* Runs an EVAL; a reply that is the refusal gives RT_NR_REENTRY through
 * *reentry (and NULL), any other server error fails the test. */
static redisReply *nr_eval(redisContext *ctx, int argc, const char **argv, const char *what,
                           int *reentry) {
  size_t lens[16];
  *reentry = 0;
  for (int i = 0; i < argc; i++)
    lens[i] = strlen(argv[i]);
  redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
  if (r == NULL)
    FAIL("redisson_nr_emu: %s: %s", what, ctx->errstr[0] ? ctx->errstr : "no reply");
  if (r->type != REDIS_REPLY_ERROR)
    return r;
  /* The server may put "ERR " before a bare word (Redis 7 does), as
   * Redisson's client sees it too; it looks for the word anywhere. */
  if (strstr(r->str, RT_NR_ERROR_WORD) != NULL) {
    freeReplyObject(r);
    *reentry = 1;
    return NULL;
  }
  char text[256];
  snprintf(text, sizeof text, "%.*s", (int)r->len, r->str);
  freeReplyObject(r);
  FAIL("redisson_nr_emu: %s: server error: %s", what, text);
}

long long rt_nrlock_try(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms) {
  char lease[24];
  int reentry;
  char *owner = rt_emu_asprintf("%s:%lld", uuid, tid);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *argv[] = {"EVAL", nrlock_script, "1", name, lease, owner, RT_NR_ERROR_WORD};
  redisReply *r = nr_eval(ctx, 7, argv, "non-reentrant tryLock", &reentry);
  free(owner);
  if (reentry)
    return RT_NR_REENTRY;
  return rt_emu_try_reply(r, "redisson_nr_emu: non-reentrant tryLock");
}

int rt_nrlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                            const char *uuid, long long tid, int64_t lease_ms,
                            int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  long long ttl = rt_nrlock_try(ctx, name, uuid, tid, lease_ms);
  if (ttl == RT_RLOCK_ACQUIRED)
    return 0;
  if (ttl == RT_NR_REENTRY)
    return RT_NR_REENTRY;
  /* Subscribed before the second try: a release in between is not missed. */
  char *channel = rt_rlock_channel(name);
  rt_sub_subscribe(sub, channel);
  int out = -1;
  for (;;) {
    ttl = rt_nrlock_try(ctx, name, uuid, tid, lease_ms);
    if (ttl == RT_RLOCK_ACQUIRED || ttl == RT_NR_REENTRY) {
      out = ttl == RT_RLOCK_ACQUIRED ? 0 : RT_NR_REENTRY;
      break;
    }
    int64_t left = deadline - rt_now_ms();
    if (left <= 0)
      break;
    redisReply *m = rt_sub_next_message(sub, ttl >= 0 && ttl < left ? ttl : left);
    if (m != NULL)
      freeReplyObject(m);
  }
  rt_sub_unsubscribe(sub, channel);
  free(channel);
  return out;
}


int rt_nrfair_attempt(redisContext *ctx, const char *name, const char *uuid, long long tid,
                      int64_t lease_ms, int64_t wait_ms, long long *ttl) {
  char lease[24], wait[24], now[24];
  int reentry;
  char *owner = rt_emu_asprintf("%s:%lld", uuid, tid);
  char *q = rt_rfair_queue_key(name), *t = rt_rfair_timeout_key(name);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  snprintf(wait, sizeof wait, "%" PRId64, wait_ms);
  snprintf(now, sizeof now, "%lld", rt_emu_wall_ms());
  const char *argv[] = {"EVAL", nrfair_script, "3", name, q, t,
                        lease,  owner,         wait, now, RT_NR_ERROR_WORD};
  redisReply *r = nr_eval(ctx, 11, argv, "non-reentrant fair lock", &reentry);
  free(owner);
  free(q);
  free(t);
  if (reentry)
    return RT_NR_REENTRY;
  return rt_emu_fair_reply(r, ttl, "redisson_nr_emu: non-reentrant fair lock");
}

int rt_nrfair_lock_wait(redisContext *ctx, redisContext *sub, const char *name,
                        const char *uuid, long long tid, int64_t lease_ms, int64_t wait_ms,
                        int64_t timeout_ms) {
  return rt_emu_fair_wait(rt_nrfair_attempt, ctx, sub, name, uuid, tid, lease_ms, wait_ms,
                          timeout_ms, 1);
}
