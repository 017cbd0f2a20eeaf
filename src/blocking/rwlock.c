/* The blocking read/write lock: lk_rwlock_t per thread, owner = the
 * thread; slot index 0 = the read side, 1 = the write side. The generic
 * verbs take the write side (as latchkey::shared_mutex's lock()). */
#include "blocking/blocking_internal.h"

struct lk_blocking_rwlock_s {
  lk__bl_handle_t h;
};

static int side_ok(lk_rwlock_side_t side) { return side == LK_RW_READ || side == LK_RW_WRITE; }
static int side_index(lk_rwlock_side_t side) { return side == LK_RW_WRITE; }

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
  lk_rwlock_t *obj = NULL;
  int rc = lk_rwlock_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = lk_rwlock_set_owner(obj, NULL, slot->tid);
  *out = lk_rwlock_handle(obj);
  return rc;
}

static void sync_counts(lk__bl_slot_t *slot, lk_handle_t *h) {
  lk_rwlock_t *obj = lk_handle_as_rwlock(h);
  atomic_store(&slot->count[0], (int64_t)lk_rwlock_hold_count(obj, LK_RW_READ));
  atomic_store(&slot->count[1], (int64_t)lk_rwlock_hold_count(obj, LK_RW_WRITE));
}

LK__BL_DONE(rwlock)

/* The side a verb takes, from the slot index it counts at. */
static lk_rwlock_side_t side_of(const lk__bl_op_t *op) {
  return op->side == 1 ? LK_RW_WRITE : LK_RW_READ;
}

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_rwlock_acquire(lk_handle_as_rwlock(h), side_of(op), op->opts, bl_done, op);
}

static int start_release(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_rwlock_release(lk_handle_as_rwlock(h), side_of(op), bl_done, op);
}

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_rwlock_try((lk_blocking_rwlock_t *)h, LK_RW_WRITE, wait_ms);
}
static int release_any(lk__bl_handle_t *h) {
  return lk_blocking_rwlock_release((lk_blocking_rwlock_t *)h, LK_RW_WRITE);
}

static const lk__bl_kind_t rw_kind = {
    .what = "rwlock", .kind = LK_KIND_RWLOCK, .tells_lost = 1, .has_token = 1, .sides = 2,
    .make = make, .sync = sync_counts, .try_any = try_any, .release_any = release_any,
    .holds = 1};

static int acquire(lk_blocking_rwlock_t *l, lk_rwlock_side_t side, const lk_rwlock_opts_t *opts) {
  if (!side_ok(side))
    return LK_EINVAL;
  return lk__bl_hold_run(LK__BL_H(l), start_acquire, side_index(side), opts, opts->lease_ms);
}

int lk_blocking_rwlock_new(lk_blocking_t *b, const char *name, lk_blocking_rwlock_t **out) {
  return lk__bl_handle_new(b, &rw_kind, name, sizeof(lk_blocking_rwlock_t), out);
}

int lk_blocking_rwlock_acquire(lk_blocking_rwlock_t *l, lk_rwlock_side_t side,
                               const lk_rwlock_opts_t *opts) {
  lk_rwlock_opts_t o;
  LK__BL_OPTS_OR_FOREVER(lk_rwlock_opts_init, opts, o);
  return acquire(l, side, opts);
}

int lk_blocking_rwlock_try(lk_blocking_rwlock_t *l, lk_rwlock_side_t side, int64_t wait_ms) {
  lk_rwlock_opts_t o;
  lk_rwlock_opts_init(&o);
  o.wait_ms = wait_ms;
  return acquire(l, side, &o);
}

int lk_blocking_rwlock_release(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  lk__bl_op_t op = {
      .start = start_release, .flags = LK__BL_RELEASES, .side = side_index(side)};
  return side_ok(side) ? lk__bl_op_run(LK__BL_H(l), &op, NULL) : LK_EINVAL;
}

int lk_blocking_rwlock_is_held(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  return side_ok(side) && lk__bl_held(LK__BL_H(l), side_index(side));
}

uint32_t lk_blocking_rwlock_hold_count(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  return side_ok(side) ? (uint32_t)lk__bl_count(LK__BL_H(l), side_index(side), 1) : 0;
}

int lk_blocking_rwlock_close(lk_blocking_rwlock_t *l) { return lk__bl_handle_close(LK__BL_H(l)); }
