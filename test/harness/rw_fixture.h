/* Read/write lock conveniences over lk_fixture.h: "run the loop until this
 * operation's callback" helpers for lk_rwlock_t, so a case reads as a
 * sequence. Header-only (static inline), like lk_fixture.h. */
#ifndef LK_TEST_HARNESS_RW_FIXTURE_H
#define LK_TEST_HARNESS_RW_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"

#define RW_R LK_RW_READ
#define RW_W LK_RW_WRITE

static inline void rw_cb(lk_rwlock_t *rw, int status, void *arg) {
  sx_record(arg, status, lk_rwlock_result(rw));
}

static inline lk_rwlock_t *fx_rwlock(fx_t *fx, const char *name) {
  lk_rwlock_t *rw = NULL;
  ASSERT_OK(lk_rwlock_new(fx->c, name, &rw));
  return rw;
}

/* Starts the fixture (a server and a client) and opens one object on
 * name: how the single-object cases open. */
static inline lk_rwlock_t *fx_start_rwlock(fx_t *fx, const char *name) {
  fx_start(fx, NULL);
  return fx_rwlock(fx, name);
}

static inline void fx_rwlock_closed_cb(lk_rwlock_t *rw) { *(int *)lk_rwlock_get_data(rw) = 1; }

static inline void fx_close_rwlock(fx_t *fx, lk_rwlock_t *rw) {
  int closed = 0;
  lk_rwlock_set_data(rw, &closed);
  ASSERT_OK(lk_rwlock_close(rw, fx_rwlock_closed_cb));
  rt_run_until(&fx->loop, &closed, 10000);
}

/* How most read/write lock cases end that do not check the server is empty
 * (those use rw_finish_empty, test/harness/lockfam_rw_finish.h): the
 * objects are closed in the order given, then the fixture ends.
 * rws: NULL-terminated, e.g. (lk_rwlock_t *[]){a, b, NULL}. */
static inline void fx_finish_rwlocks(fx_t *fx, lk_rwlock_t *const *rws) {
  for (; *rws != NULL; rws++)
    fx_close_rwlock(fx, *rws);
  fx_finish(fx);
}

/* The options of an acquire that waits up to wait_ms for a hold of
 * lease_ms. */
static inline lk_rwlock_opts_t rw_opts(int64_t wait_ms, int64_t lease_ms) {
  lk_rwlock_opts_t o;
  lk_rwlock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  return o;
}

/* Starts an acquire; the caller runs the loop until s->done. */
static inline void rw_start(lk_rwlock_t *rw, lk_rwlock_side_t side, int64_t wait_ms,
                            int64_t lease_ms, sx_t *s) {
  lk_rwlock_opts_t o = rw_opts(wait_ms, lease_ms);
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_rwlock_acquire(rw, side, &o, rw_cb, s));
}

static inline int rw_acquire_in(uv_loop_t *loop, lk_rwlock_t *rw, lk_rwlock_side_t side,
                                int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  rw_start(rw, side, wait_ms, lease_ms, s);
  return sx_await_acquire(loop, s, wait_ms);
}

static inline int rw_acquire(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side, int64_t wait_ms,
                             int64_t lease_ms) {
  sx_t s;
  return rw_acquire_in(&fx->loop, rw, side, wait_ms, lease_ms, &s);
}

/* Objects on read/write lock name, one owner each: *holder takes side at
 * once (lease_ms); *second and, unless third is NULL, *third are left idle,
 * to wait for it or be refused (issue 29: the cases opened with these
 * lines). */
static inline void fx_rwlock_holder_and_others(fx_t *fx, const char *name, lk_rwlock_side_t side,
                                               int64_t lease_ms, lk_rwlock_t **holder,
                                               lk_rwlock_t **second, lk_rwlock_t **third) {
  *holder = fx_rwlock(fx, name);
  *second = fx_rwlock(fx, name);
  if (third != NULL)
    *third = fx_rwlock(fx, name);
  ASSERT_OK(rw_acquire(fx, *holder, side, 0, lease_ms));
}

/* Starts the fixture (a server and a client), then two owners of read/write
 * lock name: *holder takes hold_side at once (default lease), *waiter then
 * starts an acquire of wait_side with a budget of wait_ms into s, to wait
 * (the loop is not run for it). */
static inline void fx_start_rwlock_holder_and_waiter(fx_t *fx, const char *name,
                                                     lk_rwlock_side_t hold_side,
                                                     lk_rwlock_side_t wait_side, int64_t wait_ms,
                                                     lk_rwlock_t **holder, lk_rwlock_t **waiter,
                                                     sx_t *s) {
  fx_start(fx, NULL);
  fx_rwlock_holder_and_others(fx, name, hold_side, LK_LEASE_DEFAULT, holder, waiter, NULL);
  rw_start(*waiter, wait_side, wait_ms, LK_LEASE_DEFAULT, s);
}

/* Releases one hold of side; *result gets lk_rwlock_result() when not NULL. */
static inline int rw_release(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side,
                             int64_t *result) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_rwlock_release(rw, side, rw_cb, &s));
  return sx_wait(fx, &s, result);
}

/* rw_release for a hold a machine stall may have taken (EXPECT_HOLD): the
 * call's own code when not 0 (LK_ELEASELOST after on_lost), else the
 * callback's status. */
static inline int rw_try_release(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  int rc = lk_rwlock_release(rw, side, rw_cb, &s);
  if (rc != 0)
    return rc;
  return sx_wait(fx, &s, NULL);
}

typedef int (*rw_op_fn)(lk_rwlock_t *, lk_rwlock_cb, void *);

/* Runs force_release / mode / remaining_ttl to completion. */
static inline int rw_run(fx_t *fx, rw_op_fn fn, lk_rwlock_t *rw, int64_t *result) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(fn(rw, rw_cb, &s));
  return sx_wait(fx, &s, result);
}

static inline int64_t rw_server_holds(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  int64_t holds;
  ASSERT_OK(lk_rwlock_server_hold_count(rw, side, rw_cb, &s));
  ASSERT_OK(sx_wait(fx, &s, &holds));
  return holds;
}

/* HGET key field as a number; 0 when absent. */
static inline long long rw_hget(fx_t *fx, const char *key, const char *field) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", key, field);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

#endif /* LK_TEST_HARNESS_RW_FIXTURE_H */
