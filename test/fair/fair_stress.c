/* Fair lock mutual exclusion under contention, checked two ways: a
 * read-modify-write counter in Redis done inside the lock (a lost update
 * shows as a short count) and a history of critical sections from every
 * worker checked for overlaps between owners (test/harness/history.h).
 *
 * 8 worker processes, forked after the server started, each with its own
 * loop and client, pinned alternately to CPU 0 and 1. Each does K
 * iterations (LK_FAIR_STRESS_ITERS, default 200): acquire (joining the queue
 * behind the others) -> GET the counter on a separate blocking connection ->
 * sleep a random 0-200 us -> SET counter+1 -> record [acquired, release
 * invoked] -> release -> queue up again. With strict FIFO every hold is a
 * handoff to another process whenever others wait. */
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
#include "fair_fixture.h"
#include "history.h"
#include "workers.h"

#define N_WORKERS 8
#define LOCK_NAME "fair-stress"
#define COUNTER_KEY "fair-stress-counter"

/* ---- the worker ---- */

typedef struct {
  int index, iters, done_iters, cpu;
  rt_stress_io_t io; /* loop, client, side connection, history */
  lk_fair_t *f;
  uint64_t rng, t_acq, t_begin;
  int waited;
  lk_client_stats_t stats;
} worker_t;

static worker_t W;
static pid_t stress_parent;

static long long side_int(const char *cmd, long long v, int set) {
  redisReply *r = set ? redisCommand(W.io.side, "SET %s %lld", COUNTER_KEY, v)
                      : redisCommand(W.io.side, "GET %s", COUNTER_KEY);
  long long out = 0;
  if (r == NULL)
    rt_worker_die(W.index, "%s: %s", cmd, W.io.side->errstr);
  if (!set) {
    if (r->type != REDIS_REPLY_STRING)
      rt_worker_die(W.index, "GET: reply type %d", r->type);
    out = strtoll(r->str, NULL, 10);
  }
  freeReplyObject(r);
  return out;
}

static void start_acquire(void);

static void on_client_closed(lk_client_t *c) { (void)c; }

static void on_fair_closed(lk_fair_t *f) {
  int rc;
  (void)f;
  rc = lk_client_close(W.io.c, on_client_closed);
  if (rc != 0)
    rt_worker_die(W.index, "lk_client_close: %s", lk_err_name(rc));
}

static void on_released(lk_fair_t *f, int status, void *arg) {
  int rc;
  (void)arg;
  if (status != 0 || lk_fair_result(f) != 1)
    rt_worker_die(W.index, "release #%d: %s, result %" PRId64, W.done_iters,
               status ? lk_err_name(status) : "0", lk_fair_result(f));
  if (++W.done_iters < W.iters) {
    start_acquire();
    return;
  }
  lk_client_get_stats(W.io.c, &W.stats);
  rc = lk_fair_close(f, on_fair_closed);
  if (rc != 0)
    rt_worker_die(W.index, "lk_fair_close: %s", lk_err_name(rc));
}

static void on_acquired(lk_fair_t *f, int status, void *arg) {
  long long v;
  uint64_t t_rel;
  int rc;
  (void)arg;
  if (status != 0)
    rt_worker_die(W.index, "acquire #%d: %s (%s)", W.done_iters, lk_err_name(status),
               lk_fair_error_text(f));
  W.t_acq = uv_hrtime();
  v = side_int("GET", 0, 0);
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
  side_int("SET", v + 1, 1);
  t_rel = uv_hrtime();
  if (rt_history_append(W.io.hist, (uint32_t)W.index, W.t_acq, t_rel) != 0)
    rt_worker_die(W.index, "writing the history: %s", strerror(errno));
  rc = lk_fair_release(f, on_released, NULL);
  if (rc != 0)
    rt_worker_die(W.index, "lk_fair_release: %s", lk_err_name(rc));
}

static void start_acquire(void) {
  lk_fair_opts_t o;
  int rc;
  lk_fair_opts_init(&o);
  o.wait_ms = 60000;
  rc = lk_fair_acquire(W.f, &o, on_acquired, NULL);
  if (rc != 0)
    rt_worker_die(W.index, "lk_fair_acquire: %s", lk_err_name(rc));
}

