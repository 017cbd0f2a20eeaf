/* Nemesis workload: the fair lock (fenced; watchdog-renewed or with an
 * explicit lease), one name shared by every worker (engine: excl.h). FIFO
 * order is not checked here: under faults a waiter may legitimately drop out
 * of the queue (its waiter timeout); test/fair and the fault suite check it. */
#include "excl.h"
#include "fair/fair_internal.h"

WL_EXCL_GLUE(lk_fair_t, lk_fair)

static int acquire(void *o, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w) {
  lk_fair_opts_t opts;
  (void)side;
  lk_fair_opts_init(&opts);
  opts.waiter_timeout_ms = 2000;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.fenced = 1;
  return lk_fair_acquire(o, &opts, on_acquired, w);
}

WL_EXCL_SIDELESS(lk_fair)

static void dump(const void *o, FILE *out) {
  const lk_fair_t *f = o;
  fprintf(out, "  fair: owner %s holds %u lost %d maybe_queued %d outcome_open %d position %lld\n",
          f->owner, f->hold.count, (int)f->base.lost, f->maybe_queued, (int)f->base.outcome_open,
          (long long)f->position);
}

static const wl_excl_ops_t ops = {"fair", "nem-fair", 0, create, acquire, release,
                                  is_held, token, close_obj, NULL, dump};

WL_EXCL_WORKLOAD(wl_fair, ops, "fair", "nem-fair")
