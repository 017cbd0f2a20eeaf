/* The blocking rate limiter (docs/ratelimiter.md): lk_ratelimiter_t per
 * thread (handle.c), so threads wait for permits side by side. Permits are
 * spent, never given back: nothing per thread to track. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_ratelimiter_s {
  lk__bl_handle_t h;
};

enum { V_ACQUIRE, V_TRY_SET_RATE, V_SET_RATE, V_AVAILABLE };

typedef struct {
  lk__bl_call_t call;
  int verb;
  lk_ratelimiter_opts_t opts;
  const lk_ratelimiter_config_t *cfg;
} rl_call_t;

static void on_closed(lk_ratelimiter_t *obj) {
  lk__bl_slot_closed(lk_ratelimiter_get_data(obj));
}

static int open_obj(lk__bl_slot_t *slot) {
  lk_ratelimiter_t *obj = NULL;
  int rc = lk_ratelimiter_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc != 0)
    return rc;
  lk_ratelimiter_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_ratelimiter_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t rl_kind = {"ratelimiter", open_obj, close_obj};

static void on_done(lk_ratelimiter_t *obj, int status, void *arg) {
  rl_call_t *c = arg;
  lk__bl_finish(&c->call, status, lk_ratelimiter_result(obj));
}

static int start(lk__bl_call_t *call) {
  rl_call_t *c = (rl_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_ratelimiter_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_ACQUIRE:
    rc = lk_ratelimiter_acquire(obj, &c->opts, on_done, c);
    break;
  case V_TRY_SET_RATE:
    rc = lk_ratelimiter_try_set_rate(obj, c->cfg, on_done, c);
    break;
  case V_SET_RATE:
    rc = lk_ratelimiter_set_rate(obj, c->cfg, on_done, c);
    break;
  default:
    rc = lk_ratelimiter_available(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_ratelimiter_cancel(call->slot->obj); }

static int run(lk_blocking_ratelimiter_t *r, int verb, const lk_ratelimiter_opts_t *opts,
               const lk_ratelimiter_config_t *cfg, int64_t *result) {
  rl_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(r ? &r->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, r->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c.verb = verb;
  c.cfg = cfg;
  if (opts != NULL)
    c.opts = *opts;
  rc = lk__bl_run(&c.call);
  if (rc == 0 && result != NULL)
    *result = c.call.result;
  return rc;
}

int lk_blocking_ratelimiter_new(lk_blocking_t *b, const char *name,
                                lk_blocking_ratelimiter_t **out) {
  lk_blocking_ratelimiter_t *r;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  r = lk__calloc(1, sizeof(*r));
  if (r == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&r->h, b, &rl_kind, name);
  if (rc != 0) {
    lk__free(r);
    return rc;
  }
  rc = lk__bl_register_handle(b, &r->h);
  if (rc != 0) {
    lk__bl_handle_free(&r->h, 1);
    return rc;
  }
  *out = r;
  return 0;
}

int lk_blocking_ratelimiter_try_set_rate(lk_blocking_ratelimiter_t *r,
                                         const lk_ratelimiter_config_t *cfg) {
  int64_t v = 0;
  int rc = cfg == NULL ? LK_EINVAL : run(r, V_TRY_SET_RATE, NULL, cfg, &v);
  return rc != 0 ? rc : v != 0;
}

int lk_blocking_ratelimiter_set_rate(lk_blocking_ratelimiter_t *r,
                                     const lk_ratelimiter_config_t *cfg) {
  return cfg == NULL ? LK_EINVAL : run(r, V_SET_RATE, NULL, cfg, NULL);
}

int lk_blocking_ratelimiter_acquire(lk_blocking_ratelimiter_t *r,
                                    const lk_ratelimiter_opts_t *opts) {
  lk_ratelimiter_opts_t o;
  if (opts == NULL) {
    lk_ratelimiter_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(r, V_ACQUIRE, opts, NULL, NULL);
}

int lk_blocking_ratelimiter_try(lk_blocking_ratelimiter_t *r, int64_t permits,
                                int64_t wait_ms) {
  lk_ratelimiter_opts_t o;
  lk_ratelimiter_opts_init(&o);
  o.permits = permits;
  o.wait_ms = wait_ms;
  return run(r, V_ACQUIRE, &o, NULL, NULL);
}

int lk_blocking_ratelimiter_available(lk_blocking_ratelimiter_t *r, int64_t *out) {
  return run(r, V_AVAILABLE, NULL, NULL, out);
}

int lk_blocking_ratelimiter_close(lk_blocking_ratelimiter_t *r) {
  return lk__bl_handle_close(r ? &r->h : NULL);
}
