/* fair_handoff: N processes (default 8) contending for ONE fair lock.
 *
 *   fair_handoff [--host H] [--port P] [--procs N] [--seconds S] [--warmup S]
 *                [--rounds R] [--hold-us U] [--no-pin]
 *
 * Each worker process (forked, own loop, own client) loops: acquire (wait
 * 60 s) -> hold U us (default 0) -> release -> acquire again. Two
 * implementations run in interleaved rounds on the same server:
 *
 *   latchkey  lk_fair_t objects (the public API);
 *   raw       the limit: the same script sequence on latchkey's own
 *             connection layer with no fair-lock object in between: EVALSHA
 *             fair/acquire (KEYS name, queue, deadlines, latchkey's waiters;
 *             ARGV 30000, owner, 0, 10000, "wait", 0, 300000) until granted,
 *             waiting between attempts for
 *             a message on the worker's channel (subscribed once, through
 *             the core's pub/sub) or the script's hint, then EVALSHA
 *             fair/release (KEYS name, queue, deadlines, channel base,
 *             latchkey's waiters; ARGV 30000, owner, PUBLISH, -1, 1).
 *
 * Every acquisition is logged in shared memory: t_call (acquire called),
 * t_queued (the server first reported it queued; 0 if granted at once),
 * t_acq (grant reply), t_rel (release called), t_done (release reply), all
 * uv_hrtime (CLOCK_MONOTONIC: one clock for every process). Over the
 * measured window the parent reports:
 *   transfers_per_s      acquisitions whose owner differs from the previous one's
 *   handoff_p50/p99_us   next holder's grant reply - previous release reply
 *                        (owner changes only)
 *   rtt_p50_us           PING round trip from a client placed like the workers
 *   order_violations     acquisitions granted while a waiter that was already
 *                        queued (its queued reply seen) before this acquire
 *                        was even called still waited: 0 for strict FIFO
 *                        (no false positives: the times are one clock)
 *   mutex_violations     a hold [t_acq, t_rel] starting inside another's
 *   top_level_per_acq    commands the workers sent (their own counters:
 *                        attempts, releases, SUBSCRIBEs, heartbeats)
 *   inner_per_acq        commands run inside scripts (INFO commandstats,
 *                        every command but the top-level kinds)
 * One JSON object per line (medians over the rounds), then a markdown table.
 * Pinning (default): workers and the RTT probe on CPU 1; run redis-server
 * pinned to CPU 0 (taskset -c 0). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/internal.h"
#include "core/pubsub.h"
#include "latchkey.h"

#define MAX_PROCS 16
#define MAX_RECS 100000 /* per worker */
#define MAX_ROUNDS 15
#define WAITER_TIMEOUT "10000"

enum { IMPL_RAW = 0, IMPL_LK = 1 };
static const char *const impl_names[] = {"raw", "latchkey"};

typedef struct {
  uint64_t t_call, t_queued, t_acq, t_rel, t_done;
  uint64_t cmds; /* the worker's commands_sent after this acquisition's release */
  uint32_t owner, pad;
} rec_t;

typedef struct {
  volatile int stop;
  volatile uint64_t n[MAX_PROCS];
  volatile int failed;
} shared_t;

typedef struct {
  const char *host;
  int port, procs, rounds, pin, hold_us;
  double seconds, warmup;
} args_t;

static args_t A;
static shared_t *S;
static rec_t *RECS; /* MAX_PROCS * MAX_RECS */

/* ---- the worker ---- */

typedef struct {
  int index, impl;
  uv_loop_t loop;
  lk_client_t *c;
  char name[64], queue[96], timeouts[96], waiters[96], base[96], channel[256], owner[128];
  rec_t cur;
  /* latchkey */
  lk_fair_t *f;
  /* raw */
  lk__sub_t sub;
  uv_timer_t wait_timer;
  int subscribed, waiting, in_flight, woken;
  const lk__script_t *s_acq, *s_rel;
} worker_t;

static worker_t W;

static void worker_fail(const char *what, int status) {
  fprintf(stderr, "fair_handoff worker %d (%s): %s: %s\n", W.index, impl_names[W.impl], what,
          status ? lk_err_name(status) : "unexpected reply");
  S->failed = 1;
  _exit(3);
}

static uint64_t cmds_sent(void) {
  lk_client_stats_t st;
  lk_client_get_stats(W.c, &st);
  return st.commands_sent;
}

