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

enum { V_ACQUIRE, V_RELEASE, V_IS_LOCKED };

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

static int start(lk_handle_t *h, lk__bl_op_t *op) {
  BL_A(t) *obj = BL_AS(h);
  switch (op->verb) {
  case V_ACQUIRE:
    return BL_A(acquire)(obj, op->opts, bl_done, op);
  case V_RELEASE:
    return BL_A(release)(obj, bl_done, op);
  default:
    return BL_A(is_locked)(obj, bl_done, op);
  }
}

static int acquire(BL_B(t) *l, const BL_A(opts_t) *opts) {
  return lk__bl_hold_run(LK__BL_H(l), start, V_ACQUIRE, 0, opts, opts->lease_ms);
}

#include "blocking/lock_verbs.h"

static const lk__bl_kind_t kind = {
    .what = BL_WHAT, .kind = BL_KIND, .tells_lost = 1, .has_token = 1, .sides = 1,
    .make = make, .sync = sync_count, .try_any = try_any, .release_any = release_any,
    .holds = 1};

int BL_B(new)(lk_blocking_t *b, const char *name, BL_B(t) **out) {
  return lk__bl_handle_new(b, &kind, name, sizeof(BL_B(t)), out);
}

int BL_B(is_locked)(BL_B(t) *l) {
  lk__bl_op_t op = {.start = start, .verb = V_IS_LOCKED};
  int64_t r = 0;
  int rc = lk__bl_op_run(LK__BL_H(l), &op, &r);
  return rc != 0 ? rc : r != 0;
}
