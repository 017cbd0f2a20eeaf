/* Semaphores under contention, checked two ways: a sweep line over every
 * worker's holds (test/harness/permit_history.h) shows at most N permits
 * held at every instant, and a counter in Redis that each holder raises by
 * its permits on entry and lowers on exit never passes N. At the end the
 * semaphore has exactly N permits available and nothing is left behind.
 *
 * 8 worker processes, forked after the server started, each with its own
 * loop and client, pinned alternately to CPU 0 and 1. Each does K
 * iterations (LK_STRESS_ITERS, default 400): acquire -> INCRBY inside ->
 * sleep a random 0-200 us -> DECRBY inside -> record the hold -> release;
 * then a random think time of 0..300 us. The counting semaphore takes one
 * permit per hold; the expirable one takes 1 or 2 (at random) with the
 * watchdog's lease. Fairness (acquisitions per process while all ran, the
 * longest run of consecutive acquisitions by one process, waits) is
 * printed at the end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stress_worker.h"
#include "permit_history.h"
#include "sem_fixture.h"
#include "workers.h"

#define N_WORKERS 8
#define INSIDE_KEY "stress-inside"

/* ---- the worker (a forked child; never returns) ------------------------------------- */

typedef struct worker_s {
  int index, iters, done_iters, expirable, permits;
  rt_stress_io_t io; /* loop, client, side connection, history */
  lk_semaphore_t *s;
  lk_psem_t *p;
  uint64_t rng, t_call, t_acq, t_begin;
  int64_t n; /* permits of the current hold */
  uint64_t wait_sum_ns, wait_max_ns;
  int over, errors;
  long long inside_max;
  lk_client_stats_t stats;
} worker_t;

static worker_t W;
static pid_t stress_parent;

static long long side_incrby(long long by) {
  redisReply *r = redisCommand(W.io.side, "INCRBY %s %lld", INSIDE_KEY, by);
  long long v;
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    rt_worker_die(W.index, "INCRBY: %s", r == NULL ? W.io.side->errstr : "unexpected reply");
  v = r->integer;
  freeReplyObject(r);
  return v;
}

static void start_acquire(void);

static void on_client_closed(lk_client_t *c) { (void)c; }
static void on_sem_closed(lk_semaphore_t *s) {
  (void)s;
  lk_client_close(W.io.c, on_client_closed);
}
static void on_psem_closed(lk_psem_t *p) {
  (void)p;
  lk_client_close(W.io.c, on_client_closed);
}

static void next_or_close(void) {
  int rc;
  W.done_iters++;
  if (W.done_iters < W.iters) {
    rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 301u)); /* think time outside */
    start_acquire();
    return;
  }
  lk_client_get_stats(W.io.c, &W.stats);
  rc = W.expirable ? lk_psem_close(W.p, on_psem_closed) : lk_semaphore_close(W.s, on_sem_closed);
  if (rc != 0)
    rt_worker_die(W.index, "close: %s", lk_err_name(rc));
}

static void on_released(int status) {
  if (status != 0 && W.errors++ < 5)
    fprintf(stderr, "worker %d: release #%d: %s\n", W.index, W.done_iters, lk_err_name(status));
  next_or_close();
}

static void on_sem_released(lk_semaphore_t *s, int status, void *arg) {
  (void)s, (void)arg;
  on_released(status);
}
static void on_psem_released(lk_psem_t *p, int status, void *arg) {
  (void)p, (void)arg;
  on_released(status);
}

