/* The blocking rate limiter (docs/ratelimiter.md): lk_ratelimiter_t per
 * thread, so threads wait for permits side by side. Permits are spent,
 * never given back: nothing per thread to track. */
#include "blocking/blocking_internal.h"

struct lk_blocking_ratelimiter_s {
  lk__bl_handle_t h;
};

enum { V_ACQUIRE, V_TRY_SET_RATE, V_SET_RATE, V_AVAILABLE };

LK__BL_MAKE(ratelimiter)

LK__BL_DONE(ratelimiter)

static int start(lk_handle_t *h, lk__bl_op_t *op) {
  lk_ratelimiter_t *obj = lk_handle_as_ratelimiter(h);
  switch (op->verb) {
  case V_ACQUIRE:
    return lk_ratelimiter_acquire(obj, op->opts, bl_done, op);
  case V_TRY_SET_RATE:
    return lk_ratelimiter_try_set_rate(obj, op->arg, bl_done, op);
  case V_SET_RATE:
    return lk_ratelimiter_set_rate(obj, op->arg, bl_done, op);
  default:
    return lk_ratelimiter_available(obj, bl_done, op);
  }
}

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_ratelimiter_try((lk_blocking_ratelimiter_t *)h, 1, wait_ms);
}

static const lk__bl_kind_t rl_kind = {.what = "ratelimiter",
                                      .kind = LK_KIND_RATELIMITER,
                                      .sides = 1,
                                      .make = make,
                                      .try_any = try_any};

static int run(lk_blocking_ratelimiter_t *r, int verb, const void *arg, int64_t *result) {
  lk__bl_op_t op = {.start = start, .verb = verb, .arg = arg};
  return lk__bl_op_run(LK__BL_H(r), &op, result);
}

int lk_blocking_ratelimiter_new(lk_blocking_t *b, const char *name,
                                lk_blocking_ratelimiter_t **out) {
  return lk__bl_handle_new(b, &rl_kind, name, sizeof(lk_blocking_ratelimiter_t), out);
}

int lk_blocking_ratelimiter_try_set_rate(lk_blocking_ratelimiter_t *r,
                                         const lk_ratelimiter_config_t *cfg) {
  int64_t v = 0;
  int rc = cfg == NULL ? LK_EINVAL : run(r, V_TRY_SET_RATE, cfg, &v);
  return rc != 0 ? rc : v != 0;
}

int lk_blocking_ratelimiter_set_rate(lk_blocking_ratelimiter_t *r,
                                     const lk_ratelimiter_config_t *cfg) {
  return cfg == NULL ? LK_EINVAL : run(r, V_SET_RATE, cfg, NULL);
}

int lk_blocking_ratelimiter_acquire(lk_blocking_ratelimiter_t *r,
                                    const lk_ratelimiter_opts_t *opts) {
  lk_ratelimiter_opts_t o;
  LK__BL_OPTS_OR_FOREVER(lk_ratelimiter_opts_init, opts, o);
  lk__bl_op_t op = {.start = start, .verb = V_ACQUIRE, .flags = LK__BL_CANCELABLE, .opts = opts};
  return lk__bl_op_run(LK__BL_H(r), &op, NULL);
}

int lk_blocking_ratelimiter_try(lk_blocking_ratelimiter_t *r, int64_t permits,
                                int64_t wait_ms) {
  lk_ratelimiter_opts_t o;
  lk_ratelimiter_opts_init(&o);
  o.permits = permits;
  o.wait_ms = wait_ms;
  return lk_blocking_ratelimiter_acquire(r, &o);
}

int lk_blocking_ratelimiter_available(lk_blocking_ratelimiter_t *r, int64_t *out) {
  return run(r, V_AVAILABLE, NULL, out);
}

int lk_blocking_ratelimiter_close(lk_blocking_ratelimiter_t *r) {
  return lk__bl_handle_close(LK__BL_H(r));
}
