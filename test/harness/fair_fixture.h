/* Fair-lock conveniences over lk_fixture.h: typed "run until this
 * operation's callback" helpers and side-channel readers of the queue and
 * deadline keys. Header-only, like lk_fixture.h. */
#ifndef LK_TEST_HARNESS_FAIR_FIXTURE_H
#define LK_TEST_HARNESS_FAIR_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"

/* One fair operation's outcome: the lock's outcome record. */
typedef sx_t fsx_t;

static inline void fsx_cb(lk_fair_t *f, int status, void *arg) {
  sx_record(arg, status, lk_fair_result(f));
}

/* fx_fair, fx_fair_closed_cb, fx_close_fair, fx_close_fairs, fx_finish_fairs
 * (lk_fixture.h). */
FX_OBJECT_KIND(fair, lk_fair_t, lk_fair)

/* The same, for cases that end with the lock gone from the server: the
 * locks are closed, then the key name must no longer exist, then the
 * fixture ends. */
static inline void fx_finish_fairs_gone(fx_t *fx, const char *name, lk_fair_t *const *fairs) {
  fx_close_fairs(fx, fairs);
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", name), 0);
  fx_finish(fx);
}

/* Starts an acquire without waiting for it. */
static inline void fsx_start(lk_fair_t *f, int64_t wait_ms, int64_t lease_ms,
                             int64_t waiter_timeout_ms, fsx_t *s) {
  lk_fair_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_fair_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  if (waiter_timeout_ms > 0)
    o.waiter_timeout_ms = waiter_timeout_ms;
  ASSERT_OK(lk_fair_acquire(f, &o, fsx_cb, s));
}

static inline int fsx_acquire(fx_t *fx, lk_fair_t *f, int64_t wait_ms, int64_t lease_ms) {
  fsx_t s;
  fsx_start(f, wait_ms, lease_ms, 0, &s);
  return sx_await_acquire(&fx->loop, &s, wait_ms);
}

/* Objects on fair lock name, one owner each: *holder takes it at once
 * (lease_ms); *second and, unless third is NULL, *third are left idle, to
 * queue behind it or be refused (issue 29: the cases opened with these
 * lines). */
static inline void fx_fair_holder_and_others(fx_t *fx, const char *name, int64_t lease_ms,
                                             lk_fair_t **holder, lk_fair_t **second,
                                             lk_fair_t **third) {
  *holder = fx_fair(fx, name);
  *second = fx_fair(fx, name);
  if (third != NULL)
    *third = fx_fair(fx, name);
  ASSERT_OK(fsx_acquire(fx, *holder, 0, lease_ms));
}

typedef int (*fsx_op_fn)(lk_fair_t *, lk_fair_cb, void *);

static inline int fsx_run(fx_t *fx, fsx_op_fn fn, lk_fair_t *f, int64_t *result) {
  fsx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(fn(f, fsx_cb, &s));
  rt_run_until(&fx->loop, &s.done, 15000);
  if (result != NULL)
    *result = s.result;
  return s.status;
}

/* holder releases, and s (an acquire already waiting) is granted within
 * 5 s. */
static inline void fsx_release_hands_over(fx_t *fx, lk_fair_t *holder, fsx_t *s) {
  ASSERT_OK(fsx_run(fx, lk_fair_release, holder, NULL));
  rt_run_until(&fx->loop, &s->done, 5000);
  ASSERT_OK(s->status);
}

/* b - a in ms, signed: two callbacks of one loop pass can come in either
 * order. */
static inline int64_t ms_between(uint64_t a_ns, uint64_t b_ns) {
  return ((int64_t)b_ns - (int64_t)a_ns) / 1000000;
}

/* holder releases while s (an acquire already waiting) waits: both call
 * back within 5 s, s granted less than bound_ms (grown by the stalls
 * measured meanwhile) after the release's reply: woken, not polled. */
static inline void fsx_release_wakes(fx_t *fx, lk_fair_t *holder, fsx_t *s, int64_t bound_ms) {
  fsx_t rel;
  memset(&rel, 0, sizeof(rel));
  ASSERT_OK(lk_fair_release(holder, fsx_cb, &rel));
  rt_run_until(&fx->loop, &s->done, 5000);
  rt_run_until(&fx->loop, &rel.done, 5000);
  ASSERT_OK(s->status);
  ASSERT_LT(ms_between(rel.t_ns, s->t_ns), rt_stall_bound_since_ns(rel.t_ns, bound_ms));
}

/* ---- the keys, read on the side channel ---- */

/* "<prefix>:{name}" (malloc'd), or "<prefix>:name" when name already has
 * a hash tag. */
