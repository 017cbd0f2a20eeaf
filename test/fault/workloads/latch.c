/* Nemesis workload: a strict countdown latch armed with NEM_LATCH_COUNT in
 * the set-up; every worker counts down every 100-400 ms until it sees it
 * open, and awaits it in a loop. S7: no await sees it open before the
 * invocation of the NEM_LATCH_COUNT-th count-down (every invocation counts,
 * whatever its outcome, so the check stays sound when outcomes are unknown),
 * and a lost key is never taken for open (strict mode: LK_ELATCHLOST would
 * be a finding here, since the server keeps its data). */
#include <stdio.h>
#include <stdlib.h>

#include "../nemesis.h"

#define LATCH_KEY "nem-latch"
#define NEM_LATCH_COUNT 150

typedef struct {
  nem_ctx_t *ctx;
  uint16_t obj;
  lk_latch_t *cd, *aw;
  uv_timer_t cd_timer, aw_timer;
  int cd_busy, aw_busy, opened, closing, open_objects;
  uint64_t cd_call, aw_call;
  int64_t aw_wait;
} wl_latch_t;

static const int cd_ok[] = {LK_ECONN, LK_EUNKNOWN, LK_ELOADING, LK_ESERVERBUSY, LK_ECANCELED, 0};
static const int aw_ok[] = {LK_ETIMEDOUT, LK_ECONN,       LK_EUNKNOWN, LK_ELOADING,
                            LK_ESERVERBUSY, LK_ECANCELED, 0};

static void on_cd_timer(uv_timer_t *t);
static void on_aw_timer(uv_timer_t *t);

static void on_counted(lk_latch_t *l, int status, void *arg) {
  wl_latch_t *w = arg;
  uint64_t now = uv_hrtime();
  w->cd_busy = 0;
  nem_record(w->ctx, RT_OP_COUNTDOWN, w->obj, w->cd_call, now, status,
             status == 0 ? lk_latch_result(l) : -2);
  nem_status(w->ctx, "latch.count_down", status, cd_ok);
  if (status == 0 && lk_latch_result(l) <= 0)
    w->opened = 1;
  if (!w->closing && !w->ctx->stopping && !w->opened)
    uv_timer_start(&w->cd_timer, on_cd_timer, (uint64_t)nem_between(w->ctx, 100, 400), 0);
}

static void on_cd_timer(uv_timer_t *t) {
  wl_latch_t *w = t->data;
  if (w->closing || w->ctx->stopping || w->cd_busy)
    return;
  w->cd_call = uv_hrtime();
  int rc = lk_latch_count_down(w->cd, on_counted, w);
  if (rc != 0) {
    /* Not even sent: still an invocation for the check (harmless there). */
    nem_record(w->ctx, RT_OP_COUNTDOWN, w->obj, w->cd_call, uv_hrtime(), rc, -2);
    nem_status(w->ctx, "latch.count_down_call", rc, NULL);
    return;
  }
  w->cd_busy = 1;
}

static void on_awaited(lk_latch_t *l, int status, void *arg) {
  wl_latch_t *w = arg;
  (void)l;
  uint64_t now = uv_hrtime();
  w->aw_busy = 0;
  nem_record(w->ctx, RT_OP_AWAIT, w->obj, w->aw_call, now, status, status == 0);
  nem_status(w->ctx, "latch.await", status, aw_ok);
  if (!w->closing && !w->ctx->stopping)
    uv_timer_start(&w->aw_timer, on_aw_timer, (uint64_t)nem_between(w->ctx, 5, 100), 0);
}

static void on_aw_timer(uv_timer_t *t) {
  wl_latch_t *w = t->data;
  if (w->closing || w->ctx->stopping || w->aw_busy)
    return;
  w->aw_wait = nem_between(w->ctx, 0, 4) == 0 ? 0 : nem_between(w->ctx, 100, 1500);
  w->aw_call = uv_hrtime();
  int rc = lk_latch_await(w->aw, w->aw_wait, on_awaited, w);
  if (rc != 0) {
    nem_status(w->ctx, "latch.await_call", rc, NULL);
    uv_timer_start(&w->aw_timer, on_aw_timer, 10, 0);
    return;
  }
  w->aw_busy = 1;
}

static void one_closed(wl_latch_t *w) {
  if (--w->open_objects > 0)
    return;
  nem_workload_closed(w->ctx);
  free(w);
}

static void on_latch_closed(lk_latch_t *l) { one_closed(lk_latch_get_data(l)); }

static void on_timer_closed(uv_handle_t *h) {
  wl_latch_t *w = h->data;
  lk_latch_t *l = (uv_timer_t *)h == &w->cd_timer ? w->cd : w->aw;
  lk_latch_set_data(l, w);
  if (lk_latch_close(l, on_latch_closed) != 0)
    one_closed(w);
}

static void *wl_start(nem_ctx_t *ctx, uint16_t obj) {
  wl_latch_t *w = calloc(1, sizeof *w);
  lk_latch_opts_t o;
  if (w == NULL)
    return NULL;
  w->ctx = ctx;
  w->obj = obj;
  lk_latch_opts_init(&o);
  o.strict = 1;
  if (lk_latch_new(ctx->client, LATCH_KEY, &o, &w->cd) != 0 ||
      lk_latch_new(ctx->client, LATCH_KEY, &o, &w->aw) != 0) {
    free(w);
    return NULL;
  }
  w->open_objects = 2;
  uv_timer_init(ctx->loop, &w->cd_timer);
  uv_timer_init(ctx->loop, &w->aw_timer);
  w->cd_timer.data = w->aw_timer.data = w;
  uv_timer_start(&w->cd_timer, on_cd_timer, (uint64_t)nem_between(ctx, 100, 400), 0);
  uv_timer_start(&w->aw_timer, on_aw_timer, (uint64_t)nem_between(ctx, 0, 50), 0);
  return w;
}

static void wl_stop(void *state) {
  wl_latch_t *w = state;
  if (w->closing)
    return;
  w->closing = 1; /* pending operations end with LK_ECANCELED on close */
  uv_close((uv_handle_t *)&w->cd_timer, on_timer_closed);
  uv_close((uv_handle_t *)&w->aw_timer, on_timer_closed);
}

static void wl_setup(rt_server_t *srv, uint16_t obj) {
  (void)obj;
  free(rt_cmd_str(srv, "SET %s %d", LATCH_KEY, NEM_LATCH_COUNT));
}

static size_t wl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv) {
  rt_check_t c;
  size_t v = 0;
  rt_check_latch(h, obj, NEM_LATCH_COUNT, &c);
  v += nem_report(&c, "latch");
  size_t opened = 0;
  for (size_t i = 0; i < h->n; i++)
    opened += h->v[i].obj == obj && h->v[i].op == RT_OP_AWAIT && h->v[i].extra == 1;
  printf("nemesis: latch: %zu awaits saw it open; key %s\n", opened,
         rt_cmd_int(srv, "EXISTS %s", LATCH_KEY) ? "still armed" : "gone (open)");
  return v;
}

static nem_workload_t wl_latch = {.name = "latch", .setup = wl_setup, .start = wl_start,
                                  .stop = wl_stop, .check = wl_check, .key = LATCH_KEY};
NEM_WORKLOAD(wl_latch)
