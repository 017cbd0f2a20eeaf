/* The blocking API's hand-off cost (docs/blocking.md, "Costs"), against the
 * asynchronous API in the same run and process, on one server:
 *
 *   T1   one thread's sequential acquire+release pairs (wait 0, lease
 *        30000 ms) vs one async lock object's sequential pairs;
 *   T64  64 threads on 64 names vs 64 async objects on 64 names, all in
 *        flight at once on one client;
 *   wake a thread blocked in acquire, woken by a release in another
 *        process: from the release call to the acquire's return.
 *
 * The async and blocking phases alternate over --rounds rounds (default 3);
 * each phase runs --pairs pairs (default 3000; T64 runs 4 times as many).
 * One JSON line per phase and round (bench_common.h), then the ratios of
 * the medians (blocking / async) and the wake-up percentiles. */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

#define LANES 64

static const char *host = "127.0.0.1";
static int port = 6379;
static uint64_t pairs = 3000, rounds = 3, wakes = 200;

static lk_client_opts_t client_opts(void) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.host = host;
  o.port = port;
  o.client_name = "latchkey-bench";
  return o;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "blocking_handoff: %s: %s\n", what, lk_strerror(rc));
  exit(1);
}

/* ---- async ------------------------------------------------------------------ */

typedef struct {
  uv_loop_t loop;
  lk_client_t *c;
  lk_lock_t *locks[LANES];
  size_t nlanes;
  uint64_t target, started, done;
  size_t busy, open;
  lk_lock_opts_t opts;
} async_t;

static void lane_next(async_t *a, lk_lock_t *l);

static void on_rel(lk_lock_t *l, int status, void *arg) {
  async_t *a = arg;
  if (status != 0)
    die("async release", status);
  a->done++;
  lane_next(a, l);
}

static void on_acq(lk_lock_t *l, int status, void *arg) {
  int rc;
  if (status != 0)
    die("async acquire", status);
  rc = lk_lock_release(l, on_rel, arg);
  if (rc != 0)
    die("async release call", rc);
}

static void lane_next(async_t *a, lk_lock_t *l) {
  int rc;
  if (a->started >= a->target) {
    if (--a->busy == 0)
      uv_stop(&a->loop);
    return;
  }
  a->started++;
  rc = lk_lock_acquire(l, &a->opts, on_acq, a);
  if (rc != 0)
    die("async acquire call", rc);
}

static void async_phase(async_t *a, uint64_t n) {
  a->target = n;
  a->started = a->done = 0;
  a->busy = a->nlanes;
  for (size_t i = 0; i < a->nlanes; i++)
    lane_next(a, a->locks[i]);
  uv_run(&a->loop, UV_RUN_DEFAULT);
}

static void on_async_closed(lk_lock_t *l) {
  async_t *a = lk_lock_get_data(l);
  if (--a->open == 0)
    lk_client_close(a->c, NULL);
}

/* Pairs per second over n pairs on nlanes objects (a warm-up first). */
static double async_run(size_t nlanes, uint64_t n, const char *tag) {
  async_t a;
  lk_client_opts_t o = client_opts();
  char name[96];
  uint64_t t0, t1;
  int rc;
  memset(&a, 0, sizeof(a));
  uv_loop_init(&a.loop);
  lk_lock_opts_init(&a.opts);
  a.opts.lease_ms = 30000;
  if ((rc = lk_client_new(&a.loop, &o, &a.c)) != 0)
    die("lk_client_new", rc);
  a.nlanes = nlanes;
  for (size_t i = 0; i < nlanes; i++) {
    snprintf(name, sizeof(name), "lkbench:bl:%s:a:%ld:%zu", tag, (long)getpid(), i);
    if ((rc = lk_lock_new(a.c, name, &a.locks[i])) != 0)
      die("lk_lock_new", rc);
    lk_lock_set_data(a.locks[i], &a);
  }
  async_phase(&a, n / 10 + nlanes);
  t0 = uv_hrtime();
  async_phase(&a, n);
  t1 = uv_hrtime();
  a.open = nlanes;
  for (size_t i = 0; i < nlanes; i++)
    lk_lock_close(a.locks[i], on_async_closed);
  uv_run(&a.loop, UV_RUN_DEFAULT);
  uv_loop_close(&a.loop);
  return (double)a.done * 1e9 / (double)(t1 - t0);
}

/* ---- blocking --------------------------------------------------------------- */

typedef struct {
  lk_blocking_lock_t *l;
  uint64_t n;
  uv_barrier_t *start, *end;
} thread_arg_t;

static void pairs_on(lk_blocking_lock_t *l, uint64_t n) {
  int rc;
  for (uint64_t i = 0; i < n; i++) {
    if ((rc = lk_blocking_lock_try(l, 0)) != 0)
      die("blocking acquire", rc);
    if ((rc = lk_blocking_lock_release(l)) != 0)
      die("blocking release", rc);
  }
}

