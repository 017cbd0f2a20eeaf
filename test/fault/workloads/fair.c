/* Nemesis workload: the fair lock (fenced; watchdog-renewed or with an
 * explicit lease), one name shared by every worker (engine: excl.h). FIFO
 * order is not checked here: under faults a waiter may legitimately drop out
 * of the queue (its waiter timeout); test/fair and the fault suite check it. */
#include "excl.h"
#include "fair/fair_internal.h"

static void on_acquired(lk_fair_t *l, int status, void *arg) {
  (void)l;
  wl_excl_acquired(arg, status);
}
static void on_released(lk_fair_t *l, int status, void *arg) {
  (void)l;
  wl_excl_released(arg, status);
}
static void on_lost(lk_fair_t *l, int status, void *arg) {
  (void)l;
  (void)status;
  wl_excl_lost(arg);
}
static void on_closed(lk_fair_t *l) { wl_excl_closed(lk_fair_get_data(l)); }

static void *create(nem_ctx_t *ctx, const char *key, wl_excl_t *w) {
  lk_fair_t *l = NULL;
  if (lk_fair_new(ctx->client, key, &l) != 0)
    return NULL;
  lk_fair_set_lost_cb(l, on_lost, w);
  lk_fair_set_data(l, w);
  return l;
}
static int acquire(void *o, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w) {
  lk_fair_opts_t opts;
  (void)side;
  lk_fair_opts_init(&opts);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.fenced = 1;
  opts.waiter_timeout_ms = 2000;
  return lk_fair_acquire(o, &opts, on_acquired, w);
}
static int release(void *o, int side, wl_excl_t *w) {
  (void)side;
  return lk_fair_release(o, on_released, w);
}
static int is_held(const void *o, int side) {
  (void)side;
  return lk_fair_is_held(o);
}
static int64_t token(const void *o) { return lk_fair_token(o); }
static int close_obj(void *o, wl_excl_t *w) {
  (void)w;
  return lk_fair_close(o, on_closed);
}

static void dump(const void *o, FILE *out) {
  const lk_fair_t *f = o;
  fprintf(out, "  fair: owner %s holds %u lost %d maybe_queued %d outcome_open %d position %lld\n",
          f->owner, f->hold.count, (int)f->base.lost, f->maybe_queued, (int)f->base.outcome_open,
          (long long)f->position);
}

static const wl_excl_ops_t ops = {"fair", "nem-fair", 0, create, acquire, release,
                                  is_held, token, close_obj, NULL, dump};

static void *wl_start(nem_ctx_t *ctx, uint16_t obj) { return wl_excl_start(&ops, ctx, obj); }
static size_t wl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv) {
  return wl_excl_check(h, obj, srv, ops.name, ops.key, 0);
}

static nem_workload_t wl_fair = {.name = "fair", .start = wl_start, .stop = wl_excl_stop,
                                 .check = wl_check, .dump = wl_excl_dump, .wipe_ok = 1,
                                 .key = "nem-fair"};
NEM_WORKLOAD(wl_fair)
