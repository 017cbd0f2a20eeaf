/* The blocking rate limiter (docs/ratelimiter.md): lk_ratelimiter_t per
 * thread, so threads wait for permits side by side. Permits are spent,
 * never given back: nothing per thread to track. */
#include "blocking/blocking_internal.h"

struct lk_blocking_ratelimiter_s {
  lk__bl_handle_t h;
};

LK__BL_MAKE(ratelimiter)

LK__BL_DONE(ratelimiter)

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_ratelimiter_try((lk_blocking_ratelimiter_t *)h, 1, wait_ms);
}

static const lk__bl_kind_t rl_kind = {.what = "ratelimiter",
                                      .kind = LK_KIND_RATELIMITER,
                                      .sides = 1,
                                      .make = make,
                                      .try_any = try_any};

int lk_blocking_ratelimiter_new(lk_blocking_t *b, const char *name,
                                lk_blocking_ratelimiter_t **out) {
  return lk__bl_handle_new(b, &rl_kind, name, sizeof(lk_blocking_ratelimiter_t), out);
}

static int start_try_set_rate(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_ratelimiter_try_set_rate(lk_handle_as_ratelimiter(h), op->arg, bl_done, op);
}

int lk_blocking_ratelimiter_try_set_rate(lk_blocking_ratelimiter_t *r,
                                         const lk_ratelimiter_config_t *cfg) {
  lk__bl_op_t op = {.start = start_try_set_rate, .arg = cfg};
  return cfg == NULL ? LK_EINVAL : lk__bl_yes_no(LK__BL_H(r), &op);
}

static int start_set_rate(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_ratelimiter_set_rate(lk_handle_as_ratelimiter(h), op->arg, bl_done, op);
}

int lk_blocking_ratelimiter_set_rate(lk_blocking_ratelimiter_t *r,
                                     const lk_ratelimiter_config_t *cfg) {
  lk__bl_op_t op = {.start = start_set_rate, .arg = cfg};
  return cfg == NULL ? LK_EINVAL : lk__bl_op_run(LK__BL_H(r), &op, NULL);
}

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_ratelimiter_acquire(lk_handle_as_ratelimiter(h), op->opts, bl_done, op);
}

int lk_blocking_ratelimiter_acquire(lk_blocking_ratelimiter_t *r,
                                    const lk_ratelimiter_opts_t *opts) {
  lk_ratelimiter_opts_t o;
  LK__BL_OPTS_OR_FOREVER(lk_ratelimiter_opts_init, opts, o);
  lk__bl_op_t op = {.start = start_acquire, .flags = LK__BL_CANCELABLE, .opts = opts};
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

static int start_available(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_ratelimiter_available(lk_handle_as_ratelimiter(h), bl_done, op);
}

int lk_blocking_ratelimiter_available(lk_blocking_ratelimiter_t *r, int64_t *out) {
  lk__bl_op_t op = {.start = start_available};
  return lk__bl_op_run(LK__BL_H(r), &op, out);
}

int lk_blocking_ratelimiter_close(lk_blocking_ratelimiter_t *r) {
  return lk__bl_handle_close(LK__BL_H(r));
}