/* The hold: raise the shared counter, linger, lower it, record. */
static void on_acquired(int status, const char *text) {
  long long v;
  uint64_t t_rel, waited;
  int rc;
  if (status != 0)
    rt_worker_die(W.index, "acquire #%d: %s (%s)", W.done_iters, lk_err_name(status), text);
  W.t_acq = uv_hrtime();
  waited = W.t_acq - W.t_call;
  W.wait_sum_ns += waited;
  if (waited > W.wait_max_ns)
    W.wait_max_ns = waited;
  v = side_incrby(W.n);
  if (v > W.inside_max)
    W.inside_max = v;
  if (v > W.permits)
    W.over++;
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
  side_incrby(-W.n);
  t_rel = uv_hrtime();
  if (rt_permit_history_append(W.io.hist, (uint32_t)W.index, (uint32_t)W.n, W.t_acq, t_rel) != 0)
    rt_worker_die(W.index, "writing the history: %s", strerror(errno));
  rc = W.expirable ? lk_psem_release(W.p, NULL, on_psem_released, NULL)
                   : lk_semaphore_release(W.s, W.n, on_sem_released, NULL);
  if (rc != 0)
    rt_worker_die(W.index, "release call: %s", lk_err_name(rc));
}

static void on_sem_acquired(lk_semaphore_t *s, int status, void *arg) {
  (void)arg;
  on_acquired(status, lk_semaphore_error_text(s));
}
static void on_psem_acquired(lk_psem_t *p, int status, void *arg) {
  (void)arg;
  on_acquired(status, lk_psem_error_text(p));
}

static void start_acquire(void) {
  int rc;
  W.n = W.expirable ? 1 + (int64_t)(rt_xorshift(&W.rng) % 2u) : 1;
  W.t_call = uv_hrtime();
  if (W.expirable) {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    o.permits = W.n;
    o.wait_ms = 60000;
    rc = lk_psem_acquire(W.p, &o, on_psem_acquired, NULL);
  } else {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.permits = W.n;
    o.wait_ms = 60000;
    rc = lk_semaphore_acquire(W.s, &o, on_sem_acquired, NULL);
  }
  if (rc != 0)
    rt_worker_die(W.index, "acquire call: %s", lk_err_name(rc));
}

__attribute__((noreturn)) static void worker_main(int index, int port, int iters, int expirable,
                                                  int permits, const char *name,
                                                  const char *hist_path) {
  int rc, cpu;
  memset(&W, 0, sizeof W);
  W.index = index;
  W.iters = iters;
  W.expirable = expirable;
  W.permits = permits;
  W.rng = rt_stress_seed(0x9e3779b97f4a7c15ULL);
  cpu = rt_stress_worker_begin(stress_parent, index % 2);
  rt_stress_open(&W.io, W.index, port, hist_path);
  rc = expirable ? lk_psem_new(W.io.c, name, &W.p) : lk_semaphore_new(W.io.c, name, &W.s);
  if (rc != 0)
    rt_worker_die(W.index, "new: %s", lk_err_name(rc));
  W.t_begin = uv_hrtime();
  start_acquire();
  uv_run(&W.io.loop, UV_RUN_DEFAULT);
  rt_stress_worker_end(W.index, &W.io, W.done_iters, W.iters);
  printf("worker %d: cpu %d, %d holds in %.0f ms, waited %" PRIu64 " times (mean %.2f ms, "
         "max %.1f ms), %" PRIu64 " messages, %" PRIu64 " commands, counter max %lld\n",
         W.index, cpu, W.done_iters, (double)(uv_hrtime() - W.t_begin) / 1e6,
         W.stats.acquire_waits, (double)W.wait_sum_ns / 1e6 / W.iters,
         (double)W.wait_max_ns / 1e6, W.stats.pubsub_messages, W.stats.commands_sent,
         W.inside_max);
  fflush(stdout);
  if (W.over > 0 || W.errors > 0) {
    fprintf(stderr, "worker %d: %d holds saw more than %d permits inside, %d failed releases\n",
            W.index, W.over, W.permits, W.errors);
    _exit(4);
  }
  exit(0); /* LeakSanitizer checks the worker too */
}

/* ---- the parent ---------------------------------------------------------------------- */

