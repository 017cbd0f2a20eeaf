/* Readers share, writers exclude: 8 worker processes (forked after the
 * server started, each with its own loop, client and lock object, pinned
 * alternately to CPU 0 and 1) run a mixed load on one read/write lock.
 *
 * Each iteration picks a side (LK_STRESS_WRITE_PCT percent writes, default
 * 30): a writer GETs a counter on a side connection, sleeps 0-200 us and
 * SETs counter+1 (a lost update shows as a short count); a reader GETs the
 * counter, sleeps 0-200 us and GETs it again (a writer inside with it shows
 * as a change). Every hold is recorded [acquired, release invoked] with the
 * side (test/harness/rw_history.h), and the checker proves that no write
 * overlapped anything of another worker, and that readers really did
 * overlap each other (or the lock would only be a mutex). */
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
#include "rw_fixture.h"
#include "rw_history.h"
#include "workers.h"

#define N_WORKERS 8
#define LOCK_NAME "stress-rw"
#define COUNTER_KEY "stress-rw-counter"
#define CHANNEL "redisson_rwlock:{" LOCK_NAME "}"

/* ---- the worker (a forked child; never returns) ------------------------------- */

typedef struct worker_s {
  int index, iters, done, write_pct, think_us;
  rt_stress_io_t io; /* loop, client, side connection, history */
  lk_rwlock_t *rw;
  uint64_t rng, t_acq;
  int writing;
  int torn_reads;     /* a reader saw the counter change under it */
  int failed_releases;
  int timeouts;
  int reads, writes;
} worker_t;

static worker_t W;
static pid_t g_parent;

/* This worker's failure (rt_worker_die: exit 3). */
#define die(...) rt_worker_die(W.index, __VA_ARGS__)

static long long counter(void) {
  redisReply *r = redisCommand(W.io.side, "GET %s", COUNTER_KEY);
  long long v;
  if (r == NULL || r->type != REDIS_REPLY_STRING)
    die("GET: %s", r == NULL ? W.io.side->errstr : "not a string");
  v = strtoll(r->str, NULL, 10);
  freeReplyObject(r);
  return v;
}

static void counter_set(long long v) {
  redisReply *r = redisCommand(W.io.side, "SET %s %lld", COUNTER_KEY, v);
  if (r == NULL || r->type != REDIS_REPLY_STATUS)
    die("SET: %s", r == NULL ? W.io.side->errstr : "unexpected reply");
  freeReplyObject(r);
}

static void next(void);

static void on_client_closed(lk_client_t *c) { (void)c; }

static void on_closed(lk_rwlock_t *rw) {
  (void)rw;
  if (lk_client_close(W.io.c, on_client_closed) != 0)
    die("lk_client_close");
}

static void on_released(lk_rwlock_t *rw, int status, void *arg) {
  (void)arg;
  if (status != 0 || lk_rwlock_result(rw) != 1) {
    if (W.failed_releases++ < 5)
      fprintf(stderr, "worker %d: release #%d: %s, result %" PRId64 "\n", W.index, W.done,
              status ? lk_err_name(status) : "0", lk_rwlock_result(rw));
  }
  if (++W.done < W.iters) {
    if (W.think_us > 0)
      rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % (uint64_t)(W.think_us + 1)));
    next();
    return;
  }
  if (lk_rwlock_close(rw, on_closed) != 0)
    die("lk_rwlock_close");
}

static void on_acquired(lk_rwlock_t *rw, int status, void *arg) {
  lk_rwlock_side_t side = W.writing ? LK_RW_WRITE : LK_RW_READ;
  uint64_t t_rel;
  int rc;
  (void)arg;
  if (status == LK_ETIMEDOUT) {
    W.timeouts++;
    next();
    return;
  }
  if (status != 0)
    die("acquire #%d: %s (%s)", W.done, lk_err_name(status), lk_rwlock_error_text(rw));
  W.t_acq = uv_hrtime();
  if (W.writing) {
    long long v = counter();
    rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
    counter_set(v + 1);
    W.writes++;
  } else {
    long long v = counter();
    rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
    if (counter() != v)
      W.torn_reads++;
    W.reads++;
  }
  t_rel = uv_hrtime();
  if (rt_history_append(W.io.hist, RT_RW_OWNER(W.index, W.writing), W.t_acq, t_rel) != 0)
    die("history: %s", strerror(errno));
  rc = lk_rwlock_release(rw, side, on_released, NULL);
  if (rc != 0)
    die("lk_rwlock_release: %s", lk_err_name(rc));
}