static inline char *fair_key(const char *prefix, const char *name) {
  char *k = NULL;
  if (asprintf(&k, strchr(name, '{') ? "%s:%s" : "%s:{%s}", prefix, name) < 0)
    FAIL("out of memory");
  return k;
}

static inline char *fair_queue_key(const char *name) {
  return fair_key("redisson_lock_queue", name);
}

static inline char *fair_timeout_key(const char *name) {
  return fair_key("redisson_lock_timeout", name);
}

/* verb (LLEN, ZCARD) on key, which is freed; its integer reply. */
static inline long long fair_key_int(rt_server_t *srv, const char *verb, char *key) {
  const char *argv[2] = {verb, key};
  long long n = rt_cmd_argv_int(srv, 2, argv, NULL);
  free(key);
  return n;
}

static inline long long fair_llen(rt_server_t *srv, const char *name) {
  return fair_key_int(srv, "LLEN", fair_queue_key(name));
}

/* f starts waiting on fair lock name (a 30 s wait and lease) and is seen
 * in its queue, which then holds queue_len waiters. */
static inline void fsx_start_queued(fx_t *fx, lk_fair_t *f, const char *name, long long queue_len,
                                    fsx_t *s) {
  fsx_start(f, 30000, 30000, 0, s);
  FX_EVENTUALLY(fx, fair_llen(fx->srv, name) == queue_len, 3000);
}

static inline long long fair_zcard(rt_server_t *srv, const char *name) {
  return fair_key_int(srv, "ZCARD", fair_timeout_key(name));
}

/* latchkey's own zset of its waiters' liveness deadlines (docs/fair.md,
 * "Queues shared with Redisson clients"). */
static inline char *fair_waiters_key(const char *name) {
  return fair_key("latchkey_fair_waiters", name);
}

/* owner's score in the zset key, which is freed, or -1 when it has none. */
static inline long long fair_key_score(rt_server_t *srv, char *key, const char *owner) {
  const char *argv[3] = {"ZSCORE", key, owner};
  long long n = rt_cmd_argv_num(srv, 3, argv, NULL, -1);
  free(key);
  return n;
}

/* The owner's liveness deadline in latchkey's waiter set, or -1. */
static inline long long fair_live_score(rt_server_t *srv, const char *name, const char *owner) {
  return fair_key_score(srv, fair_waiters_key(name), owner);
}

/* Sets a member's score in a zset key (ZADD XX: only an existing member). */
static inline void fair_set_score(rt_server_t *srv, const char *key, const char *owner,
                                  long long score) {
  char sc[32];
  const char *argv[5] = {"ZADD", key, "XX", sc, owner};
  snprintf(sc, sizeof(sc), "%lld", score);
  freeReplyObject(rt_cmd_argv(srv, 5, argv, NULL));
}

/* Index of owner in the queue, or -1. */
static inline long long fair_lpos(rt_server_t *srv, const char *name, const char *owner) {
  char *q = fair_queue_key(name);
  const char *argv[3] = {"LPOS", q, owner};
  redisReply *r = rt_cmd_argv(srv, 3, argv, NULL);
  long long n;
  ASSERT_NOT_NULL(r);
  n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  ASSERT(r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_NIL);
  freeReplyObject(r);
  free(q);
  return n;
}

/* The owner's deadline score, or -1 when it has none. */
static inline long long fair_zscore(rt_server_t *srv, const char *name, const char *owner) {
  return fair_key_score(srv, fair_timeout_key(name), owner);
}

/* The server's clock in epoch ms (TIME): what fair-lock deadlines use. */
static inline long long server_ms(rt_server_t *srv) {
  redisReply *r = rt_cmd(srv, "TIME");
  long long ms;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 2);
  ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
  freeReplyObject(r);
  return ms;
}

/* The waiter channel of a fair-lock object. malloc'd. */
static inline char *fair_channel_of(lk_fair_t *f) {
  const char *name = lk_fair_name(f);
  char *ch = NULL;
  if (asprintf(&ch,
               strchr(name, '{') ? "redisson_lock__channel:%s:%s"
                                 : "redisson_lock__channel:{%s}:%s",
               name, lk_fair_owner(f)) < 0)
    FAIL("out of memory");
  return ch;
}

/* calls= of one command in INFO commandstats (0 if never run): the one
 * shared reader, rt_server_cmd_calls (server_faults.h), which fails the test
 * on a field it cannot read instead of counting it as 0 (issue 29: this
 * header had a looser copy). The name stays for nr_fixture.h. */
static inline long long cmdstat_calls(rt_server_t *srv, const char *cmd) {
  return rt_server_cmd_calls(srv, cmd);
}

#endif /* LK_TEST_HARNESS_FAIR_FIXTURE_H */
