/* Mutual exclusion under contention, checked two ways: a read-modify-write
 * counter in Redis done inside the lock (a lost update shows as a short
 * count), and a history of critical sections from every worker checked for
 * overlaps between owners (test/harness/history.h).
 *
 * 8 worker processes, forked after the server started, each with its own
 * loop and client made after the fork, pinned alternately to CPU 0 and 1.
 * Each does K iterations (LK_STRESS_ITERS, default 250): acquire -> GET the
 * counter on a separate blocking connection -> sleep a random 0-200 us ->
 * SET counter+1 -> record [acquired, release invoked] -> release; the next
 * iteration starts from the release callback, after a random think time of
 * 0..LK_STRESS_THINK_US (default 300) us so that the lock changes hands often
 * (about 9 times in 10 here; without it, about 1 in 25). */
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
#include "history_synthetic.h"
#include "lk_fixture.h"
#include "workers.h"

#define N_WORKERS 8
/* Worker exit codes: 0 clean; WORKER_EXIT_FINDINGS ran to the end but saw
 * failed releases; anything else is a crash or a broken setup. */
#define WORKER_EXIT_FINDINGS 4
#define LOCK_NAME "stress-lock"
#define COUNTER_KEY "stress-counter"
#define LOCK_CHANNEL "redisson_lock__channel:{" LOCK_NAME "}"

/* ---- the worker (a forked child; never returns) ---------------------------------------- */

typedef struct worker_s {
  int index;
  int iters, done_iters;
  int port;
  int cpu;
  rt_stress_io_t io; /* loop, client, side connection, history */
  lk_lock_t *l;
  uint64_t rng;
  uint64_t t_acq;
  uint64_t t_begin;
  int timeouts;
  int release_errors;
  int think_us;
  lk_client_stats_t stats;
} worker_t;

static worker_t W; /* one per process */
static pid_t stress_parent; /* the test process, set before forking */

static long long counter_get(void) {
  redisReply *r = redisCommand(W.io.side, "GET %s", COUNTER_KEY);
  if (r == NULL)
    rt_worker_die(W.index, "GET: %s", W.io.side->errstr);
  if (r->type != REDIS_REPLY_STRING)
    rt_worker_die(W.index, "GET: reply type %d", r->type);
  long long v = strtoll(r->str, NULL, 10);
  freeReplyObject(r);
  return v;
}

static void counter_set(long long v) {
  redisReply *r = redisCommand(W.io.side, "SET %s %lld", COUNTER_KEY, v);
  if (r == NULL)
    rt_worker_die(W.index, "SET: %s", W.io.side->errstr);
  if (r->type != REDIS_REPLY_STATUS)
    rt_worker_die(W.index, "SET: reply type %d", r->type);
  freeReplyObject(r);
}

static void start_acquire(void);

static void on_client_closed(lk_client_t *c) { (void)c; }

static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  W.l = NULL;
  int rc = lk_client_close(W.io.c, on_client_closed);
  if (rc != 0)
    rt_worker_die(W.index, "lk_client_close: %s", lk_err_name(rc));
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  /* A failed or partial release is a finding, not a reason to stop: the
   * worker goes on so the parent still gets the counter and the full
   * history, and reports it through its exit code. */
  if (status != 0 || lk_lock_result(l) != 1) {
    if (W.release_errors++ < 5)
      fprintf(stderr, "worker %d: release #%d completed with %s, result %" PRId64 "\n", W.index,
              W.done_iters, status ? lk_err_name(status) : "0", lk_lock_result(l));
  }
  W.done_iters++;
  if (W.done_iters < W.iters) {
    /* Think time outside the lock. Without it the releasing worker's next
     * acquire reaches the server before any woken waiter's retry, so one
     * worker runs all its iterations in a row and the handoffs, where an
     * overlap would show, are few. */
    if (W.think_us > 0)
      rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % (uint64_t)(W.think_us + 1)));
    start_acquire();
    return;
  }
  lk_client_get_stats(W.io.c, &W.stats);
  int rc = lk_lock_close(l, on_lock_closed);
  if (rc != 0)
    rt_worker_die(W.index, "lk_lock_close: %s", lk_err_name(rc));
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  if (status == LK_ETIMEDOUT) { /* 30 s without a turn: count it and queue up again */
    W.timeouts++;
    start_acquire();
    return;
  }
  if (status != 0)
    rt_worker_die(W.index, "acquire #%d completed with %s (%s)", W.done_iters, lk_err_name(status),
               lk_lock_error_text(l));
  W.t_acq = uv_hrtime();
  long long v = counter_get();
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
  counter_set(v + 1);
  uint64_t t_rel = uv_hrtime();
  if (rt_history_append(W.io.hist, (uint32_t)W.index, W.t_acq, t_rel) != 0)
    rt_worker_die(W.index, "writing the history: %s", strerror(errno));
  int rc = lk_lock_release(l, on_released, NULL);
  if (rc != 0)
    rt_worker_die(W.index, "lk_lock_release: %s", lk_err_name(rc));
}

