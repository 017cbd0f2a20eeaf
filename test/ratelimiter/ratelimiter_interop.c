/* Interop with Redisson's RRateLimiter, played by the test-only emulator
 * (test/harness/redisson_ratelimiter_emu.h: our reading of Redisson's
 * limiter on the wire, not Redisson itself). Both sides share one limiter
 * by name: either sets the rate, both draw from one window, and together
 * they never pass the rate. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "redisson_emu.h"
#include "redisson_ratelimiter_emu.h"
#include "rl_fixture.h"

/* A Redisson client's id (its ServiceManager UUID). */
#define EMU_ID "0b7f0c7e-5d0e-4c55-9c39-9a3f2ed0c0de"

TEST(redisson_sets_latchkey_acquires) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  lk_ratelimiter_config_t cfg;
  redisContext *emu;
  rl_sx_t s;
  int64_t r;
  fx_start(&fx, NULL);
  emu = rt_rlock_connect(rt_server_port(fx.srv));
  rl = rl_new(fx.c, "r2l");
  ASSERT_EQ(rt_rrl_try_set_rate(emu, "r2l", RT_RRL_OVERALL, 3, 60000, 0), 1);
  ASSERT_OK(rl_set(&fx.loop, rl, 0, LK_RATE_OVERALL, 9, 1000, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_get_config, rl, &r));
  lk_ratelimiter_config(rl, &cfg);
  ASSERT_EQ(cfg.rate, 3);
  ASSERT_EQ(cfg.interval_ms, 60000);
  ASSERT_EQ(rt_rrl_try_acquire(emu, "r2l", EMU_ID, 1, NULL), RT_RRL_ACQUIRED);
  ASSERT_OK(rl_acquire(&fx.loop, rl, 2, 0, &s));
  ASSERT_EQ(s.x.result, 0);
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  ASSERT_GT(rt_rrl_try_acquire(emu, "r2l", EMU_ID, 1, NULL), 0); /* a wait */
  ASSERT_EQ(rt_rrl_try_acquire(emu, "r2l", EMU_ID, 4, NULL), RT_RRL_EXCEEDS_RATE);
  ASSERT_EQ(rt_rrl_available(emu, "r2l", EMU_ID), 0);
  ASSERT_OK(rl_run(&fx.loop, lk_ratelimiter_available, rl, &r));
  ASSERT_EQ(r, 0);
  rl_close(&fx.loop, rl);
  redisFree(emu);
  fx_finish(&fx);
}

TEST(latchkey_sets_redisson_acquires) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  lk_ratelimiter_config_t cfg;
  redisContext *emu;
  rl_sx_t s;
  fx_start(&fx, NULL);
  emu = rt_rlock_connect(rt_server_port(fx.srv));
  rl = rl_new(fx.c, "l2r");
  lk_ratelimiter_config_init(&cfg);
  cfg.rate = 2, cfg.interval_ms = 60000, cfg.keep_alive_ms = 120000;
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_ratelimiter_try_set_rate(rl, &cfg, rl_cb, &s));
  rt_run_until(&fx.loop, &s.x.done, 5000);
  ASSERT_OK(s.x.status);
  ASSERT_EQ(s.x.result, 1);
  ASSERT_EQ(rt_rrl_try_set_rate(emu, "l2r", RT_RRL_OVERALL, 7, 1000, 0), 0);
  ASSERT_EQ(rt_rrl_try_acquire(emu, "l2r", EMU_ID, 3, NULL), RT_RRL_EXCEEDS_RATE);
  ASSERT_EQ(rt_rrl_try_acquire(emu, "l2r", EMU_ID, 2, NULL), RT_RRL_ACQUIRED);
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  /* The keep-alive both sides apply on every acquire. */
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL {l2r}:permits"), 60000);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL l2r"), 60000);
  /* latchkey's set_rate starts the window afresh for Redisson too. */
  memset(&s, 0, sizeof s);
  cfg.rate = 1;
  ASSERT_OK(lk_ratelimiter_set_rate(rl, &cfg, rl_cb, &s));
  rt_run_until(&fx.loop, &s.x.done, 5000);
  ASSERT_OK(s.x.status);
  ASSERT_EQ(rt_rrl_available(emu, "l2r", EMU_ID), 1);
  ASSERT_EQ(rt_rrl_try_acquire(emu, "l2r", EMU_ID, 1, NULL), RT_RRL_ACQUIRED);
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  rl_close(&fx.loop, rl);
  redisFree(emu);
  fx_finish(&fx);
}

/* PER_CLIENT across the two: the emulator's window is its id's, latchkey's
 * its client's; neither takes from the other. */
TEST(per_client_with_redisson) {
  fx_t fx;
  lk_ratelimiter_t *rl;
  redisContext *emu;
  rl_sx_t s;
  fx_start(&fx, NULL);
  emu = rt_rlock_connect(rt_server_port(fx.srv));
  rl = rl_new(fx.c, "pcr");
  ASSERT_EQ(rt_rrl_try_set_rate(emu, "pcr", RT_RRL_PER_CLIENT, 1, 60000, 0), 1);
  ASSERT_EQ(rt_rrl_try_acquire(emu, "pcr", EMU_ID, 1, NULL), RT_RRL_ACQUIRED);
  ASSERT_GT(rt_rrl_try_acquire(emu, "pcr", EMU_ID, 1, NULL), 0);
  ASSERT_OK(rl_acquire(&fx.loop, rl, 1, 0, &s));
  ASSERT_EQ(rl_acquire(&fx.loop, rl, 1, 0, &s), LK_ETIMEDOUT);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {pcr}:permits:" EMU_ID), 1);
  rl_close(&fx.loop, rl);
  redisFree(emu);
  fx_finish(&fx);
}

