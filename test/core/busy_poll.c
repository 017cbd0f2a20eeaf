/* Busy polling (lk_client_opts_t.busy_poll_us, docs/client.md): while a
 * reply is outstanding the client keeps the loop spinning (an active idle
 * handle, so the loop polls without sleeping) for at most busy_poll_us
 * after the last command sent; with 0, the default, the loop sleeps as
 * before. Seen from the loop itself: uv_check callbacks, one per loop
 * iteration, counted over a window while the server is paused (so the
 * reply is surely outstanding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "loop_passes.h"

/* An acquire sent to a paused server, the loop watched for window_ms,
 * then the server resumed and the acquire's answer checked. Returns the
 * loop iterations seen in the window starting skip_ms after the send. */
static long long spins_while_outstanding(int64_t busy_poll_us, uint64_t skip_ms,
                                         uint64_t window_ms) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *l;
  lk_lock_opts_t lo;
  uv_check_t check;
  sx_t x;
  long long n;
  fx_start_server(&fx, NULL);
  fx_client_opts(&fx, &o);
  o.busy_poll_us = busy_poll_us;
  o.reply_timeout_ms = 30000;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "spun");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 30000), 0); /* connected, script loaded */
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  uv_check_init(&fx.loop, &check);
  uv_check_start(&check, lp_on_check);
  memset(&x, 0, sizeof x);
  lk_lock_opts_init(&lo);
  lo.wait_ms = 0;
  lo.lease_ms = 30000;
  rt_server_pause(fx.srv);
  ASSERT_OK(lk_lock_acquire(l, &lo, sx_cb, &x));
  if (skip_ms > 0)
    lp_passes_during(&fx.loop, skip_ms);
  n = lp_passes_during(&fx.loop, window_ms);
  ASSERT_EQ(x.done, 0); /* still outstanding all along */
  rt_server_resume(fx.srv);
  rt_run_until(&fx.loop, &x.done, 10000);
  ASSERT_EQ(x.status, 0);
  uv_check_stop(&check);
  uv_close((uv_handle_t *)&check, NULL);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
  return n;
}

TEST(busy_poll_spins_while_a_reply_is_outstanding) {
  long long spun = spins_while_outstanding(1000000, 0, 50);
  long long slept = spins_while_outstanding(0, 0, 50);
  fprintf(stderr, "loop iterations in 50 ms with a reply outstanding: %lld busy polling, %lld "
          "without\n", spun, slept);
  /* Spinning turns the loop thousands of times in 50 ms; sleeping, a few
   * (the window's own timer, the heartbeat). */
  ASSERT(spun > 200);
  ASSERT(slept < 20);
}

TEST(busy_poll_stops_when_its_window_closes) {
  /* 20 ms of spinning, then the loop sleeps though the reply is still
   * outstanding. */
  long long late = spins_while_outstanding(20000, 100, 50);
  fprintf(stderr, "loop iterations 100-150 ms after the send, window 20 ms: %lld\n", late);
  ASSERT(late < 20);
}

TEST(busy_poll_bad_values_are_einval) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  fx_start_server(&fx, NULL);
  fx_client_opts(&fx, &o);
  o.busy_poll_us = -1;
  ASSERT_EQ(lk_client_new(&fx.loop, &o, &c), LK_EINVAL);
  o.busy_poll_us = 1000001;
  ASSERT_EQ(lk_client_new(&fx.loop, &o, &c), LK_EINVAL);
  ASSERT(c == NULL);
  fx_finish(&fx);
}
