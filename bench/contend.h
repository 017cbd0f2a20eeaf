/* bench/contend.h: the B3 contention harness (bench/README.md, "B3").
 *
 * N worker processes (default 8), forked from one parent, each with its own
 * loop and latchkey client, loop on ONE name: acquire -> hold a random
 * 0..200 µs (nanosleep, timer slack 1 ns) -> release -> acquire again at
 * once. With pinning on (the default; LK_BENCH_PIN=0 or --no-pin turns it
 * off) workers are pinned alternately to the CPUs of LK_BENCH_WORKER_CPUS
 * (default "0,1"): mutual exclusion can only be seen broken when two holders
 * really run at the same time.
 *
 * Every worker logs each cycle in shared memory: t_call (acquire called),
 * t_acq (acquire callback), t_rel (release about to be called), t_done
 * (release callback), all uv_hrtime, one clock for every process. The
 * parent merges the logs after the workers exit and reports, over the
 * measured window (after a warm-up):
 *
 *   acquisitions_per_s, transfers_per_s (owner changes between processes),
 *   same_process_pct, longest_streak (most consecutive acquisitions by one
 *   process), handoff_p50/p99_us (next t_acq - previous t_rel, all
 *   consecutive acquisitions), transfer_p50/p99_us (the same, owner changes
 *   only), wait_p50/p99/max_us (t_acq - t_call), mutex_violations (a hold
 *   [t_acq, t_rel] that starts inside another process's: must be 0; the
 *   recorded interval lies inside the real one, so any overlap is real),
 *   order_violations (an acquisition by B while A, whose acquire was called
 *   more than --order-margin-us before B's, was still waiting), top-level
 *   commands per acquisition (the workers' own lk_client_stats
 *   commands_sent), inner commands per acquisition (INFO commandstats total
 *   minus top-level: what the scripts call), server_cmds_per_acq (both),
 *   evalsha_per_acq, subscribe_per_acq ((S)SUBSCRIBE per acquisition),
 *   redis_cpu_pct and redis_cpu_us_per_acq (INFO cpu: the server's CPU
 *   time over the run per acquisition), acquire_failures.
 *
 * A primitive plugs in with a bench_contend_impl_t (open/acquire/release/
 * close; its callbacks call bench_contend_acquired/_released/_closed) and a
 * main() that returns bench_contend_main(argc, argv, &impl): contend.c does
 * it for the reentrant lock; a fair lock sets ordered = 1 so that order
 * violations become a goal. An impl may name a same-run yardstick
 * (limit_impl: bench/contend_poll.c's "poll-10ms", same variant) and goals
 * per metric: tools/bench.sh's report then gives value / yardstick and
 * checks goal_ratio on the median of the per-round ratios (bench/README.md,
 * "Adding a benchmark"). Header-only; include it in one .c file. */
#ifndef LK_BENCH_CONTEND_H
#define LK_BENCH_CONTEND_H

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
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

#include "latchkey.h"

#include "bench_common.h"

#define BENCH_CONTEND_MAX_PROCS 64

typedef struct bench_contend_s bench_contend_t;

/* A goal on one metric's line: goal is checked on the value ("<= 6");
 * ratio non-NULL puts the impl's limit_impl on the line (the runner reports
 * value / that impl's value in the same run) and, when non-empty, is the
 * goal on that ratio (">= 2"). A table ends with metric NULL. */
typedef struct bench_contend_goal_s {
  const char *metric;
  const char *goal;
  const char *ratio;
} bench_contend_goal_t;

typedef struct bench_contend_impl_s {
  const char *impl;    /* "latchkey" */
  const char *variant; /* "lock", "fair lock", ... (the summary's row name) */
  int ordered;         /* 1: promises FIFO order; order_violations is a goal */
  /* Makes the object for `name` on client c into *obj. 0 or an LK_ code. */
  int (*open)(bench_contend_t *w, lk_client_t *c, const char *name, void **obj);
  /* Start an acquire that waits (10 s is plenty); its completion calls
   * bench_contend_acquired(w, status). 0 or an LK_ code. */
  int (*acquire)(bench_contend_t *w, void *obj);
  /* Start the release; completion calls bench_contend_released(w, status). */
  int (*release)(bench_contend_t *w, void *obj);
  /* Close the object; its close callback calls bench_contend_closed(w). */
  int (*close)(bench_contend_t *w, void *obj);
  /* Optional: the same-run yardstick's impl name and the goals above. */
  const char *limit_impl;
  const bench_contend_goal_t *goals;
} bench_contend_impl_t;

