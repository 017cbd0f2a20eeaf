/* Fair lock, wire compatible with Redisson's RFairLock (docs/fair.md):
 * lifecycle, identity and accessors. One object is one owner with at
 * most one operation pending; it knows its own hold count (the scripts take
 * it as the expected count, as the reentrant lock's do) and keeps its own
 * channel subscribed from its first wait until it closes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/outcome.h"
#include "fair/fair_internal.h"

#define LK__FAIR_QUEUE_PREFIX "redisson_lock_queue"
#define LK__FAIR_TIMEOUT_PREFIX "redisson_lock_timeout"
#define LK__FAIR_CHANNEL_PREFIX "redisson_lock__channel"
#define LK__FAIR_WAITERS_PREFIX "latchkey_fair_waiters"

const lk__script_t *lk__fair_script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

void lk__fair_begin(lk_fair_t *f, int kind, lk_fair_cb cb, void *arg) {
  lk__obj_begin(&f->base, kind, (lk__fn_t)cb, arg);
}

void lk__fair_finish(lk_fair_t *f, int status) { lk__obj_finish(&f->base, status); }

void lk__fair_leave_keys(const lk_fair_t *f, const char **argv, size_t *lens) {
  argv[0] = f->name, lens[0] = f->name_len;
  argv[1] = f->queue_key, lens[1] = f->queue_key_len;
  argv[2] = f->timeout_key, lens[2] = f->timeout_key_len;
  argv[3] = f->channel_base, lens[3] = f->channel_base_len;
  argv[4] = f->waiters_key, lens[4] = f->waiters_key_len;
}

static void on_complete(lk__obj_t *o, int kind, int status) {
  lk_fair_t *f = (lk_fair_t *)o;
  if (kind == LK__FAIR_OP_ACQUIRE) {
    /* Ended without the lock: whatever queue entry a waiting attempt made
     * goes now, before anything the callback may start. (When an attempt's
     * outcome was open, the core's give-back, lk__fair_undo, left it.) */
    if (status != 0 && f->maybe_queued)
      lk__outcome_give_back(o, lk__fair_leave_op(f, -1, 0, NULL, NULL, 0));
    f->maybe_queued = 0;
    f->position = -1;
  }
}

/* --- identity --- */

int lk__fair_take_owner(lk_fair_t *f, const char *client_id, uint64_t tid) {
  char owner[LK__FAIR_OWNER_MAX];
  int n = snprintf(owner, sizeof(owner), "%s:%" PRIu64, client_id, tid);
  if (n < 0 || (size_t)n >= sizeof(owner))
    return LK_EINVAL;
  /* Messages on the old owner's channel mean nothing to the new one. */
  lk__obj_unsubscribe(&f->base);
  memcpy(f->owner, owner, (size_t)n + 1);
  f->owner_len = (size_t)n;
  f->wd.owner_len = f->owner_len;
  /* The channel buffer was sized for the longest owner at creation. */
  memcpy(f->channel + f->channel_base_len + 1, owner, (size_t)n + 1);
  f->channel_len = f->channel_base_len + 1 + (size_t)n;
  f->base.channel_len = f->channel_len;
  return 0;
}

int lk_fair_set_owner(lk_fair_t *f, const char *client_id, uint64_t thread_id) {
  int rc = lk__hold_set_owner_check(f ? &f->base : NULL, client_id);
  if (rc != 0)
    return rc;
  if (f->base.kind != LK__FAIR_OP_NONE || f->hold.count > 0)
    return LK_EBUSY;
  rc = lk__fair_take_owner(f, client_id ? client_id : LK__FAIR_CLIENT(f)->id, thread_id);
  if (rc == 0)
    f->owner_shared = 1;
  return rc;
}

/* --- close --- */

/* Close gives back every hold (renewal stops first). The queue entry of a
 * waiting acquire was removed when its cancellation completed. An owner of
 * our own drops everything it has on the server, so a late grant to an
 * abandoned acquire queued behind is gone too (its conditional give-back
 * then finds nothing); a shared owner drops exactly its count, and its late
 * grants are given back one by one. */
static int on_close_release_start(lk__obj_t *o) {
  lk_fair_t *f = (lk_fair_t *)o;
  lk__hold_unwatch(o->client, &f->hold);
  if (f->hold.count == 0)
    return 0;
  o->op = lk__fair_leave_op(f, -1, f->owner_shared ? (int64_t)f->hold.count : -1,
                            lk__hold_close_reply, o, 1);
  return o->op != NULL;
}

/* The typed callbacks and the handle's owner and token (core/hold.h); the
 * core answers for the name and held (base.sides). */
LK__LOCK_LIKE_DEFS(lk_fair_t, lk_fair_cb, lk_fair_close_cb)

