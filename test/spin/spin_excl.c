/* Exclusion in spin mode, checked by the history checkers
 * (test/harness/history.h): worker processes, each with its own loop and
 * client made after the fork, take a lock (or permits of a semaphore) in
 * spin mode over and over, each recording its sections; the parent checks
 * that no two processes' lock sections overlap (rt_check_exclusive) and
 * that the permits held at once never exceed the semaphore's
 * (rt_check_permits), and that nobody subscribed. A small back-off cap
 * keeps handoffs frequent: a spinning waiter only comes in at its next try. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "spin_common.h"
#include "workers.h"

#define N_WORKERS 6
#define ITERS 100
#define LOCK_NAME "spin-excl-lock"
#define SEM_NAME "spin-excl-sem"
#define SEM_PERMITS 2

typedef struct cfg_s {
  int port;
  int sem; /* 0: the lock, 1: the semaphore */
  char dir[512];
} cfg_t;

typedef struct worker_s {
  const cfg_t *cfg;
  int index, done_iters;
  uv_loop_t loop;
  lk_client_t *c;
  lk_lock_t *l;
  lk_semaphore_t *s;
  FILE *hist;
  uint64_t rng, t_acq;
  int closed;
} worker_t;

static worker_t W; /* one per process */

static void start_acquire(void);

static void on_closed_lock(lk_lock_t *l) {
  (void)l;
  W.closed = 1;
}
static void on_closed_sem(lk_semaphore_t *s) {
  (void)s;
  W.closed = 1;
}

static void next_or_finish(void) {
  int rc;
  if (++W.done_iters < ITERS) {
    /* Think time outside: without it the releasing process takes the next
     * turn before any sleeping spinner wakes, and handoffs are few. */
    rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 1500u));
    start_acquire();
    return;
  }
  rc = W.cfg->sem ? lk_semaphore_close(W.s, on_closed_sem) : lk_lock_close(W.l, on_closed_lock);
  if (rc != 0)
    rt_worker_die(W.index, "close: %s", lk_err_name(rc));
}

/* The section: recorded inside the hold (after the grant, before the
 * release is sent), so any overlap the checker finds really happened. */
static void record_section(int64_t permits) {
  rt_rec_t r;
  memset(&r, 0, sizeof r);
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 300u));
  r.proc = (uint32_t)W.index;
  r.op = permits > 0 ? RT_OP_PERMITS : RT_OP_HOLD;
  r.start_ns = W.t_acq;
  r.end_ns = uv_hrtime();
  r.extra = permits;
  if (rt_recs_append(W.hist, &r) != 0)
    rt_worker_die(W.index, "writing the history: %s", strerror(errno));
}

/* A grant: inside the hold, its section is recorded, then the caller
 * sends the release (rc: what the release call returned). */
static void enter_section(int status, int64_t permits) {
  if (status != 0)
    rt_worker_die(W.index, "acquire #%d: %s", W.done_iters, lk_err_name(status));
  W.t_acq = uv_hrtime();
  record_section(permits);
}

static void release_sent(int rc, const char *call) {
  if (rc != 0)
    rt_worker_die(W.index, "%s refused", call);
}

/* A release answered: the next turn, or the end. */
static void section_released(int status) {
  if (status != 0)
    rt_worker_die(W.index, "release: %s", lk_err_name(status));
  next_or_finish();
}

static void on_lock_released(lk_lock_t *l, int status, void *arg);
static void on_sem_released(lk_semaphore_t *s, int status, void *arg);

static void on_lock_acquired(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  enter_section(status, 0);
  release_sent(lk_lock_release(l, on_lock_released, NULL), "lk_lock_release");
}

static void on_lock_released(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)arg;
  section_released(status);
}

static void on_sem_acquired(lk_semaphore_t *s, int status, void *arg) {
  (void)arg;
  enter_section(status, 1);
  release_sent(lk_semaphore_release(s, 1, on_sem_released, NULL), "lk_semaphore_release");
}

static void on_sem_released(lk_semaphore_t *s, int status, void *arg) {
  (void)s, (void)arg;
  section_released(status);
}

static void start_acquire(void) {
  int rc;
  if (W.cfg->sem) {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.wait_ms = 30000, o.spin = 1, o.spin_max_ms = 8;
    rc = lk_semaphore_acquire(W.s, &o, on_sem_acquired, NULL);
  } else {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = 30000, o.spin = 1, o.spin_max_ms = 8;
    rc = lk_lock_acquire(W.l, &o, on_lock_acquired, NULL);
  }
  if (rc != 0)
    rt_worker_die(W.index, "acquire refused: %s", lk_err_name(rc));
}

static void on_client_closed(lk_client_t *c) { (void)c; }