typedef struct bench_contend_rec_s {
  uint64_t t_call, t_acq, t_rel, t_done;
} bench_contend_rec_t;

/* Per worker, in shared memory. */
typedef struct bench_contend_slot_s {
  uint64_t cmds0, cmds1; /* commands_sent at the window's start and the end */
  uint64_t n;            /* records */
  uint64_t acq_failures, rel_failures, overflow;
  int cmds0_taken, setup_failed;
  char error[96];
} bench_contend_slot_t;

typedef struct bench_contend_shared_s {
  uint64_t t_start, t_end; /* the measured window */
  bench_contend_slot_t slot[BENCH_CONTEND_MAX_PROCS];
} bench_contend_shared_t;

typedef struct bench_contend_args_s {
  const char *host;
  int port;
  int procs;
  double seconds;
  int warmup_ms;
  int hold_us;
  int busy_poll_us; /* every worker client's busy_poll_us (--busy-poll-us) */
  int order_margin_us;
  int pin;
  int cpus[8];
  int ncpus;
} bench_contend_args_t;

struct bench_contend_s {
  const bench_contend_impl_t *impl;
  const bench_contend_args_t *args;
  bench_contend_shared_t *shm;
  bench_contend_slot_t *slot;
  bench_contend_rec_t *recs;
  uint64_t cap;
  int index;
  uv_loop_t loop;
  lk_client_t *client;
  void *obj;
  uint64_t rng;
  bench_contend_rec_t cur;
  uv_timer_t window_timer; /* takes the command count when the window opens */
  int stopping;
};

static inline uint64_t bench_contend_rand(bench_contend_t *w) {
  /* xorshift64* */
  w->rng ^= w->rng >> 12;
  w->rng ^= w->rng << 25;
  w->rng ^= w->rng >> 27;
  return w->rng * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t bench_contend_cmds(bench_contend_t *w) {
  lk_client_stats_t st;
  lk_client_get_stats(w->client, &st);
  return st.commands_sent;
}

static inline void bench_contend_fail(bench_contend_t *w, const char *what, int rc) {
  if (w->slot->error[0] == '\0')
    snprintf(w->slot->error, sizeof(w->slot->error), "%s: %s", what, lk_err_name(rc));
}

static inline void bench_contend_stop(bench_contend_t *w) {
  int rc;
  w->stopping = 1;
  w->slot->cmds1 = bench_contend_cmds(w);
  uv_close((uv_handle_t *)&w->window_timer, NULL);
  rc = w->impl->close(w, w->obj);
  if (rc != 0) {
    bench_contend_fail(w, "close", rc);
    lk_client_close(w->client, NULL); /* EBUSY: the loop then hangs; the parent kills */
  }
}

static inline void bench_contend_next(bench_contend_t *w) {
  uint64_t now = uv_hrtime();
  int rc;
  if (now >= w->shm->t_end) {
    bench_contend_stop(w);
    return;
  }
  memset(&w->cur, 0, sizeof(w->cur));
  w->cur.t_call = now;
  rc = w->impl->acquire(w, w->obj);
  if (rc != 0) {
    bench_contend_fail(w, "acquire call", rc);
    w->slot->acq_failures++;
    bench_contend_stop(w);
  }
}

/* The adapter's acquire completed. */
static inline void bench_contend_acquired(bench_contend_t *w, int status) {
  uint64_t hold_ns;
  int rc;
  w->cur.t_acq = uv_hrtime();
  if (status != 0) {
    bench_contend_fail(w, "acquire", status);
    if (w->cur.t_call >= w->shm->t_start)
      w->slot->acq_failures++;
    bench_contend_next(w);
    return;
  }
  hold_ns = w->args->hold_us > 0
                ? bench_contend_rand(w) % ((uint64_t)w->args->hold_us * 1000u + 1)
                : 0;
  if (hold_ns > 0) {
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)hold_ns;
    nanosleep(&ts, NULL);
  }
  w->cur.t_rel = uv_hrtime();
  rc = w->impl->release(w, w->obj);
  if (rc != 0) {
    bench_contend_fail(w, "release call", rc);
    w->slot->rel_failures++;
    bench_contend_stop(w);
  }
}

