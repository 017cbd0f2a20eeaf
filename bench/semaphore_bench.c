/* Semaphore benchmarks: latchkey against a raw loop that sends the same
 * script sequence with no library logic (bench/README.md).
 *
 *   semaphore_bench [--rounds R] [--pairs N] [--procs W] [--permits M]
 *                   [--holds K] [--hold-us H] [--port P] [--no-pin]
 *
 * Without --port it starts its own redis-server (--save "" --appendonly no,
 * a free loopback port, a temporary directory) pinned to CPU 0 and stops it
 * by PID at the end; clients run pinned to CPU 1 (--no-pin: anywhere). Each
 * of R rounds (default 5) runs, interleaved, each in fresh processes:
 *
 * - semaphore_seq_pairs: one client, one connection, uncontended
 *   try_acquire(1) + release(1) pairs on a counting semaphore (N pairs,
 *   default 20000, after N/10 warm-up). Raw: EVALSHA semaphore/acquire and
 *   semaphore/release with the same KEYS/ARGV (request numbers included),
 *   blocking hiredis, one at a time.
 * - psem_seq_pairs: the same for the permit-expirable semaphore (acquire 1
 *   permit with a 30 s lease, release it by id): EVALSHA
 *   semaphore/psem_acquire and semaphore/psem_release.
 * - semaphore_contended: W processes (default 8) on M permits (default 4),
 *   each taking K holds (default 1000) of H us (default 200, a sleep) with
 *   waits unbounded. value = holds/s over all; wake latency = from the
 *   latest release call of any process to an acquisition that had to wait
 *   (monotonic clock, shared memory). Raw: blocking hiredis doing what the
 *   library's wait engine does: try; when busy SUBSCRIBE, try again once
 *   confirmed, then wait for a message (at most 1 s) and try again;
 *   UNSUBSCRIBE once acquired.
 *
 * stdout: one JSON object per line (medians over the rounds, with the
 * range), then a markdown summary. stderr: progress lines starting "#". */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/scripts.h"
#include "latchkey.h"

#include "bench_script.h"

#define MAX_ROUNDS 21
#define MARK_TTL "90000"
#define LEASE "30000"

typedef struct cfg_s {
  int rounds, procs, pin, port;
  int64_t permits;
  uint64_t pairs, holds;
  unsigned hold_us;
} cfg_t;

static cfg_t C = {5, 8, 1, 0, 4, 20000, 1000, 200};

/* One run's result, written by the measuring process into shared memory. */
typedef struct result_s {
  int ok;
  double per_s;       /* pairs/s or holds/s */
  double p50_us, p99_us; /* pair latency, or wake latency */
  double commands_per;   /* latchkey only; < 0 unknown */
  double waited_frac;    /* contended: share of acquisitions that waited */
} result_t;

/* Shared by the contended workers: the latest release call, and every
 * wake latency measured. */
typedef struct shared_s {
  _Atomic uint64_t last_release_ns;
  _Atomic uint64_t n_wakes;
  _Atomic uint64_t n_holds;
  uint64_t wakes[]; /* procs * holds */
} shared_t;

static void die(const char *fmt, const char *a) {
  fprintf(stderr, "semaphore_bench: ");
  fprintf(stderr, fmt, a);
  fputc('\n', stderr);
  exit(1);
}

