/* The blocking lock: lk_lock_t per thread (handle.c), owner = the thread. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_lock_s {
  lk__bl_handle_t h;
};

typedef struct {
  lk__bl_call_t call;
  lk_lock_opts_t opts;
  uint64_t until;
  int verb;
} lock_call_t;

enum { V_ACQUIRE, V_RELEASE, V_IS_LOCKED };

static void on_lost(lk_lock_t *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)obj;
  (void)status;
  atomic_store(&slot->count[0], 0);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void on_closed(lk_lock_t *obj) { lk__bl_slot_closed(lk_lock_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_lock_t *obj = NULL;
  int rc = lk_lock_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = lk_lock_set_owner(obj, NULL, slot->tid);
  if (rc == 0)
    rc = lk_lock_set_lost_cb(obj, on_lost, slot);
  if (rc != 0) {
    if (obj != NULL)
      lk_lock_close(obj, NULL);
    return rc;
  }
  lk_lock_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_lock_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t lock_kind = {"lock", open_obj, close_obj};

static void on_done(lk_lock_t *obj, int status, void *arg) {
  lock_call_t *c = arg;
  lk__bl_slot_t *slot = c->call.slot;
  if (c->verb == V_ACQUIRE && status == 0) {
    atomic_store(&slot->until_ns[0], c->until);
    atomic_store(&slot->lost, 0);
  }
  atomic_store(&slot->count[0], (int64_t)lk_lock_hold_count(obj));
  lk__bl_finish(&c->call, status, lk_lock_result(obj));
}

static int start(lk__bl_call_t *call) {
  lock_call_t *c = (lock_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_lock_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_ACQUIRE:
    rc = lk_lock_acquire(obj, &c->opts, on_done, c);
    break;
  case V_RELEASE:
    rc = lk_lock_release(obj, on_done, c);
    if (rc == LK_ELEASELOST) /* told by on_lost; the object starts afresh */
      atomic_store(&call->slot->count[0], 0);
    break;
  default:
    rc = lk_lock_is_locked(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_lock_cancel(call->slot->obj); }

static int run(lk_blocking_lock_t *l, int verb, const lk_lock_opts_t *opts, int64_t *result) {
  lock_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(l ? &l->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, l->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c.verb = verb;
  if (opts != NULL)
    c.opts = *opts;
  /* Taken before the request leaves: a fixed lease never outlives it here. */
  c.until = verb == V_ACQUIRE ? lk__bl_lease_until(c.opts.lease_ms) : 0;
  rc = lk__bl_run(&c.call);
  if (result != NULL)
    *result = c.call.result;
  return rc;
}

int lk_blocking_lock_new(lk_blocking_t *b, const char *name, lk_blocking_lock_t **out) {
  lk_blocking_lock_t *l;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  l = lk__calloc(1, sizeof(*l));
  if (l == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&l->h, b, &lock_kind, name);
  if (rc != 0) {
    lk__free(l);
    return rc;
  }
  lk__bl_register_handle(b, &l->h);
  *out = l;
  return 0;
}

int lk_blocking_lock_acquire(lk_blocking_lock_t *l, const lk_lock_opts_t *opts) {
  lk_lock_opts_t o;
  if (opts == NULL) {
    lk_lock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(l, V_ACQUIRE, opts, NULL);
}

int lk_blocking_lock_try(lk_blocking_lock_t *l, int64_t wait_ms) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = wait_ms;
  return run(l, V_ACQUIRE, &o, NULL);
}

int lk_blocking_lock_release(lk_blocking_lock_t *l) { return run(l, V_RELEASE, NULL, NULL); }

int lk_blocking_lock_is_locked(lk_blocking_lock_t *l) {
  int64_t r = 0;
  int rc = run(l, V_IS_LOCKED, NULL, &r);
  return rc != 0 ? rc : r != 0;
}

int lk_blocking_lock_is_held(lk_blocking_lock_t *l) {
  return l != NULL && lk__bl_slot_held(lk__bl_slot_find(&l->h), 0);
}

uint32_t lk_blocking_lock_hold_count(lk_blocking_lock_t *l) {
  lk__bl_slot_t *s = l != NULL ? lk__bl_slot_find(&l->h) : NULL;
  return s != NULL && !atomic_load(&s->lost) ? (uint32_t)atomic_load(&s->count[0]) : 0;
}

int lk_blocking_lock_close(lk_blocking_lock_t *l) { return lk__bl_handle_close(l ? &l->h : NULL); }