/* The adapter's release completed. */
static inline void bench_contend_released(bench_contend_t *w, int status) {
  w->cur.t_done = uv_hrtime();
  if (status != 0) {
    bench_contend_fail(w, "release", status);
    w->slot->rel_failures++;
  }
  if (w->cur.t_call >= w->shm->t_start) {
    if (w->slot->n < w->cap)
      w->recs[w->slot->n++] = w->cur;
    else
      w->slot->overflow++;
  }
  bench_contend_next(w);
}

/* The adapter's object is closed. */
static inline void bench_contend_closed(bench_contend_t *w) { lk_client_close(w->client, NULL); }

static inline void bench_contend_pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

static inline void bench_contend_on_window(uv_timer_t *t) {
  bench_contend_t *w = t->data;
  w->slot->cmds0 = bench_contend_cmds(w);
  w->slot->cmds0_taken = 1;
}

static inline int bench_contend_worker(bench_contend_t *w, const char *name) {
  lk_client_opts_t co;
  int rc;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_TIMERSLACK, 1UL);
  if (w->args->pin)
    bench_contend_pin(w->args->cpus[w->index % w->args->ncpus]);
  w->rng = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
  uv_loop_init(&w->loop);
  lk_client_opts_init(&co);
  co.host = w->args->host;
  co.port = w->args->port;
  co.client_name = "latchkey-bench-contend";
  co.busy_poll_us = w->args->busy_poll_us;
  rc = lk_client_new(&w->loop, &co, &w->client);
  if (rc == 0)
    rc = w->impl->open(w, w->client, name, &w->obj);
  if (rc != 0) {
    bench_contend_fail(w, "setup", rc);
    w->slot->setup_failed = 1;
    return 3;
  }
  {
    uint64_t now = uv_hrtime();
    uv_timer_init(&w->loop, &w->window_timer);
    w->window_timer.data = w;
    uv_timer_start(&w->window_timer, bench_contend_on_window,
                   w->shm->t_start > now ? (w->shm->t_start - now) / 1000000u : 0, 0);
  }
  /* Acquiring starts at once: the time before t_start is the warm-up
   * (connecting, loading scripts, the first subscription). */
  bench_contend_next(w);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  return uv_loop_close(&w->loop) == 0 ? 0 : 4;
}

/* --- the parent: INFO snapshots --- */

typedef struct bench_contend_info_s {
  double calls_total; /* every command in commandstats but INFO */
  double evalsha;     /* evalsha + eval */
  double subscribe;   /* subscribe + ssubscribe */
  double cpu_s;       /* used_cpu_user + used_cpu_sys */
} bench_contend_info_t;

static inline int bench_contend_info(redisContext *rc, bench_contend_info_t *out) {
  redisReply *r = redisCommand(rc, "INFO all");
  const char *p;
  memset(out, 0, sizeof(*out));
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    if (r != NULL)
      freeReplyObject(r);
    return -1;
  }
  for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
    const char *name = p + 8, *c = strstr(p, ":calls=");
    double calls;
    if (c == NULL)
      break;
    calls = atof(c + 7);
    if (strncmp(name, "info:", 5) == 0)
      continue;
    out->calls_total += calls;
    if (strncmp(name, "evalsha:", 8) == 0 || strncmp(name, "eval:", 5) == 0)
      out->evalsha += calls;
    if (strncmp(name, "subscribe:", 10) == 0 || strncmp(name, "ssubscribe:", 11) == 0)
      out->subscribe += calls;
  }
  if ((p = strstr(r->str, "used_cpu_sys:")) != NULL)
    out->cpu_s += atof(p + 13);
  if ((p = strstr(r->str, "used_cpu_user:")) != NULL)
    out->cpu_s += atof(p + 14);
  freeReplyObject(r);
  return 0;
}

/* --- the parent: analysis --- */

typedef struct bench_contend_ev_s {
  bench_contend_rec_t r;
  int w;
} bench_contend_ev_t;

static inline int bench_contend_by_acq(const void *x, const void *y) {
  const bench_contend_ev_t *a = x, *b = y;
  return a->r.t_acq < b->r.t_acq ? -1 : a->r.t_acq > b->r.t_acq;
}

