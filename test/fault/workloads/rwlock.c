/* Nemesis workload: the read/write lock, 70% read holds and 30% write
 * holds (fenced; watchdog-renewed or with an explicit lease), one name
 * shared by every worker (engine: excl.h). S6: a writer is never alongside
 * anyone; tokens of write holds strictly increase. */
#include "excl.h"

static lk_rwlock_side_t rw_side(int side) { return side == WL_SIDE_WRITE ? LK_RW_WRITE : LK_RW_READ; }

static void on_acquired(lk_rwlock_t *l, int status, void *arg) {
  (void)l;
  wl_excl_acquired(arg, status);
}
static void on_released(lk_rwlock_t *l, int status, void *arg) {
  (void)l;
  wl_excl_released(arg, status);
}
static void on_lost(lk_rwlock_t *l, int status, void *arg) {
  (void)l;
  (void)status;
  wl_excl_lost(arg);
}
static void on_closed(lk_rwlock_t *l) { wl_excl_closed(lk_rwlock_get_data(l)); }

static void *create(nem_ctx_t *ctx, const char *key, wl_excl_t *w) {
  lk_rwlock_t *l = NULL;
  if (lk_rwlock_new(ctx->client, key, &l) != 0)
    return NULL;
  lk_rwlock_set_lost_cb(l, on_lost, w);
  lk_rwlock_set_data(l, w);
  return l;
}
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
static int close_obj(void *o, wl_excl_t *w) {
  (void)w;
  return lk_rwlock_close(o, on_closed);
}

static uint32_t holds(const void *o, int side) { return lk_rwlock_hold_count(o, rw_side(side)); }

static const wl_excl_ops_t ops = {"rwlock", "nem-rwlock", 1, create, acquire, release,
                                  is_held, token, close_obj, holds, NULL};

static void *wl_start(nem_ctx_t *ctx, uint16_t obj) { return wl_excl_start(&ops, ctx, obj); }
static size_t wl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv) {
  return wl_excl_check(h, obj, srv, ops.name, ops.key, 1);
}

static nem_workload_t wl_rwlock = {.name = "rwlock", .start = wl_start, .stop = wl_excl_stop,
                                   .check = wl_check, .dump = wl_excl_dump, .wipe_ok = 1,
                                   .key = "nem-rwlock"};
NEM_WORKLOAD(wl_rwlock)
