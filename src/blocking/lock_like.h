/* The blocking form of a reentrant lock kind (lock.c: lk_lock_t, fair.c:
 * lk_fair_t), written once: the includer defines
 *   BL_X         the kind's prefix (lock)
 *   BL_A(x)      the async API's name for x (lk_lock_##x)
 *   BL_AS        the handle's conversion (lk_handle_as_lock)
 *   BL_B(x)      the blocking API's name for x (lk_blocking_lock_##x)
 *   BL_KIND      LK_KIND_LOCK
 * and includes this once; the entry points it shares with MultiLock and
 * RedLock are lock_verbs.h's. Each thread's object has the thread as owner;
 * running, cancel, losses and close are the shared code's (op.c,
 * handle.c). */
#include "blocking/blocking_internal.h"

struct BL_B(s) {
  lk__bl_handle_t h;
};

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
  BL_A(t) *obj = NULL;
  int rc = BL_A(new)(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = BL_A(set_owner)(obj, NULL, slot->tid);
  *out = BL_A(handle)(obj);
  return rc;
}

static void sync_count(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], (int64_t)BL_A(hold_count)(BL_AS(obj)));
}

LK__BL_DONE(BL_X)

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return BL_A(acquire)(BL_AS(h), op->opts, bl_done, op);
}

static int acquire(BL_B(t) *l, const BL_A(opts_t) *opts) {
  return lk__bl_hold_run(LK__BL_H(l), start_acquire, 0, opts, opts->lease_ms);
}

#include "blocking/lock_verbs.h"

static const lk__bl_kind_t kind = {
    .what = BL_WHAT, .kind = BL_KIND, .tells_lost = 1, .has_token = 1, .sides = 1,
    .make = make, .sync = sync_count, .try_any = try_any, .release_any = release_any,
    .holds = 1};

int BL_B(new)(lk_blocking_t *b, const char *name, BL_B(t) **out) {
  return lk__bl_handle_new(b, &kind, name, sizeof(BL_B(t)), out);
}

static int start_is_locked(lk_handle_t *h, lk__bl_op_t *op) {
  return BL_A(is_locked)(BL_AS(h), bl_done, op);
}

int BL_B(is_locked)(BL_B(t) *l) {
  lk__bl_op_t op = {.start = start_is_locked};
  return lk__bl_yes_no(LK__BL_H(l), &op);
}
