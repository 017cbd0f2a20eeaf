/* The start every forked stress worker makes (issue 29: the stress tests
 * each carried a copy): it dies with the test, runs pinned to a CPU when
 * that is allowed, reads the server through a side connection with 5 s
 * timeouts, and has a loop and a latchkey client of its own; and the end
 * every one makes (all iterations run, the loop closed, the history
 * written). A failure ends the worker with rt_worker_die (exit 3).
 * Header-only. */
#ifndef LK_TEST_HARNESS_STRESS_WORKER_H
#define LK_TEST_HARNESS_STRESS_WORKER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "history.h"
#include "latchkey.h"
#include "test.h"

/* An integer setting from the environment (the stress tests' size and
 * pace): dflt when name is unset or empty; the test fails on anything but
 * an integer in lo..hi. */
static inline int rt_stress_env_int(const char *name, int dflt, int lo, int hi) {
  const char *env = getenv(name);
  char *end = NULL;
  long v;
  if (env == NULL || *env == '\0')
    return dflt;
  v = strtol(env, &end, 10);
  if (end == env || *end != '\0' || v < lo || v > hi)
    FAIL("%s=\"%s\": want an integer in %d..%d", name, env, lo, hi);
  return (int)v;
}

/* A worker's xorshift seed: its own (time and pid), never 0. */
static inline uint64_t rt_stress_seed(uint64_t salt) {
  uint64_t rng = uv_hrtime() ^ ((uint64_t)getpid() << 20) ^ salt;
  return rng != 0 ? rng : 1;
}

/* Right after fork: dies with the test process parent (a parent killed by
 * ctest's timeout must not leave workers behind; exit 5 when it is gone
 * already), then pins itself to cpu (-1: not pinned). Returns the CPU it
 * runs on, -1 when not pinned (one CPU only, or not allowed). */
static inline int rt_stress_worker_begin(pid_t parent, int cpu) {
  cpu_set_t set;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(5); /* it died before the call above */
  if (cpu < 0)
    return -1;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
}

/* Worker index's side connection to 127.0.0.1:port. */
static inline redisContext *rt_stress_side(int index, int port) {
  struct timeval tv = {5, 0};
  redisContext *side = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (side == NULL || side->err)
    rt_worker_die(index, "side connection: %s", side ? side->errstr : "out of memory");
  redisSetTimeout(side, tv);
  return side;
}

/* Worker index's loop (initialised here) and a client with default
 * options on port. */
static inline lk_client_t *rt_stress_client(int index, uv_loop_t *loop, int port) {
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  int rc;
  if (uv_loop_init(loop) != 0)
    rt_worker_die(index, "uv_loop_init");
  lk_client_opts_init(&o);
  o.port = port;
  if ((rc = lk_client_new(loop, &o, &c)) != 0)
    rt_worker_die(index, "lk_client_new: %s", lk_err_name(rc));
  return c;
}

/* What every worker opens after the fork and closes at its end. */
typedef struct rt_stress_io_s {
  uv_loop_t loop;
  lk_client_t *c;     /* default options, on the test's server */
  redisContext *side; /* blocking commands to that server */
  FILE *hist;         /* its history (history.h) */
} rt_stress_io_t;

/* Worker index's history file at path (rt_history_create). */
static inline FILE *rt_stress_history(int index, const char *path) {
  FILE *hist = rt_history_create(path);
  if (hist == NULL)
    rt_worker_die(index, "%s: %s", path, strerror(errno));
  return hist;
}

/* The end every worker makes once its loop ran dry: it ran all its
 * iterations (done of iters), the loop closes with no handle left, its
 * history is written out and its side connection closed. */
static inline void rt_stress_worker_end(int index, rt_stress_io_t *io, int done, int iters) {
  int rc;
  if (done != iters)
    rt_worker_die(index, "the loop ran dry after %d of %d iterations", done, iters);
  if ((rc = uv_loop_close(&io->loop)) != 0)
    rt_worker_die(index, "uv_loop_close: %s", uv_strerror(rc));
  if (rt_history_finish(io->hist) != 0)
    rt_worker_die(index, "closing the history: %s", strerror(errno));
  redisFree(io->side);
}

/* Worker index's start on the server at port, after
 * rt_stress_worker_begin: its history at hist_path, its side connection,
 * its loop and its client. */
static inline void rt_stress_open(rt_stress_io_t *io, int index, int port,
                                  const char *hist_path) {
  io->hist = rt_stress_history(index, hist_path);
  io->side = rt_stress_side(index, port);
  io->c = rt_stress_client(index, &io->loop, port);
}

#endif /* LK_TEST_HARNESS_STRESS_WORKER_H */
