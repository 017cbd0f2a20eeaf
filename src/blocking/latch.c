/* The blocking countdown latch (docs/latch.md): lk_latch_t per thread, so
 * any number of threads await at once (one object has one operation
 * pending). The handle keeps the options each object is made with. */
#include "blocking/blocking_internal.h"

struct lk_blocking_latch_s {
  lk__bl_handle_t h; /* first: handle.c frees the whole */
  lk_latch_opts_t opts;
};

enum { V_TRY_SET, V_COUNT_DOWN, V_GET_COUNT, V_AWAIT, V_DELETE };

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
  lk_blocking_latch_t *l = (lk_blocking_latch_t *)slot->h;
  lk_latch_t *obj = NULL;
  int rc = lk_latch_new(lk__bl_client(l->h.b), l->h.name, &l->opts, &obj);
  *out = lk_latch_handle(obj);
  return rc;
}

LK__BL_DONE(latch)

static int start(lk_handle_t *h, lk__bl_op_t *op) {
  lk_latch_t *obj = lk_handle_as_latch(h);
  switch (op->verb) {
  case V_TRY_SET:
    return lk_latch_try_set_count(obj, op->n, bl_done, op);
  case V_COUNT_DOWN:
    return lk_latch_count_down(obj, bl_done, op);
  case V_GET_COUNT:
    return lk_latch_get_count(obj, bl_done, op);
  case V_AWAIT:
    return lk_latch_await(obj, op->n, bl_done, op);
  default:
    return lk_latch_delete(obj, bl_done, op);
  }
}

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_latch_await((lk_blocking_latch_t *)h, wait_ms);
}

static const lk__bl_kind_t latch_kind = {
    .what = "latch", .kind = LK_KIND_LATCH, .sides = 1, .make = make, .try_any = try_any};

static int run(lk_blocking_latch_t *l, int verb, int64_t n, int64_t *result) {
  lk__bl_op_t op = {
      .start = start, .verb = verb, .flags = verb == V_AWAIT ? LK__BL_CANCELABLE : 0, .n = n};
  return lk__bl_op_run(LK__BL_H(l), &op, result);
}

int lk_blocking_latch_new(lk_blocking_t *b, const char *name, const lk_latch_opts_t *opts,
                          lk_blocking_latch_t **out) {
  int rc;
  lk_blocking_latch_t *l =
      (lk_blocking_latch_t *)lk__bl_handle_alloc(b, &latch_kind, name, sizeof(*l), out, &rc);
  if (l != NULL && opts != NULL)
    l->opts = *opts;
  else if (l != NULL)
    lk_latch_opts_init(&l->opts);
  if (l != NULL && (rc = lk__bl_handle_publish(&l->h)) == 0)
    *out = l;
  return rc;
}

int lk_blocking_latch_try_set_count(lk_blocking_latch_t *l, int64_t count) {
  int64_t r = 0;
  int rc = run(l, V_TRY_SET, count, &r);
  return rc != 0 ? rc : r != 0;
}

int lk_blocking_latch_count_down(lk_blocking_latch_t *l, int64_t *left) {
  return run(l, V_COUNT_DOWN, 0, left);
}

int lk_blocking_latch_get_count(lk_blocking_latch_t *l, int64_t *count) {
  return run(l, V_GET_COUNT, 0, count);
}

int lk_blocking_latch_await(lk_blocking_latch_t *l, int64_t wait_ms) {
  return run(l, V_AWAIT, wait_ms, NULL);
}

int lk_blocking_latch_delete(lk_blocking_latch_t *l) {
  int64_t r = 0;
  int rc = run(l, V_DELETE, 0, &r);
  return rc != 0 ? rc : r != 0;
}

int lk_blocking_latch_close(lk_blocking_latch_t *l) { return lk__bl_handle_close(LK__BL_H(l)); }
