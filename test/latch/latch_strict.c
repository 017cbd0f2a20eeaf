/* Strict mode: an absent latch key is "open" only when a count_down marked
 * it so. A latch that vanished under awaiters (a foreign DEL, a Redisson
 * delete, a restart without persistence, an expired marker) gives
 * LK_ELATCHLOST, never "opened"; interop mode reads the same situations as
 * Redisson does (absent = open), which the cases show side by side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latch_open.h"
#include "redisson_emu.h"
#include "redisson_latch_emu.h"

#define CHANNEL(name) "redisson_countdownlatch__channel__{" name "}"
#define NO_REPOLL_MS 600000

static void start(fx_t *fx, int64_t max_repoll_ms, int appendonly) {
  lk_client_opts_t o;
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  so.appendonly = appendonly;
  lk_client_opts_init(&o);
  o.max_repoll_ms = max_repoll_ms;
  o.reconnect_max_ms = 200;
  fx_start_with(fx, &so, &o);
}

/* Opening leaves the marker (with its TTL); re-arming and delete remove
 * it; awaits and get_count read an opened strict latch as open. */
TEST(strict_open_leaves_marker_until_rearmed) {
  fx_t fx;
  lk_latch_t *l;
  int64_t res;
  long long ttl;
  start(&fx, 1000, 0);
  l = lx_new(&fx, "sm", 1);
  ASSERT_EQ(lk_latch_is_strict(l), 1);
  ASSERT_OK(lx_set(&fx.loop, l, 1, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS latchkey_latch_open:{sm}"), 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, &res));
  ASSERT_EQ(res, 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS sm"), 0); /* Redisson's "open" */
  ttl = rt_cmd_int(fx.srv, "PTTL latchkey_latch_open:{sm}");
  ASSERT_GT(ttl, LK_MAX_TIME_MS); /* outlives any bounded await */
  ASSERT_LE(ttl, LK_LATCH_MARKER_TTL_DEFAULT);
  ASSERT_OK(lx_await(&fx.loop, l, 0));
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, l, &res));
  ASSERT_EQ(res, 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, &res));
  ASSERT_EQ(res, -1); /* open already */

  ASSERT_OK(lx_set(&fx.loop, l, 2, NULL)); /* re-armed: the marker goes */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS latchkey_latch_open:{sm}"), 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, NULL));
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS latchkey_latch_open:{sm}"), 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_delete, l, &res));
  ASSERT_EQ(res, 1); /* the marker was all there was */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS latchkey_latch_open:{sm}"), 0);
  ASSERT_EQ(lx_await(&fx.loop, l, 0), LK_EDELETED);
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
}

/* Never armed, or gone: strict reads and writes say so. Interop mode reads
 * the same absence as "open". */
TEST(strict_never_armed_is_lost) {
  fx_t fx;
  lk_latch_t *s, *i;
  int64_t res = 5;
  start(&fx, 1000, 0);
  s = lx_new(&fx, "nv", 1);
  i = lx_new(&fx, "nv", 0);
  ASSERT_EQ(lx_await(&fx.loop, s, 1000), LK_ELATCHLOST);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_get_count, s, NULL), LK_ELATCHLOST);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_count_down, s, NULL), LK_ELATCHLOST);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nv"), 0); /* nothing created */
  ASSERT_OK(lx_await(&fx.loop, i, 1000));
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, i, &res));
  ASSERT_EQ(res, 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, i, &res));
  ASSERT_EQ(res, -1);
  lx_finish(&fx, (lk_latch_t *[]){s, i, NULL});
}

/* The key is deleted behind latchkey's back while awaiters wait: a plain
 * DEL (no message: found by the re-poll) and a Redisson delete (its "1"
 * makes them look at once). */
