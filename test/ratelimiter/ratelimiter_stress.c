/* The rate limiter over 4 processes, checked over every grant: each worker
 * (test/harness/workers.h: its own loop and client, forked after the
 * server started) acquires 1..3 permits at a time with a budget, back to
 * back, for LK_RATELIMIT_STRESS_MS (default 10000 ms) and records every
 * grant's server time (the score the script gave it, returned in the
 * grant's reply) in memory shared with the test. The checker then slides
 * a window of the interval over the merged history: Redisson's algorithm
 * (a sliding window of granted entries) allows at most exactly the rate in
 * any window (t - interval, t]. Liveness: the grants fill most of what the
 * rate allows. PER_CLIENT: the same per worker, each its own window. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rl_fixture.h"
#include "workers.h"

#define N_WORKERS 4
#define MAX_GRANTS 20000

typedef struct {
  int port;
  const char *name;
  lk_rate_type_t type;
  int64_t run_ms;
  /* per worker: grants, how many, failures of other kinds */
  rl_grant_t g[N_WORKERS][MAX_GRANTS];
  size_t n[N_WORKERS];
  int failures[N_WORKERS];
  int timeouts[N_WORKERS];
} shared_t;

static int64_t run_ms_from_env(int64_t dflt) {
  const char *env = getenv("LK_RATELIMIT_STRESS_MS");
  char *end = NULL;
  long v;
  if (env == NULL || *env == '\0')
    return dflt;
  v = strtol(env, &end, 10);
  if (end == env || *end != '\0' || v < 500 || v > 600000)
    FAIL("LK_RATELIMIT_STRESS_MS=\"%s\": want 500..600000", env);
  return v;
}

/* ---- the worker ---- */

typedef struct {
  shared_t *sh;
  int index;
  uint64_t end_ns, rng;
  int64_t permits;
  int running;
  lk_ratelimiter_t *rl;
} worker_t;

static void next(worker_t *w);

static void on_grant(lk_ratelimiter_t *rl, int status, void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  if (status == 0) {
    size_t k = sh->n[w->index];
    if (k < MAX_GRANTS) {
      sh->g[w->index][k].t_ms = lk_ratelimiter_grant_time_ms(rl);
      sh->g[w->index][k].permits = w->permits;
      sh->n[w->index] = k + 1;
    }
  } else if (status == LK_ETIMEDOUT) {
    sh->timeouts[w->index]++;
  } else {
    sh->failures[w->index]++;
    fprintf(stderr, "worker %d: acquire: %s %s\n", w->index, lk_err_name(status),
            lk_ratelimiter_error_text(rl));
  }
  next(w);
}

static void next(worker_t *w) {
  lk_ratelimiter_opts_t o;
  int rc;
  if (uv_hrtime() >= w->end_ns) {
    w->running = 0;
    return;
  }
  lk_ratelimiter_opts_init(&o);
  o.permits = w->permits = 1 + (int64_t)(rt_xorshift(&w->rng) % 3);
  o.wait_ms = 2000;
  rc = lk_ratelimiter_acquire(w->rl, &o, on_grant, w);
  if (rc != 0)
    rt_worker_die(w->index, "acquire: %s", lk_err_name(rc));
}

static void on_closed(lk_ratelimiter_t *rl) { *(int *)lk_ratelimiter_get_data(rl) = 1; }
static void on_client_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

static void worker_main(int index, void *arg) {
  shared_t *sh = arg;
  worker_t w;
  uv_loop_t loop;
  lk_client_opts_t o;
  lk_client_t *c;
  int rc, closed = 0;
  memset(&w, 0, sizeof w);
  w.sh = sh;
  w.index = index;
  w.rng = uv_hrtime() ^ ((uint64_t)index << 40) ^ 0x9e3779b97f4a7c15ULL;
  if (uv_loop_init(&loop) != 0)
    rt_worker_die(index, "uv_loop_init");
  lk_client_opts_init(&o);
  o.port = sh->port;
  if ((rc = lk_client_new(&loop, &o, &c)) != 0)
    rt_worker_die(index, "lk_client_new: %s", lk_err_name(rc));
  if ((rc = lk_ratelimiter_new(c, sh->name, &w.rl)) != 0)
    rt_worker_die(index, "lk_ratelimiter_new: %s", lk_err_name(rc));
  w.end_ns = uv_hrtime() + (uint64_t)sh->run_ms * 1000000u;
  w.running = 1;
  next(&w);
  while (w.running)
    uv_run(&loop, UV_RUN_ONCE);
  lk_ratelimiter_set_data(w.rl, &closed);
  lk_ratelimiter_close(w.rl, on_closed);
  while (!closed)
    uv_run(&loop, UV_RUN_ONCE);
  closed = 0;
  lk_client_set_data(c, &closed);
  lk_client_close(c, on_client_closed);
  while (!closed)
    uv_run(&loop, UV_RUN_ONCE);
  if (uv_loop_close(&loop) != 0)
    rt_worker_die(index, "uv_loop_close");
}

