/* The lock-like workload engine (excl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "excl.h"
#include "core/internal.h"
#include "core/object.h"

enum { IDLE, THINKING, ACQUIRING, HOLDING, RELEASING };

struct wl_excl_s {
  const wl_excl_ops_t *ops;
  nem_ctx_t *ctx;
  uint16_t obj;
  void *o;
  uv_timer_t timer;
  int state;
  int closing;
  int side;
  uint64_t t_call, t_acq, last_ok, hold_until, t_rel;
  int64_t wait_ms;
  int64_t token;
  int held_once;
  char what_acquire[40], what_release[40], what_granted[48];
};

/* LK_EUPGRADE: the read/write lock refuses a write while this owner may
 * still hold read on the server (a read acquire or release whose outcome
 * stayed unknown); documented, and counted in the worker's summary. */
static const int acquire_ok[] = {LK_ETIMEDOUT, LK_ECONN,       LK_EUNKNOWN,  LK_ELEASELOST,
                                 LK_ETOKEN,    LK_ELOADING,    LK_ESERVERBUSY, LK_ECANCELED,
                                 LK_EUPGRADE,  0};
static const int release_ok[] = {LK_ENOTOWNER, LK_ECONN, LK_EUNKNOWN, LK_ELEASELOST,
                                 LK_ECANCELED, LK_ELOADING, LK_ESERVERBUSY, 0};

static void next_round(wl_excl_t *w);

static uint16_t side_op(int side) {
  return side == WL_SIDE_READ ? RT_OP_READ : side == WL_SIDE_WRITE ? RT_OP_WRITE : RT_OP_HOLD;
}

static void poll_held(wl_excl_t *w) {
  uint64_t t = uv_hrtime(); /* read before asking: held at t if held now */
  if (w->ops->is_held(w->o, w->side)) {
    w->last_ok = t;
    w->held_once = 1;
  }
}

static void record_hold(wl_excl_t *w) {
  if (w->held_once)
    nem_record(w->ctx, side_op(w->side), w->obj, w->t_acq, w->last_ok, w->token, 0);
  w->held_once = 0;
}

void wl_excl_released(wl_excl_t *w, int status) {
  uint64_t now = uv_hrtime();
  /* For post-mortems; a wait of -1 keeps it out of the bounded-wait check. */
  nem_record(w->ctx, RT_OP_CALL, w->obj, w->t_rel, now, status, -1);
  nem_status(w->ctx, w->what_release, status, release_ok);
  w->state = IDLE;
  next_round(w);
}

static void end_hold(wl_excl_t *w) {
  if (w->closing)
    return;
  uv_timer_stop(&w->timer);
  poll_held(w);
  record_hold(w);
  w->state = RELEASING;
  w->t_rel = uv_hrtime();
  int rc = w->ops->release(w->o, w->side, w);
  if (rc != 0) {
    /* LK_ELEASELOST: told by on_lost already; LK_ENOTHELD: nothing left. */
    if (rc != LK_ELEASELOST && rc != LK_ENOTHELD)
      nem_status(w->ctx, w->what_release, rc, release_ok);
    w->state = IDLE;
    next_round(w);
  }
}

static void on_hold_timer(uv_timer_t *t) {
  wl_excl_t *w = t->data;
  if (w->state != HOLDING || w->closing)
    return;
  uint64_t now = uv_hrtime();
  poll_held(w);
  if (!w->ops->is_held(w->o, w->side) || now >= w->hold_until)
    end_hold(w);
}

void wl_excl_lost(wl_excl_t *w) {
  uint64_t now = uv_hrtime();
  /* extra: when the section it ends began; -1 when no section was open (a
   * hold whose release ended unknown, found lost later): nobody was acting
   * on it, so S3 has nothing to say about its timing. */
  nem_record(w->ctx, RT_OP_LOST, w->obj, now, now, w->side,
             w->state == HOLDING ? (int64_t)w->t_acq : -1);
  if (w->state == HOLDING)
    end_hold(w); /* the release returns LK_ELEASELOST at once */
}