static void bl_thread(void *arg) {
  thread_arg_t *t = arg;
  pairs_on(t->l, t->n / 10 + 1); /* warm-up: this thread's object, the script */
  uv_barrier_wait(t->start);
  pairs_on(t->l, t->n);
  uv_barrier_wait(t->end);
}

static double blocking_run(size_t nthreads, uint64_t n, const char *tag) {
  lk_blocking_t *b;
  lk_client_opts_t o = client_opts();
  thread_arg_t args[LANES];
  uv_thread_t th[LANES];
  uv_barrier_t start, end;
  char name[96];
  uint64_t t0, t1;
  int rc;
  if ((rc = lk_blocking_new(&o, &b)) != 0)
    die("lk_blocking_new", rc);
  uv_barrier_init(&start, (unsigned)nthreads + 1);
  uv_barrier_init(&end, (unsigned)nthreads + 1);
  for (size_t i = 0; i < nthreads; i++) {
    snprintf(name, sizeof(name), "lkbench:bl:%s:b:%ld:%zu", tag, (long)getpid(), i);
    if ((rc = lk_blocking_lock_new(b, name, &args[i].l)) != 0)
      die("lk_blocking_lock_new", rc);
    args[i].n = n / nthreads;
    args[i].start = &start;
    args[i].end = &end;
    uv_thread_create(&th[i], bl_thread, &args[i]);
  }
  uv_barrier_wait(&start);
  t0 = uv_hrtime();
  uv_barrier_wait(&end);
  t1 = uv_hrtime();
  for (size_t i = 0; i < nthreads; i++)
    uv_thread_join(&th[i]);
  uv_barrier_destroy(&start);
  uv_barrier_destroy(&end);
  if ((rc = lk_blocking_close(b)) != 0)
    die("lk_blocking_close", rc);
  return (double)(n / nthreads * nthreads) * 1e9 / (double)(t1 - t0);
}

/* ---- wake-up across processes -------------------------------------------------- */

static int xread(int fd, void *p, size_t n) { return read(fd, p, n) == (ssize_t)n ? 0 : -1; }
static int xwrite(int fd, const void *p, size_t n) {
  return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* The other process: holds the lock on "h", releases on "r" and reports
 * when it called release. */
static void wake_child(int cmd, int rep, const char *name) {
  lk_blocking_t *b;
  lk_blocking_lock_t *l;
  lk_client_opts_t o = client_opts();
  char c;
  if (lk_blocking_new(&o, &b) != 0 || lk_blocking_lock_new(b, name, &l) != 0)
    _exit(1);
  while (xread(cmd, &c, 1) == 0 && c != 'q') {
    uint64_t t;
    if (c == 'h') {
      if (lk_blocking_lock_acquire(l, NULL) != 0)
        _exit(1);
      t = 0;
    } else {
      t = uv_hrtime();
      if (lk_blocking_lock_release(l) != 0)
        _exit(1);
    }
    if (xwrite(rep, &t, sizeof(t)) != 0)
      _exit(1);
  }
  lk_blocking_close(b);
  _exit(0);
}

typedef struct {
  lk_blocking_lock_t *l;
  _Atomic uint64_t acquired_ns;
} waker_t;

static void wait_thread(void *arg) {
  waker_t *w = arg;
  int rc = lk_blocking_lock_acquire(w->l, NULL);
  if (rc != 0)
    die("wake acquire", rc);
  atomic_store(&w->acquired_ns, uv_hrtime());
  /* The hold is this thread's (owners are threads): it gives it back. */
  if ((rc = lk_blocking_lock_release(w->l)) != 0)
    die("wake release", rc);
}

static void wake_run(void) {
  int cmd[2], rep[2];
  char name[96];
  pid_t pid;
  lk_blocking_t *b;
  lk_blocking_lock_t *l;
  lk_client_opts_t o = client_opts();
  uint64_t *lat = calloc(wakes, sizeof(uint64_t)), t_rel;
  int rc;
  snprintf(name, sizeof(name), "lkbench:bl:wake:%ld", (long)getpid());
  if (lat == NULL || pipe(cmd) != 0 || pipe(rep) != 0)
    exit(1);
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    close(cmd[1]);
    close(rep[0]);
    wake_child(cmd[0], rep[1], name);
  }
  close(cmd[0]);
  close(rep[1]);
  if ((rc = lk_blocking_new(&o, &b)) != 0 || (rc = lk_blocking_lock_new(b, name, &l)) != 0)
    die("wake client", rc);
  for (uint64_t i = 0; i < wakes; i++) {
    waker_t w = {l, 0};
    uv_thread_t th;
    struct timespec ts = {0, 3000000}; /* let the waiter block: 3 ms */
    if (xwrite(cmd[1], "h", 1) != 0 || xread(rep[0], &t_rel, sizeof(t_rel)) != 0)
      die("wake child", LK_ECONN);
    uv_thread_create(&th, wait_thread, &w);
    nanosleep(&ts, NULL);
    if (xwrite(cmd[1], "r", 1) != 0 || xread(rep[0], &t_rel, sizeof(t_rel)) != 0)
      die("wake child", LK_ECONN);
    uv_thread_join(&th);
    lat[i] = atomic_load(&w.acquired_ns) - t_rel;
  }
  xwrite(cmd[1], "q", 1);
  waitpid(pid, NULL, 0);
  lk_blocking_close(b);
  qsort(lat, wakes, sizeof(uint64_t), bench_cmp_u64);
  bench_json_begin("blocking_wake", "blocking", "other process", "wake_us",
                   bench_pct_us(lat, wakes, 0.5), "us");
  bench_json_num("p90_us", bench_pct_us(lat, wakes, 0.9));
  bench_json_num("p99_us", bench_pct_us(lat, wakes, 0.99));
  bench_json_int("n", (long long)wakes);
  bench_json_end();
  free(lat);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof(double), cmp_double);
  return v[n / 2];
}