/* ---- the test ---- */

static shared_t *run(const char *name, lk_rate_type_t type, int64_t rate, int64_t interval_ms,
                     int64_t run_ms) {
  shared_t *sh;
  rt_worker_t w[N_WORKERS];
  fx_t fx;
  lk_ratelimiter_t *rl;
  int i;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT(sh != MAP_FAILED);
  memset(sh, 0, sizeof *sh);
  fx_start(&fx, NULL);
  rl = rl_new(fx.c, name);
  ASSERT_OK(rl_set(&fx.loop, rl, 0, type, rate, interval_ms, NULL));
  rl_close(&fx.loop, rl);
  sh->port = rt_server_port(fx.srv);
  sh->name = name;
  sh->type = type;
  sh->run_ms = run_ms;
  for (i = 0; i < N_WORKERS; i++)
    ASSERT_OK(rt_worker_start(&w[i], i, worker_main, sh));
  if (rt_workers_wait(w, N_WORKERS, run_ms + rt_scaled_ms(30000)) != 0) {
    rt_workers_kill_all(w, N_WORKERS);
    FAIL("workers did not finish");
  }
  for (i = 0; i < N_WORKERS; i++) {
    ASSERT_EQ(rt_worker_exit_code(&w[i]), 0);
    ASSERT_EQ(sh->failures[i], 0);
    ASSERT_LT(sh->n[i], MAX_GRANTS);
  }
  fx_finish(&fx);
  return sh;
}

/* Permits the rate allows over run_ms: one full window at the start, then
 * the rate per interval. */
static int64_t allowed(int64_t rate, int64_t interval_ms, int64_t run_ms) {
  return rate * (1 + run_ms / interval_ms);
}

static int64_t total(const rl_grant_t *g, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < n; i++)
    s += g[i].permits;
  return s;
}

TEST(overall_four_processes) {
  const int64_t rate = 20, interval = 500, run_ms = run_ms_from_env(10000);
  static rl_grant_t all[N_WORKERS * MAX_GRANTS];
  shared_t *sh = run("stress-overall", LK_RATE_OVERALL, rate, interval, run_ms);
  size_t n = 0;
  int64_t worst, sum;
  int timeouts = 0;
  for (int i = 0; i < N_WORKERS; i++) {
    memcpy(all + n, sh->g[i], sh->n[i] * sizeof *all);
    n += sh->n[i];
    timeouts += sh->timeouts[i];
  }
  worst = rl_max_in_window(all, n, interval);
  sum = total(all, n);
  printf("overall: %zu grants, %lld permits in %lld ms over %d processes (%d budgets ran out); "
         "allowed at most %lld; max permits in any %lld ms window: %lld (rate %lld)\n",
         n, (long long)sum, (long long)run_ms, N_WORKERS, timeouts,
         (long long)allowed(rate, interval, run_ms), (long long)interval, (long long)worst,
         (long long)rate);
  /* Safety, exact: the algorithm's own bound. */
  ASSERT_LE(worst, rate);
  ASSERT_LE(sum, allowed(rate, interval, run_ms + interval));
  /* Liveness, generous: most of what the rate allows was granted. */
  ASSERT_GE(sum, allowed(rate, interval, run_ms) / 2);
  munmap(sh, sizeof *sh);
}

TEST(per_client_four_processes) {
  const int64_t rate = 6, interval = 300, run_ms = run_ms_from_env(10000) / 2;
  shared_t *sh = run("stress-pc", LK_RATE_PER_CLIENT, rate, interval, run_ms);
  for (int i = 0; i < N_WORKERS; i++) {
    int64_t worst = rl_max_in_window(sh->g[i], sh->n[i], interval);
    int64_t sum = total(sh->g[i], sh->n[i]);
    printf("per client %d: %zu grants, %lld permits in %lld ms; max in any %lld ms window: %lld "
           "(rate %lld)\n",
           i, sh->n[i], (long long)sum, (long long)run_ms, (long long)interval, (long long)worst,
           (long long)rate);
    ASSERT_LE(worst, rate);
    ASSERT_GE(sum, allowed(rate, interval, run_ms) / 2);
  }
  munmap(sh, sizeof *sh);
}
