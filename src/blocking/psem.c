/* The blocking permit-expirable semaphore (docs/semaphore.md): lk_psem_t
 * per thread. A thread's permits are its own: it gets their ids from
 * acquire, releases them by id or all at once, and learns their loss as a
 * lost lease. count[0] = permits the thread holds. */
#include <string.h>

#include "blocking/blocking_internal.h"

struct lk_blocking_psem_s {
  lk__bl_handle_t h;
};

typedef char psem_id_t[LK_PSEM_ID_LEN + 1];

LK__BL_MAKE(psem)

static void sync_count(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_psem_permit_count(lk_handle_as_psem(obj)));
}

/* The lost permits have left the object: the count says what is left. */
static void on_lost(lk__bl_slot_t *slot, lk_handle_t *obj) { sync_count(slot, obj); }

LK__BL_DONE(psem)

/* An acquire's new ids are the object's last n; borrowed until the
 * permits change, so copied here, on the loop thread, into op->arg. */
static int64_t copy_ids(lk_handle_t *h, int status, lk__bl_op_t *op) {
  lk_psem_t *obj = lk_handle_as_psem(h);
  int64_t n = lk_psem_result(obj);
  psem_id_t *ids = (psem_id_t *)op->arg;
  size_t have = lk_psem_permit_count(obj);
  for (int64_t i = 0; status == 0 && ids != NULL && i < n && (size_t)n <= have; i++)
    memcpy(ids[i], lk_psem_permit_id(obj, have - (size_t)n + (size_t)i), LK_PSEM_ID_LEN + 1);
  return n;
}

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_psem_try((lk_blocking_psem_t *)h, wait_ms, NULL);
}
static int release_any(lk__bl_handle_t *h) {
  return lk_blocking_psem_release((lk_blocking_psem_t *)h, NULL);
}

static const lk__bl_kind_t psem_kind = {
    .what = "psem", .kind = LK_KIND_PSEM, .tells_lost = 1, .holds = 1, .sides = 1,
    .make = make, .sync = sync_count, .lost = on_lost, .try_any = try_any,
    .release_any = release_any};

int lk_blocking_psem_new(lk_blocking_t *b, const char *name, lk_blocking_psem_t **out) {
  return lk__bl_handle_new(b, &psem_kind, name, sizeof(lk_blocking_psem_t), out);
}

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_psem_acquire(lk_handle_as_psem(h), op->opts, bl_done, op);
}

int lk_blocking_psem_acquire(lk_blocking_psem_t *p, const lk_psem_opts_t *opts,
                             char (*ids)[LK_PSEM_ID_LEN + 1]) {
  lk_psem_opts_t o;
  LK__BL_OPTS_OR_FOREVER(lk_psem_opts_init, opts, o);
  lk__bl_op_t op = {.start = start_acquire,
                    .flags = LK__BL_CANCELABLE,
                    .opts = opts,
                    .arg = ids,
                    .finish = copy_ids};
  return lk__bl_op_run(LK__BL_H(p), &op, NULL);
}

int lk_blocking_psem_try(lk_blocking_psem_t *p, int64_t wait_ms, char id[LK_PSEM_ID_LEN + 1]) {
  lk_psem_opts_t o;
  lk_psem_opts_init(&o);
  o.wait_ms = wait_ms;
  return lk_blocking_psem_acquire(p, &o, (psem_id_t *)id);
}

static int start_release(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_psem_release(lk_handle_as_psem(h), op->arg, bl_done, op);
}

int lk_blocking_psem_release(lk_blocking_psem_t *p, const char *id) {
  lk__bl_op_t op = {.start = start_release, .arg = id};
  return lk__bl_op_run(LK__BL_H(p), &op, NULL);
}

#define BL_A(x) lk_psem_##x
#define BL_B(x) lk_blocking_psem_##x
#define BL_AS lk_handle_as_psem
#include "blocking/sem_verbs.h"