void wl_excl_acquired(wl_excl_t *w, int status) {
  uint64_t now = uv_hrtime();
  nem_record(w->ctx, RT_OP_CALL, w->obj, w->t_call, now, status, w->wait_ms);
  nem_status(w->ctx, w->what_acquire, status, acquire_ok);
  if (status != 0) {
    w->state = IDLE;
    next_round(w);
    return;
  }
  w->t_acq = now;
  w->token = w->ops->token(w->o);
  /* Every grant's token, held or not, for the check across processes. */
  if (w->token > 0)
    nem_record(w->ctx, RT_OP_GRANT, w->obj, w->t_call, now, w->token, side_op(w->side));
  w->held_once = 0;
  poll_held(w);
  if (!w->held_once) {
    /* Granted, yet past its local deadline already: a success the holder
     * cannot use (it must be reported as a failure). */
    nem_status(w->ctx, w->what_granted, LK_EPROTOCOL, NULL);
  }
  w->state = HOLDING;
  if (w->ctx->stopping || nem_rand(w->ctx) % 10 < 8) {
    rt_sleep_us((unsigned)nem_between(w->ctx, 0, 200)); /* a short section */
    end_hold(w);
    return;
  }
  /* A long section, polling is_held every millisecond: up to 1.5 leases
   * (renewed by the watchdog meanwhile). */
  w->hold_until = now + (uint64_t)nem_between(w->ctx, 1, 3 * w->ctx->lease_ms / 2) * 1000000u;
  uv_timer_start(&w->timer, on_hold_timer, 1, 1);
}

static void on_think(uv_timer_t *t) {
  wl_excl_t *w = t->data;
  if (w->state != THINKING || w->closing)
    return;
  if (w->ctx->stopping) {
    w->state = IDLE;
    next_round(w);
    return;
  }
  w->side = !w->ops->read_write          ? WL_SIDE_EXCL
            : nem_rand(w->ctx) % 10 < 7 ? WL_SIDE_READ
                                         : WL_SIDE_WRITE;
  /* A read hold whose release ended unknown is still counted: asking for
   * write then would be an upgrade (LK_EUPGRADE); re-enter read instead. */
  if (w->side == WL_SIDE_WRITE && w->ops->holds != NULL && w->ops->holds(w->o, WL_SIDE_READ) > 0)
    w->side = WL_SIDE_READ;
  w->wait_ms = nem_between(w->ctx, 0, 4) == 0 ? 0 : nem_between(w->ctx, 50, 1500);
  int64_t lease = nem_between(w->ctx, 0, 3) == 0 ? w->ctx->lease_ms : LK_LEASE_DEFAULT;
  w->t_call = uv_hrtime();
  w->state = ACQUIRING;
  int rc = w->ops->acquire(w->o, w->side, w->wait_ms, lease, w);
  if (rc != 0) {
    nem_status(w->ctx, w->what_acquire, rc, NULL);
    w->state = THINKING;
    uv_timer_start(&w->timer, on_think, 10, 0);
  }
}

void wl_excl_closed(wl_excl_t *w) {
  w->o = NULL;
  nem_workload_closed(w->ctx);
  free(w);
}

static void on_timer_closed(uv_handle_t *h) {
  wl_excl_t *w = h->data;
  int rc = w->ops->close(w->o, w);
  if (rc != 0) {
    nem_status(w->ctx, "close", rc, NULL);
    wl_excl_closed(w);
  }
}

static void close_all(wl_excl_t *w) {
  if (w->closing)
    return;
  if (w->state == HOLDING) {
    uv_timer_stop(&w->timer);
    poll_held(w);
    record_hold(w);
  }
  w->closing = 1;
  uv_close((uv_handle_t *)&w->timer, on_timer_closed);
}

