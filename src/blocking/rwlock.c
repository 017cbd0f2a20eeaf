/* The blocking read/write lock: lk_rwlock_t per thread (handle.c), owner =
 * the thread; slot index 0 = the read side, 1 = the write side. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_rwlock_s {
  lk__bl_handle_t h;
};

typedef struct {
  lk__bl_call_t call;
  lk_rwlock_opts_t opts;
  uint64_t until;
  int release;
  lk_rwlock_side_t side;
} rw_call_t;

static int side_ok(lk_rwlock_side_t side) { return side == LK_RW_READ || side == LK_RW_WRITE; }
static int side_index(lk_rwlock_side_t side) { return side == LK_RW_WRITE; }

static void sync_counts(lk__bl_slot_t *slot, lk_rwlock_t *obj) {
  atomic_store(&slot->count[0], (int64_t)(obj ? lk_rwlock_hold_count(obj, LK_RW_READ) : 0));
  atomic_store(&slot->count[1], (int64_t)(obj ? lk_rwlock_hold_count(obj, LK_RW_WRITE) : 0));
}

static void on_lost(lk_rwlock_t *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)obj;
  (void)status;
  sync_counts(slot, NULL);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void on_closed(lk_rwlock_t *obj) { lk__bl_slot_closed(lk_rwlock_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_rwlock_t *obj = NULL;
  int rc = lk_rwlock_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = lk_rwlock_set_owner(obj, NULL, slot->tid);
  if (rc == 0)
    rc = lk_rwlock_set_lost_cb(obj, on_lost, slot);
  if (rc != 0) {
    if (obj != NULL)
      lk_rwlock_close(obj, NULL);
    return rc;
  }
  lk_rwlock_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_rwlock_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t rw_kind = {"rwlock", open_obj, close_obj};

static void on_done(lk_rwlock_t *obj, int status, void *arg) {
  rw_call_t *c = arg;
  lk__bl_slot_t *slot = c->call.slot;
  if (!c->release && status == 0) {
    atomic_store(&slot->until_ns[side_index(c->side)], c->until);
    atomic_store(&slot->lost, 0);
  }
  sync_counts(slot, obj);
  lk__bl_finish(&c->call, status, lk_rwlock_result(obj));
}

static int start(lk__bl_call_t *call) {
  rw_call_t *c = (rw_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_rwlock_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  if (!c->release)
    return (rc = lk_rwlock_acquire(obj, c->side, &c->opts, on_done, c)) == 0 ? 1 : rc;
  rc = lk_rwlock_release(obj, c->side, on_done, c);
  if (rc == LK_ELEASELOST) /* told by on_lost; the object starts afresh */
    sync_counts(call->slot, NULL);
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_rwlock_cancel(call->slot->obj); }

static int run(lk_blocking_rwlock_t *l, int release, lk_rwlock_side_t side,
               const lk_rwlock_opts_t *opts) {
  rw_call_t c;
  int rc;
  lk__bl_slot_t *slot;
  if (!side_ok(side))
    return LK_EINVAL;
  slot = lk__bl_slot_get(l ? &l->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, l->h.b, slot, start, release ? NULL : cancel);
  c.release = release;
  c.side = side;
  if (opts != NULL)
    c.opts = *opts;
  /* Taken before the request leaves: a fixed lease never outlives it here. */
  c.until = release ? 0 : lk__bl_lease_until(c.opts.lease_ms);
  return lk__bl_run(&c.call);
}

int lk_blocking_rwlock_new(lk_blocking_t *b, const char *name, lk_blocking_rwlock_t **out) {
  lk_blocking_rwlock_t *l;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  l = lk__calloc(1, sizeof(*l));
  if (l == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&l->h, b, &rw_kind, name);
  if (rc != 0) {
    lk__free(l);
    return rc;
  }
  rc = lk__bl_register_handle(b, &l->h);
  if (rc != 0) {
    lk__bl_handle_free(&l->h, 1);
    return rc;
  }
  *out = l;
  return 0;
}

int lk_blocking_rwlock_acquire(lk_blocking_rwlock_t *l, lk_rwlock_side_t side,
                               const lk_rwlock_opts_t *opts) {
  lk_rwlock_opts_t o;
  if (opts == NULL) {
    lk_rwlock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(l, 0, side, opts);
}

int lk_blocking_rwlock_try(lk_blocking_rwlock_t *l, lk_rwlock_side_t side, int64_t wait_ms) {
  lk_rwlock_opts_t o;
  lk_rwlock_opts_init(&o);
  o.wait_ms = wait_ms;
  return run(l, 0, side, &o);
}

int lk_blocking_rwlock_release(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  return run(l, 1, side, NULL);
}

int lk_blocking_rwlock_is_held(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  if (l == NULL || !side_ok(side))
    return 0;
  return lk__bl_slot_held(lk__bl_slot_find(&l->h), side_index(side));
}

uint32_t lk_blocking_rwlock_hold_count(lk_blocking_rwlock_t *l, lk_rwlock_side_t side) {
  lk__bl_slot_t *s;
  if (l == NULL || !side_ok(side))
    return 0;
  s = lk__bl_slot_find(&l->h);
  if (s == NULL || atomic_load(&s->lost))
    return 0;
  return (uint32_t)atomic_load(&s->count[side_index(side)]);
}

int lk_blocking_rwlock_close(lk_blocking_rwlock_t *l) {
  return lk__bl_handle_close(l ? &l->h : NULL);
}
