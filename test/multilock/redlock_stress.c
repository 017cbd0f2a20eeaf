/* RedLock mutual exclusion: 8 worker processes contend for one RedLock
 * over 5 masters. Checked two ways, as for the lock (test/lock/
 * lock_stress.c): a read-modify-write counter done inside the lock (a lost
 * update shows as a short count), and a history of critical sections from
 * every worker checked for overlaps (test/harness/history.h).
 *
 * Workers are forked after the servers started, each with its own loop and
 * five clients, pinned alternately to CPU 0 and 1. Each does K iterations
 * (LK_RL_STRESS_ITERS, default 60): acquire -> GET the counter on master 0
 * over a blocking side connection -> sleep 0-200 us -> SET counter+1 ->
 * record [acquired, release invoked] -> release -> think 0-300 us. */
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

#include "multi_fixture.h"
#include "stress_worker.h"
#include "workers.h"

#define N_WORKERS 8
#define N_MASTERS 5
#define LOCK_NAME "rl-stress"
#define COUNTER_KEY "rl-stress-counter"

typedef struct worker_s {
  int index, iters, done_iters;
  int ports[N_MASTERS];
  rt_stress_io_t io; /* loop, side connection, history; its clients are below */
  lk_client_t *c[N_MASTERS];
  lk_redlock_t *rl;
  uint64_t rng, t_acq;
  int timeouts, noquorum, release_errors, closed;
} worker_t;

static worker_t W;
static pid_t stress_parent;
static int stress_layout; /* LK_REDLOCK_LAYOUT_*: what each master holds */

static long long side_int(const char *cmd) {
  redisReply *r = redisCommand(W.io.side, cmd, COUNTER_KEY);
  long long v;
  if (r == NULL)
    rt_worker_die(W.index, "%s: %s", cmd, W.io.side->errstr);
  v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
  freeReplyObject(r);
  return v;
}

static void counter_set(long long v) {
  redisReply *r = redisCommand(W.io.side, "SET %s %lld", COUNTER_KEY, v);
  if (r == NULL || r->type != REDIS_REPLY_STATUS)
    rt_worker_die(W.index, "SET failed");
  freeReplyObject(r);
}

static void start_acquire(void);

static void on_client_closed(lk_client_t *c) {
  (void)c;
  W.closed++;
}

static void on_rl_closed(lk_redlock_t *rl) {
  int i;
  (void)rl;
  for (i = 0; i < N_MASTERS; i++)
    if (lk_client_close(W.c[i], on_client_closed) != 0)
      rt_worker_die(W.index, "lk_client_close");
}

static void on_released(lk_redlock_t *rl, int status, void *arg) {
  (void)arg;
  if (status != 0 && W.release_errors++ < 5)
    fprintf(stderr, "worker %d: release #%d: %s\n", W.index, W.done_iters, lk_err_name(status));
  if (++W.done_iters < W.iters) {
    rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 301u));
    start_acquire();
    return;
  }
  if (lk_redlock_close(rl, on_rl_closed) != 0)
    rt_worker_die(W.index, "lk_redlock_close");
}

static void on_acquired(lk_redlock_t *rl, int status, void *arg) {
  uint64_t t_rel;
  long long v;
  (void)arg;
  if (status == LK_ETIMEDOUT || status == LK_ENOQUORUM) {
    if (status == LK_ETIMEDOUT)
      W.timeouts++;
    else
      W.noquorum++;
    start_acquire();
    return;
  }
  if (status != 0)
    rt_worker_die(W.index, "acquire #%d: %s", W.done_iters, lk_err_name(status));
  W.t_acq = uv_hrtime();
  v = side_int("GET %s");
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
  counter_set(v + 1);
  t_rel = uv_hrtime();
  if (!lk_redlock_is_held(rl))
    rt_worker_die(W.index, "validity ran out inside a 200 us section");
  if (rt_history_append(W.io.hist, (uint32_t)W.index, W.t_acq, t_rel) != 0)
    rt_worker_die(W.index, "history: %s", strerror(errno));
  if (lk_redlock_release(rl, on_released, NULL) != 0)
    rt_worker_die(W.index, "lk_redlock_release");
}

static void start_acquire(void) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = 30000;
  o.node_timeout_ms = 1000;
  if (lk_redlock_acquire(W.rl, &o, on_acquired, NULL) != 0)
    rt_worker_die(W.index, "lk_redlock_acquire");
}

