/* What a holder hears of its hold's health (docs/objects.md, "Health"),
 * recorded in order, and the checks the health tests share. Header-only,
 * like lk_fixture.h. */
#ifndef LK_TEST_HEALTH_FIXTURE_H
#define LK_TEST_HEALTH_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "lk_fixture.h"

/* ---- what a holder hears ----------------------------------------------------- */

enum { EV_RISK = 'R', EV_SAFE = 'S', EV_LOST = 'L', EV_MAX = 16 };

typedef struct {
  int n;
  char kind[EV_MAX + 1]; /* "RS", "RL"... */
  int64_t ms_left[EV_MAX];
  uint64_t t_ns[EV_MAX];
  int lost, risk, safe;
} hist_t;

static inline void hx_note(hist_t *h, char kind, int64_t ms_left) {
  ASSERT(h->n < EV_MAX);
  h->kind[h->n] = kind;
  h->ms_left[h->n] = ms_left;
  h->t_ns[h->n] = uv_hrtime();
  h->n++;
  h->kind[h->n] = '\0';
}

static inline void hx_on_health(lk_handle_t *hd, lk_health_t state, int64_t ms_left, void *arg) {
  hist_t *h = arg;
  ASSERT_NOT_NULL(hd);
  ASSERT(state == LK_HEALTH_AT_RISK || state == LK_HEALTH_SAFE);
  ASSERT_GE(ms_left, 0);
  hx_note(h, state == LK_HEALTH_AT_RISK ? EV_RISK : EV_SAFE, ms_left);
  if (state == LK_HEALTH_AT_RISK)
    h->risk++;
  else
    h->safe++;
}

static inline void hx_on_lost(lk_handle_t *hd, int status, void *arg) {
  hist_t *h = arg;
  (void)hd;
  ASSERT_EQ(status, LK_ELEASELOST);
  hx_note(h, EV_LOST, 0);
  h->lost++;
}

static inline void hx_watch(lk_handle_t *hd, hist_t *h) {
  memset(h, 0, sizeof(*h));
  ASSERT_OK(lk_handle_set_health_cb(hd, hx_on_health, h));
  ASSERT_OK(lk_handle_set_lost_cb(hd, hx_on_lost, h));
}

static inline double hx_ms_since(uint64_t from_ns, uint64_t to_ns) {
  return ((double)to_ns - (double)from_ns) / 1e6;
}

/* The loss came after an AT_RISK: "RL", and the loss no earlier than the
 * deadline the AT_RISK announced (2 ms for the ms steps of the callback's
 * truncation and the timers). Safety: unscaled. The AT_RISK must have left
 * time (ms_left > 0) unless mark >= 0 and a machine stall since mark longer
 * than slack_ms excuses that: a loop that did not run from the risk point to
 * the deadline hears AT_RISK at the deadline, with 0 ms left. */
static inline void hx_expect_risk_then_lost_since(const char *what, const hist_t *h,
                                                  int64_t mark, int64_t slack_ms) {
  double gap;
  if (strcmp(h->kind, "RL") != 0)
    FAIL("%s: heard \"%s\", want \"RL\"", what, h->kind);
  gap = hx_ms_since(h->t_ns[0], h->t_ns[1]);
  fprintf(stderr, "note: %s: at risk with %lld ms left, lost %.1f ms later\n", what,
          (long long)h->ms_left[0], gap);
  if (mark < 0)
    ASSERT_GT(h->ms_left[0], 0);
  else
    EXPECT_HOLD(h->ms_left[0] > 0, mark, slack_ms);
  ASSERT_GE(gap, (double)h->ms_left[0] - 2.0);
}

/* ... with time left, always. */
static inline void hx_expect_risk_then_lost(const char *what, const hist_t *h) {
  hx_expect_risk_then_lost_since(what, h, -1, 0);
}

/* Runs the loop until the holder heard of a loss (a liveness bound that
 * grows by the machine's measured stalls). */
static inline void hx_wait_lost(uv_loop_t *loop, hist_t *h, int64_t ms) {
  int64_t mark = rt_stall_mark();
  while (h->lost == 0) {
    if (rt_stall_expired(mark, ms) || h->n >= EV_MAX) {
      rt_stall_print("wait_lost", mark);
      FAIL("heard \"%s\" after %lld ms, want a loss", h->kind, (long long)(rt_now_ms() - mark));
    }
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

/* hx_expect_risk_then_lost, where a machine stall measured since mark and
 * longer than slack_ms excuses earlier "at risk, safe again" pairs (a late
 * renewal: a lock beside it hears them too). The loss itself is held to the
 * same strict rule: after an AT_RISK that left time, no earlier than its
 * deadline. */
static inline void hx_expect_stalls_then_risk_then_lost(const char *what, const hist_t *h,
                                                        int64_t mark, int64_t slack_ms) {
  hist_t tail;
  int i;
  if (EXPECT_HOLD(h->n == 2, mark, slack_ms)) {
    hx_expect_risk_then_lost(what, h);
    return;
  }
  ASSERT_GE(h->n, 2);
  for (i = 0; i + 2 < h->n; i += 2)
    ASSERT(h->kind[i] == EV_RISK && h->kind[i + 1] == EV_SAFE);
  memset(&tail, 0, sizeof(tail));
  for (i = 0; i < 2; i++)
    hx_note(&tail, h->kind[h->n - 2 + i], h->ms_left[h->n - 2 + i]), tail.t_ns[i] = h->t_ns[h->n - 2 + i];
  hx_expect_risk_then_lost(what, &tail);
}

/* Runs the loop until the holder heard n events (a liveness bound that
 * grows by the machine's measured stalls). */
static inline void hx_wait_events(uv_loop_t *loop, hist_t *h, int n, int64_t ms) {
  int64_t mark = rt_stall_mark();
  while (h->n < n) {
    if (rt_stall_expired(mark, ms)) {
      rt_stall_print("wait_events", mark);
      FAIL("heard \"%s\" after %lld ms, want %d events", h->kind,
           (long long)(rt_now_ms() - mark), n);
    }
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

/* Spins the loop for ms (the holder must hear nothing meanwhile). */
static inline void hx_spin_loop(uv_loop_t *loop, int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

#endif /* LK_TEST_HEALTH_FIXTURE_H */
