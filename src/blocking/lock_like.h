/* The blocking form of a reentrant lock kind (lock.c: lk_lock_t, fair.c:
 * lk_fair_t), written once: the includer defines
 *   BL_A(x)      the async API's name for x (lk_lock_##x)
 *   BL_B(x)      the blocking API's name for x (lk_blocking_lock_##x)
 *   BL_WHAT      "lock"
 * and includes this once. Each thread's object has the thread as owner
 * (handle.c); hold counts and losses reach it through the slot's atomics. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct BL_B(s) {
  lk__bl_handle_t h;
};

typedef struct {
  lk__bl_call_t call;
  BL_A(opts_t) opts;
  uint64_t until;
  int verb;
} bl_call_t;

enum { V_ACQUIRE, V_RELEASE, V_IS_LOCKED };

static void on_lost(BL_A(t) *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)obj;
  (void)status;
  atomic_store(&slot->count[0], 0);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void on_closed(BL_A(t) *obj) { lk__bl_slot_closed(BL_A(get_data)(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  BL_A(t) *obj = NULL;
  int rc = BL_A(new)(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = BL_A(set_owner)(obj, NULL, slot->tid);
  if (rc == 0)
    rc = BL_A(set_lost_cb)(obj, on_lost, slot);
  if (rc != 0) {
    if (obj != NULL)
      BL_A(close)(obj, NULL);
    return rc;
  }
  BL_A(set_data)(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (BL_A(close)(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t kind = {BL_WHAT, open_obj, close_obj};

static void on_done(BL_A(t) *obj, int status, void *arg) {
  bl_call_t *c = arg;
  lk__bl_slot_t *slot = c->call.slot;
  if (c->verb == V_ACQUIRE && status == 0) {
    atomic_store(&slot->until_ns[0], c->until);
    atomic_store(&slot->lost, 0);
  }
  atomic_store(&slot->count[0], (int64_t)BL_A(hold_count)(obj));
  lk__bl_finish(&c->call, status, BL_A(result)(obj));
}

static int start(lk__bl_call_t *call) {
  bl_call_t *c = (bl_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  BL_A(t) *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_ACQUIRE:
    rc = BL_A(acquire)(obj, &c->opts, on_done, c);
    break;
  case V_RELEASE:
    rc = BL_A(release)(obj, on_done, c);
    if (rc == LK_ELEASELOST) /* told by on_lost; the object starts afresh */
      atomic_store(&call->slot->count[0], 0);
    break;
  default:
    rc = BL_A(is_locked)(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return BL_A(cancel)(call->slot->obj); }

static int run(BL_B(t) *l, int verb, const BL_A(opts_t) *opts, int64_t *result) {
  bl_call_t c;
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

int BL_B(new)(lk_blocking_t *b, const char *name, BL_B(t) **out) {
  BL_B(t) *l;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  l = lk__calloc(1, sizeof(*l));
  if (l == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&l->h, b, &kind, name);
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

int BL_B(acquire)(BL_B(t) *l, const BL_A(opts_t) *opts) {
  BL_A(opts_t) o;
  if (opts == NULL) {
    BL_A(opts_init)(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(l, V_ACQUIRE, opts, NULL);
}

int BL_B(try)(BL_B(t) *l, int64_t wait_ms) {
  BL_A(opts_t) o;
  BL_A(opts_init)(&o);
  o.wait_ms = wait_ms;
  return run(l, V_ACQUIRE, &o, NULL);
}

int BL_B(release)(BL_B(t) *l) { return run(l, V_RELEASE, NULL, NULL); }

int BL_B(is_locked)(BL_B(t) *l) {
  int64_t r = 0;
  int rc = run(l, V_IS_LOCKED, NULL, &r);
  return rc != 0 ? rc : r != 0;
}

int BL_B(is_held)(BL_B(t) *l) {
  return l != NULL && lk__bl_slot_held(lk__bl_slot_find(&l->h), 0);
}

uint32_t BL_B(hold_count)(BL_B(t) *l) {
  lk__bl_slot_t *s = l != NULL ? lk__bl_slot_find(&l->h) : NULL;
  return s != NULL && !atomic_load(&s->lost) ? (uint32_t)atomic_load(&s->count[0]) : 0;
}

int BL_B(close)(BL_B(t) *l) { return lk__bl_handle_close(l ? &l->h : NULL); }
