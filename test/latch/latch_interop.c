/* Interop with Redisson's RCountDownLatch, played by the test-only emulator
 * (test/harness/redisson_latch_emu.h: our reading of Redisson's latch on
 * the wire, not Redisson itself). Each side must see the other's count, wake on
 * the other's final countDown, and find exactly the data and messages a
 * Redisson client expects. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latch_fixture.h"
#include "redisson_emu.h"
#include "redisson_latch_emu.h"

#define CHANNEL(name) "redisson_countdownlatch__channel__{" name "}"

static redisContext *emu(fx_t *fx) { return rt_rlock_connect(rt_server_port(fx->srv)); }

/* Redisson arms and counts down (mixed with latchkey count_downs); latchkey
 * awaiters are released by Redisson's final countDown, by its message. A
 * strict awaiter cannot tell Redisson's opening from a lost key: it says
 * lost, as documented (strict needs latchkey counters). */
TEST(redisson_counts_down_latchkey_awaits) {
  fx_t fx;
  lk_latch_t *w1, *w2, *ws, *c;
  lx_t s1, s2, ss;
  int64_t res;
  uint64_t t0;
  redisContext *r;
  fx_start_no_repoll(&fx);
  r = emu(&fx);
  w1 = lx_new(&fx, "rj", 0);
  w2 = lx_new(&fx, "rj", 0);
  ws = lx_new(&fx, "rj", 1);
  c = lx_new(&fx, "rj", 0);
  ASSERT_EQ(rt_rlatch_try_set_count(r, "rj", 4), 1);
  ASSERT_OK(lx_set(&fx.loop, c, 9, &res));
  ASSERT_EQ(res, 0); /* Redisson's arming is seen */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, c, &res));
  ASSERT_EQ(res, 4);
  lx_await_start(w1, -1, &s1);
  lx_await_start(w2, 20000, &s2);
  lx_await_start(ws, -1, &ss);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("rj"), 1);
  fx_spin(&fx, 20);
  ASSERT_EQ(rt_rlatch_count_down(r, "rj"), 3);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 2);
  ASSERT_EQ(rt_rlatch_count_down(r, "rj"), 1);
  ASSERT_EQ(rt_rlatch_get_count(r, "rj"), 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(s1.done + s2.done + ss.done, 0);
  t0 = uv_hrtime();
  ASSERT_EQ(rt_rlatch_count_down(r, "rj"), 0);
  rt_run_until(&fx.loop, &s1.done, 2000);
  rt_run_until(&fx.loop, &s2.done, 2000);
  rt_run_until(&fx.loop, &ss.done, 2000);
  ASSERT_OK(s1.status);
  ASSERT_OK(s2.status);
  ASSERT_EQ(ss.status, LK_ELATCHLOST);
  ASSERT_LT((int64_t)((s1.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT_LT((int64_t)((s2.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  /* After Redisson opened it, latchkey counts nothing. */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, -1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS rj"), 0);
  redisFree(r);
  lx_finish(&fx, (lk_latch_t *[]){w1, w2, ws, c, NULL});
}

/* ---- latchkey counts down, Redisson awaits (on its own thread) ---------------------------- */

typedef struct emu_waiter_s {
  int port;
  const char *name;
  int64_t timeout_ms;
  atomic_int done;
  int opened;
  uint64_t t_ns;
} emu_waiter_t;

static void emu_wait_thread(void *arg) {
  emu_waiter_t *w = arg;
  redisContext *ctx = rt_rlock_connect(w->port), *sub = rt_rlock_connect(w->port);
  w->opened = rt_rlatch_await(ctx, sub, w->name, w->timeout_ms);
  w->t_ns = uv_hrtime();
  redisFree(ctx);
  redisFree(sub);
  atomic_store(&w->done, 1);
}

static void wait_thread_done(fx_t *fx, emu_waiter_t *w, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (!atomic_load(&w->done)) {
    if (rt_now_ms() > end)
      FAIL("the emulator's await did not return");
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

TEST(latchkey_counts_down_redisson_awaits) {
  fx_t fx;
  lk_latch_t *c;
  emu_waiter_t w;
  uv_thread_t th;
  redisContext *r;
  int64_t res;
  uint64_t t0;
  fx_start_no_repoll(&fx);
  r = emu(&fx);
  c = lx_new(&fx, "jr", 0);
  ASSERT_OK(lx_set(&fx.loop, c, 2, &res));
  ASSERT_EQ(res, 1);
  ASSERT_EQ(rt_rlatch_try_set_count(r, "jr", 5), 0); /* latchkey's arming is seen */
  ASSERT_EQ(rt_rlatch_get_count(r, "jr"), 2);
  memset(&w, 0, sizeof(w));
  w.port = rt_server_port(fx.srv);
  w.name = "jr";
  w.timeout_ms = rt_scaled_ms(10000);
  ASSERT_OK(uv_thread_create(&th, emu_wait_thread, &w));
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("jr"), 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  ASSERT_EQ(rt_rlatch_get_count(r, "jr"), 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(atomic_load(&w.done), 0);
  t0 = uv_hrtime();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  wait_thread_done(&fx, &w, 3000);
  ASSERT_OK(uv_thread_join(&th));
  ASSERT_EQ(w.opened, 1);
  ASSERT_LT((int64_t)((w.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT_EQ(rt_rlatch_get_count(r, "jr"), 0);
  /* Redisson re-arms what latchkey opened; latchkey sees it. */
  ASSERT_EQ(rt_rlatch_try_set_count(r, "jr", 1), 1);
  ASSERT_EQ(lx_await(&fx.loop, c, 0), LK_ETIMEDOUT);
  redisFree(r);
  lx_finish(&fx, (lk_latch_t *[]){c, NULL});
}

/* Deletions across the two: Redisson's delete leaves latchkey's interop
 * awaiter with what Redisson's own reading gives (absent = open), while
 * latchkey's delete tells its awaiters LK_EDELETED and gives Redisson the
 * same data and message as its own delete. */
TEST(deletes_across_clients) {
  fx_t fx;
  lk_latch_t *w, *d;
  lx_t s;
  int64_t res;
  redisContext *r, *sub;
  redisReply *m;
  fx_start_no_repoll(&fx);
  r = emu(&fx);
  w = lx_new(&fx, "dd", 0);
  d = lx_new(&fx, "dd", 0);
  ASSERT_EQ(rt_rlatch_try_set_count(r, "dd", 2), 1);
  lx_await_start(w, -1, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("dd"), 1);
  fx_spin(&fx, 20);
  ASSERT_EQ(rt_rlatch_delete(r, "dd"), 1);
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_OK(s.status);

  sub = rt_rlock_connect(rt_server_port(fx.srv));
  m = redisCommand(sub, "SUBSCRIBE %s", CHANNEL("dd"));
  ASSERT_NOT_NULL(m);
  freeReplyObject(m);
  ASSERT_EQ(rt_rlatch_try_set_count(r, "dd", 2), 1);
  m = rt_sub_next_message(sub, rt_scaled_ms(1000));
  ASSERT_NOT_NULL(m);
  ASSERT_STREQ(m->element[2]->str, "1");
  freeReplyObject(m);
  lx_await_start(w, -1, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("dd"), 2);
  fx_spin(&fx, 20);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_delete, d, &res));
  ASSERT_EQ(res, 1);
  m = rt_sub_next_message(sub, rt_scaled_ms(1000));
  ASSERT_NOT_NULL(m);
  ASSERT_STREQ(m->element[2]->str, "1"); /* Redisson's NEW_COUNT, as its delete */
  freeReplyObject(m);
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_EQ(s.status, LK_EDELETED);
  ASSERT_EQ(rt_rlatch_get_count(r, "dd"), 0);
  ASSERT_EQ(rt_rlatch_delete(r, "dd"), 0);
  redisFree(sub);
  redisFree(r);
  lx_finish(&fx, (lk_latch_t *[]){w, d, NULL});
}