static void next(void) {
  lk_rwlock_opts_t o;
  int rc;
  lk_rwlock_opts_init(&o);
  o.wait_ms = 30000;
  W.writing = (int)(rt_xorshift(&W.rng) % 100u) < W.write_pct;
  rc = lk_rwlock_acquire(W.rw, W.writing ? LK_RW_WRITE : LK_RW_READ, &o, on_acquired, NULL);
  if (rc != 0)
    die("lk_rwlock_acquire: %s", lk_err_name(rc));
}

__attribute__((noreturn)) static void worker_main(int index, int port, int iters, int write_pct,
                                                  int think_us, const char *path) {
  memset(&W, 0, sizeof(W));
  W.index = index;
  W.iters = iters;
  W.write_pct = write_pct;
  W.think_us = think_us;
  W.rng = rt_stress_seed(0x9e3779b97f4a7c15ULL);
  (void)rt_stress_worker_begin(g_parent, index % 2); /* unpinned when not allowed */
  rt_stress_open(&W.io, W.index, port, path);
  if (lk_rwlock_new(W.io.c, LOCK_NAME, &W.rw) != 0)
    die("lock");
  next();
  uv_run(&W.io.loop, UV_RUN_DEFAULT);
  rt_stress_worker_end(W.index, &W.io, W.done, W.iters);
  printf("worker %d: %d reads, %d writes, %d torn reads, %d failed releases, %d timeouts\n",
         W.index, W.reads, W.writes, W.torn_reads, W.failed_releases, W.timeouts);
  fflush(stdout);
  /* exit, not _exit: LeakSanitizer checks the worker too. Status 4: ran to
   * the end with findings, the parent still checks the full history. */
  exit(W.torn_reads || W.failed_releases ? 4 : 0);
}

/* ---- the parent ---------------------------------------------------------------------- */

TEST(rw_stress_readers_share_writers_exclude) {
  const int K = rt_stress_env_int("LK_STRESS_ITERS", 250, 1, 1000000);
  const int write_pct = rt_stress_env_int("LK_STRESS_WRITE_PCT", 30, 1, 99);
  const int think_us = rt_stress_env_int("LK_STRESS_THINK_US", 300, 0, 1000000);
  rt_server_t *srv = rt_server_start(NULL);
  char paths[N_WORKERS][600];
  pid_t pids[N_WORKERS] = {0};
  int running[N_WORKERS] = {0}, findings = 0;
  int64_t deadline;
  rt_history_t h;
  rt_rw_report_t rep;
  long long writes_seen;
  uint64_t t0 = uv_hrtime();
  ASSERT_NOT_NULL(srv);
  free(rt_cmd_str(srv, "SET %s 0", COUNTER_KEY));
  g_parent = getpid();
  for (int i = 0; i < N_WORKERS; i++) {
    snprintf(paths[i], sizeof(paths[i]), "%s/rw-history-%d.bin", rt_server_dir(srv), i);
    if (rt_pids_fork(pids, running, N_WORKERS, i) == 0)
      worker_main(i, rt_server_port(srv), K, write_pct, think_us, paths[i]);
  }
  deadline = rt_now_ms() + rt_scaled_ms(60000 + (int64_t)N_WORKERS * K * 10);
  findings = rt_pids_reap(pids, running, N_WORKERS, deadline, 4);

  rt_history_init(&h);
  for (int i = 0; i < N_WORKERS; i++)
    if (rt_history_load(&h, paths[i]) != 0)
      FAIL("cannot load %s", paths[i]);
  rt_rw_history_check(&h, &rep);
  rt_history_free(&h);
  rt_rw_history_print(stdout, &rep);
  {
    char *v = rt_cmd_str(srv, "GET %s", COUNTER_KEY);
    ASSERT_NOT_NULL(v);
    writes_seen = atoll(v);
    free(v);
  }
  printf("rw stress: %d holds in %.0f ms; counter %lld for %zu writes; %d workers with "
         "findings\n",
         N_WORKERS * K, (double)(uv_hrtime() - t0) / 1e6, writes_seen, rep.writes, findings);

  /* Safety: no write overlapped anyone, no lost update, no torn read. */
  ASSERT_EQ(rep.violations, 0);
  ASSERT_EQ(rep.malformed, 0);
  ASSERT_EQ(rep.intervals, (size_t)N_WORKERS * K);
  ASSERT_EQ(writes_seen, (long long)rep.writes);
  ASSERT_EQ(findings, 0);
  /* Sharing: readers were inside together, more than once. */
  ASSERT_GT(rep.read_overlaps, 0);
  ASSERT_GE(rep.max_readers, 2);
  ASSERT_GT(rep.writes, 0);
  /* Nothing left behind: no lock, no hold key, no subscriber. */
  {
    redisReply *keys = rt_cmd(srv, "KEYS *%s}*", LOCK_NAME);
    ASSERT_NOT_NULL(keys);
    if (keys->elements != 0)
      FAIL("%zu keys left, first: %s", keys->elements, keys->element[0]->str);
    freeReplyObject(keys);
  }
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS %s", LOCK_NAME), 0);
  rt_server_wait_channels_gone(srv, CHANNEL);
  rt_server_stop(srv);
}