static void line(const char *bench, const char *impl, const char *variant, double v) {
  bench_json_begin(bench, impl, variant, "pairs_per_s", v, "pairs/s");
  bench_json_end();
}

int main(int argc, char **argv) {
  double a1[16], b1[16], a64[16], b64[16];
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = v != NULL;
    if (strcmp(argv[i], "--host") == 0 && ok)
      host = v;
    else if (strcmp(argv[i], "--port") == 0 && ok)
      ok = bench_parse_port(v, &port) == 0;
    else if (strcmp(argv[i], "--pairs") == 0 && ok)
      ok = bench_parse_u64(v, &pairs) == 0 && pairs >= LANES;
    else if (strcmp(argv[i], "--rounds") == 0 && ok)
      ok = bench_parse_u64(v, &rounds) == 0 && rounds >= 1 && rounds <= 16;
    else if (strcmp(argv[i], "--wakes") == 0 && ok)
      ok = bench_parse_u64(v, &wakes) == 0 && wakes >= 1;
    else
      ok = 0;
    if (!ok) {
      fprintf(stderr,
              "usage: %s [--host H] [--port P] [--pairs N] [--rounds R] [--wakes K]\n",
              argv[0]);
      return 2;
    }
    i++;
  }
  signal(SIGPIPE, SIG_IGN);
  for (uint64_t r = 0; r < rounds; r++) {
    /* Alternate which goes first, so drift in the machine's load does not
     * favour one side. */
    if (r % 2 == 0) {
      a1[r] = async_run(1, pairs, "t1");
      b1[r] = blocking_run(1, pairs, "t1");
    } else {
      b1[r] = blocking_run(1, pairs, "t1");
      a1[r] = async_run(1, pairs, "t1");
    }
    line("blocking_t1", "async", "sequential", a1[r]);
    line("blocking_t1", "blocking", "sequential", b1[r]);
    if (r % 2 == 0) {
      a64[r] = async_run(LANES, 4 * pairs, "t64");
      b64[r] = blocking_run(LANES, 4 * pairs, "t64");
    } else {
      b64[r] = blocking_run(LANES, 4 * pairs, "t64");
      a64[r] = async_run(LANES, 4 * pairs, "t64");
    }
    line("blocking_t64", "async", "64 in flight", a64[r]);
    line("blocking_t64", "blocking", "64 threads", b64[r]);
  }
  {
    /* The median of each round's own ratio (its two phases ran back to
     * back, under the same load), and the ratio of the medians. */
    double r1[16], r64[16];
    for (uint64_t r = 0; r < rounds; r++) {
      r1[r] = b1[r] / a1[r];
      r64[r] = b64[r] / a64[r];
    }
    double ma1 = median(a1, rounds), mb1 = median(b1, rounds);
    double ma64 = median(a64, rounds), mb64 = median(b64, rounds);
    bench_json_begin("blocking_ratio", "blocking", "T1", "ratio", median(r1, rounds), "x");
    bench_json_num("ratio_of_medians", mb1 / ma1);
    bench_json_num("goal", 0.85);
    bench_json_end();
    bench_json_begin("blocking_ratio", "blocking", "T64", "ratio", median(r64, rounds), "x");
    bench_json_num("ratio_of_medians", mb64 / ma64);
    bench_json_num("goal", 0.7);
    bench_json_end();
  }
  wake_run();
  return 0;
}
