/* Nemesis workload: the reentrant lock (fenced; watchdog-renewed or with an
 * explicit lease), one name shared by every worker (engine: excl.h). */
#include "excl.h"

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)l;
  wl_excl_acquired(arg, status);
}
static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)l;
  wl_excl_released(arg, status);
}
static void on_lost(lk_lock_t *l, int status, void *arg) {
  (void)l;
  (void)status;
  wl_excl_lost(arg);
}
static void on_closed(lk_lock_t *l) { wl_excl_closed(lk_lock_get_data(l)); }

static void *create(nem_ctx_t *ctx, const char *key, wl_excl_t *w) {
  lk_lock_t *l = NULL;
  if (lk_lock_new(ctx->client, key, &l) != 0)
    return NULL;
  lk_lock_set_lost_cb(l, on_lost, w);
  lk_lock_set_data(l, w);
  return l;
}
static int acquire(void *o, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w) {
  lk_lock_opts_t opts;
  (void)side;
  lk_lock_opts_init(&opts);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.fenced = 1;
  return lk_lock_acquire(o, &opts, on_acquired, w);
}
static int release(void *o, int side, wl_excl_t *w) {
  (void)side;
  return lk_lock_release(o, on_released, w);
}
static int is_held(const void *o, int side) {
  (void)side;
  return lk_lock_is_held(o);
}
static int64_t token(const void *o) { return lk_lock_token(o); }
static int close_obj(void *o, wl_excl_t *w) {
  (void)w;
  return lk_lock_close(o, on_closed);
}

static const wl_excl_ops_t ops = {"lock", "nem-lock", 0, create, acquire, release,
                                  is_held, token, close_obj, NULL, NULL};

static void *wl_start(nem_ctx_t *ctx, uint16_t obj) { return wl_excl_start(&ops, ctx, obj); }
static size_t wl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv) {
  return wl_excl_check(h, obj, srv, ops.name, ops.key, 0);
}

static nem_workload_t wl_lock = {.name = "lock", .start = wl_start, .stop = wl_excl_stop,
                                 .check = wl_check, .dump = wl_excl_dump, .wipe_ok = 1,
                                 .key = "nem-lock"};
NEM_WORKLOAD(wl_lock)
