/* B3 for the reentrant lock: 8 processes contend for one name
 * (bench/contend.h has the harness and what it reports). Each acquire waits
 * up to 10 s with an explicit 30 s lease (no watchdog traffic), as the
 * pair benchmarks do. */
#include "contend.h"

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  bench_contend_acquired(arg, status);
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  bench_contend_released(arg, status);
}

static void on_closed(lk_lock_t *l) { bench_contend_closed(lk_lock_get_data(l)); }

static int lock_open(bench_contend_t *w, lk_client_t *c, const char *name, void **obj) {
  lk_lock_t *l;
  int rc = lk_lock_new(c, name, &l);
  if (rc != 0)
    return rc;
  lk_lock_set_data(l, w);
  *obj = l;
  return 0;
}

static int lock_acquire(bench_contend_t *w, void *obj) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 10000;
  o.lease_ms = 30000;
  return lk_lock_acquire(obj, &o, on_acquired, w);
}

static int lock_release(bench_contend_t *w, void *obj) {
  return lk_lock_release(obj, on_released, w);
}

static int lock_close(bench_contend_t *w, void *obj) { return lk_lock_close(obj, on_closed); }

/* Issue 17's goals for the plain lock, against the minimal poll loop of
 * bench/contend_poll.c (redis-semaphore's default) measured in the same run:
 * Redis CPU per acquisition no more than the poll loop's, transfers/s at
 * least twice its, and at most 6 Redis commands per acquisition (top-level,
 * and all the server ran, scripts' inner commands included). */
static const bench_contend_goal_t lock_goals[] = {
    {"transfers_per_s", NULL, ">= 2"},
    {"redis_cpu_us_per_acq", NULL, "<= 1"},
    {"toplevel_cmds_per_acq", "<= 6", ""},
    {"server_cmds_per_acq", "<= 6", ""},
    {NULL, NULL, NULL},
};

static const bench_contend_impl_t lock_impl = {
    .impl = "latchkey",
    .variant = "lock",
    .ordered = 0,
    .open = lock_open,
    .acquire = lock_acquire,
    .release = lock_release,
    .close = lock_close,
    .limit_impl = "poll-10ms",
    .goals = lock_goals,
};

int main(int argc, char **argv) { return bench_contend_main(argc, argv, &lock_impl); }