/* ---- mixed acquisitions never exceed the rate ---- */

#define MIX_RATE 4
#define MIX_INTERVAL_MS 400
#define MIX_MS 3000
#define MAX_GRANTS 4096

typedef struct {
  int port;
  rl_grant_t g[MAX_GRANTS];
  size_t n;
  int64_t lag_max_ms; /* reply time - score: how stale the emulator's clock reading is */
  atomic_int stop, done;
} emu_side_t;

static void *emu_main(void *arg) {
  emu_side_t *e = arg;
  redisContext *ctx = rt_rlock_connect(e->port);
  int64_t t;
  while (!atomic_load(&e->stop) && e->n < MAX_GRANTS) {
    int64_t permits = 1 + (int64_t)(e->n % 2);
    int rc = rt_rrl_acquire_timeout(ctx, "mix", EMU_ID, permits, 1000, &t);
    if (rc == 1) {
      int64_t lag = rt_rrl_wall_ms() - t;
      e->g[e->n].t_ms = t, e->g[e->n++].permits = permits;
      if (lag > e->lag_max_ms)
        e->lag_max_ms = lag;
      /* The emulator's thread wakes exactly when permits free up, a step
       * ahead of the loop's timer: without a pause after each grant it can
       * take every one and leave the mix untested (seen in CI). */
      rt_sleep_ms(MIX_INTERVAL_MS / 2);
    } else if (rc < 0) {
      break;
    }
  }
  redisFree(ctx);
  atomic_store(&e->done, 1);
  return NULL;
}

typedef struct {
  lk_ratelimiter_t *rl;
  rl_grant_t g[MAX_GRANTS];
  size_t n;
  int64_t permits;
  int stop, running, failures;
} lk_side_t;

static void lk_next(lk_side_t *l);

static void on_lk_grant(lk_ratelimiter_t *rl, int status, void *arg) {
  lk_side_t *l = arg;
  if (status == 0 && l->n < MAX_GRANTS) {
    l->g[l->n].t_ms = lk_ratelimiter_grant_time_ms(rl);
    l->g[l->n++].permits = l->permits;
  } else if (status != LK_ETIMEDOUT) {
    l->failures++;
  }
  lk_next(l);
}

static void lk_next(lk_side_t *l) {
  lk_ratelimiter_opts_t o;
  if (l->stop) {
    l->running = 0;
    return;
  }
  lk_ratelimiter_opts_init(&o);
  o.permits = l->permits = 1 + (int64_t)(l->n % 3 == 0);
  o.wait_ms = 1000;
  ASSERT_OK(lk_ratelimiter_acquire(l->rl, &o, on_lk_grant, l));
}

TEST(mixed_acquisitions_never_exceed_rate) {
  static emu_side_t e;
  static lk_side_t l;
  static rl_grant_t all[2 * MAX_GRANTS];
  fx_t fx;
  pthread_t th;
  redisContext *emu;
  int64_t strict, tolerant, end;
  size_t n;
  fx_start(&fx, NULL);
  memset(&e, 0, sizeof e);
  memset(&l, 0, sizeof l);
  emu = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rrl_try_set_rate(emu, "mix", RT_RRL_OVERALL, MIX_RATE, MIX_INTERVAL_MS, 0), 1);
  redisFree(emu);
  e.port = rt_server_port(fx.srv);
  l.rl = rl_new(fx.c, "mix");
  l.running = 1;
  ASSERT_OK(pthread_create(&th, NULL, emu_main, &e));
  lk_next(&l);
  end = rt_now_ms() + MIX_MS;
  while (rt_now_ms() < end) {
    uv_run(&fx.loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
  l.stop = 1;
  atomic_store(&e.stop, 1);
  end = rt_now_ms() + rt_scaled_ms(10000);
  while ((l.running || !atomic_load(&e.done)) && rt_now_ms() < end) {
    uv_run(&fx.loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
  ASSERT_EQ(l.running, 0);
  ASSERT(atomic_load(&e.done));
  pthread_join(th, NULL);
  ASSERT_EQ(l.failures, 0);
  n = 0;
  memcpy(all, l.g, l.n * sizeof *all), n += l.n;
  memcpy(all + n, e.g, e.n * sizeof *all), n += e.n;
  /* Both sides got grants (neither starved the other out of the test). */
  ASSERT_GT(l.n, 0);
  ASSERT_GT(e.n, 0);
  /* The emulator scores a grant with its clock read before the call, so
   * its scores can trail the order the server ran them in by up to its
   * call's lag: the algorithm's bound then holds over windows that much
   * shorter. latchkey's scores are the server's own time. */
  strict = rl_max_in_window(all, n, MIX_INTERVAL_MS);
  tolerant = rl_max_in_window(all, n, MIX_INTERVAL_MS - e.lag_max_ms - 1);
  printf("mixed: %zu latchkey + %zu emulator grants in %d ms; max permits in any %d ms "
         "window %lld (rate %d), in any %lld ms window %lld; emulator lag max %lld ms\n",
         l.n, e.n, MIX_MS, MIX_INTERVAL_MS, (long long)strict, MIX_RATE,
         (long long)(MIX_INTERVAL_MS - e.lag_max_ms - 1), (long long)tolerant,
         (long long)e.lag_max_ms);
  ASSERT_LE(tolerant, MIX_RATE);
  rl_close(&fx.loop, l.rl);
  fx_finish(&fx);
}