static void next_round(wl_excl_t *w) {
  if (w->closing)
    return;
  if (w->ctx->stopping) {
    close_all(w);
    return;
  }
  w->state = THINKING;
  uv_timer_start(&w->timer, on_think, (uint64_t)nem_between(w->ctx, 0, 5), 0);
}

void *wl_excl_start(const wl_excl_ops_t *ops, nem_ctx_t *ctx, uint16_t obj) {
  wl_excl_t *w = calloc(1, sizeof *w);
  if (w == NULL)
    return NULL;
  w->ops = ops;
  w->ctx = ctx;
  w->obj = obj;
  snprintf(w->what_acquire, sizeof w->what_acquire, "%s.acquire", ops->name);
  snprintf(w->what_release, sizeof w->what_release, "%s.release", ops->name);
  snprintf(w->what_granted, sizeof w->what_granted, "%s.granted_not_held", ops->name);
  w->o = ops->create(ctx, ops->key, w);
  if (w->o == NULL) {
    free(w);
    return NULL;
  }
  uv_timer_init(ctx->loop, &w->timer);
  w->timer.data = w;
  w->state = IDLE;
  next_round(w);
  return w;
}

void wl_excl_dump(void *state, FILE *out) {
  static const char *const names[] = {"idle", "thinking", "acquiring", "holding", "releasing"};
  wl_excl_t *w = state;
  /* Every primitive's object starts with the shared body (core/object.h). */
  const lk__obj_t *b = w->o;
  fprintf(out,
          "  %s: engine %s%s, timer %s; object kind %d, op %s, waiting %d, closing %d, "
          "timer %s, channel %s, client inflight %zu objects %zu closing %d\n",
          w->ops->name, names[w->state], w->closing ? " (closing)" : "",
          uv_is_closing((const uv_handle_t *)&w->timer)
              ? "closing"
              : uv_is_active((const uv_handle_t *)&w->timer) ? "active" : "idle",
          b->kind, b->op ? "in flight" : "none", b->waiting, b->closing,
          b->w == NULL ? "none"
          : uv_is_active((const uv_handle_t *)&b->w->timer) ? "active"
                                                             : "idle",
          b->w != NULL && b->w->sub.chan ? "subscribed" : "none", b->client->inflight,
          b->client->objects,
          b->client->closing);
  if (w->ops->dump != NULL)
    w->ops->dump(w->o, out);
}

void wl_excl_stop(void *state) {
  wl_excl_t *w = state;
  if (w->state != RELEASING)
    close_all(w); /* a pending acquire is canceled by the close */
  /* RELEASING: the release callback sees ctx->stopping and closes. */
}

size_t wl_excl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv, const char *name,
                     const char *key, int read_write) {
  rt_check_t c;
  size_t v = 0;
  uint16_t excl_op = read_write ? RT_OP_WRITE : RT_OP_HOLD;
  if (read_write) {
    rt_check_rw(h, obj, &c);
    v += nem_report(&c, name);
  }
  rt_check_exclusive(h, obj, excl_op, &c);
  v += nem_report(&c, name);
  rt_check_tokens(h, obj, excl_op, &c);
  v += nem_report(&c, name);
  rt_check_grant_tokens(h, obj, &c);
  v += nem_report(&c, name);
  rt_check_lost_first(h, obj, excl_op, &c);
  v += nem_report(&c, name);
  nem_check_bounded(h, obj, nem_reply_timeout_ms(), 1000, &c);
  v += nem_report(&c, name);
  /* Nothing left behind once every worker closed: released, or expired
   * with its lease when a give-back was lost. */
  int64_t end = rt_now_ms() + 2 * nem_lease_ms() + rt_scaled_ms(2000);
  long long exists = 1;
  while ((exists = rt_cmd_int(srv, "EXISTS %s", key)) != 0 && rt_now_ms() < end)
    rt_sleep_ms(20);
  printf("nemesis: %s: key %s after the run\n", name, exists ? "STILL PRESENT" : "gone");
  return v + (exists != 0);
}