static void hold(void) {
  if (A.hold_us > 0) {
    struct timespec ts = {0, (long)A.hold_us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

static void record_done(void) {
  uint64_t n = S->n[W.index];
  W.cur.t_done = uv_hrtime();
  W.cur.cmds = cmds_sent();
  W.cur.owner = (uint32_t)W.index;
  if (n < MAX_RECS) {
    RECS[(size_t)W.index * MAX_RECS + n] = W.cur;
    S->n[W.index] = n + 1;
  }
}

/* -- latchkey -- */

static void lk_next(void);

static void lk_on_released(lk_fair_t *f, int status, void *arg) {
  (void)f;
  (void)arg;
  if (status != 0)
    worker_fail("release", status);
  record_done();
  lk_next();
}

static void lk_on_acquired(lk_fair_t *f, int status, void *arg) {
  int rc;
  (void)arg;
  if (status != 0)
    worker_fail("acquire", status);
  W.cur.t_acq = uv_hrtime();
  hold();
  W.cur.t_rel = uv_hrtime();
  if ((rc = lk_fair_release(f, lk_on_released, NULL)) != 0)
    worker_fail("lk_fair_release", rc);
}

static void lk_on_queued(lk_fair_t *f, int status, void *arg) {
  (void)f;
  (void)status;
  (void)arg;
  if (W.cur.t_queued == 0)
    W.cur.t_queued = uv_hrtime();
}

static void lk_on_closed(lk_fair_t *f) {
  (void)f;
  lk_client_close(W.c, NULL);
}

static void lk_next(void) {
  lk_fair_opts_t o;
  int rc;
  if (S->stop) { /* checked between acquisitions: every worker gets its turn */
    lk_fair_close(W.f, lk_on_closed);
    return;
  }
  lk_fair_opts_init(&o);
  o.wait_ms = 60000;
  o.lease_ms = 30000;
  memset(&W.cur, 0, sizeof(W.cur));
  W.cur.t_call = uv_hrtime();
  if ((rc = lk_fair_acquire(W.f, &o, lk_on_acquired, NULL)) != 0)
    worker_fail("lk_fair_acquire", rc);
}

/* -- raw: the protocol on the core, nothing else -- */

static void raw_attempt(void);

static void raw_stop(void) {
  uv_close((uv_handle_t *)&W.wait_timer, NULL);
  lk__sub_stop(&W.sub);
  lk_client_close(W.c, NULL);
}

static void raw_next(void) {
  if (S->stop) {
    raw_stop();
    return;
  }
  memset(&W.cur, 0, sizeof(W.cur));
  W.cur.t_call = uv_hrtime();
  raw_attempt();
}

static void raw_on_released(void *data, int status, redisReply *r) {
  (void)data;
  if (status != 0 || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
    worker_fail("release", status);
  record_done();
  raw_next();
}

static void raw_release(void) {
  const char *argv[10] = {W.name,  W.queue,   W.timeouts, W.base, W.waiters,
                          "30000", W.owner, "PUBLISH",  "-1",   "1"};
  int err = 0;
  if (lk__script_call(W.c, W.s_rel, 5, 5, argv, NULL, raw_on_released, NULL, &err) == NULL)
    worker_fail("send release", err);
}

static void raw_on_wait_timer(uv_timer_t *t) {
  (void)t;
  W.waiting = 0;
  raw_attempt();
}

static void raw_on_attempt(void *data, int status, redisReply *r) {
  long long hint;
  (void)data;
  W.in_flight = 0;
  if (status != 0 || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
    worker_fail("acquire", status);
  if (r->element[0]->integer == 0) {
    W.cur.t_acq = uv_hrtime();
    hold();
    W.cur.t_rel = uv_hrtime();
    raw_release();
    return;
  }
  if (W.cur.t_queued == 0)
    W.cur.t_queued = uv_hrtime();
  if (W.woken) { /* a message came while the attempt was out */
    W.woken = 0;
    raw_attempt();
    return;
  }
  hint = r->element[1]->integer;
  if (hint < 0 || hint > 1000)
    hint = 1000; /* min(refresh = timeout / 3, max re-poll) */
  W.waiting = 1;
  uv_timer_start(&W.wait_timer, raw_on_wait_timer, (uint64_t)hint, 0);
}

static void raw_attempt(void) {
  const char *argv[11] = {W.name, W.queue, W.timeouts, W.waiters, "30000", W.owner,
                          "0",    WAITER_TIMEOUT, "wait", "0", "300000"};
  int err = 0;
  W.woken = 0;
  W.in_flight = 1;
  if (lk__script_call(W.c, W.s_acq, 4, 7, argv, NULL, raw_on_attempt, NULL, &err) == NULL)
    worker_fail("send acquire", err);
}

static void raw_on_sub(lk__sub_t *s, int event, int status, const char *msg, size_t len) {
  (void)s;
  (void)msg;
  (void)len;
  if (event == LK__SUB_POKE && status == 0 && !W.subscribed) {
    W.subscribed = 1;
    raw_next(); /* subscribed once, for good: start */
    return;
  }
  if (event != LK__SUB_MESSAGE)
    return;
  if (W.in_flight) {
    W.woken = 1;
  } else if (W.waiting) {
    W.waiting = 0;
    uv_timer_stop(&W.wait_timer);
    raw_attempt();
  }
}

/* -- common -- */

__attribute__((noreturn)) static void worker_main(int index, int impl, const char *lock,
                                                  pid_t parent) {
  lk_client_opts_t o;
  int rc;
  memset(&W, 0, sizeof(W));
  W.index = index;
  W.impl = impl;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(5);
  snprintf(W.name, sizeof(W.name), "%s", lock);
  snprintf(W.queue, sizeof(W.queue), "redisson_lock_queue:{%s}", lock);
  snprintf(W.timeouts, sizeof(W.timeouts), "redisson_lock_timeout:{%s}", lock);
  snprintf(W.waiters, sizeof(W.waiters), "latchkey_fair_waiters:{%s}", lock);
  snprintf(W.base, sizeof(W.base), "redisson_lock__channel:{%s}", lock);
  if (uv_loop_init(&W.loop) != 0)
    worker_fail("uv_loop_init", 0);
  lk_client_opts_init(&o);
  o.host = A.host;
  o.port = A.port;
  if ((rc = lk_client_new(&W.loop, &o, &W.c)) != 0)
    worker_fail("lk_client_new", rc);
  if (impl == IMPL_LK) {
    if ((rc = lk_fair_new(W.c, lock, &W.f)) != 0)
      worker_fail("lk_fair_new", rc);
    lk_fair_set_queue_cb(W.f, lk_on_queued, NULL);
    lk_next();
  } else {
    snprintf(W.owner, sizeof(W.owner), "%s:%d", lk_client_id(W.c), index + 1);
    snprintf(W.channel, sizeof(W.channel), "%s:%s", W.base, W.owner);
    W.s_acq = lk__script_find("fair/acquire");
    W.s_rel = lk__script_find("fair/release");
    uv_timer_init(&W.loop, &W.wait_timer);
    if ((rc = lk__sub_start(W.c, &W.sub, W.channel, strlen(W.channel), raw_on_sub)) != 0)
      worker_fail("subscribe", rc);
  }
  uv_run(&W.loop, UV_RUN_DEFAULT);
  uv_loop_close(&W.loop);
  _exit(0);
}

/* ---- the parent ---- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_rec(const void *a, const void *b) {
  const rec_t *x = a, *y = b;
  return x->t_acq < y->t_acq ? -1 : x->t_acq > y->t_acq;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double q) {
  size_t k;
  if (n == 0)
    return 0;
  k = (size_t)(q * (double)n + 0.999999);
  if (k < 1)
    k = 1;
  if (k > n)
    k = n;
  return (double)v[k - 1] / 1000.0;
}

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    fprintf(stderr, "fair_handoff: cannot pin to CPU %d\n", cpu);
}

static redisContext *side(void) {
  struct timeval tv = {5, 0};
  redisContext *c = redisConnectWithTimeout(A.host, A.port, tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "fair_handoff: cannot connect to %s:%d\n", A.host, A.port);
    exit(1);
  }
  return c;
}

/* Calls of every command but the top-level kinds: what scripts ran. */
static long long inner_calls(redisContext *c) {
  static const char *const top[] = {"evalsha", "eval", "subscribe", "unsubscribe", "ping",
                                    "info", "client", "script", "auth", "select", "hello",
                                    "flushall", "command", "config"};
  redisReply *r = redisCommand(c, "INFO commandstats");
  long long total = 0;
  char *p;
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    fprintf(stderr, "fair_handoff: INFO commandstats failed\n");
    exit(1);
  }
  for (p = strstr(r->str, "cmdstat_"); p != NULL; p = strstr(p + 1, "cmdstat_")) {
    char name[64];
    size_t i, n = strcspn(p + 8, ":");
    int skip = 0;
    const char *calls = strstr(p, "calls=");
    if (n >= sizeof(name) || calls == NULL)
      continue;
    memcpy(name, p + 8, n);
    name[n] = '\0';
    for (i = 0; i < sizeof(top) / sizeof(top[0]); i++)
      skip |= strcmp(name, top[i]) == 0;
    if (!skip)
      total += atoll(calls + 6);
  }
  freeReplyObject(r);
  return total;
}

static double rtt_p50_us(void) {
  enum { N = 2000 };
  int64_t v[N];
  redisContext *c = side();
  int i;
  for (i = 0; i < N; i++) {
    uint64_t t = uv_hrtime();
    redisReply *r = redisCommand(c, "PING");
    v[i] = (int64_t)(uv_hrtime() - t);
    if (r == NULL) {
      fprintf(stderr, "fair_handoff: PING failed\n");
      exit(1);
    }
    freeReplyObject(r);
  }
  redisFree(c);
  qsort(v, N, sizeof(v[0]), cmp_i64);
  return pct(v, N, 0.5);
}

typedef struct {
  double transfers_per_s, acq_per_s, handoff_p50, handoff_p99, rtt_p50;
  double top_per_acq, inner_per_acq, evalsha_per_acq;
  long long order_violations, mutex_violations, acquisitions;
} result_t;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static long long cmdstat(redisContext *c, const char *cmd) {
  redisReply *r = redisCommand(c, "INFO commandstats");
  char needle[64];
  const char *p;
  long long n = 0;
  snprintf(needle, sizeof(needle), "cmdstat_%s:calls=", cmd);
  if (r != NULL && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, needle)) != NULL)
    n = atoll(p + strlen(needle));
  if (r != NULL)
    freeReplyObject(r);
  return n;
}

static int run_round(int impl, int round, result_t *res) {
  pid_t pids[MAX_PROCS];
  char lock[64];
  redisContext *c = side();
  uint64_t t_start, t_end;
  long long inner0, inner1, evalsha0, evalsha1;
  size_t total = 0, i, k;
  rec_t *all;
  int p, failed = 0;
  pid_t parent = getpid();
  int64_t *handoffs;
  size_t nh = 0;
  uint64_t cmds_sum = 0, acq_for_cmds = 0;
  double *suffix_min_q;
  snprintf(lock, sizeof(lock), "fair-handoff-%d-%s-%d", (int)getpid(), impl_names[impl],
           round);
  memset((void *)S, 0, sizeof(*S));
  for (p = 0; p < A.procs; p++) {
    fflush(NULL);
    pids[p] = fork();
    if (pids[p] < 0) {
      perror("fork");
      exit(1);
    }
    if (pids[p] == 0)
      worker_main(p, impl, lock, parent);
  }
  sleep_s(A.warmup);
  inner0 = inner_calls(c);
  evalsha0 = cmdstat(c, "evalsha");
  t_start = uv_hrtime();
  sleep_s(A.seconds);
  t_end = uv_hrtime();
  inner1 = inner_calls(c);
  evalsha1 = cmdstat(c, "evalsha");
  S->stop = 1;
  for (p = 0; p < A.procs; p++) {
    int st = 0;
    if (waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "fair_handoff: worker %d ended with status 0x%x\n", p, st);
      failed = 1;
    }
  }
  redisFree(c);
  if (failed || S->failed)
    return -1;

  /* the measured window: acquisitions granted inside it */
  for (p = 0; p < A.procs; p++)
    total += S->n[p];
  all = malloc(sizeof(rec_t) * (total ? total : 1));
  k = 0;
  for (p = 0; p < A.procs; p++) {
    size_t n = S->n[p], first = SIZE_MAX, last = 0;
    for (i = 0; i < n; i++) {
      rec_t *r = &RECS[(size_t)p * MAX_RECS + i];
      all[k++] = *r;
      if (r->t_acq >= t_start && r->t_acq < t_end) {
        if (first == SIZE_MAX)
          first = i;
        last = i;
      }
    }
    if (first != SIZE_MAX && last > first) {
      cmds_sum += RECS[(size_t)p * MAX_RECS + last].cmds - RECS[(size_t)p * MAX_RECS + first].cmds;
      acq_for_cmds += last - first;
    }
  }
  qsort(all, total, sizeof(rec_t), cmp_rec);
  memset(res, 0, sizeof(*res));
  handoffs = malloc(sizeof(int64_t) * (total ? total : 1));
  suffix_min_q = malloc(sizeof(double) * (total + 1));
  /* order: suffix minimum of t_queued over later grants */
  suffix_min_q[total] = 1e300;
  for (i = total; i-- > 0;) {
    double q = all[i].t_queued ? (double)all[i].t_queued : 1e300;
    suffix_min_q[i] = q < suffix_min_q[i + 1] ? q : suffix_min_q[i + 1];
  }
  for (i = 0; i < total; i++) {
    int in = all[i].t_acq >= t_start && all[i].t_acq < t_end;
    if (!in)
      continue;
    res->acquisitions++;
    if (suffix_min_q[i + 1] < (double)all[i].t_call)
      res->order_violations++;
    if (i > 0 && all[i].t_acq < all[i - 1].t_rel && all[i].owner != all[i - 1].owner)
      res->mutex_violations++;
    if (i > 0 && all[i].owner != all[i - 1].owner) {
      res->transfers_per_s += 1;
      handoffs[nh++] = (int64_t)all[i].t_acq - (int64_t)all[i - 1].t_done;
    }
  }
  qsort(handoffs, nh, sizeof(int64_t), cmp_i64);
  {
    double secs = (double)(t_end - t_start) / 1e9;
    res->transfers_per_s /= secs;
    res->acq_per_s = (double)res->acquisitions / secs;
  }
  res->handoff_p50 = pct(handoffs, nh, 0.5);
  res->handoff_p99 = pct(handoffs, nh, 0.99);
  res->top_per_acq = acq_for_cmds ? (double)cmds_sum / (double)acq_for_cmds : 0;
  res->inner_per_acq =
      res->acquisitions ? (double)(inner1 - inner0) / (double)res->acquisitions : 0;
  res->evalsha_per_acq =
      res->acquisitions ? (double)(evalsha1 - evalsha0) / (double)res->acquisitions : 0;
  free(all);
  free(handoffs);
  free(suffix_min_q);
  return 0;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_dbl);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over the rounds of one result field (given by its offset). */
static double med_field(const result_t *res, size_t off, int is_ll) {
  double v[MAX_ROUNDS];
  int r;
  for (r = 0; r < A.rounds; r++) {
    const char *base = (const char *)&res[r] + off;
    v[r] = is_ll ? (double)*(const long long *)base : *(const double *)base;
  }
  return median(v, A.rounds);
}
#define MED(field) med_field(res, offsetof(result_t, field), 0)

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--host H] [--port P] [--procs N] [--seconds S] [--warmup S]\n"
          "          [--rounds R] [--hold-us U] [--no-pin]\n",
          prog);
}