static void start_acquire(void) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 30000;
  o.lease_ms = -1; /* the client's default lease */
  int rc = lk_lock_acquire(W.l, &o, on_acquired, NULL);
  if (rc != 0)
    rt_worker_die(W.index, "lk_lock_acquire: %s", lk_err_name(rc));
}

__attribute__((noreturn)) static void worker_main(int index, int port, int iters,
                                                  int think_us, const char *hist_path) {
  memset(&W, 0, sizeof W);
  W.think_us = think_us;
  W.index = index;
  W.port = port;
  W.iters = iters;
  W.cpu = index % 2;
  W.rng = rt_stress_seed(0x2545f4914f6cdd1dULL);

  W.cpu = rt_stress_worker_begin(stress_parent, W.cpu);
  rt_stress_open(&W.io, W.index, port, hist_path);
  int rc = lk_lock_new(W.io.c, LOCK_NAME, &W.l);
  if (rc != 0)
    rt_worker_die(W.index, "lk_lock_new: %s", lk_err_name(rc));

  W.t_begin = uv_hrtime();
  start_acquire();
  uv_run(&W.io.loop, UV_RUN_DEFAULT);
  rt_stress_worker_end(W.index, &W.io, W.done_iters, W.iters);
  double ms = (double)(uv_hrtime() - W.t_begin) / 1e6;
  printf("worker %d: cpu %d, %d holds in %.0f ms, waited %" PRIu64 " times, %d timeouts, "
         "%" PRIu64 " pub/sub messages, %" PRIu64 " commands\n",
         W.index, W.cpu, W.done_iters, ms, W.stats.acquire_waits, W.timeouts,
         W.stats.pubsub_messages, W.stats.commands_sent);
  if (W.release_errors > 0) {
    fprintf(stderr, "worker %d: %d releases failed\n", W.index, W.release_errors);
    _exit(WORKER_EXIT_FINDINGS);
  }
  /* exit, not _exit: LeakSanitizer then checks the worker too. The harness's
   * exit hooks only touch what this process itself started (nothing). */
  exit(0);
}

/* ---- the parent --------------------------------------------------------------------------- */

static int64_t alarm_budget_ms(void) {
  const char *env = getenv("LK_TEST_TIMEOUT_S");
  long s = env != NULL && *env != '\0' ? strtol(env, NULL, 10) : 120;
  if (s <= 0)
    return INT64_MAX; /* alarm off */
  return (int64_t)s * 1000;
}

