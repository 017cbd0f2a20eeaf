/* Nemesis workload: the read/write lock, 70% read holds and 30% write
 * holds (fenced; watchdog-renewed or with an explicit lease), one name
 * shared by every worker (engine: excl.h). S6: a writer is never alongside
 * anyone; tokens of write holds strictly increase. */
#include "excl.h"

static lk_rwlock_side_t rw_side(int side) { return side == WL_SIDE_WRITE ? LK_RW_WRITE : LK_RW_READ; }

WL_EXCL_GLUE(lk_rwlock_t, lk_rwlock)

static int acquire(void *o, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w) {
  lk_rwlock_opts_t opts;
  lk_rwlock_opts_init(&opts);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.fenced = 1;
  return lk_rwlock_acquire(o, rw_side(side), &opts, on_acquired, w);
}
static int release(void *o, int side, wl_excl_t *w) {
  return lk_rwlock_release(o, rw_side(side), on_released, w);
}
static int is_held(const void *o, int side) { return lk_rwlock_is_held(o, rw_side(side)); }
static int64_t token(const void *o) { return lk_rwlock_token(o); }

static uint32_t holds(const void *o, int side) { return lk_rwlock_hold_count(o, rw_side(side)); }

static const wl_excl_ops_t ops = {"rwlock", "nem-rwlock", 1, create, acquire, release,
                                  is_held, token, close_obj, holds, NULL};

WL_EXCL_WORKLOAD(wl_rwlock, ops, "rwlock", "nem-rwlock")
