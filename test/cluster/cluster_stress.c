/* Mutual exclusion under contention on a 3-master cluster (issue 14): 8
 * worker processes, pinned in turn to each CPU, each with its own loop and
 * a client seeded at a different node (replicas included, which answer
 * MOVED), take fenced locks on six names, two on each master, for a bounded
 * time. Inside each hold a worker does a read-modify-write of a counter
 * beside the name (same hash tag, so on the same master) and records the
 * section [acquired, release invoked] with its token (test/harness/
 * history.h). The parent then checks, per name: no two workers' sections
 * overlap, tokens strictly increase, the counter equals the number of
 * sections (no lost update); and progress: every worker and every name got
 * holds.
 *
 *   LK_CLUSTER_STRESS_MS   how long the workers start new acquisitions
 *                          (default 10000, unscaled)
 *
 * The lease is explicit (10 s, never reached by a hold): the watchdog on a
 * cluster is cluster_watchdog.c's subject. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "history.h"
#include "workers.h"

#define N_WORKERS 8
#define N_NAMES 6 /* two per master */
#define LEASE_MS 10000
#define WORKER_EXIT_FINDINGS 4

typedef struct target_s {
  char name[64];
  char counter[96]; /* "{name}:counter": the name's slot */
  int node;         /* the master that owns it (fixture index) */
  int port;
} target_t;

/* Set by the parent before forking. */
static target_t T[N_NAMES];
static int seed_port[RT_CLUSTER_MAX_NODES];
static int n_seeds;
static uint64_t end_ns;
static char dir[64];

static int64_t stress_ms(void) {
  const char *v = getenv("LK_CLUSTER_STRESS_MS");
  if (v == NULL || *v == '\0')
    return 10000;
  char *end = NULL;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end != '\0' || n < 100 || n > 600000)
    FAIL("LK_CLUSTER_STRESS_MS=\"%s\": want an integer in 100..600000", v);
  return n;
}

/* ---- the worker (a forked child) ---------------------------------------------------------- */

typedef struct worker_s {
  int index;
  uv_loop_t loop;
  lk_client_t *c;
  lk_lock_t *l[N_NAMES];
  redisContext *side[N_NAMES]; /* blocking GET/SET of each counter */
  FILE *hist;
  uint64_t rng;
  int cur;             /* the name being taken or held */
  uint64_t t_acq;
  long holds, timeouts, release_errors;
  int closing;
} worker_t;

static worker_t W;

static void start_acquire(void);

static void on_client_closed(lk_client_t *c) { (void)c; }

static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  if (--W.closing == 0 && lk_client_close(W.c, on_client_closed) != 0)
    rt_worker_die(W.index, "lk_client_close");
}

static void finish(void) {
  lk_client_stats_t st;
  lk_client_get_stats(W.c, &st);
  printf("worker %d: %ld holds, %ld timeouts, %" PRIu64 " waits, %" PRIu64 " commands, "
         "%" PRIu64 " MOVED, %" PRIu64 " pub/sub messages\n",
         W.index, W.holds, W.timeouts, st.acquire_waits, st.commands_sent, st.moved_redirects,
         st.pubsub_messages);
  W.closing = N_NAMES;
  for (int k = 0; k < N_NAMES; k++)
    if (lk_lock_close(W.l[k], on_lock_closed) != 0)
      rt_worker_die(W.index, "lk_lock_close");
}

static void next(void) {
  if (uv_hrtime() >= end_ns) {
    finish();
    return;
  }
  /* Think time outside the lock, so the lock changes hands often. */
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 301u));
  start_acquire();
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  if (status != 0 || lk_lock_result(l) != 1) {
    if (W.release_errors++ < 5)
      fprintf(stderr, "worker %d: release of %s: %s, result %" PRId64 "\n", W.index,
              lk_lock_name(l), lk_err_name(status), lk_lock_result(l));
  }
  next();
}

