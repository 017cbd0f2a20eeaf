/* The rate limiter on one server: Redisson's layout, the window, the
 * bounded wait on the server's estimate, bad inputs, PER_CLIENT isolation,
 * cancel and close (docs/ratelimiter.md). */
#include <stdio.h>
#include <string.h>

#include "rl_fixture.h"

TEST(layout_and_window) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  lk_ratelimiter_config_t cfg;
  rl_sx_t s;
  int64_t r;
  char *v;
  fx_start(&fx, NULL);
  rl = rl_new(fx.c, "api");
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 5, 60000, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 9, 1000, &r));
  ASSERT_EQ(r, 0); /* set already: unchanged */
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_get_config, rl, &r));
  ASSERT_EQ(r, 1);
  lk_ratelimiter_config(rl, &cfg);
  ASSERT_EQ(cfg.rate, 5);
  ASSERT_EQ(cfg.interval_ms, 60000);
  ASSERT_EQ(cfg.type, LK_RATE_OVERALL);
  ASSERT_EQ(cfg.keep_alive_ms, 0);
  /* Redisson's config hash, field by field. */
  v = rt_cmd_str(fx.srv, "HGET api type");
  ASSERT_STREQ(v, "0");
  free(v);
  for (int i = 0; i < 5; i++) {
    ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 0, &s));
    ASSERT_EQ(s.x.result, 4 - i);
    ASSERT_GT(s.grant_ms, 0);
  }
  /* The window is full: a single try fails at once with the server's
   * estimate of the wait (up to the interval and 3 ms). */
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  ASSERT_GT(s.x.result, 0);
  ASSERT_LE(s.x.result, 60003);
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_available, rl, &r));
  ASSERT_EQ(r, 0);
  v = rt_cmd_str(fx.srv, "GET {api}:value");
  ASSERT_STREQ(v, "0");
  free(v);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {api}:permits"), 5);
  /* Each entry: id length (1 byte), 16 id bytes, permits (4 bytes). */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EVAL %s 1 {api}:permits",
                       "return string.len(redis.call('zrange', KEYS[1], 0, 0)[1])"),
            21);
  /* set_rate starts the window afresh, as Redisson's setRate does. */
  ASSERT_OK(rl_set(&fx.loop, rl, 1, LK_RATE_OVERALL, 3, 60000, &r));
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_available, rl, &r));
  ASSERT_EQ(r, 3);
  ASSERT_OK(rl_acquire(&fx.loop, rl, 3, 0, &s));
  ASSERT_EQ(s.x.result, 0);
  rl_close(&fx.loop, rl);
  /* Closing gave nothing back: the permits are spent. */
  rl = rl_new(fx.c, "api");
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_available, rl, &r));
  ASSERT_EQ(r, 0);
  rl_close(&fx.loop, rl);
  fx_finish(&fx);
}

TEST(bad_inputs) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  lk_ratelimiter_config_t cfg;
  lk_ratelimiter_opts_t o;
  rl_sx_t s;
  uint64_t t0;
  fx_start(&fx, NULL);
  rl = rl_new(fx.c, "bad");
  memset(&s, 0, sizeof s);
  ASSERT_EQ(lk_ratelimiter_new(fx.c, "", &rl), LK_EINVAL);
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, NULL, rl_cb, &s), LK_EINVAL);
  lk_ratelimiter_config_init(&cfg);
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL); /* rate 0 */
  cfg.rate = 0, cfg.interval_ms = 1000;
  ASSERT_EQ(lk_ratelimiter_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  cfg.rate = -5;
  ASSERT_EQ(lk_ratelimiter_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  cfg.rate = 5, cfg.interval_ms = -1000;
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  cfg.interval_ms = 0;
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  cfg.interval_ms = 1000, cfg.keep_alive_ms = 999; /* shorter than the interval */
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  cfg.keep_alive_ms = 0, cfg.type = (lk_rate_type_t)7;
  ASSERT_EQ(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_ratelimiter_try_acquire(rl, 0, rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_ratelimiter_try_acquire(rl, -1, rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_ratelimiter_try_acquire(rl, LK_RATELIMITER_MAX_PERMITS + 1, rl_cb, &s), LK_EINVAL);
  lk_ratelimiter_opts_init(&o);
  o.wait_ms = -2;
  ASSERT_EQ(lk_ratelimiter_acquire(rl, &o, rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_ratelimiter_acquire(rl, NULL, NULL, &s), LK_EINVAL);
  ASSERT_EQ(s.x.calls, 0);
  /* No rate set: refused with a clear text, not a wait. */
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 5000, &s), LK_EINVAL);
  ASSERT(strstr(s.errtext, "no rate") != NULL);
  ASSERT_EQ(rl_run(&fx.loop, lk_ratelimiter_available, rl, NULL), LK_EINVAL);
  /* More permits than the rate: refused at once, even with a long budget. */
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 5, 1000, NULL));
  t0 = uv_hrtime();
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 6, 30000, &s), LK_EINVAL);
  ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT(strstr(s.errtext, "more than the rate") != NULL);
  ASSERT_OK(rl_acquire(&fx.loop, rl, 5, 0, &s)); /* exactly the rate is fine */
  rl_close(&fx.loop, rl);
  fx_finish(&fx);
}