static int cmp_start(const void *x, const void *y) {
  const rt_interval_t *a = x, *b = y;
  return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

/* Acquisitions per worker while every worker was still running, and the
 * longest run of consecutive acquisitions (by start) of one worker. */
static void fairness(rt_history_t *h) {
  uint64_t window_start = 0, window_end = UINT64_MAX;
  uint64_t first[N_WORKERS], last[N_WORKERS];
  size_t in_window[N_WORKERS] = {0}, i, run = 0, longest = 0, min_w = SIZE_MAX, max_w = 0;
  uint32_t prev = UINT32_MAX, longest_owner = 0;
  int w;
  for (w = 0; w < N_WORKERS; w++)
    first[w] = UINT64_MAX, last[w] = 0;
  for (i = 0; i < h->n; i++) {
    const rt_interval_t *iv = &h->v[i];
    if (iv->start_ns < first[iv->owner])
      first[iv->owner] = iv->start_ns;
    if (iv->end_ns > last[iv->owner])
      last[iv->owner] = iv->end_ns;
  }
  for (w = 0; w < N_WORKERS; w++) {
    if (first[w] > window_start)
      window_start = first[w];
    if (last[w] < window_end)
      window_end = last[w];
  }
  qsort(h->v, h->n, sizeof *h->v, cmp_start);
  for (i = 0; i < h->n; i++) {
    const rt_interval_t *iv = &h->v[i];
    if (iv->start_ns >= window_start && iv->start_ns <= window_end)
      in_window[iv->owner]++;
    run = iv->owner == prev ? run + 1 : 1;
    prev = iv->owner;
    if (run > longest) {
      longest = run;
      longest_owner = iv->owner;
    }
  }
  for (w = 0; w < N_WORKERS; w++) {
    if (in_window[w] < min_w)
      min_w = in_window[w];
    if (in_window[w] > max_w)
      max_w = in_window[w];
  }
  printf("fairness: while all %d ran (%.0f ms), acquisitions per process min %zu max %zu "
         "(max/min %.2f); longest run of one process %zu (worker %u) of %zu holds\n",
         N_WORKERS, window_end > window_start ? (double)(window_end - window_start) / 1e6 : 0.0,
         min_w, max_w, min_w ? (double)max_w / (double)min_w : 0.0, longest, longest_owner,
         h->n);
}

static void stress(int expirable) {
  const int K = rt_stress_env_int("LK_STRESS_ITERS", 400, 1, 1000000);
  const int permits = expirable ? 4 : 3;
  const char *name = expirable ? "stress-psem" : "stress-sem";
  char paths[N_WORKERS][600], zset[64], channel[64];
  pid_t pids[N_WORKERS] = {0};
  int running[N_WORKERS] = {0}, i, findings = 0;
  rt_server_t *srv = rt_server_start(NULL);
  int64_t deadline;
  uint64_t t0;
  double elapsed_ms;
  rt_history_t h;
  rt_permit_report_t rep;
  ASSERT_NOT_NULL(srv);
  free(rt_cmd_str(srv, "SET %s %d", name, permits));
  free(rt_cmd_str(srv, "SET %s 0", INSIDE_KEY));
  for (i = 0; i < N_WORKERS; i++)
    snprintf(paths[i], sizeof paths[i], "%s/history-%d.bin", rt_server_dir(srv), i);
  stress_parent = getpid();
  t0 = uv_hrtime();
  for (i = 0; i < N_WORKERS; i++) {
    if (rt_pids_fork(pids, running, N_WORKERS, i) == 0)
      worker_main(i, rt_server_port(srv), K, expirable, permits, name, paths[i]);
  }
  deadline = rt_now_ms() + rt_scaled_ms(60000 + (int64_t)N_WORKERS * K * 10);
  findings = rt_pids_reap(pids, running, N_WORKERS, deadline, 4);
  elapsed_ms = (double)(uv_hrtime() - t0) / 1e6;

  rt_history_init(&h);
  for (i = 0; i < N_WORKERS; i++)
    if (rt_history_load(&h, paths[i]) != 0)
      FAIL("cannot load %s", paths[i]);
  ASSERT_OK(rt_permit_sweep(&h, (uint64_t)permits, &rep));
  rt_permit_print(stdout, (uint64_t)permits, &rep);
  fairness(&h);
  printf("stress: %d workers x %d holds in %.0f ms (%.0f holds/s); %d workers saw findings\n",
         N_WORKERS, K, elapsed_ms, (double)h.n / (elapsed_ms / 1000.0), findings);
  rt_history_free(&h);

  /* 1. Never more than N permits held, and every hold recorded. */
  ASSERT_EQ(rep.over_events, 0);
  ASSERT_LE(rep.max_permits, (uint64_t)permits);
  ASSERT_EQ(rep.malformed, 0);
  ASSERT_EQ(rep.intervals, (size_t)N_WORKERS * K);
  ASSERT_GE(rep.max_permits, 2); /* contention really happened */
  /* 2. The server-side counter agrees, and every release found its hold. */
  ASSERT_EQ(findings, 0);
  /* 3. Exactly N available at the end; nothing else left behind. */
  ASSERT_EQ(srv_count(srv, name), permits);
  snprintf(zset, sizeof zset, "{%s}:timeout", name);
  snprintf(channel, sizeof channel, "redisson_sc:{%s}", name);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS %s", zset), 0);
  ASSERT_EQ(srv_keys_matching(srv, "latchkey_semaphore_req"), 0);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(2000);
    while (rt_server_numsub(srv, channel) != 0 && rt_now_ms() < end)
      rt_sleep_ms(5);
  }
  ASSERT_EQ(rt_server_numsub(srv, channel), 0);
  rt_server_stop(srv);
}

