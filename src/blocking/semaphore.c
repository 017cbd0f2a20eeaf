/* The blocking counting semaphore: lk_semaphore_t per thread (handle.c), so
 * each thread's permits are its own to release and threads wait side by
 * side (one object has one operation pending). Permits have no owner on the
 * server (Redisson's RSemaphore) and no lease: nothing can be lost. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_semaphore_s {
  lk__bl_handle_t h;
};

enum { V_ACQUIRE, V_RELEASE, V_TRY_SET, V_AVAILABLE };

typedef struct {
  lk__bl_call_t call;
  lk_semaphore_opts_t opts;
  int verb;
  int64_t n;
} sem_call_t;

static void on_closed(lk_semaphore_t *obj) { lk__bl_slot_closed(lk_semaphore_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_semaphore_t *obj = NULL;
  int rc = lk_semaphore_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc != 0)
    return rc;
  lk_semaphore_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_semaphore_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t sem_kind = {"semaphore", open_obj, close_obj};

static void on_done(lk_semaphore_t *obj, int status, void *arg) {
  sem_call_t *c = arg;
  atomic_store(&c->call.slot->count[0], lk_semaphore_held(obj));
  lk__bl_finish(&c->call, status, lk_semaphore_result(obj));
}

static int start(lk__bl_call_t *call) {
  sem_call_t *c = (sem_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_semaphore_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_ACQUIRE:
    rc = lk_semaphore_acquire(obj, &c->opts, on_done, c);
    break;
  case V_RELEASE:
    rc = lk_semaphore_release(obj, c->n, on_done, c);
    break;
  case V_TRY_SET:
    rc = lk_semaphore_try_set_permits(obj, c->n, on_done, c);
    break;
  default:
    rc = lk_semaphore_available(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_semaphore_cancel(call->slot->obj); }

static int run(lk_blocking_semaphore_t *s, int verb, const lk_semaphore_opts_t *opts, int64_t n,
               int64_t *result) {
  sem_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(s ? &s->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, s->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c.verb = verb;
  c.n = n;
  if (opts != NULL)
    c.opts = *opts;
  rc = lk__bl_run(&c.call);
  if (result != NULL)
    *result = c.call.result;
  return rc;
}

int lk_blocking_semaphore_new(lk_blocking_t *b, const char *name,
                              lk_blocking_semaphore_t **out) {
  lk_blocking_semaphore_t *s;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  s = lk__calloc(1, sizeof(*s));
  if (s == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&s->h, b, &sem_kind, name);
  if (rc != 0) {
    lk__free(s);
    return rc;
  }
  rc = lk__bl_register_handle(b, &s->h);
  if (rc != 0) {
    lk__bl_handle_free(&s->h, 1);
    return rc;
  }
  *out = s;
  return 0;
}

int lk_blocking_semaphore_acquire(lk_blocking_semaphore_t *s, const lk_semaphore_opts_t *opts) {
  lk_semaphore_opts_t o;
  if (opts == NULL) {
    lk_semaphore_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(s, V_ACQUIRE, opts, 0, NULL);
}

int lk_blocking_semaphore_try(lk_blocking_semaphore_t *s, int64_t permits, int64_t wait_ms) {
  lk_semaphore_opts_t o;
  lk_semaphore_opts_init(&o);
  o.permits = permits;
  o.wait_ms = wait_ms;
  return run(s, V_ACQUIRE, &o, 0, NULL);
}

int lk_blocking_semaphore_release(lk_blocking_semaphore_t *s, int64_t permits) {
  return run(s, V_RELEASE, NULL, permits, NULL);
}

int lk_blocking_semaphore_try_set_permits(lk_blocking_semaphore_t *s, int64_t permits) {
  int64_t r = 0;
  int rc = run(s, V_TRY_SET, NULL, permits, &r);
  return rc != 0 ? rc : r != 0;
}

int64_t lk_blocking_semaphore_available(lk_blocking_semaphore_t *s) {
  int64_t r = 0;
  int rc = run(s, V_AVAILABLE, NULL, 0, &r);
  return rc != 0 ? rc : r;
}

int64_t lk_blocking_semaphore_held(lk_blocking_semaphore_t *s) {
  lk__bl_slot_t *slot = s != NULL ? lk__bl_slot_find(&s->h) : NULL;
  return slot != NULL ? atomic_load(&slot->count[0]) : 0;
}

int lk_blocking_semaphore_close(lk_blocking_semaphore_t *s) {
  return lk__bl_handle_close(s ? &s->h : NULL);
}