static void pin_to(int cpu) {
  cpu_set_t set;
  if (!C.pin)
    return;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static double pct_us(uint64_t *v, size_t n, double q) {
  size_t rank;
  if (n == 0)
    return 0;
  qsort(v, n, sizeof *v, cmp_u64);
  rank = (size_t)(q * (double)n + 0.999999);
  rank = rank < 1 ? 1 : rank > n ? n : rank;
  return (double)v[rank - 1] / 1000.0;
}

static void sleep_us(unsigned us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- raw loops (blocking hiredis) ------------------------------------------------------- */

static redisContext *raw_connect(void) {
  struct timeval tv = {5, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", C.port, tv);
  if (c == NULL || c->err)
    die("connect: %s", c ? c->errstr : "out of memory");
  return c;
}

static const lk__script_t *raw_load(redisContext *c, const char *name) {
  const lk__script_t *s = lk__script_find(name);
  redisReply *r;
  if (s == NULL)
    die("script %s is not embedded", name);
  r = redisCommand(c, "SCRIPT LOAD %b", s->text, s->len);
  if (r == NULL || r->type != REDIS_REPLY_STRING || memcmp(r->str, s->sha1, 40) != 0)
    die("SCRIPT LOAD %s failed", name);
  freeReplyObject(r);
  return s;
}

typedef struct raw_sem_s {
  redisContext *c;
  const lk__script_t *acq, *rel;
  char name[64], channel[80], mark[128];
  uint64_t req;
  int psem;
  unsigned char id[16];
} raw_sem_t;

static void raw_sem_init(raw_sem_t *r, const char *name, int psem, int lane) {
  memset(r, 0, sizeof *r);
  r->c = raw_connect();
  r->psem = psem;
  r->acq = raw_load(r->c, psem ? "semaphore/psem_acquire" : "semaphore/acquire");
  r->rel = raw_load(r->c, psem ? "semaphore/psem_release" : "semaphore/release");
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->channel, sizeof r->channel, "redisson_sc:{%s}", name);
  snprintf(r->mark, sizeof r->mark, "latchkey_semaphore_req:{%s}:raw-%d-%d:1", name,
           (int)getpid(), lane);
}

/* 1 acquired, 0 busy. Exits on anything else. */
static int raw_acquire(raw_sem_t *r) {
  redisReply *rep, *own;
  int got;
  if (r->psem) {
    char zset[80];
    const char *argv[11];
    size_t lens[11];
    int i;
    snprintf(zset, sizeof zset, "{%s}:timeout", r->name);
    uv_random(NULL, NULL, r->id, 16, 0, NULL);
    argv[0] = "EVALSHA", argv[1] = r->acq->sha1, argv[2] = "3", argv[3] = r->name;
    argv[4] = zset, argv[5] = r->channel, argv[6] = "1", argv[7] = (const char *)r->id;
    argv[8] = LEASE, argv[9] = "PUBLISH", argv[10] = BENCH_TAG;
    for (i = 0; i < 11; i++)
      lens[i] = i == 7 ? 16 : strlen(argv[i]);
    rep = redisCommandArgv(r->c, 11, argv, lens);
  } else {
    char req[24];
    const char *argv[9];
    size_t lens[9];
    int i;
    snprintf(req, sizeof req, "%" PRIu64, ++r->req);
    argv[0] = "EVALSHA", argv[1] = r->acq->sha1, argv[2] = "2", argv[3] = r->name;
    argv[4] = r->mark, argv[5] = "1", argv[6] = req, argv[7] = MARK_TTL, argv[8] = BENCH_TAG;
    for (i = 0; i < 9; i++)
      lens[i] = strlen(argv[i]);
    rep = redisCommandArgv(r->c, 9, argv, lens);
  }
  if (rep == NULL)
    die("acquire: %s", r->c->errstr);
  own = bench_script_reply(rep);
  if (own->type == REDIS_REPLY_ARRAY && own->elements >= 1 &&
      own->element[0]->type == REDIS_REPLY_INTEGER && own->element[0]->integer == 1)
    got = 1;
  else if (own->type == REDIS_REPLY_INTEGER)
    got = 0;
  else
    die("acquire: %s", own->type == REDIS_REPLY_ERROR ? own->str : "unexpected reply");
  freeReplyObject(rep);
  return got;
}

static void raw_release(raw_sem_t *r) {
  redisReply *rep;
  if (r->psem) {
    char zset[80];
    const char *argv[9];
    size_t lens[9];
    int i;
    snprintf(zset, sizeof zset, "{%s}:timeout", r->name);
    argv[0] = "EVALSHA", argv[1] = r->rel->sha1, argv[2] = "3", argv[3] = r->name;
    argv[4] = zset, argv[5] = r->channel, argv[6] = (const char *)r->id, argv[7] = "PUBLISH";
    argv[8] = BENCH_TAG;
    for (i = 0; i < 9; i++)
      lens[i] = i == 6 ? 16 : strlen(argv[i]);
    rep = redisCommandArgv(r->c, 9, argv, lens);
  } else {
    char req[24], max[24];
    const char *argv[12];
    size_t lens[12];
    int i;
    snprintf(req, sizeof req, "%" PRIu64, ++r->req);
    snprintf(max, sizeof max, "%" PRId64, LK_SEMAPHORE_MAX_PERMITS);
    argv[0] = "EVALSHA", argv[1] = r->rel->sha1, argv[2] = "3", argv[3] = r->name;
    argv[4] = r->channel, argv[5] = r->mark, argv[6] = "1", argv[7] = req;
    argv[8] = MARK_TTL, argv[9] = "PUBLISH", argv[10] = max, argv[11] = BENCH_TAG;
    for (i = 0; i < 12; i++)
      lens[i] = strlen(argv[i]);
    rep = redisCommandArgv(r->c, 12, argv, lens);
  }
  if (rep == NULL || bench_script_reply(rep)->type != REDIS_REPLY_ARRAY)
    die("release: %s", rep == NULL ? r->c->errstr
                       : rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
  freeReplyObject(rep);
}

static void raw_seq(int psem, const char *name, result_t *out) {
  raw_sem_t r;
  uint64_t i, total = C.pairs + C.pairs / 10, t0 = 0, *lat = calloc(C.pairs, sizeof *lat);
  raw_sem_init(&r, name, psem, 0);
  for (i = 0; i < total; i++) {
    uint64_t s = uv_hrtime();
    if (i == C.pairs / 10)
      t0 = s;
    if (!raw_acquire(&r))
      die("%s", "raw acquire found no permit");
    raw_release(&r);
    if (i >= C.pairs / 10)
      lat[i - C.pairs / 10] = uv_hrtime() - s;
  }
  out->per_s = (double)C.pairs / ((double)(uv_hrtime() - t0) / 1e9);
  out->p50_us = pct_us(lat, C.pairs, 0.5);
  out->p99_us = pct_us(lat, C.pairs, 0.99);
  out->commands_per = 2;
  out->ok = 1;
  free(lat);
  redisFree(r.c);
}

/* Reads pushes on sub until one whose kind is `kind` (and, for messages,
 * whatever channel), waiting at most ms; 1 found, 0 timed out. */
static int sub_wait(redisContext *sub, const char *kind, int ms) {
  uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000u;
  for (;;) {
    void *reply = NULL;
    redisReply *r;
    int hit;
    if (redisReaderGetReply(sub->reader, &reply) != REDIS_OK)
      die("%s", "subscriber protocol error");
    if (reply == NULL) {
      uint64_t now = uv_hrtime();
      struct pollfd p = {sub->fd, POLLIN, 0};
      if (now >= end)
        return 0;
      if (poll(&p, 1, (int)((end - now) / 1000000u) + 1) > 0 && redisBufferRead(sub) != REDIS_OK)
        die("%s", "subscriber read failed");
      continue;
    }
    r = reply;
    hit = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
          r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, kind) == 0;
    freeReplyObject(r);
    if (hit)
      return 1;
  }
}

static void sub_send(redisContext *sub, const char *verb, const char *channel) {
  int done = 0;
  redisAppendCommand(sub, "%s %s", verb, channel);
  while (!done)
    if (redisBufferWrite(sub, &done) != REDIS_OK)
      die("%s", "subscriber write failed");
}

/* The raw contended worker: the library's wait sequence by hand. */
static void raw_worker(int lane, const char *name, shared_t *sh) {
  raw_sem_t r;
  redisContext *sub = raw_connect();
  uint64_t k;
  raw_sem_init(&r, name, 0, lane);
  for (k = 0; k < C.holds; k++) {
    int waited = 0;
    if (!raw_acquire(&r)) {
      waited = 1;
      sub_send(sub, "SUBSCRIBE", r.channel);
      sub_wait(sub, "subscribe", 5000);
      while (!raw_acquire(&r))
        sub_wait(sub, "message", 1000);
      sub_send(sub, "UNSUBSCRIBE", r.channel); /* confirmation read later */
    }
    if (waited) {
      uint64_t i = atomic_fetch_add(&sh->n_wakes, 1);
      sh->wakes[i] = uv_hrtime() - atomic_load(&sh->last_release_ns);
    }
    sleep_us(C.hold_us);
    atomic_store(&sh->last_release_ns, uv_hrtime());
    raw_release(&r);
    atomic_fetch_add(&sh->n_holds, 1);
  }
  redisFree(sub);
  redisFree(r.c);
}

/* ---- latchkey loops ---------------------------------------------------------------------- */

typedef struct lk_run_s {
  uv_loop_t loop;
  lk_client_t *c;
  lk_semaphore_t *s;
  lk_psem_t *p;
  uint64_t target, done, t0, t_start, t_call, *lat, cmds0;
  int failed, measuring;
  shared_t *sh; /* contended only */
  uint64_t waits_before;
} lk_run_t;

static lk_run_t R;

static uint64_t commands_sent(void) {
  lk_client_stats_t st;
  lk_client_get_stats(R.c, &st);
  return st.commands_sent;
}

static void lk_next(void);

static void on_client_closed(lk_client_t *c) { (void)c; }
static void on_sem_closed(lk_semaphore_t *s) {
  (void)s;
  lk_client_close(R.c, on_client_closed);
}
static void on_psem_closed(lk_psem_t *p) {
  (void)p;
  lk_client_close(R.c, on_client_closed);
}

static void lk_stop(void) {
  if (R.s != NULL)
    lk_semaphore_close(R.s, on_sem_closed);
  else
    lk_psem_close(R.p, on_psem_closed);
}

static void after_release(int status) {
  uint64_t now = uv_hrtime();
  if (status != 0) {
    fprintf(stderr, "semaphore_bench: release: %s\n", lk_err_name(status));
    R.failed = 1;
    lk_stop();
    return;
  }
  if (R.sh == NULL && R.measuring)
    R.lat[R.done] = now - R.t_call;
  if (R.sh != NULL)
    atomic_fetch_add(&R.sh->n_holds, 1);
  R.done++;
  lk_next();
}

static void on_sem_released(lk_semaphore_t *s, int status, void *arg) {
  (void)s, (void)arg;
  after_release(status);
}
static void on_psem_released(lk_psem_t *p, int status, void *arg) {
  (void)p, (void)arg;
  after_release(status);
}

static void after_acquire(int status) {
  int rc;
  if (status != 0) {
    fprintf(stderr, "semaphore_bench: acquire: %s\n", lk_err_name(status));
    R.failed = 1;
    lk_stop();
    return;
  }
  if (R.sh != NULL) {
    lk_client_stats_t st;
    lk_client_get_stats(R.c, &st);
    if (st.acquire_waits != R.waits_before) {
      uint64_t i = atomic_fetch_add(&R.sh->n_wakes, 1);
      R.sh->wakes[i] = uv_hrtime() - atomic_load(&R.sh->last_release_ns);
    }
    sleep_us(C.hold_us);
    atomic_store(&R.sh->last_release_ns, uv_hrtime());
  }
  rc = R.s != NULL ? lk_semaphore_release(R.s, 1, on_sem_released, NULL)
                   : lk_psem_release(R.p, NULL, on_psem_released, NULL);
  if (rc != 0) {
    fprintf(stderr, "semaphore_bench: release call: %s\n", lk_err_name(rc));
    R.failed = 1;
    lk_stop();
  }
}

static void on_sem_acquired(lk_semaphore_t *s, int status, void *arg) {
  (void)s, (void)arg;
  after_acquire(status);
}
static void on_psem_acquired(lk_psem_t *p, int status, void *arg) {
  (void)p, (void)arg;
  after_acquire(status);
}

static void lk_next(void) {
  int rc;
  if (R.sh == NULL && !R.measuring && R.done == R.target) {
    /* warm-up over */
    R.measuring = 1;
    R.done = 0;
    R.target = C.pairs;
    R.t_start = uv_hrtime();
    R.cmds0 = commands_sent();
  }
  if (R.done == R.target) {
    R.t0 = uv_hrtime() - R.t_start;
    R.cmds0 = commands_sent() - R.cmds0;
    lk_stop();
    return;
  }
  R.t_call = uv_hrtime();
  if (R.sh != NULL) {
    lk_client_stats_t st;
    lk_client_get_stats(R.c, &st);
    R.waits_before = st.acquire_waits;
  }
  if (R.s != NULL) {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.wait_ms = R.sh != NULL ? LK_WAIT_FOREVER : 0;
    rc = lk_semaphore_acquire(R.s, &o, on_sem_acquired, NULL);
  } else {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    o.lease_ms = 30000;
    rc = lk_psem_acquire(R.p, &o, on_psem_acquired, NULL);
  }
  if (rc != 0) {
    fprintf(stderr, "semaphore_bench: acquire call: %s\n", lk_err_name(rc));
    R.failed = 1;
    lk_stop();
  }
}

/* Runs one latchkey loop: sequential pairs (sh NULL) or one contended
 * worker's holds. */
static void lk_loop(int psem, const char *name, shared_t *sh, result_t *out) {
  lk_client_opts_t o;
  memset(&R, 0, sizeof R);
  R.sh = sh;
  uv_loop_init(&R.loop);
  lk_client_opts_init(&o);
  o.port = C.port;
  o.client_name = "latchkey-bench";
  if (lk_client_new(&R.loop, &o, &R.c) != 0)
    die("%s", "lk_client_new failed");
  if (psem ? lk_psem_new(R.c, name, &R.p) : lk_semaphore_new(R.c, name, &R.s))
    die("%s", "new failed");
  if (sh == NULL) {
    R.target = C.pairs / 10;
    R.lat = calloc(C.pairs, sizeof *R.lat);
    R.measuring = R.target == 0;
    if (R.measuring) {
      R.target = C.pairs;
      R.t_start = uv_hrtime();
    }
  } else {
    R.target = C.holds;
    R.measuring = 1;
    R.t_start = uv_hrtime();
    R.cmds0 = 0;
  }
  lk_next();
  uv_run(&R.loop, UV_RUN_DEFAULT);
  uv_loop_close(&R.loop);
  if (R.failed)
    exit(1);
  if (sh != NULL)
    return;
  out->per_s = (double)C.pairs / ((double)R.t0 / 1e9);
  out->p50_us = pct_us(R.lat, C.pairs, 0.5);
  out->p99_us = pct_us(R.lat, C.pairs, 0.99);
  out->commands_per = (double)R.cmds0 / (double)C.pairs;
  out->ok = 1;
  free(R.lat);
}

/* ---- runs -------------------------------------------------------------------------------- */

static void *shared_map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    die("%s", "mmap failed");
  memset(p, 0, bytes);
  return p;
}

static int wait_child(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void flush_db(void) {
  redisContext *c = raw_connect();
  redisReply *r = redisCommand(c, "FLUSHALL");
  if (r)
    freeReplyObject(r);
  redisFree(c);
}

static void set_permits(const char *name, int64_t n) {
  redisContext *c = raw_connect();
  redisReply *r = redisCommand(c, "SET %s %lld", name, (long long)n);
  if (r)
    freeReplyObject(r);
  redisFree(c);
}

/* kind: 0 counting, 1 psem. Sequential pairs in one pinned child. */
static result_t run_seq(int raw, int kind, int round) {
  result_t *res = shared_map(sizeof *res);
  result_t out;
  char name[64];
  pid_t pid;
  snprintf(name, sizeof name, "bench:%s:%d:%d", kind ? "psem" : "sem", raw, round);
  set_permits(name, 1000000);
  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    pin_to(1);
    if (raw)
      raw_seq(kind, name, res);
    else
      lk_loop(kind, name, NULL, res);
    _exit(res->ok ? 0 : 1);
  }
  if (pid < 0 || !wait_child(pid) || !res->ok)
    die("%s", "a sequential run failed");
  out = *res;
  munmap(res, sizeof *res);
  return out;
}

static result_t run_contended(int raw, int round) {
  size_t n = (size_t)C.procs * C.holds;
  size_t bytes = sizeof(shared_t) + n * sizeof(uint64_t);
  shared_t *sh = shared_map(bytes);
  result_t out;
  char name[64];
  pid_t pids[64];
  uint64_t t0;
  int i, ok = 1;
  memset(&out, 0, sizeof out);
  snprintf(name, sizeof name, "bench:contended:%d:%d", raw, round);
  set_permits(name, C.permits);
  fflush(NULL);
  t0 = uv_hrtime();
  for (i = 0; i < C.procs; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      pin_to(1);
      if (raw)
        raw_worker(i, name, sh);
      else
        lk_loop(0, name, sh, NULL);
      _exit(0);
    }
  }
  for (i = 0; i < C.procs; i++)
    ok &= pids[i] > 0 && wait_child(pids[i]);
  if (!ok || atomic_load(&sh->n_holds) != n)
    die("%s", "a contended run failed");
  out.per_s = (double)n / ((double)(uv_hrtime() - t0) / 1e9);
  out.p50_us = pct_us(sh->wakes, atomic_load(&sh->n_wakes), 0.5);
  out.p99_us = pct_us(sh->wakes, atomic_load(&sh->n_wakes), 0.99);
  out.waited_frac = (double)atomic_load(&sh->n_wakes) / (double)n;
  out.commands_per = -1;
  out.ok = 1;
  munmap(sh, bytes);
  return out;
}