TEST(semaphore_stress_counting) { stress(0); }

TEST(semaphore_stress_expirable) { stress(1); }

/* One hold of a synthetic history: owner, permits, [start_ns, end_ns]. */
typedef struct {
  uint32_t owner, permits;
  uint64_t start_ns, end_ns;
} hold_t;

/* The report of sweeping the n holds against limit. */
static rt_permit_report_t sweep_holds(const hold_t *holds, size_t n, uint64_t limit) {
  rt_history_t h;
  rt_permit_report_t rep;
  rt_history_init(&h);
  for (size_t i = 0; i < n; i++)
    ASSERT_OK(rt_permit_history_add(&h, holds[i].owner, holds[i].permits, holds[i].start_ns,
                                    holds[i].end_ns));
  ASSERT_OK(rt_permit_sweep(&h, limit, &rep));
  rt_history_free(&h);
  return rep;
}

/* The checker can fail: synthetic histories with too many permits held. */
TEST(permit_sweep_detects_excess) {
  rt_permit_report_t rep;
  /* 2 permits allowed: [0,100] x1, [50,150] x1, [60,70] x1 -> 3 at 60. */
  const hold_t three_at_60[] = {{0, 1, 0, 100}, {1, 1, 50, 150}, {2, 1, 60, 70}};
  rep = sweep_holds(three_at_60, 3, 2);
  ASSERT_EQ(rep.max_permits, 3);
  ASSERT_EQ(rep.over_events, 1);
  ASSERT_EQ(rep.first_over_ns, 60);
  ASSERT_EQ(rep.over_ns, 10);
  /* Weights: one hold of 2 and one of 1 overlapping -> 3 > 2. */
  const hold_t weighted[] = {{0, 2, 0, 100}, {1, 1, 99, 150}};
  rep = sweep_holds(weighted, 2, 2);
  ASSERT_EQ(rep.max_permits, 3);
  ASSERT_EQ(rep.max_holders, 2);
  ASSERT_EQ(rep.over_events, 1);
  /* Touching is not overlapping; end before start is malformed. */
  const hold_t touching[] = {{0, 2, 0, 100}, {1, 2, 100, 200}, {2, 1, 300, 250}};
  rep = sweep_holds(touching, 3, 2);
  ASSERT_EQ(rep.max_permits, 2);
  ASSERT_EQ(rep.over_events, 0);
  ASSERT_EQ(rep.malformed, 1);
}