static const lk__obj_ops_t lk__fair_ops = {
    LK__LOCK_LIKE_OPS(lk__fair),
    .complete = on_complete,
    .abandon = lk__fair_abandon,
    .close_release = on_close_release_start,
    LK__NAMED_BODY(lk_fair_t),
    .strings = {offsetof(lk_fair_t, queue_key), offsetof(lk_fair_t, timeout_key),
                offsetof(lk_fair_t, waiters_key), offsetof(lk_fair_t, channel_base),
                offsetof(lk_fair_t, channel), offsetof(lk_fair_t, token_key)},
    .acquire_kind = LK__FAIR_OP_ACQUIRE,
    .release_kind = LK__FAIR_OP_RELEASE,
    .own_answer = lk__fair_queued,
    .handle_kind = LK_KIND_FAIR,
    .value_done = lk__fair_value_done,
};

/* Every key and channel in one slot (core/names.c): the name, the queue,
 * the deadlines, the waiters' set, the token key (made by the first fenced
 * acquire, the same way) and each owner's channel, base + ":OWNER" (open:
 * other owners' ids follow it when a release wakes them). */
static int check_name(lk_client_t *c, const lk_fair_t *f) {
  lk__derived_t d[6] = {{f->name, f->name_len, 0},
                        {f->queue_key, f->queue_key_len, 0},
                        {f->timeout_key, f->timeout_key_len, 0},
                        {f->waiters_key, f->waiters_key_len, 0},
                        {f->channel_base, f->channel_base_len, 1},
                        {NULL, 0, 0}};
  return lk__names_one_slot_later(c, "fair lock", f->name, f->name_len, d, 6,
                                  LK__FAIR_TOKEN_PREFIX);
}

int lk_fair_new(lk_client_t *c, const char *name, lk_fair_t **out) {
  int rc;
  size_t len;
  lk_fair_t *f = lk__obj_open(c, out, name, &lk__fair_ops, &rc);
  if (f == NULL)
    return rc;
  len = f->name_len;
  f->queue_key = lk__prefix_name(LK__FAIR_QUEUE_PREFIX, name, len, &f->queue_key_len);
  f->timeout_key = lk__prefix_name(LK__FAIR_TIMEOUT_PREFIX, name, len, &f->timeout_key_len);
  f->waiters_key = lk__prefix_name(LK__FAIR_WAITERS_PREFIX, name, len, &f->waiters_key_len);
  f->channel_base =
      lk__prefix_name(LK__FAIR_CHANNEL_PREFIX, name, len, &f->channel_base_len);
  if (f->channel_base != NULL) {
    f->channel = lk__malloc(f->channel_base_len + 1 + LK__FAIR_OWNER_MAX);
    if (f->channel != NULL) {
      memcpy(f->channel, f->channel_base, f->channel_base_len);
      f->channel[f->channel_base_len] = ':';
    }
  }
  rc = f->queue_key && f->timeout_key && f->waiters_key && f->channel ? check_name(c, f)
                                                                         : LK_ENOMEM;
  if (rc != 0) {
    lk__obj_free(&f->base);
    return rc;
  }
  f->hold.lease_ms = c->o.default_lease_ms;
  f->hold.wd = &f->wd;
  f->position = -1;
  f->wd.cls = &lk__wd_lock_class; /* renewed exactly as a reentrant lock */
  f->wd.keys[0] = f->name;
  f->wd.key_lens[0] = f->name_len;
  f->wd.owner = f->owner;
  f->wd.on_event = lk__fair_on_wd_event;
  lk__queue_init(&f->wd.node);
  lk__obj_init(&f->base, c, &lk__fair_ops, f->name);
  f->base.sides = &f->hold;
  f->base.nsides = 1;
  f->base.channel = f->channel;
  f->base.keep_sub = 1;
  lk__fair_take_owner(f, c->id, ++c->next_tid);
  *out = f;
  return 0;
}

LK__KIND_CLOSE(lk_fair)

/* --- callbacks and accessors --- */

LK__KIND_SET_LOST_CB(lk_fair)

int lk_fair_set_queue_cb(lk_fair_t *f, lk_fair_cb on_queued, void *arg) {
  int rc = lk__obj_check(f ? &f->base : NULL);
  if (rc != 0)
    return rc;
  f->on_queued = on_queued;
  f->queued_arg = arg;
  return 0;
}

int64_t lk_fair_position(const lk_fair_t *f) { return f ? f->position : -1; }

int lk_fair_is_held(const lk_fair_t *f) { return lk_handle_is_held(LK__CH(f)) == 1; }

int64_t lk_fair_token(const lk_fair_t *f) { return f ? lk_handle_token(LK__CH(f)) : 0; }

int lk_fair_sync_acked(const lk_fair_t *f) { return lk__obj_sync_acked(f ? &f->base : NULL); }
uint32_t lk_fair_hold_count(const lk_fair_t *f) { return f ? f->hold.count : 0; }
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
int64_t lk_fair_result(const lk_fair_t *f) { return lk__handle_result(LK__CH(f)); }
LK__KIND_ALIASES(lk_fair, lk_fair_name)
const char *lk_fair_owner(const lk_fair_t *f) { return lk_handle_owner(LK__CH(f)); }
