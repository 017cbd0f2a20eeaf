/* The blocking countdown latch (docs/latch.md): lk_latch_t per thread
 * (handle.c), so any number of threads await at once (one object has one
 * operation pending). The handle keeps the options each object is made
 * with. */
#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_latch_s {
  lk__bl_handle_t h; /* first: handle.c frees the whole */
  lk_latch_opts_t opts;
};

enum { V_TRY_SET, V_COUNT_DOWN, V_GET_COUNT, V_AWAIT, V_DELETE };

typedef struct {
  lk__bl_call_t call;
  int verb;
  int64_t n;
} latch_call_t;

static void on_closed(lk_latch_t *obj) { lk__bl_slot_closed(lk_latch_get_data(obj)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_blocking_latch_t *l = (lk_blocking_latch_t *)slot->h;
  lk_latch_t *obj = NULL;
  int rc = lk_latch_new(lk__bl_client(l->h.b), l->h.name, &l->opts, &obj);
  if (rc != 0)
    return rc;
  lk_latch_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_latch_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t latch_kind = {"latch", open_obj, close_obj};

static void on_done(lk_latch_t *obj, int status, void *arg) {
  latch_call_t *c = arg;
  lk__bl_finish(&c->call, status, lk_latch_result(obj));
}

static int start(lk__bl_call_t *call) {
  latch_call_t *c = (latch_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_latch_t *obj = call->slot->obj;
  if (rc != 0)
    return rc;
  switch (c->verb) {
  case V_TRY_SET:
    rc = lk_latch_try_set_count(obj, c->n, on_done, c);
    break;
  case V_COUNT_DOWN:
    rc = lk_latch_count_down(obj, on_done, c);
    break;
  case V_GET_COUNT:
    rc = lk_latch_get_count(obj, on_done, c);
    break;
  case V_AWAIT:
    rc = lk_latch_await(obj, c->n, on_done, c);
    break;
  default:
    rc = lk_latch_delete(obj, on_done, c);
  }
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_latch_cancel(call->slot->obj); }

static int run(lk_blocking_latch_t *l, int verb, int64_t n, int64_t *result) {
  latch_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(l ? &l->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, l->h.b, slot, start, verb == V_AWAIT ? cancel : NULL);
  c.verb = verb;
  c.n = n;
  rc = lk__bl_run(&c.call);
  if (rc == 0 && result != NULL)
    *result = c.call.result;
  return rc;
}

int lk_blocking_latch_new(lk_blocking_t *b, const char *name, const lk_latch_opts_t *opts,
                          lk_blocking_latch_t **out) {
  lk_blocking_latch_t *l;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  l = lk__calloc(1, sizeof(*l));
  if (l == NULL)
    return LK_ENOMEM;
  if (opts != NULL)
    l->opts = *opts;
  else
    lk_latch_opts_init(&l->opts);
  rc = lk__bl_handle_init(&l->h, b, &latch_kind, name);
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

int lk_blocking_latch_try_set_count(lk_blocking_latch_t *l, int64_t count) {
  int64_t r = 0;
  int rc = run(l, V_TRY_SET, count, &r);
  return rc != 0 ? rc : r != 0;
}

int lk_blocking_latch_count_down(lk_blocking_latch_t *l, int64_t *left) {
  return run(l, V_COUNT_DOWN, 0, left);
}

int lk_blocking_latch_get_count(lk_blocking_latch_t *l, int64_t *count) {
  return run(l, V_GET_COUNT, 0, count);
}

int lk_blocking_latch_await(lk_blocking_latch_t *l, int64_t wait_ms) {
  return run(l, V_AWAIT, wait_ms, NULL);
}

int lk_blocking_latch_delete(lk_blocking_latch_t *l) {
  int64_t r = 0;
  int rc = run(l, V_DELETE, 0, &r);
  return rc != 0 ? rc : r != 0;
}

int lk_blocking_latch_close(lk_blocking_latch_t *l) {
  return lk__bl_handle_close(l ? &l->h : NULL);
}