static inline double bench_contend_pct(uint64_t *v, size_t n, double q) {
  qsort(v, n, sizeof(uint64_t), bench_cmp_u64);
  return bench_pct_us(v, n, q);
}

static inline void bench_contend_line(const bench_contend_impl_t *impl, const char *variant,
                                      const char *metric, double value, const char *unit,
                                      const bench_contend_args_t *a) {
  const bench_contend_goal_t *g;
  bench_json_begin("B3", impl->impl, variant, metric, value, unit);
  bench_json_int("procs", a->procs);
  bench_json_int("hold_us_max", a->hold_us);
  bench_json_bool("ordered", impl->ordered);
  bench_json_bool("pinned", a->pin);
  for (g = impl->goals; g != NULL && g->metric != NULL; g++) {
    if (strcmp(g->metric, metric) != 0)
      continue;
    if (g->goal != NULL)
      bench_json_str("goal", g->goal);
    if (g->ratio != NULL && impl->limit_impl != NULL) {
      bench_json_str("limit_impl", impl->limit_impl);
      if (g->ratio[0] != '\0')
        bench_json_str("goal_ratio", g->ratio);
    }
  }
}

static inline int bench_contend_usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--host H] [--port P] [--procs N] [--seconds S] [--warmup-ms MS]\n"
          "          [--hold-us MAX] [--order-margin-us US] [--busy-poll-us US] [--no-pin]\n"
          "  N processes (default 8) contend for one name for S seconds (default 5)\n"
          "  after a warm-up (default 500 ms); each holds 0..MAX µs (default 200).\n"
          "  Pinning: LK_BENCH_PIN (default 1), LK_BENCH_WORKER_CPUS (default 0,1).\n",
          prog);
  return 2;
}

static inline int bench_contend_parse(int argc, char **argv, bench_contend_args_t *a) {
  const char *env;
  uint64_t v;
  int i;
  memset(a, 0, sizeof(*a));
  a->host = "127.0.0.1";
  a->port = 6379;
  a->procs = 8;
  a->seconds = 5;
  a->warmup_ms = 500;
  a->hold_us = 200;
  a->order_margin_us = 50;
  env = getenv("LK_BENCH_PIN");
  a->pin = env == NULL || strcmp(env, "0") != 0;
  env = getenv("LK_BENCH_WORKER_CPUS");
  a->ncpus = bench_parse_ports(env != NULL ? env : "0,1", a->cpus, 8);
  if (a->ncpus <= 0) {
    a->cpus[0] = 0, a->cpus[1] = 1, a->ncpus = 2;
  }
  for (i = 1; i < argc; i++) {
    const char *s = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--no-pin") == 0) {
      a->pin = 0;
      continue;
    }
    if (val == NULL)
      return -1;
    i++;
    if (strcmp(s, "--host") == 0)
      a->host = val;
    else if (strcmp(s, "--port") == 0 && bench_parse_port(val, &a->port) == 0)
      ;
    else if (strcmp(s, "--procs") == 0 && bench_parse_u64(val, &v) == 0 && v >= 2 &&
             v <= BENCH_CONTEND_MAX_PROCS)
      a->procs = (int)v;
    else if (strcmp(s, "--seconds") == 0 && bench_parse_u64(val, &v) == 0 && v >= 1 &&
             v <= 60)
      a->seconds = (double)v;
    else if (strcmp(s, "--warmup-ms") == 0 && bench_parse_u64(val, &v) == 0 && v <= 10000)
      a->warmup_ms = (int)v;
    else if (strcmp(s, "--hold-us") == 0 && bench_parse_u64(val, &v) == 0 && v <= 100000)
      a->hold_us = (int)v;
    else if (strcmp(s, "--busy-poll-us") == 0 && bench_parse_u64(val, &v) == 0 && v <= 1000000)
      a->busy_poll_us = (int)v;
    else if (strcmp(s, "--order-margin-us") == 0 && bench_parse_u64(val, &v) == 0 &&
             v <= 1000000)
      a->order_margin_us = (int)v;
    else
      return -1;
  }
  return 0;
}