TEST(lock_stress_mutual_exclusion) {
  const int K = rt_stress_env_int("LK_STRESS_ITERS", 250, 1, 1000000);
  const int think_us = rt_stress_env_int("LK_STRESS_THINK_US", 300, 0, 1000000);
  rt_server_t *srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  free(rt_cmd_str(srv, "SET %s 0", COUNTER_KEY));

  char paths[N_WORKERS][600];
  for (int i = 0; i < N_WORKERS; i++)
    snprintf(paths[i], sizeof paths[i], "%s/history-%d.bin", rt_server_dir(srv), i);

  pid_t pids[N_WORKERS] = {0};
  int running[N_WORKERS] = {0};
  uint64_t t0 = uv_hrtime();
  stress_parent = getpid();
  for (int i = 0; i < N_WORKERS; i++) {
    if (rt_pids_fork(pids, running, N_WORKERS, i) == 0)
      worker_main(i, rt_server_port(srv), K, think_us, paths[i]);
  }

  /* Wait for all, bounded: generous, but inside the test's own alarm. */
  int64_t budget = rt_scaled_ms(60000 + (int64_t)N_WORKERS * K * 10);
  int64_t alarm_ms = alarm_budget_ms();
  if (alarm_ms != INT64_MAX && budget > alarm_ms - 8000)
    budget = alarm_ms - 8000 > 1000 ? alarm_ms - 8000 : 1000;
  printf("waiting up to %" PRId64 " ms for %d workers (K=%d)\n", budget, N_WORKERS, K);
  /* A worker with findings has a complete history: it is checked with the
   * others. */
  int workers_with_findings =
      rt_pids_reap(pids, running, N_WORKERS, rt_now_ms() + budget, WORKER_EXIT_FINDINGS);
  double elapsed_ms = (double)(uv_hrtime() - t0) / 1e6;

  /* Everything is gathered and printed before the first assertion, so a
   * failure shows the whole picture. */
  char *v = rt_cmd_str(srv, "GET %s", COUNTER_KEY);
  ASSERT_NOT_NULL(v);
  long long counter = strtoll(v, NULL, 10);
  free(v);
  rt_history_t h;
  rt_history_init(&h);
  for (int i = 0; i < N_WORKERS; i++)
    if (rt_history_load(&h, paths[i]) != 0)
      FAIL("cannot load %s", paths[i]);
  size_t per_owner[N_WORKERS] = {0};
  for (size_t i = 0; i < h.n; i++) {
    ASSERT_LT(h.v[i].owner, N_WORKERS);
    per_owner[h.v[i].owner]++;
  }
  rt_history_report_t rep;
  rt_history_check(&h, &rep);
  rt_history_free(&h);
  rt_history_print(stdout, &rep);
  printf("stress: counter %lld of %lld expected; %d workers saw failed releases\n", counter,
         (long long)N_WORKERS * K, workers_with_findings);

  /* 1. No two owners inside at once, and every hold recorded. */
  ASSERT_EQ(rep.overlaps, 0);
  ASSERT_EQ(rep.malformed, 0);
  ASSERT_EQ(rep.self_overlaps, 0);
  ASSERT_EQ(rep.intervals, (size_t)N_WORKERS * K);
  for (int i = 0; i < N_WORKERS; i++)
    ASSERT_EQ(per_owner[i], K);
  /* 2. No lost update. */
  ASSERT_EQ(counter, (long long)N_WORKERS * K);
  /* Every release found its hold. */
  ASSERT_EQ(workers_with_findings, 0);

  /* 3. Nothing left behind: no key of the lock's, no subscriber on its
   * channel once the workers are gone (the server notices closed
   * connections asynchronously, so poll briefly). */
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS %s", LOCK_NAME), 0);
  redisReply *keys = rt_cmd(srv, "KEYS *%s*", LOCK_NAME);
  ASSERT_NOT_NULL(keys);
  ASSERT_EQ(keys->type, REDIS_REPLY_ARRAY);
  if (keys->elements != 0)
    FAIL("%zu keys left, first: %s", keys->elements, keys->element[0]->str);
  freeReplyObject(keys);
  int64_t sub_deadline = rt_now_ms() + rt_scaled_ms(2000);
  while (rt_server_numsub(srv, LOCK_CHANNEL) != 0 && rt_now_ms() < sub_deadline)
    rt_sleep_ms(5);
  ASSERT_EQ(rt_server_numsub(srv, LOCK_CHANNEL), 0);

  printf("stress: %d workers x %d iterations = %d holds in %.0f ms (%.0f holds/s)\n", N_WORKERS,
         K, N_WORKERS * K, elapsed_ms, (double)(N_WORKERS * K) / (elapsed_ms / 1000.0));
  rt_server_stop(srv);
}

/* ---- the checker can fail ----------------------------------------------------------------- */

