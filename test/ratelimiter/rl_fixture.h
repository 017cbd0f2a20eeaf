/* Test-side conveniences for the rate limiter, in the style of
 * sem_fixture.h: run one operation to its callback, open and close
 * objects, and the sliding-window checker over a grant history.
 * Header-only. */
#ifndef LK_TEST_RATELIMITER_RL_FIXTURE_H
#define LK_TEST_RATELIMITER_RL_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"

typedef struct rl_sx_s {
  sx_t x;
  int64_t grant_ms;
  char errtext[200];
} rl_sx_t;

static inline void rl_cb(lk_ratelimiter_t *rl, int status, void *arg) {
  rl_sx_t *s = arg;
  s->x.calls++;
  ASSERT_EQ(s->x.calls, 1);
  s->x.done = 1;
  s->x.status = status;
  s->x.result = lk_ratelimiter_result(rl);
  s->x.t_ns = uv_hrtime();
  s->grant_ms = lk_ratelimiter_grant_time_ms(rl);
  snprintf(s->errtext, sizeof s->errtext, "%s", lk_ratelimiter_error_text(rl));
}

static inline lk_ratelimiter_t *rl_new(lk_client_t *c, const char *name) {
  lk_ratelimiter_t *rl = NULL;
  ASSERT_OK(lk_ratelimiter_new(c, name, &rl));
  return rl;
}

static inline void rl_closed_cb(lk_ratelimiter_t *rl) { *(int *)lk_ratelimiter_get_data(rl) = 1; }

static inline void rl_close(uv_loop_t *loop, lk_ratelimiter_t *rl) {
  int closed = 0;
  lk_ratelimiter_set_data(rl, &closed);
  ASSERT_OK(lk_ratelimiter_close(rl, rl_closed_cb));
  rt_run_until(loop, &closed, 10000);
}

static inline void rl_start_acquire(lk_ratelimiter_t *rl, int64_t permits, int64_t wait_ms,
                                    rl_sx_t *s) {
  lk_ratelimiter_opts_t o;
  memset(s, 0, sizeof *s);
  lk_ratelimiter_opts_init(&o);
  o.permits = permits;
  o.wait_ms = wait_ms;
  ASSERT_OK(lk_ratelimiter_acquire(rl, &o, rl_cb, s));
}

static inline int rl_acquire(uv_loop_t *loop, lk_ratelimiter_t *rl, int64_t permits,
                             int64_t wait_ms, rl_sx_t *s) {
  rl_start_acquire(rl, permits, wait_ms, s);
  rt_run_until(loop, &s->x.done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s->x.status;
}

static inline int rl_set(uv_loop_t *loop, lk_ratelimiter_t *rl, int overwrite, lk_rate_type_t type,
                         int64_t rate, int64_t interval_ms, int64_t *result) {
  lk_ratelimiter_config_t cfg;
  rl_sx_t s;
  memset(&s, 0, sizeof s);
  lk_ratelimiter_config_init(&cfg);
  cfg.type = type;
  cfg.rate = rate;
  cfg.interval_ms = interval_ms;
  ASSERT_OK(overwrite ? lk_ratelimiter_set_rate(rl, &cfg, rl_cb, &s)
                      : lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s));
  rt_run_until(loop, &s.x.done, 15000);
  if (result != NULL)
    *result = s.x.result;
  return s.x.status;
}

typedef int (*rl_op_fn)(lk_ratelimiter_t *, lk_ratelimiter_cb, void *);

static inline int rl_run(uv_loop_t *loop, rl_op_fn fn, lk_ratelimiter_t *rl, int64_t *result) {
  rl_sx_t s;
  memset(&s, 0, sizeof s);
  ASSERT_OK(fn(rl, rl_cb, &s));
  rt_run_until(loop, &s.x.done, 15000);
  if (result != NULL)
    *result = s.x.result;
  return s.x.status;
}

/* One grant: its time (ms, the clock the limiter scored it with) and its
 * permits. */
typedef struct rl_grant_s {
  int64_t t_ms;
  int64_t permits;
} rl_grant_t;

static inline int rl_grant_cmp(const void *x, const void *y) {
  const rl_grant_t *a = x, *b = y;
  return a->t_ms < b->t_ms ? -1 : a->t_ms > b->t_ms;
}

/* The algorithm's bound (Redisson's sliding window of grants): for every
 * grant at t, the permits granted with times in (t - window_ms, t] total at
 * most the rate. Sorts g; returns the largest such total over all grants
 * (the caller compares it with the rate). */
static inline int64_t rl_max_in_window(rl_grant_t *g, size_t n, int64_t window_ms) {
  size_t i, lo = 0;
  int64_t sum = 0, best = 0;
  qsort(g, n, sizeof *g, rl_grant_cmp);
  for (i = 0; i < n; i++) {
    sum += g[i].permits;
    while (g[lo].t_ms <= g[i].t_ms - window_ms)
      sum -= g[lo++].permits;
    /* Grants at the same ms as g[i] but after it in the sorted order are in
     * g[i]'s window too: count them at the last of them. */
    if (i + 1 < n && g[i + 1].t_ms == g[i].t_ms)
      continue;
    if (sum > best)
      best = sum;
  }
  return best;
}

#endif /* LK_TEST_RATELIMITER_RL_FIXTURE_H */
