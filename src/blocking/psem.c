/* The blocking permit-expirable semaphore (docs/semaphore.md): lk_psem_t
 * per thread (handle.c). A thread's permits are its own: it gets their ids
 * from acquire, releases them by id or all at once, and learns their loss
 * as a lost lease. count[0] = permits the thread holds. */
#include <string.h>

#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_psem_s {
  lk__bl_handle_t h;
};

enum { V_ACQUIRE, V_RELEASE, V_TRY_SET, V_AVAILABLE };

typedef struct {
  lk__bl_call_t call;
  int verb;
  lk_psem_opts_t opts;
  int64_t n;
  const char *id;
  char (*ids)[LK_PSEM_ID_LEN + 1];
} psem_call_t;

static void sync_count(lk__bl_slot_t *slot, lk_psem_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_psem_permit_count(obj));
}

static void on_lost(lk_psem_t *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)status;
  sync_count(slot, obj); /* the lost permits have left the object */
  lk__bl_notify_lost(slot);
}

static void on_closed(lk_psem_t *obj) { lk__bl_slot_closed(lk_psem_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_psem_t *obj = NULL;
  int rc = lk_psem_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = lk_psem_set_lost_cb(obj, on_lost, slot);
  if (rc != 0) {
    if (obj != NULL)
      lk_psem_close(obj, NULL);
    return rc;
  }
  lk_psem_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_psem_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t psem_kind = {"psem", open_obj, close_obj};

static void on_done(lk_psem_t *obj, int status, void *arg) {
  psem_call_t *c = arg;
  int64_t n = lk_psem_result(obj);
  if (c->verb == V_ACQUIRE && status == 0 && c->ids != NULL) {
    /* The new ids are the last n; borrowed until the permits change, so
     * copied here, on the loop thread. */
    size_t have = lk_psem_permit_count(obj);
    for (int64_t i = 0; i < n && (size_t)n <= have; i++)
      memcpy(c->ids[i], lk_psem_permit_id(obj, have - (size_t)n + (size_t)i),
             LK_PSEM_ID_LEN + 1);
  }
  sync_count(c->call.slot, obj);
  lk__bl_finish(&c->call, status, n);
}

static int start(lk__bl_call_t *call) {
  psem_call_t *c = (psem_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_psem_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_ACQUIRE:
    rc = lk_psem_acquire(obj, &c->opts, on_done, c);
    break;
  case V_RELEASE:
    rc = lk_psem_release(obj, c->id, on_done, c);
    break;
  case V_TRY_SET:
    rc = lk_psem_try_set_permits(obj, c->n, on_done, c);
    break;
  default:
    rc = lk_psem_available(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_psem_cancel(call->slot->obj); }

static int run(psem_call_t *c, lk_blocking_psem_t *p, int verb, int64_t *result) {
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(p ? &p->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c->call, p->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c->verb = verb;
  rc = lk__bl_run(&c->call);
  if (rc == 0 && result != NULL)
    *result = c->call.result;
  return rc;
}

int lk_blocking_psem_new(lk_blocking_t *b, const char *name, lk_blocking_psem_t **out) {
  lk_blocking_psem_t *p;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  p = lk__calloc(1, sizeof(*p));
  if (p == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&p->h, b, &psem_kind, name);
  if (rc != 0) {
    lk__free(p);
    return rc;
  }
  rc = lk__bl_register_handle(b, &p->h);
  if (rc != 0) {
    lk__bl_handle_free(&p->h, 1);
    return rc;
  }
  *out = p;
  return 0;
}

int lk_blocking_psem_acquire(lk_blocking_psem_t *p, const lk_psem_opts_t *opts,
                             char (*ids)[LK_PSEM_ID_LEN + 1]) {
  psem_call_t c;
  memset(&c, 0, sizeof(c));
  if (opts != NULL) {
    c.opts = *opts;
  } else {
    lk_psem_opts_init(&c.opts);
    c.opts.wait_ms = LK_WAIT_FOREVER;
  }
  c.ids = ids;
  return run(&c, p, V_ACQUIRE, NULL);
}

int lk_blocking_psem_try(lk_blocking_psem_t *p, int64_t wait_ms,
                         char id[LK_PSEM_ID_LEN + 1]) {
  psem_call_t c;
  memset(&c, 0, sizeof(c));
  lk_psem_opts_init(&c.opts);
  c.opts.wait_ms = wait_ms;
  c.ids = (char(*)[LK_PSEM_ID_LEN + 1])id;
  return run(&c, p, V_ACQUIRE, NULL);
}

int lk_blocking_psem_release(lk_blocking_psem_t *p, const char *id) {
  psem_call_t c;
  memset(&c, 0, sizeof(c));
  c.id = id;
  return run(&c, p, V_RELEASE, NULL);
}

int lk_blocking_psem_try_set_permits(lk_blocking_psem_t *p, int64_t permits) {
  psem_call_t c;
  int64_t r = 0;
  int rc;
  memset(&c, 0, sizeof(c));
  c.n = permits;
  rc = run(&c, p, V_TRY_SET, &r);
  return rc != 0 ? rc : r != 0;
}

int64_t lk_blocking_psem_available(lk_blocking_psem_t *p) {
  psem_call_t c;
  int64_t r = 0;
  int rc;
  memset(&c, 0, sizeof(c));
  rc = run(&c, p, V_AVAILABLE, &r);
  return rc != 0 ? rc : r;
}

int64_t lk_blocking_psem_held(lk_blocking_psem_t *p) {
  lk__bl_slot_t *s = p != NULL ? lk__bl_slot_find(&p->h) : NULL;
  return s != NULL ? atomic_load(&s->count[0]) : 0;
}

int lk_blocking_psem_close(lk_blocking_psem_t *p) {
  return lk__bl_handle_close(p ? &p->h : NULL);
}
