/* The blocking countdown latch (docs/latch.md): lk_latch_t per thread, so
 * any number of threads await at once (one object has one operation
 * pending). The handle keeps the options each object is made with. */
#include "blocking/blocking_internal.h"

struct lk_blocking_latch_s {
  lk__bl_handle_t h; /* first: handle.c frees the whole */
  lk_latch_opts_t opts;
};

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
  lk_blocking_latch_t *l = (lk_blocking_latch_t *)slot->h;
  lk_latch_t *obj = NULL;
  int rc = lk_latch_new(lk__bl_client(l->h.b), l->h.name, &l->opts, &obj);
  *out = lk_latch_handle(obj);
  return rc;
}

LK__BL_DONE(latch)

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_latch_await((lk_blocking_latch_t *)h, wait_ms);
}

static const lk__bl_kind_t latch_kind = {
    .what = "latch", .kind = LK_KIND_LATCH, .sides = 1, .make = make, .try_any = try_any};

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

static int start_try_set(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_latch_try_set_count(lk_handle_as_latch(h), op->n, bl_done, op);
}

int lk_blocking_latch_try_set_count(lk_blocking_latch_t *l, int64_t count) {
  lk__bl_op_t op = {.start = start_try_set, .n = count};
  return lk__bl_yes_no(LK__BL_H(l), &op);
}

static int start_count_down(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_latch_count_down(lk_handle_as_latch(h), bl_done, op);
}

int lk_blocking_latch_count_down(lk_blocking_latch_t *l, int64_t *left) {
  lk__bl_op_t op = {.start = start_count_down};
  return lk__bl_op_run(LK__BL_H(l), &op, left);
}

static int start_get_count(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_latch_get_count(lk_handle_as_latch(h), bl_done, op);
}

int lk_blocking_latch_get_count(lk_blocking_latch_t *l, int64_t *count) {
  lk__bl_op_t op = {.start = start_get_count};
  return lk__bl_op_run(LK__BL_H(l), &op, count);
}

static int start_await(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_latch_await(lk_handle_as_latch(h), op->n, bl_done, op);
}

int lk_blocking_latch_await(lk_blocking_latch_t *l, int64_t wait_ms) {
  lk__bl_op_t op = {.start = start_await, .flags = LK__BL_CANCELABLE, .n = wait_ms};
  return lk__bl_op_run(LK__BL_H(l), &op, NULL);
}

static int start_delete(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_latch_delete(lk_handle_as_latch(h), bl_done, op);
}

int lk_blocking_latch_delete(lk_blocking_latch_t *l) {
  lk__bl_op_t op = {.start = start_delete};
  return lk__bl_yes_no(LK__BL_H(l), &op);
}

int lk_blocking_latch_close(lk_blocking_latch_t *l) { return lk__bl_handle_close(LK__BL_H(l)); }