static long long side_cmd(redisContext *ctx, const char *fmt, const char *key, long long v) {
  redisReply *r = redisCommand(ctx, fmt, key, v);
  if (r == NULL)
    rt_worker_die(W.index, "%s: %s", fmt, ctx->errstr);
  long long out = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
  if (r->type == REDIS_REPLY_ERROR)
    rt_worker_die(W.index, "%s %s: %s", fmt, key, r->str);
  freeReplyObject(r);
  return out;
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  if (status == LK_ETIMEDOUT) {
    W.timeouts++;
    next();
    return;
  }
  if (status != 0)
    rt_worker_die(W.index, "acquire of %s: %s (%s)", lk_lock_name(l), lk_err_name(status),
                  lk_lock_error_text(l) ? lk_lock_error_text(l) : "");
  W.t_acq = uv_hrtime();
  const target_t *t = &T[W.cur];
  long long v = side_cmd(W.side[W.cur], "GET %s", t->counter, 0);
  rt_sleep_us((unsigned)(rt_xorshift(&W.rng) % 201u));
  side_cmd(W.side[W.cur], "SET %s %lld", t->counter, v + 1);
  rt_rec_t r;
  memset(&r, 0, sizeof r);
  r.proc = (uint32_t)W.index;
  r.op = RT_OP_HOLD;
  r.obj = (uint16_t)W.cur;
  r.start_ns = W.t_acq;
  r.end_ns = uv_hrtime();
  r.token = lk_lock_token(l);
  if (rt_recs_append(W.hist, &r) != 0)
    rt_worker_die(W.index, "writing the history: %s", strerror(errno));
  W.holds++;
  if (lk_lock_release(l, on_released, NULL) != 0)
    rt_worker_die(W.index, "lk_lock_release");
}

static void start_acquire(void) {
  lk_lock_opts_t o;
  W.cur = (int)(rt_xorshift(&W.rng) % N_NAMES);
  lk_lock_opts_init(&o);
  o.wait_ms = 30000;
  o.lease_ms = LEASE_MS;
  o.fenced = 1;
  if (lk_lock_acquire(W.l[W.cur], &o, on_acquired, NULL) != 0)
    rt_worker_die(W.index, "lk_lock_acquire");
}

static void worker_main(int index, void *arg) {
  char path[128];
  (void)arg;
  memset(&W, 0, sizeof W);
  W.index = index;
  W.rng = uv_hrtime() ^ ((uint64_t)getpid() << 20) ^ 0x2545f4914f6cdd1dULL;
  snprintf(path, sizeof path, "%s/history-%d.bin", dir, index);
  W.hist = rt_recs_create(path);
  if (W.hist == NULL)
    rt_worker_die(index, "%s: %s", path, strerror(errno));
  struct timeval tv = {5, 0};
  for (int k = 0; k < N_NAMES; k++) {
    W.side[k] = redisConnectWithTimeout("127.0.0.1", T[k].port, tv);
    if (W.side[k] == NULL || W.side[k]->err)
      rt_worker_die(index, "side connection to %d", T[k].port);
    redisSetTimeout(W.side[k], tv);
  }
  if (uv_loop_init(&W.loop) != 0)
    rt_worker_die(index, "uv_loop_init");
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.port = seed_port[index % n_seeds];
  if (lk_client_new(&W.loop, &o, &W.c) != 0)
    rt_worker_die(index, "lk_client_new");
  for (int k = 0; k < N_NAMES; k++)
    if (lk_lock_new(W.c, T[k].name, &W.l[k]) != 0)
      rt_worker_die(index, "lk_lock_new");
  start_acquire();
  uv_run(&W.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&W.loop) != 0)
    rt_worker_die(index, "uv_loop_close: handles left");
  if (rt_recs_finish(W.hist) != 0)
    rt_worker_die(index, "closing the history: %s", strerror(errno));
  for (int k = 0; k < N_NAMES; k++)
    redisFree(W.side[k]);
  fflush(stdout);
  if (W.release_errors > 0)
    _exit(WORKER_EXIT_FINDINGS);
}

/* ---- the parent --------------------------------------------------------------------------- */

