/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* The public handle (latchkey/handle.h): the verbs every kind shares, once,
 * on the object body (core/object.h). A handle is the object's address:
 * every kind embeds lk__obj_t as its first member, so the conversions are
 * casts, and the kind-specific answers come from the kind's ops table
 * (handle_kind, cancel_kind, tells_lost, name, owner, is_held, token). */
#include "core/hold.h"
#include "core/object.h"

static lk__obj_t *obj(lk_handle_t *h) { return (lk__obj_t *)(void *)h; }
static const lk__obj_t *cobj(const lk_handle_t *h) { return (const lk__obj_t *)(const void *)h; }

/* --- kinds and conversions --- */

/* By lk_kind_t value; a new kind adds its name at the end. */
static const char *const kind_names[] = {
    NULL,    "lock",      "fair",    "rwlock", "semaphore",   "psem",
    "latch", "multilock", "redlock", "leader", "ratelimiter", "barrier",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == LK_KIND_BARRIER + 1,
               "a name for every lk_kind_t");

const char *lk_kind_name(int kind) {
  if (kind <= 0 || (size_t)kind >= sizeof kind_names / sizeof kind_names[0])
    return NULL;
  return kind_names[kind];
}

int lk_handle_kind(const lk_handle_t *h) {
  return h != NULL ? cobj(h)->ops->handle_kind : LK_EINVAL;
}

const char *lk_handle_kind_name(const lk_handle_t *h) { return lk_kind_name(lk_handle_kind(h)); }

/* lk_X_handle and lk_handle_as_X for each kind: declared by the kind's
 * header; the object's address is its handle's. */
#define LK__HANDLE_CONVERSIONS(X, T, KIND)                                      \
  lk_handle_t *lk_##X##_handle(T *x) { return (lk_handle_t *)(void *)x; }      \
  T *lk_handle_as_##X(lk_handle_t *h) {                                         \
    return lk_handle_kind(h) == (KIND) ? (T *)(void *)h : NULL;                \
  }

LK__HANDLE_CONVERSIONS(lock, lk_lock_t, LK_KIND_LOCK)
LK__HANDLE_CONVERSIONS(fair, lk_fair_t, LK_KIND_FAIR)
LK__HANDLE_CONVERSIONS(rwlock, lk_rwlock_t, LK_KIND_RWLOCK)
LK__HANDLE_CONVERSIONS(semaphore, lk_semaphore_t, LK_KIND_SEMAPHORE)
LK__HANDLE_CONVERSIONS(psem, lk_psem_t, LK_KIND_PSEM)
LK__HANDLE_CONVERSIONS(latch, lk_latch_t, LK_KIND_LATCH)
LK__HANDLE_CONVERSIONS(multilock, lk_multilock_t, LK_KIND_MULTILOCK)
LK__HANDLE_CONVERSIONS(redlock, lk_redlock_t, LK_KIND_REDLOCK)
LK__HANDLE_CONVERSIONS(leader, lk_leader_t, LK_KIND_LEADER)
LK__HANDLE_CONVERSIONS(ratelimiter, lk_ratelimiter_t, LK_KIND_RATELIMITER)
LK__HANDLE_CONVERSIONS(barrier, lk_barrier_t, LK_KIND_BARRIER)

/* --- the verbs --- */

int lk_handle_close(lk_handle_t *h, lk_handle_close_cb close_cb) {
  int rc = lk__obj_close(obj(h), (lk__fn_t)close_cb);
  /* Accepted: the object lives until close_cb, which comes from the loop. */
  if (rc == 0)
    obj(h)->close_generic = 1;
  return rc;
}

int lk_handle_cancel(lk_handle_t *h) {
  lk__obj_t *o = obj(h);
  int kind;
  if (o == NULL)
    return LK_EINVAL;
  kind = o->ops->cancel_kind != 0 ? o->ops->cancel_kind : o->ops->acquire_kind;
  if (kind == LK__CANCEL_PENDING)
    kind = o->kind;
  /* -1 is never pending: LK_EINVAL after the entry checks. */
  return lk__obj_cancel(o, kind != 0 ? kind : -1);
}

void *lk_handle_get_data(const lk_handle_t *h) { return h != NULL ? cobj(h)->data : NULL; }

int lk_handle_set_data(lk_handle_t *h, void *data) {
  if (h == NULL)
    return LK_EINVAL;
  obj(h)->data = data;
  return 0;
}

const char *lk_handle_name(const lk_handle_t *h) {
  if (h == NULL)
    return NULL;
  return cobj(h)->ops->name != NULL ? cobj(h)->ops->name(cobj(h)) : cobj(h)->name;
}

lk_client_t *lk_handle_client(const lk_handle_t *h) { return h != NULL ? cobj(h)->client : NULL; }

const char *lk_handle_error_text(const lk_handle_t *h) { return lk__obj_errtext(cobj(h)); }

int lk_handle_result(const lk_handle_t *h, int64_t *out) {
  if (h == NULL || out == NULL)
    return LK_EINVAL;
  *out = cobj(h)->result;
  return 0;
}

int lk_handle_set_lost_cb(lk_handle_t *h, lk_handle_cb on_lost, void *arg) {
  int rc;
  if (h != NULL && !obj(h)->ops->tells_lost)
    return LK_EINVAL;
  rc = lk__obj_set_lost_cb(obj(h), (lk__fn_t)on_lost, arg);
  if (rc == 0)
    obj(h)->lost_generic = 1;
  return rc;
}

/* The kinds that tell a loss are the ones whose holds have a health. */
int lk_handle_set_health_cb(lk_handle_t *h, lk_handle_health_cb on_health, void *arg) {
  if (h != NULL && !obj(h)->ops->tells_lost && !obj(h)->ops->tells_health)
    return LK_EINVAL;
  return lk__obj_set_health_cb(obj(h), (lk__fn_t)on_health, arg);
}

/* The core's answer for a kind that keeps its sides in the object body
 * (o->sides): held while none was lost and any side is held. */
static int sides_held(const lk__obj_t *o) {
  int i;
  if (o->lost)
    return 0;
  for (i = 0; i < o->nsides; i++)
    if (lk__hold_is_held(o->client, &o->sides[i]))
      return 1;
  return 0;
}

int lk_handle_is_held(const lk_handle_t *h) {
  if (h == NULL)
    return LK_EINVAL;
  if (cobj(h)->ops->is_held != NULL)
    return cobj(h)->ops->is_held(cobj(h)) ? 1 : 0;
  return cobj(h)->nsides > 0 ? sides_held(cobj(h)) : LK_EINVAL;
}

int64_t lk_handle_token(const lk_handle_t *h) {
  if (h == NULL || cobj(h)->ops->token == NULL)
    return LK_EINVAL;
  return cobj(h)->ops->token(cobj(h));
}

const char *lk_handle_owner(const lk_handle_t *h) {
  return h != NULL && cobj(h)->ops->owner != NULL ? cobj(h)->ops->owner(cobj(h)) : NULL;
}