/* The checker can fail: synthetic histories with each kind of finding. */
static void check(const rt_interval_t *iv, size_t n, rt_rw_report_t *rep) {
  rt_history_t h;
  rt_history_init(&h);
  for (size_t i = 0; i < n; i++)
    ASSERT_OK(rt_history_add(&h, iv[i].owner, iv[i].start_ns, iv[i].end_ns));
  rt_rw_history_check(&h, rep);
  rt_history_free(&h);
}

TEST(rw_checker_detects_violations) {
  rt_rw_report_t rep;
  /* Two readers of different workers overlap: fine, and counted. */
  const rt_interval_t readers[] = {{RT_RW_OWNER(0, 0), 0, 0, 100},
                                   {RT_RW_OWNER(1, 0), 0, 50, 150},
                                   {RT_RW_OWNER(2, 0), 0, 60, 70}};
  /* A writer inside a reader's interval: a violation. */
  const rt_interval_t w_in_r[] = {{RT_RW_OWNER(0, 0), 0, 0, 100},
                                  {RT_RW_OWNER(1, 1), 0, 99, 200}};
  /* A reader inside a writer's interval: a violation. */
  const rt_interval_t r_in_w[] = {{RT_RW_OWNER(3, 1), 0, 0, 100},
                                  {RT_RW_OWNER(4, 0), 0, 10, 20}};
  /* The same worker reading while it writes (a downgrade): not a
   * violation; touching intervals never are. */
  const rt_interval_t own[] = {{RT_RW_OWNER(5, 1), 0, 0, 100},
                               {RT_RW_OWNER(5, 0), 0, 10, 300},
                               {RT_RW_OWNER(6, 1), 0, 300, 400}};
  check(readers, 3, &rep);
  ASSERT_EQ(rep.violations, 0);
  ASSERT_EQ(rep.read_overlaps, 2);
  ASSERT_EQ(rep.max_readers, 3);
  check(w_in_r, 2, &rep);
  rt_rw_history_print(stdout, &rep);
  ASSERT_EQ(rep.violations, 1);
  ASSERT_EQ(RT_RW_WORKER(rep.first_a.owner), 0);
  ASSERT_EQ(RT_RW_WORKER(rep.first_b.owner), 1);
  check(r_in_w, 2, &rep);
  ASSERT_EQ(rep.violations, 1);
  ASSERT_EQ(rep.max_readers, 1);
  check(own, 3, &rep);
  ASSERT_EQ(rep.violations, 0);
  ASSERT_EQ(rep.reads, 1);
  ASSERT_EQ(rep.writes, 2);
}
