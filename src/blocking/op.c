/* The one path of every blocking verb: the calling thread's slot, the call
 * record queued to the loop thread, the thread's object opened there on
 * first use, the kind's asynchronous verb started on it, cancel through
 * lk_handle_cancel, and on its callback the slot's atomics brought up to
 * date before the caller wakes. A kind's entry point only fills an
 * lk__bl_op_t: which verb, its arguments, whether it holds or releases. */
#include "blocking/blocking_internal.h"

void lk__bl_sync(lk__bl_slot_t *slot, lk_handle_t *obj) {
  const lk__bl_kind_t *kind = slot->h->kind;
  if (kind->sync != NULL)
    kind->sync(slot, obj);
  if (kind->has_token)
    atomic_store(&slot->token, lk_handle_token(obj));
}

static int64_t result_of(const lk_handle_t *obj) {
  int64_t v = 0;
  (void)lk_handle_result(obj, &v);
  return v;
}

void lk__bl_op_done(lk_handle_t *obj, int status, void *arg) {
  lk__bl_op_t *op = arg;
  lk__bl_slot_t *slot = op->call.slot;
  int64_t result;
  if ((op->flags & LK__BL_HOLDS) && status == 0) {
    atomic_store(&slot->until_ns[op->side], op->until);
    atomic_store(&slot->lost, 0);
  }
  result = op->finish != NULL ? op->finish(obj, status, op) : result_of(obj);
  lk__bl_sync(slot, obj);
  lk__bl_finish(&op->call, status, result);
}

static int start_op(lk__bl_call_t *call) {
  lk__bl_op_t *op = (lk__bl_op_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  if (rc != 0)
    return rc;
  rc = op->start(call->slot->obj, op);
  if (rc == LK_ELEASELOST && (op->flags & LK__BL_RELEASES)) {
    /* Told by the lost callback; the object starts afresh. */
    atomic_store(&call->slot->count[0], 0);
    atomic_store(&call->slot->count[1], 0);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel_op(lk__bl_call_t *call) { return lk_handle_cancel(call->slot->obj); }

int lk__bl_hold_run(lk__bl_handle_t *h, lk__bl_op_start_fn start, int side, const void *opts,
                    int64_t lease_ms) {
  lk__bl_op_t op = {.start = start,
                    .flags = LK__BL_CANCELABLE | LK__BL_HOLDS,
                    .side = side,
                    .opts = opts,
                    .until = lk__bl_lease_until(lease_ms)};
  return lk__bl_op_run(h, &op, NULL);
}

int lk__bl_op_run(lk__bl_handle_t *h, lk__bl_op_t *op, int64_t *result) {
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(h, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&op->call, h->b, slot, start_op,
                   (op->flags & LK__BL_CANCELABLE) ? cancel_op : NULL);
  rc = lk__bl_run(&op->call);
  if (rc == 0 && result != NULL)
    *result = op->call.result;
  return rc;
}

int64_t lk__bl_answer(lk__bl_handle_t *h, lk__bl_op_t *op) {
  int64_t r = 0;
  int rc = lk__bl_op_run(h, op, &r);
  return rc != 0 ? rc : r;
}

int lk__bl_yes_no(lk__bl_handle_t *h, lk__bl_op_t *op) {
  int64_t r = 0;
  int rc = lk__bl_op_run(h, op, &r);
  return rc != 0 ? rc : r != 0;
}