static void worker_main(int index, void *arg) {
  lk_client_opts_t co;
  char path[600];
  memset(&W, 0, sizeof W);
  W.cfg = arg;
  W.index = index;
  W.rng = uv_hrtime() ^ ((uint64_t)index << 40) ^ 0x9e3779b97f4a7c15ull;
  snprintf(path, sizeof path, "%s/spin-hist-%d", W.cfg->dir, index);
  W.hist = rt_recs_create(path);
  if (W.hist == NULL)
    rt_worker_die(index, "%s: %s", path, strerror(errno));
  if (uv_loop_init(&W.loop) != 0)
    rt_worker_die(index, "uv_loop_init");
  lk_client_opts_init(&co);
  co.port = W.cfg->port;
  if (lk_client_new(&W.loop, &co, &W.c) != 0)
    rt_worker_die(index, "lk_client_new");
  if (W.cfg->sem ? lk_semaphore_new(W.c, SEM_NAME, &W.s) : lk_lock_new(W.c, LOCK_NAME, &W.l))
    rt_worker_die(index, "new object");
  start_acquire();
  /* Runs until the object closed: bounded by the acquires' budgets. */
  while (!W.closed && uv_run(&W.loop, UV_RUN_ONCE) != 0) {
  }
  if (!W.closed)
    rt_worker_die(index, "the loop ended before the object closed");
  if (lk_client_close(W.c, on_client_closed) != 0)
    rt_worker_die(index, "lk_client_close");
  uv_run(&W.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&W.loop) != 0)
    rt_worker_die(index, "loop not closed clean");
  if (rt_recs_finish(W.hist) != 0)
    rt_worker_die(index, "closing the history: %s", strerror(errno));
}

static void run(int sem) {
  rt_server_t *srv = rt_server_start(NULL);
  rt_worker_t w[N_WORKERS];
  rt_recs_t h;
  rt_check_t chk;
  cfg_t cfg;
  size_t handoffs = 0;
  ASSERT_NOT_NULL(srv);
  memset(&cfg, 0, sizeof cfg);
  cfg.port = rt_server_port(srv);
  cfg.sem = sem;
  snprintf(cfg.dir, sizeof cfg.dir, "%s", rt_server_dir(srv));
  if (sem)
    ASSERT_EQ(rt_cmd_int(srv, "INCRBY %s %d", SEM_NAME, SEM_PERMITS), SEM_PERMITS);
  rt_server_reset_stats(srv);
  for (int i = 0; i < N_WORKERS; i++)
    ASSERT_OK(rt_worker_start(&w[i], i, worker_main, &cfg));
  ASSERT_EQ(rt_workers_wait(w, N_WORKERS, rt_scaled_ms(60000)), 0);
  for (int i = 0; i < N_WORKERS; i++)
    ASSERT_EQ(rt_worker_exit_code(&w[i]), 0);

  rt_recs_init(&h);
  for (int i = 0; i < N_WORKERS; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/spin-hist-%d", cfg.dir, i);
    ASSERT_OK(rt_recs_load(&h, path, 0));
  }
  ASSERT_EQ(h.n, (size_t)(N_WORKERS * ITERS));
  if (sem)
    rt_check_permits(&h, 0, SEM_PERMITS, &chk);
  else
    rt_check_exclusive(&h, 0, RT_OP_HOLD, &chk);
  rt_check_print(stdout, &chk);
  ASSERT_EQ(chk.violations, 0);
  ASSERT_EQ(chk.checked, (size_t)(N_WORKERS * ITERS));
  /* Turns passed between processes (sections in start order whose owner
   * changed): the waits were contended, so spinning was exercised. */
  {
    uint64_t prev_start = 0;
    uint32_t prev = UINT32_MAX;
    for (size_t k = 0; k < h.n; k++) {
      /* find the next section by start time (n is small) */
      size_t best = SIZE_MAX;
      for (size_t j = 0; j < h.n; j++)
        if (h.v[j].start_ns > prev_start && (best == SIZE_MAX || h.v[j].start_ns < h.v[best].start_ns))
          best = j;
      if (best == SIZE_MAX)
        break;
      if (prev != UINT32_MAX && h.v[best].proc != prev)
        handoffs++;
      prev = h.v[best].proc;
      prev_start = h.v[best].start_ns;
    }
  }
  printf("%s: %zu sections, %zu handoffs between processes, most held at once %lld, "
         "script calls %lld, subscribes %lld\n",
         sem ? "semaphore" : "lock", h.n, handoffs, (long long)chk.max_seen,
         spin_script_calls(srv), spin_subscribes(srv));
  ASSERT_GE(handoffs, (size_t)N_WORKERS);
  ASSERT_EQ(spin_subscribes(srv), 0);
  rt_recs_free(&h);
  rt_server_stop(srv);
}

TEST(lock_spin_exclusion_among_processes) { run(0); }

TEST(semaphore_spin_permits_never_exceeded_among_processes) { run(1); }