TEST(eight_processes_exclude_each_other_on_names_over_three_masters) {
  cfx_t f;
  rt_worker_t w[N_WORKERS];
  char path[128];
  cfx_start_cluster(&f, NULL); /* the parent runs no client */
  for (int k = 0; k < N_NAMES; k++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "cl-stress-%d-", k);
    T[k].node = f.masters[k % 3];
    cfx_name_on(&f, T[k].node, prefix, T[k].name, sizeof T[k].name);
    /* through a local copy: gcc -O0 -Wrestrict cannot tell the two fields
     * of T[k] apart */
    char name[sizeof T[k].name];
    memcpy(name, T[k].name, sizeof name);
    snprintf(T[k].counter, sizeof T[k].counter, "{%.63s}:counter", name);
    T[k].port = rt_cluster_port(f.cl, T[k].node);
    cfx_assert_beside(&f, T[k].counter, T[k].name, T[k].node);
    free(rt_cmd_str(cfx_srv(&f, T[k].node), "SET %s 0", T[k].counter));
  }
  n_seeds = 0;
  for (int i = 0; i < rt_cluster_size(f.cl); i++)
    seed_port[n_seeds++] = rt_cluster_port(f.cl, i);
  snprintf(dir, sizeof dir, "/tmp/lk-cl-stress-XXXXXX");
  ASSERT_NOT_NULL(mkdtemp(dir));

  uint64_t t0 = uv_hrtime();
  end_ns = t0 + (uint64_t)stress_ms() * 1000000u;
  for (int i = 0; i < N_WORKERS; i++)
    ASSERT_OK(rt_worker_start(&w[i], i, worker_main, NULL));
  /* The holds end by then; what is left is closing (bounded). */
  int64_t budget = stress_ms() + rt_scaled_ms(20000);
  int left = rt_workers_wait(w, N_WORKERS, budget);
  if (left > 0) {
    rt_workers_kill_all(w, N_WORKERS);
    FAIL("%d workers still running after %" PRId64 " ms", left, budget);
  }
  double elapsed_ms = (double)(uv_hrtime() - t0) / 1e6;
  int findings = 0;
  for (int i = 0; i < N_WORKERS; i++) {
    int code = rt_worker_exit_code(&w[i]);
    if (code == WORKER_EXIT_FINDINGS)
      findings++;
    else if (code != 0)
      FAIL("worker %d exited with %d (see its output above)", i, code);
  }

  rt_recs_t h;
  rt_recs_init(&h);
  for (int i = 0; i < N_WORKERS; i++) {
    snprintf(path, sizeof path, "%s/history-%d.bin", dir, i);
    if (rt_recs_load(&h, path, 0) != 0)
      FAIL("cannot load %s", path);
    unlink(path);
  }
  rmdir(dir);
  long per_worker[N_WORKERS] = {0}, per_name[N_NAMES] = {0};
  for (size_t i = 0; i < h.n; i++) {
    ASSERT_LT(h.v[i].proc, N_WORKERS);
    ASSERT_LT(h.v[i].obj, N_NAMES);
    per_worker[h.v[i].proc]++;
    per_name[h.v[i].obj]++;
  }
  /* Everything gathered and printed before the first assertion. */
  rt_check_t ex[N_NAMES], tok[N_NAMES];
  long long counter[N_NAMES];
  for (int k = 0; k < N_NAMES; k++) {
    rt_check_exclusive(&h, (uint16_t)k, RT_OP_HOLD, &ex[k]);
    rt_check_tokens(&h, (uint16_t)k, RT_OP_HOLD, &tok[k]);
    char *v = rt_cmd_str(cfx_srv(&f, T[k].node), "GET %s", T[k].counter);
    counter[k] = v ? atoll(v) : -1;
    free(v);
    printf("%s (node %d): %ld holds, counter %lld\n", T[k].name, T[k].node, per_name[k],
           counter[k]);
    rt_check_print(stdout, &ex[k]);
    rt_check_print(stdout, &tok[k]);
  }
  printf("cluster stress: %d workers, %zu holds in %.0f ms (%.0f holds/s); %d workers saw "
         "failed releases\n",
         N_WORKERS, h.n, elapsed_ms, (double)h.n / (elapsed_ms / 1000.0), findings);
  rt_recs_free(&h);

  for (int k = 0; k < N_NAMES; k++) {
    ASSERT_EQ(ex[k].violations, 0);
    ASSERT_EQ(tok[k].violations, 0);
    ASSERT_EQ(counter[k], per_name[k]);
    ASSERT_GE(per_name[k], 10);
    ASSERT_EQ(cfx_exists(&f, T[k].node, T[k].name), 0);
  }
  for (int i = 0; i < N_WORKERS; i++)
    ASSERT_GE(per_worker[i], 10);
  ASSERT_EQ(findings, 0);
  cfx_finish(&f);
}