__attribute__((noreturn)) static void worker_main(int index, int port, int iters,
                                                  const char *hist_path) {
  int rc;
  memset(&W, 0, sizeof(W));
  W.index = index;
  W.iters = iters;
  W.cpu = index % 2;
  W.rng = rt_stress_seed(0x2545f4914f6cdd1dULL);
  W.cpu = rt_stress_worker_begin(stress_parent, W.cpu);
  rt_stress_open(&W.io, W.index, port, hist_path);
  if ((rc = lk_fair_new(W.io.c, LOCK_NAME, &W.f)) != 0)
    rt_worker_die(W.index, "lk_fair_new: %s", lk_err_name(rc));
  W.t_begin = uv_hrtime();
  start_acquire();
  uv_run(&W.io.loop, UV_RUN_DEFAULT);
  rt_stress_worker_end(W.index, &W.io, W.done_iters, W.iters);
  printf("worker %d: cpu %d, %d holds in %.0f ms, waited %" PRIu64 " times, %" PRIu64
         " pub/sub messages, %" PRIu64 " commands\n",
         W.index, W.cpu, W.done_iters, (double)(uv_hrtime() - W.t_begin) / 1e6,
         W.stats.acquire_waits, W.stats.pubsub_messages, W.stats.commands_sent);
  exit(0);
}

/* ---- the parent ---- */

TEST(eight_processes_mutual_exclusion) {
  const int K = rt_stress_env_int("LK_FAIR_STRESS_ITERS", 200, 1, 1000000);
  rt_server_t *srv = rt_server_start(NULL);
  char paths[N_WORKERS][600];
  pid_t pids[N_WORKERS] = {0};
  int running[N_WORKERS] = {0};
  int i;
  int64_t deadline;
  uint64_t t0;
  rt_history_t h;
  rt_history_report_t rep;
  long long counter;
  char *v;
  redisReply *keys;
  ASSERT_NOT_NULL(srv);
  free(rt_cmd_str(srv, "SET %s 0", COUNTER_KEY));
  for (i = 0; i < N_WORKERS; i++)
    snprintf(paths[i], sizeof(paths[i]), "%s/history-%d.bin", rt_server_dir(srv), i);
  stress_parent = getpid();
  t0 = uv_hrtime();
  for (i = 0; i < N_WORKERS; i++) {
    if (rt_pids_fork(pids, running, N_WORKERS, i) == 0)
      worker_main(i, rt_server_port(srv), K, paths[i]);
  }
  deadline = rt_now_ms() + rt_scaled_ms(60000 + (int64_t)N_WORKERS * K * 10);
  rt_pids_reap(pids, running, N_WORKERS, deadline, 0);
  v = rt_cmd_str(srv, "GET %s", COUNTER_KEY);
  ASSERT_NOT_NULL(v);
  counter = strtoll(v, NULL, 10);
  free(v);
  rt_history_init(&h);
  for (i = 0; i < N_WORKERS; i++)
    if (rt_history_load(&h, paths[i]) != 0)
      FAIL("cannot load %s", paths[i]);
  rt_history_check(&h, &rep);
  rt_history_free(&h);
  rt_history_print(stdout, &rep);
  printf("fair stress: %d x %d holds in %.0f ms, counter %lld\n", N_WORKERS, K,
         (double)(uv_hrtime() - t0) / 1e6, counter);
  ASSERT_EQ(rep.overlaps, 0);
  ASSERT_EQ(rep.malformed, 0);
  ASSERT_EQ(rep.self_overlaps, 0);
  ASSERT_EQ(rep.intervals, (size_t)N_WORKERS * K);
  ASSERT_EQ(counter, (long long)N_WORKERS * K);
  /* Nothing left behind: no lock, no queue, no deadlines, no subscriber on
   * any waiter channel once the workers are gone. */
  keys = rt_cmd(srv, "KEYS *%s", LOCK_NAME "*");
  ASSERT_NOT_NULL(keys);
  ASSERT_EQ(keys->type, REDIS_REPLY_ARRAY);
  for (i = 0; i < (int)keys->elements; i++)
    if (strcmp(keys->element[i]->str, COUNTER_KEY) != 0)
      FAIL("key left behind: %s", keys->element[i]->str);
  freeReplyObject(keys);
  rt_server_wait_channels_gone(srv, "redisson_lock__channel:*");
  rt_server_stop(srv);
}