/* ---- server ------------------------------------------------------------------------------ */

static pid_t server_pid;
static char server_dir[64];

static void stop_server(void) {
  char cmd[128];
  if (server_pid > 0) {
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
  if (server_dir[0]) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", server_dir);
    if (system(cmd) != 0)
      fprintf(stderr, "# could not remove %s\n", server_dir);
  }
}

static void start_server(void) {
  int attempt;
  snprintf(server_dir, sizeof server_dir, "/tmp/lk-sembench-XXXXXX");
  if (mkdtemp(server_dir) == NULL)
    die("%s", "mkdtemp failed");
  atexit(stop_server);
  for (attempt = 0; attempt < 20; attempt++) {
    char port[16];
    int i;
    unsigned char r[2];
    uv_random(NULL, NULL, r, 2, 0, NULL);
    C.port = 20000 + (r[0] << 8 | r[1]) % 30000;
    snprintf(port, sizeof port, "%d", C.port);
    server_pid = fork();
    if (server_pid == 0) {
      pin_to(0);
      execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", server_dir, "--logfile", "redis.log", (char *)NULL);
      _exit(127);
    }
    for (i = 0; i < 100; i++) {
      struct timeval tv = {0, 200000};
      redisContext *c = redisConnectWithTimeout("127.0.0.1", C.port, tv);
      int up = c != NULL && !c->err;
      if (c)
        redisFree(c);
      if (up)
        return;
      if (waitpid(server_pid, NULL, WNOHANG) == server_pid)
        break;
      sleep_us(20000);
    }
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
  die("%s", "could not start redis-server");
}

/* ---- report ------------------------------------------------------------------------------ */

static double median(double *v, int n) {
  int i, j;
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct series_s {
  double per_s[MAX_ROUNDS], p50[MAX_ROUNDS], p99[MAX_ROUNDS], cmds[MAX_ROUNDS],
      waited[MAX_ROUNDS];
} series_t;

typedef struct med_s {
  double per_s, lo, hi, p50, p99, cmds, waited;
} med_t;

static med_t summarize(series_t *s) {
  med_t m;
  double tmp[MAX_ROUNDS];
  memcpy(tmp, s->per_s, sizeof tmp);
  m.per_s = median(tmp, C.rounds);
  m.lo = tmp[0];
  m.hi = tmp[C.rounds - 1];
  m.p50 = median(s->p50, C.rounds);
  m.p99 = median(s->p99, C.rounds);
  m.cmds = median(s->cmds, C.rounds);
  m.waited = median(s->waited, C.rounds);
  return m;
}

static void record(series_t *s, int r, result_t x) {
  s->per_s[r] = x.per_s;
  s->p50[r] = x.p50_us;
  s->p99[r] = x.p99_us;
  s->cmds[r] = x.commands_per;
  s->waited[r] = x.waited_frac;
}

static void print_pair_lines(const char *bench, med_t lk, med_t raw) {
  printf("{\"bench\":\"%s\",\"impl\":\"latchkey\",\"metric\":\"pairs_per_s\",\"value\":%.0f,"
         "\"unit\":\"pairs/s\",\"limit\":%.0f,\"ratio\":%.3f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
         "\"min\":%.0f,\"max\":%.0f,\"connections\":1,\"commands_per_pair\":%.3f,"
         "\"rounds\":%d,\"pinned\":%s}\n",
         bench, lk.per_s, raw.per_s, lk.per_s / raw.per_s, lk.p50, lk.p99, lk.lo, lk.hi, lk.cmds,
         C.rounds, C.pin ? "true" : "false");
  printf("{\"bench\":\"%s\",\"impl\":\"raw\",\"metric\":\"pairs_per_s\",\"value\":%.0f,"
         "\"unit\":\"pairs/s\",\"p50_us\":%.1f,\"p99_us\":%.1f,\"min\":%.0f,\"max\":%.0f,"
         "\"connections\":1,\"commands_per_pair\":2.000,\"rounds\":%d,\"pinned\":%s}\n",
         bench, raw.per_s, raw.p50, raw.p99, raw.lo, raw.hi, C.rounds, C.pin ? "true" : "false");
}

static void print_contended_lines(med_t lk, med_t raw) {
  printf("{\"bench\":\"semaphore_contended\",\"impl\":\"latchkey\",\"metric\":\"holds_per_s\","
         "\"value\":%.0f,\"unit\":\"holds/s\",\"limit\":%.0f,\"ratio\":%.3f,\"min\":%.0f,"
         "\"max\":%.0f,\"procs\":%d,\"permits\":%" PRId64 ",\"hold_us\":%u,\"holds_per_proc\":%"
         PRIu64 ",\"waited\":%.3f,\"rounds\":%d,\"pinned\":%s}\n",
         lk.per_s, raw.per_s, lk.per_s / raw.per_s, lk.lo, lk.hi, C.procs, C.permits, C.hold_us,
         C.holds, lk.waited, C.rounds, C.pin ? "true" : "false");
  printf("{\"bench\":\"semaphore_contended\",\"impl\":\"latchkey\",\"metric\":\"wake_p50_us\","
         "\"value\":%.1f,\"unit\":\"us\",\"limit\":%.1f,\"ratio\":%.3f,\"p99_us\":%.1f,"
         "\"limit_p99_us\":%.1f,\"procs\":%d,\"permits\":%" PRId64 ",\"rounds\":%d,"
         "\"pinned\":%s}\n",
         lk.p50, raw.p50, raw.p50 > 0 ? lk.p50 / raw.p50 : 0.0, lk.p99, raw.p99, C.procs,
         C.permits, C.rounds, C.pin ? "true" : "false");
  printf("{\"bench\":\"semaphore_contended\",\"impl\":\"raw\",\"metric\":\"holds_per_s\","
         "\"value\":%.0f,\"unit\":\"holds/s\",\"min\":%.0f,\"max\":%.0f,\"wake_p50_us\":%.1f,"
         "\"wake_p99_us\":%.1f,\"waited\":%.3f,\"procs\":%d,\"permits\":%" PRId64
         ",\"rounds\":%d,\"pinned\":%s}\n",
         raw.per_s, raw.lo, raw.hi, raw.p50, raw.p99, raw.waited, C.procs, C.permits, C.rounds,
         C.pin ? "true" : "false");
}

static int parse_args(int argc, char **argv) {
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--no-pin") == 0) {
      C.pin = 0;
      continue;
    }
    if (v == NULL)
      return -1;
    if (strcmp(a, "--rounds") == 0)
      C.rounds = atoi(v);
    else if (strcmp(a, "--pairs") == 0)
      C.pairs = strtoull(v, NULL, 10);
    else if (strcmp(a, "--procs") == 0)
      C.procs = atoi(v);
    else if (strcmp(a, "--permits") == 0)
      C.permits = atoll(v);
    else if (strcmp(a, "--holds") == 0)
      C.holds = strtoull(v, NULL, 10);
    else if (strcmp(a, "--hold-us") == 0)
      C.hold_us = (unsigned)atoi(v);
    else if (strcmp(a, "--port") == 0)
      C.port = atoi(v);
    else
      return -1;
    i++;
  }
  if (C.rounds < 1 || C.rounds > MAX_ROUNDS || C.pairs < 10 || C.procs < 2 || C.procs > 64 ||
      C.permits < 1 || C.holds < 1 || C.port < 0 || C.port > 65535)
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  series_t sem_lk, sem_raw, ps_lk, ps_raw, ct_lk, ct_raw;
  med_t m[6];
  int r;
  if (parse_args(argc, argv) != 0) {
    fprintf(stderr, "usage: %s [--rounds R] [--pairs N] [--procs W] [--permits M] [--holds K] "
                    "[--hold-us H] [--port P] [--no-pin]\n",
            argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if (C.port == 0)
    start_server();
  fprintf(stderr, "# redis-server on 127.0.0.1:%d%s; clients %s\n", C.port,
          server_pid ? (C.pin ? " (ours, CPU 0)" : " (ours)") : " (given)",
          C.pin ? "on CPU 1" : "unpinned");
  for (r = 0; r < C.rounds; r++) {
    flush_db();
    record(&sem_raw, r, run_seq(1, 0, r));
    record(&sem_lk, r, run_seq(0, 0, r));
    record(&ps_raw, r, run_seq(1, 1, r));
    record(&ps_lk, r, run_seq(0, 1, r));
    record(&ct_raw, r, run_contended(1, r));
    record(&ct_lk, r, run_contended(0, r));
    fprintf(stderr,
            "# round %d/%d: seq raw %.0f latchkey %.0f pairs/s; psem raw %.0f latchkey %.0f; "
            "contended raw %.0f latchkey %.0f holds/s, wake p50 raw %.0f latchkey %.0f us\n",
            r + 1, C.rounds, sem_raw.per_s[r], sem_lk.per_s[r], ps_raw.per_s[r], ps_lk.per_s[r],
            ct_raw.per_s[r], ct_lk.per_s[r], ct_raw.p50[r], ct_lk.p50[r]);
  }
  m[0] = summarize(&sem_lk), m[1] = summarize(&sem_raw);
  m[2] = summarize(&ps_lk), m[3] = summarize(&ps_raw);
  m[4] = summarize(&ct_lk), m[5] = summarize(&ct_raw);
  print_pair_lines("semaphore_seq_pairs", m[0], m[1]);
  print_pair_lines("psem_seq_pairs", m[2], m[3]);
  print_contended_lines(m[4], m[5]);
  printf("\n## latchkey semaphore benchmarks: medians of %d interleaved rounds\n\n", C.rounds);
  printf("| run | latchkey | raw loop (limit) | ratio | latchkey p50 / p99 us | raw p50 / p99 us |\n");
  printf("|---|---|---|---|---|---|\n");
  printf("| counting, sequential pairs | %.0f pairs/s | %.0f | %.2f | %.1f / %.1f | %.1f / %.1f |\n",
         m[0].per_s, m[1].per_s, m[0].per_s / m[1].per_s, m[0].p50, m[0].p99, m[1].p50, m[1].p99);
  printf("| expirable, sequential pairs | %.0f pairs/s | %.0f | %.2f | %.1f / %.1f | %.1f / %.1f |\n",
         m[2].per_s, m[3].per_s, m[2].per_s / m[3].per_s, m[2].p50, m[2].p99, m[3].p50, m[3].p99);
  printf("| %d processes on %" PRId64 " permits, %u us holds | %.0f holds/s | %.0f | %.2f | "
         "wake %.0f / %.0f | wake %.0f / %.0f |\n",
         C.procs, C.permits, C.hold_us, m[4].per_s, m[5].per_s, m[4].per_s / m[5].per_s, m[4].p50,
         m[4].p99, m[5].p50, m[5].p99);
  printf("\nlatchkey commands per pair: %.3f counting, %.3f expirable. Contended: %.0f%% of "
         "latchkey's and %.0f%% of the raw loop's acquisitions waited.\n",
         m[0].cmds, m[2].cmds, 100 * m[4].waited, 100 * m[5].waited);
  return 0;
}
