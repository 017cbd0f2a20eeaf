/* Counting an event loop's iterations over a stretch of wall time: a
 * sleeping loop makes a few, a spinning one thousands. Start the counter
 * with uv_check_start(&check, lp_on_check) on the loop measured. */
#ifndef RT_LOOP_PASSES_H
#define RT_LOOP_PASSES_H

#include <stdint.h>
#include <uv.h>

#include "test.h"

static long long lp_passes;
static void lp_on_check(uv_check_t *h) {
  (void)h;
  lp_passes++;
}

static int lp_window_done;
static void lp_on_window(uv_timer_t *t) {
  (void)t;
  lp_window_done = 1;
}

/* Loop iterations during ms of wall time (the timer is the measurement's
 * window, not a wait for a condition). */
static inline long long lp_passes_during(uv_loop_t *loop, uint64_t ms) {
  uv_timer_t t;
  long long before = lp_passes;
  lp_window_done = 0;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, lp_on_window, ms, 0);
  rt_run_until(loop, &lp_window_done, 10000 + (int64_t)ms);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  return lp_passes - before;
}

#endif
