/* The nemesis runner's workload interface (test/fault/nemesis.c).
 *
 * A workload is one primitive used by every worker process while the
 * nemesis injects faults, plus the checks run on the merged history at the
 * end. Adding a primitive to the nemesis is adding one file under
 * test/fault/workloads/ that defines a nem_workload_t and registers it with
 * NEM_WORKLOAD(var); nothing else changes.
 *
 * Worker side (a forked process with its own loop and client, connected
 * through the fault proxy): start() creates the workload's objects and keeps
 * operations going; every outcome is recorded with nem_record (history.h
 * records, CLOCK_MONOTONIC) and every status is classified with nem_status.
 * Once ctx->stopping is set, stop() is called: the workload starts nothing
 * new, closes its objects, and calls nem_workload_closed() exactly once when
 * the last one has closed.
 *
 * Parent side: setup() prepares the server before workers start (initial
 * permits, latch counts...); check() runs the checkers on the history of
 * every worker and the nemesis, prints one line per checker, and returns the
 * number of violations.
 *
 * wipe_ok: the workload's checks hold when the server restarts without its
 * data (the nemesis_empty_restarts run; history.h, RT_OP_WIPE), as the
 * lock-like ones do: their exclusion checks end sections at a wipe and their
 * fencing tokens must increase across it. A semaphore's or a latch's state
 * has no such guard, so those run only with persistence; nemesis_cluster
 * runs them all the same (its long master pause is a wipe), and the
 * semaphore judges its permits only up to the first wipe there. */
#ifndef LK_TEST_FAULT_NEMESIS_H
#define LK_TEST_FAULT_NEMESIS_H

#include <stdint.h>
#include <stdio.h>

#include "history.h"
#include "latchkey.h"
#include "redis_server.h"
#include "test.h"

typedef struct nem_ctx_s {
  int proc;            /* worker index: the history's proc */
  uv_loop_t *loop;
  lk_client_t *client;
  FILE *hist;
  uint64_t rng;
  int64_t lease_ms;         /* the client's default (watchdog) lease */
  int64_t reply_timeout_ms; /* the client's reply timeout */
  int stopping;
  int unexpected;      /* statuses no fault explains: reported as a finding */
  int open_workloads;
  long long records;
} nem_ctx_t;

typedef struct nem_workload_s {
  const char *name;
  void (*setup)(rt_server_t *srv, uint16_t obj);         /* may be NULL */
  void *(*start)(nem_ctx_t *ctx, uint16_t obj);
  void (*stop)(void *state);
  size_t (*check)(const rt_recs_t *h, uint16_t obj, rt_server_t *srv);
  /* Prints what the workload is waiting for (a worker that does not finish
   * is asked before it is killed); may be NULL. */
  void (*dump)(void *state, FILE *out);
  int wipe_ok;
  /* The name every key of the workload derives from (they share its hash
   * slot): on a cluster (nemesis_cluster) setup() and check() get the
   * server of that slot's master, and the faults aim at it. NULL: the
   * workload runs on a standalone server only. */
  const char *key;
  struct nem_workload_s *next;
} nem_workload_t;

void nem_register(nem_workload_t *w);
#define NEM_WORKLOAD(var)                                                      \
  __attribute__((constructor)) static void nem_register_##var(void) { nem_register(&var); }

/* ---- worker-side helpers ---- */

void nem_record(nem_ctx_t *ctx, uint16_t op, uint16_t obj, uint64_t start_ns, uint64_t end_ns,
                int64_t token, int64_t extra);
uint64_t nem_rand(nem_ctx_t *ctx);
/* A random number in [lo, hi]. */
int64_t nem_between(nem_ctx_t *ctx, int64_t lo, int64_t hi);
void nem_workload_closed(nem_ctx_t *ctx);
/* Counts status under "<workload>.<what>"; a status outside the expected
 * list (0-terminated; 0 itself is always expected) marks the worker as
 * having findings and is printed. */
void nem_status(nem_ctx_t *ctx, const char *what, int status, const int *expected);
/* Sleeps us microseconds (the workloads' critical sections last 0-200 us). */

/* ---- parent-side helpers ---- */

/* Prints c and returns its violation count. */
size_t nem_report(const rt_check_t *c, const char *workload);
/* Bounded waits (L2): every RT_OP_CALL of obj completed within its wait
 * budget (extra; -1 = forever, skipped) + the reply timeout + slack_ms,
 * unless its process was stopped (RT_OP_STOPPED) meanwhile. */
void nem_check_bounded(const rt_recs_t *h, uint16_t obj, int64_t reply_timeout_ms,
                       int64_t slack_ms, rt_check_t *out);
/* 1 in nemesis_cluster: the workers talk to a Redis Cluster. */
int nem_cluster(void);
/* The run's lease and reply timeout, for checks. */
int64_t nem_lease_ms(void);
int64_t nem_reply_timeout_ms(void);

#endif /* LK_TEST_FAULT_NEMESIS_H */