__attribute__((noreturn)) static void worker_main(int index, const int *ports, int iters,
                                                  const char *hist_path) {
  int i, rc;
  memset(&W, 0, sizeof W);
  W.index = index;
  W.iters = iters;
  memcpy(W.ports, ports, sizeof(W.ports));
  W.rng = rt_stress_seed(0x2545f4914f6cdd1dULL);
  (void)rt_stress_worker_begin(stress_parent, index % 2); /* unpinned when not allowed */
  W.io.hist = rt_stress_history(W.index, hist_path);
  W.io.side = rt_stress_side(W.index, ports[0]);
  if (uv_loop_init(&W.io.loop) != 0)
    rt_worker_die(W.index, "uv_loop_init");
  for (i = 0; i < N_MASTERS; i++) {
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    o.port = ports[i];
    rc = lk_client_new(&W.io.loop, &o, &W.c[i]);
    if (rc != 0)
      rt_worker_die(W.index, "lk_client_new: %s", lk_err_name(rc));
  }
  {
    lk_redlock_config_t cfg;
    lk_redlock_config_init(&cfg);
    cfg.layout = stress_layout;
    rc = lk_redlock_new(W.c, N_MASTERS, LOCK_NAME, &cfg, &W.rl);
  }
  if (rc != 0)
    rt_worker_die(W.index, "lk_redlock_new: %s", lk_err_name(rc));
  start_acquire();
  uv_run(&W.io.loop, UV_RUN_DEFAULT);
  if (W.closed != N_MASTERS)
    rt_worker_die(W.index, "the loop ran dry with %d of %d clients closed", W.closed, N_MASTERS);
  rt_stress_worker_end(W.index, &W.io, W.done_iters, W.iters);
  printf("worker %d: %d holds, %d budget timeouts, %d no-quorum retries\n", W.index,
         W.done_iters, W.timeouts, W.noquorum);
  exit(W.release_errors > 0 ? 4 : 0);
}

static int iters_from_env(void) {
  const char *env = getenv("LK_RL_STRESS_ITERS");
  long v;
  if (env == NULL || *env == '\0')
    return 60;
  v = strtol(env, NULL, 10);
  if (v < 1 || v > 100000)
    FAIL("LK_RL_STRESS_ITERS=%s", env);
  return (int)v;
}

static void stress(int layout) {
  const int K = iters_from_env();
  rt_server_t *srv[N_MASTERS];
  int ports[N_MASTERS];
  char paths[N_WORKERS][600];
  pid_t pids[N_WORKERS];
  int running[N_WORKERS] = {0};
  int i;
  int64_t deadline;
  rt_history_t h;
  rt_history_report_t rep;
  char *v;
  stress_layout = layout;
  for (i = 0; i < N_MASTERS; i++) {
    srv[i] = rt_server_start(NULL);
    ASSERT_NOT_NULL(srv[i]);
    ports[i] = rt_server_port(srv[i]);
  }
  free(rt_cmd_str(srv[0], "SET %s 0", COUNTER_KEY));
  for (i = 0; i < N_WORKERS; i++)
    snprintf(paths[i], sizeof paths[i], "%s/rl-history-%d.bin", rt_server_dir(srv[0]), i);
  stress_parent = getpid();
  for (i = 0; i < N_WORKERS; i++) {
    if (rt_pids_fork(pids, running, N_WORKERS, i) == 0)
      worker_main(i, ports, K, paths[i]);
  }
  deadline = rt_now_ms() + rt_scaled_ms(60000 + (int64_t)N_WORKERS * K * 20);
  rt_pids_reap(pids, running, N_WORKERS, deadline, 0);
  v = rt_cmd_str(srv[0], "GET %s", COUNTER_KEY);
  ASSERT_NOT_NULL(v);
  rt_history_init(&h);
  for (i = 0; i < N_WORKERS; i++)
    ASSERT_OK(rt_history_load(&h, paths[i]));
  rt_history_check(&h, &rep);
  rt_history_print(stdout, &rep);
  printf("counter %s of %d\n", v, N_WORKERS * K);
  ASSERT_EQ(rep.intervals, (size_t)N_WORKERS * (size_t)K);
  ASSERT_EQ(rep.overlaps, 0);
  ASSERT_EQ(rep.self_overlaps, 0);
  ASSERT_EQ(atoll(v), (long long)N_WORKERS * K);
  free(v);
  rt_history_free(&h);
  for (i = 0; i < N_MASTERS; i++) {
    ASSERT_EQ(rt_cmd_int(srv[i], "EXISTS %s", LOCK_NAME), 0);
    rt_server_stop(srv[i]);
  }
}

TEST(rl_stress_mutual_exclusion_8_processes_5_masters) { stress(LK_REDLOCK_LAYOUT_REDISSON); }

/* The same with the lean member layout (docs/multilock.md, "Lean layout"). */
TEST(rl_stress_lean_mutual_exclusion_8_processes_5_masters) { stress(LK_REDLOCK_LAYOUT_LEAN); }