/* A denied acquire with wait 0 fails at once; with a budget it succeeds
 * when the window slides far enough, and not before; a budget too short
 * for that ends with LK_ETIMEDOUT near its end. */
TEST(wait_budget) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  rl_sx_t s, first;
  uint64_t t0;
  int64_t took;
  fx_start(&fx, NULL);
  rl = rl_new(fx.c, "budget");
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 2, 800, NULL));
  ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 0, &first));
  ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 0, &s));
  t0 = uv_hrtime();
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_stall_bound_since_ns(t0, 200));
  t0 = uv_hrtime();
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 100, &s), LK_ETIMEDOUT);
  took = (int64_t)((uv_hrtime() - t0) / 1000000u);
  ASSERT_GE(took, 99);
  ASSERT_LT(took, 100 + rt_stall_bound_since_ns(t0, 400));
  ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 5000, &s));
  /* Safety: never before the first grant left the window (server time). */
  ASSERT_GE(s.grant_ms - first.grant_ms, 800);
  ASSERT_LT(s.grant_ms - first.grant_ms, 800 + rt_scaled_ms(600));
  rl_close(&fx.loop, rl);
  fx_finish(&fx);
}

/* PER_CLIENT: each client has a window of its own, under keys named by
 * its id. */
TEST(per_client_isolation) {
  fx_t fx;
  lk_client_t *c2;
  lk_ratelimiter_t *a, *b;
  rl_sx_t s;
  int64_t r;
  char key[128];
  fx_start(&fx, NULL);
  c2 = fx_direct_client(&fx);
  a = rl_new(fx.c, "pc");
  b = rl_new(c2, "pc");
  ASSERT_OK(rl_set(&fx.loop, a, 0, LK_RATE_PER_CLIENT, 2, 60000, NULL));
  ASSERT_OK(rl_acquire(&fx.loop, a, 2, 0, &s));
  ASSERT_EQ(rl_acquire(&fx.loop, a, 1, 0, &s), LK_ETIMEDOUT);
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_available, b, &r));
  ASSERT_EQ(r, 2);
  ASSERT_OK(rl_acquire(&fx.loop, b, 1, 0, &s));
  ASSERT_OK(rl_acquire(&fx.loop, b, 1, 0, &s));
  ASSERT_EQ(rl_acquire(&fx.loop, b, 1, 0, &s), LK_ETIMEDOUT);
  snprintf(key, sizeof key, "{pc}:permits:%s", lk_client_id(fx.c));
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD %s", key), 1);
  snprintf(key, sizeof key, "{pc}:permits:%s", lk_client_id(c2));
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD %s", key), 2);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {pc}:permits"), 0);
  rl_close(&fx.loop, a);
  rl_close(&fx.loop, b);
  fx_close_direct_client(&fx, c2);
  fx_finish(&fx);
}

/* Cancel and close end a wait with LK_ECANCELED, exactly once. */
TEST(cancel_and_close_while_waiting) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  rl_sx_t s, w;
  int closed = 0;
  fx_start(&fx, NULL);
  rl = rl_new(fx.c, "cw");
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 1, 60000, NULL));
  ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 0, &s));
  rl_start_acquire(rl, 1, 30000, &w);
  fx_spin(&fx, 50);
  ASSERT_EQ(w.x.done, 0);
  ASSERT_OK(lk_ratelimiter_cancel(rl));
  rt_run_until(&fx.loop, &w.x.done, 5000);
  ASSERT_EQ(w.x.status, LK_ECANCELED);
  ASSERT_EQ(lk_ratelimiter_cancel(rl), LK_EINVAL);
  rl_start_acquire(rl, 1, 30000, &w);
  fx_spin(&fx, 50);
  lk_ratelimiter_set_data(rl, &closed);
  ASSERT_OK(lk_ratelimiter_close(rl, rl_closed_cb));
  ASSERT_EQ(lk_ratelimiter_close(rl, rl_closed_cb), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(w.x.status, LK_ECANCELED);
  ASSERT_EQ(w.x.calls, 1);
  fx_finish(&fx);
}

/* The stress tests' checker can fail: it finds a window with one permit
 * too many, and counts grants at the window's edge as the script does. */
TEST(window_checker_detects_excess) {
  rl_grant_t ok[4] = {{1000, 2}, {1500, 1}, {1999, 2}, {2000, 2}};
  rl_grant_t over[4] = {{1000, 2}, {1500, 1}, {1999, 2}, {1999, 1}};
  /* rate 5 per 1000 ms: at 2000 the grant at 1000 has left the window. */
  ASSERT_EQ(rl_max_in_window(ok, 4, 1000), 5);
  ASSERT_EQ(rl_max_in_window(over, 4, 1000), 6);
}
