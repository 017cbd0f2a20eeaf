/* Blocking leader election (docs/leader.md): lk_leader_t per thread
 * (handle.c), each thread its own candidate. The slot's count[0] says
 * whether the thread leads, count[1] its term; on_lost clears the first and
 * tells the thread (lk__bl_notify_lost). */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_leader_s {
  lk__bl_handle_t h;
};

typedef struct {
  lk__bl_call_t call;
  int resign;
  lk_leader_opts_t opts;
} leader_call_t;

static void sync_state(lk__bl_slot_t *slot, lk_leader_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_leader_is_leader(obj));
  atomic_store(&slot->count[1], lk_leader_term(obj));
}

static void on_lost(lk_leader_t *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)obj;
  (void)status;
  atomic_store(&slot->count[0], 0);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void on_closed(lk_leader_t *obj) { lk__bl_slot_closed(lk_leader_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_leader_t *obj = NULL;
  int rc = lk_leader_new(lk__bl_client(slot->h->b), slot->h->name, &obj);
  if (rc == 0)
    rc = lk_leader_set_lost_cb(obj, on_lost, slot);
  if (rc != 0) {
    if (obj != NULL)
      lk_leader_close(obj, NULL);
    return rc;
  }
  lk_leader_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_leader_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t leader_kind = {"leader", open_obj, close_obj};

static void on_done(lk_leader_t *obj, int status, void *arg) {
  leader_call_t *c = arg;
  if (!c->resign && status == 0)
    atomic_store(&c->call.slot->lost, 0);
  sync_state(c->call.slot, obj);
  lk__bl_finish(&c->call, status, lk_leader_term(obj));
}

static int start(lk__bl_call_t *call) {
  leader_call_t *c = (leader_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_leader_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  if (!c->resign)
    rc = lk_leader_campaign(obj, &c->opts, on_done, c);
  else
    rc = lk_leader_resign(obj, on_done, c);
  if (c->resign && rc != 0) /* not leading any more either way */
    sync_state(call->slot, obj);
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_leader_cancel(call->slot->obj); }

int lk_blocking_leader_new(lk_blocking_t *b, const char *role, lk_blocking_leader_t **out) {
  lk_blocking_leader_t *l;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  l = lk__calloc(1, sizeof(*l));
  if (l == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&l->h, b, &leader_kind, role);
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

int lk_blocking_leader_campaign(lk_blocking_leader_t *l, const lk_leader_opts_t *opts,
                                int64_t *term) {
  leader_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(l ? &l->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, l->h.b, slot, start, cancel);
  c.resign = 0;
  if (opts != NULL)
    c.opts = *opts;
  else
    lk_leader_opts_init(&c.opts);
  rc = lk__bl_run(&c.call);
  if (rc == 0 && term != NULL)
    *term = c.call.result;
  return rc;
}

int lk_blocking_leader_resign(lk_blocking_leader_t *l) {
  leader_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(l ? &l->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, l->h.b, slot, start, NULL);
  c.resign = 1;
  return lk__bl_run(&c.call);
}

int lk_blocking_leader_is_leader(lk_blocking_leader_t *l) {
  lk__bl_slot_t *s = l != NULL ? lk__bl_slot_find(&l->h) : NULL;
  return s != NULL && !atomic_load(&s->lost) && atomic_load(&s->count[0]) > 0;
}

int64_t lk_blocking_leader_term(lk_blocking_leader_t *l) {
  lk__bl_slot_t *s = l != NULL ? lk__bl_slot_find(&l->h) : NULL;
  return s != NULL ? atomic_load(&s->count[1]) : 0;
}

int lk_blocking_leader_close(lk_blocking_leader_t *l) {
  return lk__bl_handle_close(l ? &l->h : NULL);
}