static inline int bench_contend_main(int argc, char **argv, const bench_contend_impl_t *impl) {
  bench_contend_args_t a;
  bench_contend_shared_t *shm;
  bench_contend_rec_t *recs;
  bench_contend_ev_t *ev;
  bench_contend_info_t i0, i1;
  redisContext *rc;
  pid_t pids[BENCH_CONTEND_MAX_PROCS];
  uint64_t cap, t_fork, n = 0, k, window_ns, acq_in_window = 0, transfers = 0;
  uint64_t *wait_ns, *handoff_ns, *xfer_ns, nh = 0, nx = 0, streak = 1, longest = 0;
  uint64_t last_end[BENCH_CONTEND_MAX_PROCS], ptr[BENCH_CONTEND_MAX_PROCS];
  uint64_t mutex_viol = 0, order_viol = 0, acq_fail = 0, rel_fail = 0, overflow = 0;
  uint64_t toplevel = 0, cpu_wall_ns;
  double rtt_us = 0, secs;
  char name[96], variant[64];
  int p, bad = 0, status;
  size_t shm_len;
  struct timeval tv = {5, 0};

  if (bench_contend_parse(argc, argv, &a) != 0)
    return bench_contend_usage(argv[0]);
  /* Room for 40 000 cycles a second per worker, far above what one name
   * allows; a full log is reported (overflow), not a crash. */
  cap = (uint64_t)((a.seconds + 1) * 40000);
  shm_len = sizeof(*shm) + (size_t)a.procs * cap * sizeof(bench_contend_rec_t);
  shm = mmap(NULL, shm_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shm == MAP_FAILED) {
    perror("contend: mmap");
    return 1;
  }
  memset(shm, 0, sizeof(*shm));
  recs = (bench_contend_rec_t *)(shm + 1);
  rc = redisConnectWithTimeout(a.host, a.port, tv);
  if (rc == NULL || rc->err) {
    fprintf(stderr, "contend: connect %s:%d: %s\n", a.host, a.port,
            rc != NULL ? rc->errstr : "out of memory");
    return 1;
  }
  /* The round trip, for handoffs in round trips: PING p50 from here. */
  {
    uint64_t rtt[200];
    int j;
    for (j = 0; j < 200; j++) {
      uint64_t t0 = uv_hrtime();
      redisReply *r = redisCommand(rc, "PING");
      rtt[j] = uv_hrtime() - t0;
      if (r == NULL) {
        fprintf(stderr, "contend: PING: %s\n", rc->errstr);
        return 1;
      }
      freeReplyObject(r);
    }
    qsort(rtt, 200, sizeof(uint64_t), bench_cmp_u64);
    rtt_us = bench_pct_us(rtt, 200, 0.5);
  }
  snprintf(name, sizeof(name), "lkbench:contend:%ld", (long)getpid());
  t_fork = uv_hrtime();
  shm->t_start = t_fork + (uint64_t)a.warmup_ms * 1000000u + 300000000u;
  shm->t_end = shm->t_start + (uint64_t)(a.seconds * 1e9);
  fflush(stdout);
  fflush(stderr);
  for (p = 0; p < a.procs; p++) {
    pids[p] = fork();
    if (pids[p] == 0) {
      bench_contend_t w;
      redisFree(rc);
      memset(&w, 0, sizeof(w));
      w.impl = impl;
      w.args = &a;
      w.shm = shm;
      w.slot = &shm->slot[p];
      w.recs = recs + (size_t)p * cap;
      w.cap = cap;
      w.index = p;
      _exit(bench_contend_worker(&w, name));
    }
    if (pids[p] < 0) {
      perror("contend: fork");
      a.procs = p;
      bad = 1;
      break;
    }
  }
  /* The window opens: snapshot the server's counters. */
  while (uv_hrtime() < shm->t_start) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (bench_contend_info(rc, &i0) != 0)
    bad = 1;
  /* Bounded: the window, then 10 s for the last waiters and the closes. */
  for (p = 0; p < a.procs; p++) {
    uint64_t give_up = shm->t_end + 10000000000ull;
    for (;;) {
      pid_t got = waitpid(pids[p], &status, WNOHANG);
      if (got == pids[p]) {
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          fprintf(stderr, "contend: worker %d ended with status %d (%s)\n", p, status,
                  shm->slot[p].error);
          bad = 1;
        }
        break;
      }
      if (got < 0 && errno != EINTR) {
        bad = 1;
        break;
      }
      if (uv_hrtime() > give_up) {
        fprintf(stderr, "contend: worker %d still running: killed (%s)\n", p,
                shm->slot[p].error);
        kill(pids[p], SIGKILL);
        waitpid(pids[p], &status, 0);
        bad = 1;
        break;
      }
      {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
      }
    }
  }
  cpu_wall_ns = uv_hrtime() - shm->t_start;
  if (bench_contend_info(rc, &i1) != 0)
    bad = 1;
  {
    redisReply *r = redisCommand(rc, "DEL %s", name);
    if (r != NULL)
      freeReplyObject(r);
  }
  redisFree(rc);

  /* Merge the logs. */
  for (p = 0; p < a.procs; p++) {
    n += shm->slot[p].n;
    acq_fail += shm->slot[p].acq_failures;
    rel_fail += shm->slot[p].rel_failures;
    overflow += shm->slot[p].overflow;
    toplevel += shm->slot[p].cmds1 - shm->slot[p].cmds0;
    if (shm->slot[p].error[0] != '\0')
      fprintf(stderr, "contend: worker %d: %s\n", p, shm->slot[p].error);
  }
  ev = calloc(n + 1, sizeof(*ev));
  wait_ns = calloc(n + 1, sizeof(uint64_t));
  handoff_ns = calloc(n + 1, sizeof(uint64_t));
  xfer_ns = calloc(n + 1, sizeof(uint64_t));
  if (ev == NULL || wait_ns == NULL || handoff_ns == NULL || xfer_ns == NULL) {
    fprintf(stderr, "contend: out of memory\n");
    return 1;
  }
  for (k = 0, p = 0; p < a.procs; p++) {
    uint64_t j;
    for (j = 0; j < shm->slot[p].n; j++, k++) {
      ev[k].r = recs[(size_t)p * cap + j];
      ev[k].w = p;
      wait_ns[k] = ev[k].r.t_acq - ev[k].r.t_call;
    }
  }
  qsort(ev, n, sizeof(*ev), bench_contend_by_acq);
  memset(last_end, 0, sizeof(last_end));
  memset(ptr, 0, sizeof(ptr));
  window_ns = shm->t_end - shm->t_start;
  for (k = 0; k < n; k++) {
    const bench_contend_rec_t *r = &ev[k].r;
    int q, w = ev[k].w, overtook = 0;
    if (r->t_acq <= shm->t_end)
      acq_in_window++;
    if (k > 0) {
      const bench_contend_ev_t *prev = &ev[k - 1];
      uint64_t h = r->t_acq > prev->r.t_rel ? r->t_acq - prev->r.t_rel : 0;
      handoff_ns[nh++] = h;
      if (prev->w != w) {
        xfer_ns[nx++] = h;
        if (r->t_acq <= shm->t_end)
          transfers++;
        streak = 1;
      } else {
        streak++;
      }
    }
    if (streak > longest)
      longest = streak;
    /* Mutual exclusion: no other process's hold may still be open. */
    for (q = 0; q < a.procs; q++)
      if (q != w && last_end[q] > r->t_acq) {
        mutex_viol++;
        break;
      }
    if (r->t_rel > last_end[w])
      last_end[w] = r->t_rel;
    /* Order: was another process waiting since well before this one asked?
     * Each process's records are in call order: advance its pointer past
     * the waits that ended before this acquisition. */
    for (q = 0; q < a.procs && !overtook; q++) {
      const bench_contend_rec_t *base = recs + (size_t)q * cap;
      if (q == w)
        continue;
      while (ptr[q] < shm->slot[q].n && base[ptr[q]].t_acq <= r->t_acq)
        ptr[q]++;
      if (ptr[q] < shm->slot[q].n && base[ptr[q]].t_call < r->t_acq &&
          base[ptr[q]].t_call + (uint64_t)a.order_margin_us * 1000u < r->t_call)
        overtook = 1;
    }
    order_viol += (uint64_t)overtook;
  }

  secs = (double)window_ns / 1e9;
  snprintf(variant, sizeof(variant), "%s", impl->variant);
  bench_contend_line(impl, variant, "acquisitions_per_s", (double)acq_in_window / secs,
                     "acq/s", &a);
  bench_json_int("acquisitions", (long long)n);
  bench_json_num("seconds", secs);
  bench_json_end();
  bench_contend_line(impl, variant, "transfers_per_s", (double)transfers / secs, "transfers/s",
                     &a);
  bench_json_num("same_process_pct",
                 acq_in_window ? 100.0 * (1.0 - (double)transfers / (double)acq_in_window) : 0);
  bench_json_end();
  bench_contend_line(impl, variant, "handoff_p50_us", bench_contend_pct(handoff_ns, nh, 0.5),
                     "us", &a);
  bench_json_num("rtt_p50_us", rtt_us);
  bench_json_num("in_rtts", rtt_us > 0 ? bench_pct_us(handoff_ns, nh, 0.5) / rtt_us : 0);
  bench_json_end();
  bench_contend_line(impl, variant, "handoff_p99_us", bench_pct_us(handoff_ns, nh, 0.99), "us",
                     &a);
  bench_json_end();
  bench_contend_line(impl, variant, "transfer_p50_us", bench_contend_pct(xfer_ns, nx, 0.5), "us",
                     &a);
  bench_json_num("in_rtts", rtt_us > 0 ? bench_pct_us(xfer_ns, nx, 0.5) / rtt_us : 0);
  bench_json_end();
  bench_contend_line(impl, variant, "transfer_p99_us", bench_pct_us(xfer_ns, nx, 0.99), "us", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "wait_p50_us", bench_contend_pct(wait_ns, n, 0.5), "us", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "wait_p99_us", bench_pct_us(wait_ns, n, 0.99), "us", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "wait_max_us", bench_pct_us(wait_ns, n, 1.0), "us", &a);
  bench_json_num("over_p50",
                 bench_pct_us(wait_ns, n, 0.5) > 0
                     ? bench_pct_us(wait_ns, n, 1.0) / bench_pct_us(wait_ns, n, 0.5)
                     : 0);
  bench_json_end();
  bench_contend_line(impl, variant, "longest_streak", (double)longest, "acquisitions", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "toplevel_cmds_per_acq",
                     n ? (double)toplevel / (double)n : 0, "commands", &a);
  bench_json_num("evalsha_per_acq", n ? (i1.evalsha - i0.evalsha) / (double)n : 0);
  bench_json_end();
  bench_contend_line(impl, variant, "inner_cmds_per_acq",
                     n ? (i1.calls_total - i0.calls_total - (double)toplevel) / (double)n : 0,
                     "commands", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "server_cmds_per_acq",
                     n ? (i1.calls_total - i0.calls_total) / (double)n : 0, "commands", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "subscribe_per_acq",
                     n ? (i1.subscribe - i0.subscribe) / (double)n : 0, "commands", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "redis_cpu_pct",
                     100.0 * (i1.cpu_s - i0.cpu_s) / ((double)cpu_wall_ns / 1e9), "%", &a);
  bench_json_end();
  /* The server's bill per acquisition: its CPU over the span the command
   * counts cover (window open to the last worker's exit), over the same
   * acquisitions. */
  bench_contend_line(impl, variant, "redis_cpu_us_per_acq",
                     n ? 1e6 * (i1.cpu_s - i0.cpu_s) / (double)n : 0, "us", &a);
  bench_json_end();
  bench_contend_line(impl, variant, "mutex_violations", (double)mutex_viol, "count", &a);
  bench_json_str("goal", "== 0");
  bench_json_bool("met", mutex_viol == 0);
  bench_json_end();
  bench_contend_line(impl, variant, "order_violations", (double)order_viol, "count", &a);
  bench_json_int("order_margin_us", a.order_margin_us);
  if (impl->ordered) {
    bench_json_str("goal", "== 0");
    bench_json_bool("met", order_viol == 0);
  }
  bench_json_end();
  bench_contend_line(impl, variant, "acquire_failures", (double)acq_fail, "count", &a);
  bench_json_int("release_failures", (long long)rel_fail);
  bench_json_int("log_overflow", (long long)overflow);
  bench_json_end();
  free(ev);
  free(wait_ns);
  free(handoff_ns);
  free(xfer_ns);
  munmap(shm, shm_len);
  return bad || acq_fail != 0 || rel_fail != 0 || n == 0 ? 1 : 0;
}

#endif /* LK_BENCH_CONTEND_H */
