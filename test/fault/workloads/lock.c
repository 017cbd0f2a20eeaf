/* Nemesis workload: the reentrant lock (fenced; watchdog-renewed or with an
 * explicit lease), one name shared by every worker (engine: excl.h). */
#include "excl.h"

WL_EXCL_GLUE(lk_lock_t, lk_lock)

static int acquire(void *o, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w) {
  lk_lock_opts_t opts;
  (void)side;
  lk_lock_opts_init(&opts);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.fenced = 1;
  return lk_lock_acquire(o, &opts, on_acquired, w);
}

WL_EXCL_SIDELESS(lk_lock)

static const wl_excl_ops_t ops = {"lock", "nem-lock", 0, create, acquire, release,
                                  is_held, token, close_obj, NULL, NULL};

WL_EXCL_WORKLOAD(wl_lock, ops, "lock", "nem-lock")
