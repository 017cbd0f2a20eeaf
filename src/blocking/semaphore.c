/* The blocking counting semaphore: lk_semaphore_t per thread, so each
 * thread's permits are its own to release and threads wait side by side
 * (one object has one operation pending). Permits have no owner on the
 * server (Redisson's RSemaphore) and no lease: nothing can be lost.
 * count[0] = permits the thread holds. */
#include "blocking/blocking_internal.h"

struct lk_blocking_semaphore_s {
  lk__bl_handle_t h;
};

LK__BL_MAKE(semaphore)

static void sync_held(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], lk_semaphore_held(lk_handle_as_semaphore(obj)));
}

LK__BL_DONE(semaphore)

static int try_any(lk__bl_handle_t *h, int64_t wait_ms) {
  return lk_blocking_semaphore_try((lk_blocking_semaphore_t *)h, 1, wait_ms);
}
static int release_any(lk__bl_handle_t *h) {
  return lk_blocking_semaphore_release((lk_blocking_semaphore_t *)h, 1);
}

static const lk__bl_kind_t sem_kind = {
    .what = "semaphore", .kind = LK_KIND_SEMAPHORE, .sides = 1, .make = make,
    .sync = sync_held, .try_any = try_any, .release_any = release_any,
    .holds = 1};

int lk_blocking_semaphore_new(lk_blocking_t *b, const char *name,
                              lk_blocking_semaphore_t **out) {
  return lk__bl_handle_new(b, &sem_kind, name, sizeof(lk_blocking_semaphore_t), out);
}

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_semaphore_acquire(lk_handle_as_semaphore(h), op->opts, bl_done, op);
}

int lk_blocking_semaphore_acquire(lk_blocking_semaphore_t *s, const lk_semaphore_opts_t *opts) {
  lk_semaphore_opts_t o;
  LK__BL_OPTS_OR_FOREVER(lk_semaphore_opts_init, opts, o);
  lk__bl_op_t op = {.start = start_acquire, .flags = LK__BL_CANCELABLE, .opts = opts};
  return lk__bl_op_run(LK__BL_H(s), &op, NULL);
}

int lk_blocking_semaphore_try(lk_blocking_semaphore_t *s, int64_t permits, int64_t wait_ms) {
  lk_semaphore_opts_t o;
  lk_semaphore_opts_init(&o);
  o.permits = permits;
  o.wait_ms = wait_ms;
  return lk_blocking_semaphore_acquire(s, &o);
}

static int start_release(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_semaphore_release(lk_handle_as_semaphore(h), op->n, bl_done, op);
}

int lk_blocking_semaphore_release(lk_blocking_semaphore_t *s, int64_t permits) {
  lk__bl_op_t op = {.start = start_release, .n = permits};
  return lk__bl_op_run(LK__BL_H(s), &op, NULL);
}

#define BL_A(x) lk_semaphore_##x
#define BL_B(x) lk_blocking_semaphore_##x
#define BL_AS lk_handle_as_semaphore
#include "blocking/sem_verbs.h"
