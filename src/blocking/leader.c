/* Blocking leader election (docs/leader.md): lk_leader_t per thread, each
 * thread its own candidate. The slot's count[0] says whether the thread
 * leads, its token is the term; a loss clears the first and tells the
 * thread (handle.c). */
#include "blocking/blocking_internal.h"

struct lk_blocking_leader_s {
  lk__bl_handle_t h;
};

LK__BL_MAKE(leader)

static void sync_leading(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_leader_is_leader(lk_handle_as_leader(obj)));
}

/* A campaign's result is the term it won. */
static int64_t term_of(lk_handle_t *obj, int status, lk__bl_op_t *op) {
  (void)status;
  (void)op;
  return lk_handle_token(obj);
}

LK__BL_DONE(leader)

static int start_campaign(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_leader_campaign(lk_handle_as_leader(h), op->opts, bl_done, op);
}

static int start_resign(lk_handle_t *h, lk__bl_op_t *op) {
  int rc = lk_leader_resign(lk_handle_as_leader(h), bl_done, op);
  if (rc != 0) /* not leading any more either way */
    lk__bl_sync(op->call.slot, h);
  return rc;
}

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  lk_leader_opts_t o;
  lk_leader_opts_init(&o);
  o.wait_ms = wait_ms;
  return lk_blocking_leader_campaign((lk_blocking_leader_t *)h, &o, NULL);
}
static int release_any(lk__bl_handle_t *h) {
  return lk_blocking_leader_resign((lk_blocking_leader_t *)h);
}

static const lk__bl_kind_t leader_kind = {
    .what = "leader", .kind = LK_KIND_LEADER, .tells_lost = 1, .has_token = 1, .sides = 1,
    .make = make, .sync = sync_leading, .try_any = try_any, .release_any = release_any,
    .holds = 1};

int lk_blocking_leader_new(lk_blocking_t *b, const char *role, lk_blocking_leader_t **out) {
  return lk__bl_handle_new(b, &leader_kind, role, sizeof(lk_blocking_leader_t), out);
}

int lk_blocking_leader_campaign(lk_blocking_leader_t *l, const lk_leader_opts_t *opts,
                                int64_t *term) {
  lk_leader_opts_t o;
  lk__bl_op_t op = {.start = start_campaign,
                    .flags = LK__BL_CANCELABLE | LK__BL_HOLDS,
                    .opts = opts,
                    .finish = term_of};
  if (opts == NULL) {
    lk_leader_opts_init(&o);
    op.opts = &o;
  }
  return lk__bl_op_run(LK__BL_H(l), &op, term);
}

int lk_blocking_leader_resign(lk_blocking_leader_t *l) {
  lk__bl_op_t op = {.start = start_resign};
  return lk__bl_op_run(LK__BL_H(l), &op, NULL);
}

int lk_blocking_leader_is_leader(lk_blocking_leader_t *l) {
  return lk__bl_count(LK__BL_H(l), 0, 1) > 0;
}

int64_t lk_blocking_leader_term(lk_blocking_leader_t *l) { return lk__bl_token(LK__BL_H(l)); }

int lk_blocking_leader_close(lk_blocking_leader_t *l) { return lk__bl_handle_close(LK__BL_H(l)); }