TEST(strict_key_deleted_under_awaiters) {
  fx_t fx;
  lk_latch_t *s1, *i1, *s2, *c;
  lk_client_t *c2;
  lx_t a, b, d;
  redisContext *emu;
  uint64_t t0;
  start(&fx, 200, 0);
  s1 = lx_new(&fx, "del", 1);
  i1 = lx_new(&fx, "del", 0);
  c = lx_new_counting(&fx, "del", 1, 3);
  lx_await_start(s1, -1, &a);
  lx_await_start(i1, -1, &b);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("del"), 1);
  fx_spin(&fx, 30);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL del"), 1);
  t0 = uv_hrtime();
  rt_run_until(&fx.loop, &a.done, 3000);
  rt_run_until(&fx.loop, &b.done, 3000);
  ASSERT_EQ(a.status, LK_ELATCHLOST);
  ASSERT_OK(b.status); /* interop: absent = open, as Redisson reads it */
  ASSERT_LT((int64_t)((a.t_ns - t0) / 1000000u), 200 + rt_stall_bound_since_ns(t0, 500));

  /* Redisson's delete publishes "1": the strict awaiter looks at once. Its
   * client never re-polls within the test, so only the message explains the
   * awaiter's end (a 150 ms bound under a 200 ms re-poll left a loaded
   * machine little room and told the two apart only narrowly). */
  {
    lk_client_opts_t o2;
    lk_latch_opts_t lo;
    fx_client_opts(&fx, &o2);
    o2.max_repoll_ms = 600000;
    ASSERT_OK(lk_client_new(&fx.loop, &o2, &c2));
    lk_latch_opts_init(&lo);
    lo.strict = 1;
    ASSERT_OK(lk_latch_new(c2, "del", &lo, &s2));
  }
  ASSERT_OK(lx_set(&fx.loop, c, 3, NULL));
  /* The first client's awaiters are done: its subscription goes. */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, CHANNEL("del")) == 0, 3000);
  lx_await_start(s2, -1, &d);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("del"), 1);
  fx_spin(&fx, 30);
  emu = rt_rlock_connect(rt_server_port(fx.srv));
  t0 = uv_hrtime();
  ASSERT_EQ(rt_rlatch_delete(emu, "del"), 1);
  rt_run_until(&fx.loop, &d.done, 3000);
  ASSERT_EQ(d.status, LK_ELATCHLOST);
  ASSERT_LT((int64_t)((d.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  redisFree(emu);
  lx_close(&fx.loop, s1);
  lx_close(&fx.loop, i1);
  lx_close(&fx.loop, s2);
  lx_close(&fx.loop, c);
  fx_close_direct_client(&fx, c2);
  fx_finish(&fx);
}

/* A restart without persistence loses the count under the awaiters: strict
 * says lost; interop would release them as if every worker had finished
 * (the hazard strict mode exists for). */
TEST(strict_lost_on_restart_without_persistence) {
  fx_t fx;
  lk_latch_t *s, *i, *c;
  lx_t a, b;
  start(&fx, 300, 0);
  s = lx_new(&fx, "rs", 1);
  i = lx_new(&fx, "rs", 0);
  c = lx_new_counting(&fx, "rs", 1, 4);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, NULL));
  lx_await_start(s, -1, &a);
  lx_await_start(i, -1, &b);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("rs"), 1);
  ASSERT_OK(rt_server_restart(fx.srv));
  rt_run_until(&fx.loop, &a.done, 8000);
  rt_run_until(&fx.loop, &b.done, 8000);
  ASSERT_EQ(a.status, LK_ELATCHLOST);
  ASSERT_OK(b.status);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_count_down, c, NULL), LK_ELATCHLOST);
  lx_finish(&fx, (lk_latch_t *[]){s, i, c, NULL});
}

/* With persistence the count survives the restart: the strict awaiter
 * keeps waiting through the outage and opens with the final count_down. */
TEST(strict_survives_restart_with_persistence) {
  fx_t fx;
  lk_latch_t *s, *c;
  lx_t a;
  int64_t res;
  start(&fx, 300, 1);
  s = lx_new(&fx, "aof", 1);
  c = lx_new_counting(&fx, "aof", 1, 2);
  lx_await_start(s, -1, &a);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("aof"), 1);
  ASSERT_OK(rt_server_restart(fx.srv));
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("aof"), 1);
  fx_spin(&fx, 400); /* at least one re-poll after the restart */
  ASSERT_EQ(a.done, 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rt_run_until(&fx.loop, &a.done, 3000);
  ASSERT_OK(a.status);
  lx_finish(&fx, (lk_latch_t *[]){s, c, NULL});
}

/* The marker's life is an option; an await that looks after it expired
 * finds nothing that says "opened" and reports the latch lost. */
TEST(strict_marker_ttl_option) {
  fx_t fx;
  lk_latch_opts_t o;
  lk_latch_t *l;
  long long ttl;
  start(&fx, 1000, 0);
  lk_latch_opts_init(&o);
  ASSERT_EQ(o.strict, 0);
  ASSERT_EQ(o.marker_ttl_ms, LK_LATCH_MARKER_TTL_DEFAULT);
  o.strict = 1;
  o.marker_ttl_ms = 300;
  ASSERT_OK(lk_latch_new(fx.c, "mt", &o, &l));
  ASSERT_OK(lx_set(&fx.loop, l, 1, NULL));
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, NULL));
  ttl = rt_cmd_int(fx.srv, "PTTL latchkey_latch_open:{mt}");
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 300);
  ASSERT_OK(lx_await(&fx.loop, l, 0));
  ASSERT(fx_wait_key_gone(&fx, "latchkey_latch_open:{mt}", 3000));
  ASSERT_EQ(lx_await(&fx.loop, l, 0), LK_ELATCHLOST);
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
}