int main(int argc, char **argv) {
  static result_t results[2][MAX_ROUNDS];
  double rtt[MAX_ROUNDS];
  int i, r, impl;
  A.host = "127.0.0.1";
  A.port = 6379;
  A.procs = 8;
  A.rounds = 3;
  A.seconds = 3;
  A.warmup = 1;
  A.pin = 1;
  for (i = 1; i < argc; i++) {
    const char *s = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--host") == 0 && v) A.host = argv[++i];
    else if (strcmp(s, "--port") == 0 && v) A.port = atoi(argv[++i]);
    else if (strcmp(s, "--procs") == 0 && v) A.procs = atoi(argv[++i]);
    else if (strcmp(s, "--seconds") == 0 && v) A.seconds = atof(argv[++i]);
    else if (strcmp(s, "--warmup") == 0 && v) A.warmup = atof(argv[++i]);
    else if (strcmp(s, "--rounds") == 0 && v) A.rounds = atoi(argv[++i]);
    else if (strcmp(s, "--hold-us") == 0 && v) A.hold_us = atoi(argv[++i]);
    else if (strcmp(s, "--no-pin") == 0) A.pin = 0;
    else { usage(argv[0]); return 2; }
  }
  if (A.port <= 0 || A.port > 65535 || A.procs < 2 || A.procs > MAX_PROCS || A.rounds < 1 ||
      A.rounds > MAX_ROUNDS || A.seconds <= 0 || A.warmup < 0 || A.hold_us < 0 ||
      A.hold_us > 999999) {
    usage(argv[0]);
    return 2;
  }
  S = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RECS = mmap(NULL, sizeof(rec_t) * MAX_PROCS * MAX_RECS, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (S == MAP_FAILED || RECS == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  if (A.pin)
    pin_to(1);
  fprintf(stderr, "# fair_handoff: %d processes, %.1f s measured after %.1f s warm-up, %d "
                  "interleaved rounds, hold %d us, %s\n",
          A.procs, A.seconds, A.warmup, A.rounds, A.hold_us,
          A.pin ? "workers pinned to CPU 1 (run redis-server on CPU 0)" : "unpinned");
  for (r = 0; r < A.rounds; r++) {
    rtt[r] = rtt_p50_us();
    for (impl = 0; impl < 2; impl++) {
      if (run_round(impl, r, &results[impl][r]) != 0)
        return 1;
      results[impl][r].rtt_p50 = rtt[r];
      fprintf(stderr,
              "# round %d %-8s: %.0f transfers/s, handoff p50 %.1f us p99 %.1f us, rtt %.1f us,"
              " order violations %lld, mutex violations %lld, %.2f top-level + %.2f inner "
              "commands per acquisition\n",
              r + 1, impl_names[impl], results[impl][r].transfers_per_s,
              results[impl][r].handoff_p50, results[impl][r].handoff_p99, rtt[r],
              results[impl][r].order_violations, results[impl][r].mutex_violations,
              results[impl][r].top_per_acq, results[impl][r].inner_per_acq);
    }
  }
  {
    double tps[2], h50[2], h99[2], top[2], inner[2], evs[2], rt;
    long long ov[2] = {0, 0}, mv[2] = {0, 0};
    for (impl = 0; impl < 2; impl++) {
      result_t *res = results[impl];
      tps[impl] = MED(transfers_per_s);
      h50[impl] = MED(handoff_p50);
      h99[impl] = MED(handoff_p99);
      top[impl] = MED(top_per_acq);
      inner[impl] = MED(inner_per_acq);
      evs[impl] = MED(evalsha_per_acq);
      for (r = 0; r < A.rounds; r++) {
        ov[impl] += res[r].order_violations;
        mv[impl] += res[r].mutex_violations;
      }
    }
    rt = median(rtt, A.rounds);
    for (impl = 1; impl >= 0; impl--) {
      printf("{\"bench\":\"fair_handoff\",\"impl\":\"%s\",\"metric\":\"transfers_per_s\","
             "\"value\":%.0f,\"unit\":\"transfers/s\"",
             impl_names[impl], tps[impl]);
      if (impl == IMPL_LK)
        printf(",\"limit\":%.0f,\"ratio\":%.3f", tps[IMPL_RAW], tps[IMPL_LK] / tps[IMPL_RAW]);
      printf(",\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f,\"rtt_p50_us\":%.1f,"
             "\"handoff_p50_rtts\":%.2f,\"order_violations\":%lld,\"mutex_violations\":%lld,"
             "\"top_level_commands_per_acq\":%.3f,\"inner_commands_per_acq\":%.3f,"
             "\"evalsha_per_acq\":%.3f,\"procs\":%d,\"hold_us\":%d,\"rounds\":%d,"
             "\"pinned\":%s}\n",
             h50[impl], h99[impl], rt, h50[impl] / rt, ov[impl], mv[impl], top[impl],
             inner[impl], evs[impl], A.procs, A.hold_us, A.rounds, A.pin ? "true" : "false");
    }
    printf("{\"bench\":\"fair_handoff\",\"impl\":\"latchkey\",\"metric\":\"handoff_p50_us\","
           "\"value\":%.1f,\"unit\":\"us\",\"limit\":%.1f,\"ratio\":%.3f,\"goal\":%.1f,"
           "\"goal_is\":\"3 x rtt_p50\",\"rounds\":%d}\n",
           h50[IMPL_LK], h50[IMPL_RAW], h50[IMPL_LK] / h50[IMPL_RAW], 3 * rt, A.rounds);
    printf("\n## fair lock handoff: %d processes, medians of %d interleaved rounds\n\n",
           A.procs, A.rounds);
    printf("| impl | transfers/s | ratio | handoff p50 / p99 us | p50 in RTTs | order "
           "violations | top-level + inner commands per acquisition |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (impl = 1; impl >= 0; impl--)
      printf("| %s | %.0f | %.2f | %.1f / %.1f | %.2f | %lld | %.2f + %.2f |\n",
             impl_names[impl], tps[impl], tps[impl] / tps[IMPL_RAW], h50[impl], h99[impl],
             h50[impl] / rt, ov[impl], top[impl], inner[impl]);
    printf("\nRTT (PING, p50, same placement as the workers): %.1f us. Goals: 0 order "
           "violations, handoff p50 <= 3 RTT, <= 5 top-level commands per acquisition.\n",
           rt);
    return ov[IMPL_LK] == 0 && mv[IMPL_LK] == 0 && mv[IMPL_RAW] == 0 ? 0 : 1;
  }
}
