/* Test-side conveniences for the countdown latch, on top of lk_fixture.h:
 * run one latch operation to its callback, check the exactly-once rule, and
 * small side-channel helpers. Header-only (static inline), like
 * lk_fixture.h, so harness .c files stay independent of latchkey. */
#ifndef LK_TEST_HARNESS_LATCH_FIXTURE_H
#define LK_TEST_HARNESS_LATCH_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "server_faults.h"

/* One latch operation's outcome, filled by lx_cb: the lock's outcome
 * record. */
typedef sx_t lx_t;

static inline void lx_cb(lk_latch_t *l, int status, void *arg) {
  sx_record(arg, status, lk_latch_result(l));
}

static inline lk_latch_t *lx_new(fx_t *fx, const char *name, int strict) {
  lk_latch_opts_t o;
  lk_latch_t *l = NULL;
  lk_latch_opts_init(&o);
  o.strict = strict;
  ASSERT_OK(lk_latch_new(fx->c, name, &o, &l));
  return l;
}

static inline void lx_closed_cb(lk_latch_t *l) {
  int *flag = lk_latch_get_data(l);
  *flag = 1;
}

static inline void lx_close(uv_loop_t *loop, lk_latch_t *l) {
  int closed = 0;
  lk_latch_set_data(l, &closed);
  ASSERT_OK(lk_latch_close(l, lx_closed_cb));
  rt_run_until(loop, &closed, 10000);
}

/* How most latch cases end: the latches are closed in the order given, then
 * the fixture ends. latches: NULL-terminated, e.g. (lk_latch_t *[]){a, b, NULL}. */
static inline void lx_finish(fx_t *fx, lk_latch_t *const *latches) {
  for (; *latches != NULL; latches++)
    lx_close(&fx->loop, *latches);
  fx_finish(fx);
}

typedef int (*lx_op_fn)(lk_latch_t *, lk_latch_cb, void *);

/* count_down / get_count / delete to completion; *result gets
 * lk_latch_result() when result is not NULL. */
static inline int lx_run(uv_loop_t *loop, lx_op_fn fn, lk_latch_t *l, int64_t *result) {
  lx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(fn(l, lx_cb, &s));
  rt_run_until(loop, &s.done, 15000);
  if (result != NULL)
    *result = s.result;
  return s.status;
}

static inline int lx_set(uv_loop_t *loop, lk_latch_t *l, int64_t count, int64_t *result) {
  lx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_latch_try_set_count(l, count, lx_cb, &s));
  rt_run_until(loop, &s.done, 15000);
  if (result != NULL)
    *result = s.result;
  return s.status;
}

/* Starts an await; the outcome lands in *s. */
static inline void lx_await_start(lk_latch_t *l, int64_t wait_ms, lx_t *s) {
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_latch_await(l, wait_ms, lx_cb, s));
}

static inline int lx_await(uv_loop_t *loop, lk_latch_t *l, int64_t wait_ms) {
  lx_t s;
  lx_await_start(l, wait_ms, &s);
  rt_run_until(loop, &s.done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s.status;
}

/* GET key as a number; def when absent. */
static inline long long lx_get(rt_server_t *srv, const char *key, long long def) {
  char *v = rt_cmd_str(srv, "GET %s", key);
  long long n = v ? atoll(v) : def;
  free(v);
  return n;
}

/* How many keys match pattern. */
static inline size_t lx_count_keys(rt_server_t *srv, const char *pattern) {
  return (size_t)rt_server_count_keys(srv, pattern);
}

#endif /* LK_TEST_HARNESS_LATCH_FIXTURE_H */