TEST(lock_stress_checker_detects_overlap) {
  char dir[] = "/tmp/lk-history-XXXXXX";
  ASSERT_NOT_NULL(mkdtemp(dir));
  char pa[64], pb[64], pc[64];
  snprintf(pa, sizeof pa, "%s/a.bin", dir);
  snprintf(pb, sizeof pb, "%s/b.bin", dir);
  snprintf(pc, sizeof pc, "%s/c.bin", dir);

  /* Two synthetic overlapping intervals, through files as the workers write
   * them: owner 0 holds [1000, 2000], owner 1 enters at 1500. */
  FILE *f = rt_history_create(pa);
  ASSERT_NOT_NULL(f);
  ASSERT_OK(rt_history_append(f, 0, 1000, 2000));
  ASSERT_OK(rt_history_finish(f));
  f = rt_history_create(pb);
  ASSERT_NOT_NULL(f);
  ASSERT_OK(rt_history_append(f, 1, 1500, 2500));
  ASSERT_OK(rt_history_finish(f));
  rt_history_t h;
  rt_history_report_t rep;
  rt_history_init(&h);
  ASSERT_OK(rt_history_load(&h, pa));
  ASSERT_OK(rt_history_load(&h, pb));
  rt_history_check(&h, &rep);
  rt_history_print(stdout, &rep);
  ASSERT_EQ(rep.intervals, 2);
  ASSERT_EQ(rep.overlaps, 1);
  ASSERT_EQ(rep.first_a.owner, 0);
  ASSERT_EQ(rep.first_b.owner, 1);
  ASSERT_EQ(rep.first_b.start_ns, 1500);
  rt_history_free(&h);

  /* A truncated file is refused, not silently shortened. */
  f = rt_history_create(pc);
  ASSERT_NOT_NULL(f);
  ASSERT_OK(rt_history_append(f, 2, 1, 2));
  ASSERT_EQ(fwrite("0123456789", 10, 1, f), 1);
  ASSERT_OK(rt_history_finish(f));
  rt_history_init(&h);
  ASSERT_EQ(rt_history_load(&h, pc), -1);
  rt_history_free(&h);
  ASSERT_OK(unlink(pa));
  ASSERT_OK(unlink(pb));
  ASSERT_OK(unlink(pc));
  ASSERT_OK(rmdir(dir));

  /* Touching is not overlapping. */
  const rt_interval_t touch[] = {{0, 0, 0, 100}, {1, 0, 100, 200}};
  rt_history_check_of(touch, 2, &rep);
  ASSERT_EQ(rep.overlaps, 0);
  ASSERT_EQ(rep.gaps, 1);

  /* One long hold overlapped by two later ones of another owner: 2. */
  const rt_interval_t lng[] = {{0, 0, 0, 1000}, {1, 0, 100, 200}, {1, 0, 300, 400}};
  rt_history_check_of(lng, 3, &rep);
  ASSERT_EQ(rep.overlaps, 2);
  ASSERT_EQ(rep.self_overlaps, 0);

  /* The latest-ending interval is the newcomer's own: the overlap with the
   * other owner's must still be seen (owner 2 holds [0, 500]; owner 0 enters
   * at 10 until 600, and again at 20). */
  const rt_interval_t own[] = {{2, 0, 0, 500}, {0, 0, 10, 600}, {0, 0, 20, 30}};
  rt_history_check_of(own, 3, &rep);
  ASSERT_EQ(rep.overlaps, 2);
  ASSERT_EQ(rep.self_overlaps, 1);

  /* Same owner only: not a mutual-exclusion overlap, but reported apart. */
  const rt_interval_t self[] = {{3, 0, 0, 100}, {3, 0, 50, 150}, {4, 0, 150, 160}};
  rt_history_check_of(self, 3, &rep);
  ASSERT_EQ(rep.overlaps, 0);
  ASSERT_EQ(rep.self_overlaps, 1);

  /* Order of input does not matter; end before start is malformed. */
  const rt_interval_t rev[] = {{5, 0, 900, 950}, {6, 0, 10, 20}, {7, 0, 940, 930}};
  rt_history_check_of(rev, 3, &rep);
  ASSERT_EQ(rep.malformed, 1);
  ASSERT_EQ(rep.intervals, 3);
}
