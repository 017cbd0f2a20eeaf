/* Read/write lock, wire compatible with Redisson's RReadWriteLock
 * (docs/rwlock.md, "Data layout"): lifecycle, the acquire entry point, queries and
 * accessors. One object is one owner with both sides and at most one
 * operation pending; it knows its hold count on each side. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/router.h"
#include "core/spin.h"
#include "rwlock/rwlock_int.h"

static void begin(lk_rwlock_t *rw, enum lk__rw_op kind, lk_rwlock_cb cb, void *arg) {
  lk__obj_begin(&rw->base, kind, (lk__fn_t)cb, arg);
}

/* --- acquire --- */

void lk_rwlock_opts_init(lk_rwlock_opts_t *o) {
  if (o == NULL)
    return;
  LK__WAIT_OPTS_DEFAULTS(o);
  o->lease_ms = LK_LEASE_DEFAULT;
  o->fenced = 0;
}

int lk_rwlock_acquire(lk_rwlock_t *rw, lk_rwlock_side_t side, const lk_rwlock_opts_t *opts,
                      lk_rwlock_cb cb, void *arg) {
  lk_rwlock_opts_t defaults;
  lk__hold_t *h;
  int s, rc = lk__obj_check_idle(rw ? &rw->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__rw_valid_side(side))
    return LK_EINVAL;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_rwlock_opts_init);
  s = lk__rw_side_index(side);
  h = &rw->side[s];
  rc = lk__hold_acquire_check(h, opts->wait_ms, opts->lease_ms);
  if (rc != 0)
    return rc;
  rc = LK__OBJ_WAIT_WANTS(&rw->base, opts);
  if (rc != 0)
    return rc;
  if (opts->fenced && (rc = lk__hold_token_key(&rw->token_key, &rw->token_key_len,
                                                LK__RW_TOKEN_PREFIX, rw->name, rw->name_len)) != 0)
    return rc;
  lk__hold_afresh(&rw->base);
  /* A reader asking to write would wait for its own read holds to go. */
  if (s == LK__RW_W && rw->side[LK__RW_R].count > 0 && rw->side[LK__RW_W].count == 0)
    return LK_EUPGRADE;
  begin(rw, LK__RW_OP_ACQUIRE, cb, arg);
  lk__obj_wait_begin(&rw->base, opts->wait_ms);
  rw->req_side = s;
  rw->req_fenced = opts->fenced != 0;
  /* A re-entry with an explicit lease while the watchdog keeps this side
   * keeps the watchdog's lease: a shorter one would end the holds before the
   * local deadline the watchdog promises. */
  rw->req_watchdog = opts->lease_ms == LK_LEASE_DEFAULT || lk__hold_watched(h);
  rw->req_lease_ms = rw->req_watchdog ? LK__RW_CLIENT(rw)->o.default_lease_ms : opts->lease_ms;
  return lk__obj_start(&rw->base);
}

int lk_rwlock_cancel(lk_rwlock_t *rw) { return lk_handle_cancel(LK__H(rw)); }

/* --- force release and queries --- */

/* The mode query reads "write" or "read" (nil: not locked, 0). */
static int read_value(lk__obj_t *o, const redisReply *r, int64_t *v) {
  if (o->kind != LK__RW_OP_QUERY_MODE)
    return -1;
  if (r->type == REDIS_REPLY_NIL) {
    *v = 0;
    return 1;
  }
  if (r->type != REDIS_REPLY_STRING)
    return 0;
  *v = strcmp(r->str, "write") == 0 ? LK_RW_WRITE : strcmp(r->str, "read") == 0 ? LK_RW_READ : -1;
  return *v >= 0;
}

/* A force release: the holds of both sides are gone. */
static void value_done(lk__obj_t *o, int kind) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s;
  if (kind != LK__RW_OP_FORCE)
    return;
  for (s = LK__RW_R; s <= LK__RW_W; s++)
    lk__hold_drop(o->client, &rw->side[s], UINT32_MAX);
  o->lost = 0;
}

static int start_simple(lk_rwlock_t *rw, enum lk__rw_op kind, lk_rwlock_side_t side,
                        lk_rwlock_cb cb, void *arg) {
  const char *argv[4];
  size_t lens[4];
  lk__op_t *op;
  int err = 0, rc = lk__obj_check_idle(rw ? &rw->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (kind == LK__RW_OP_QUERY_HOLDS && !lk__rw_valid_side(side))
    return LK_EINVAL;
  begin(rw, kind, cb, arg);
  switch (kind) {
  case LK__RW_OP_FORCE:
    argv[0] = rw->name, lens[0] = rw->name_len;
    argv[1] = rw->channel, lens[1] = rw->channel_len;
    argv[2] = rw->kp, lens[2] = rw->kp_len;
    argv[3] = lk__publish_cmd(LK__RW_CLIENT(rw), &lens[3]);
    op = lk__script_call(LK__RW_CLIENT(rw), lk__script_find("rwlock/force_release"), 3, 1,
                         argv, lens, lk__obj_value_reply, &rw->base, &err);
    return lk__obj_value_sent(&rw->base, op, LK__VALUE_CHANGES, err);
  case LK__RW_OP_QUERY_MODE:
    return lk__hold_query(&rw->base, LK__HOLD_FIELD, rw->name, rw->name_len, "mode", 4);
  case LK__RW_OP_QUERY_HOLDS:
    if (side == LK_RW_WRITE)
      return lk__hold_query(&rw->base, LK__HOLD_FIELD, rw->name, rw->name_len, rw->writer,
                            rw->writer_len);
    return lk__hold_query(&rw->base, LK__HOLD_FIELD, rw->name, rw->name_len, rw->owner,
                          rw->owner_len);
  default:
    return lk__hold_query(&rw->base, LK__HOLD_TTL, rw->name, rw->name_len, NULL, 0);
  }
}

int lk_rwlock_force_release(lk_rwlock_t *rw, lk_rwlock_cb cb, void *arg) {
  return start_simple(rw, LK__RW_OP_FORCE, LK_RW_READ, cb, arg);
}
int lk_rwlock_mode(lk_rwlock_t *rw, lk_rwlock_cb cb, void *arg) {
  return start_simple(rw, LK__RW_OP_QUERY_MODE, LK_RW_READ, cb, arg);
}
int lk_rwlock_remaining_ttl(lk_rwlock_t *rw, lk_rwlock_cb cb, void *arg) {
  return start_simple(rw, LK__RW_OP_QUERY_TTL, LK_RW_READ, cb, arg);
}
int lk_rwlock_server_hold_count(lk_rwlock_t *rw, lk_rwlock_side_t side, lk_rwlock_cb cb,
                                void *arg) {
  return start_simple(rw, LK__RW_OP_QUERY_HOLDS, side, cb, arg);
}

/* --- identity --- */

/* Sets the owner fields and this owner's hold-key prefix, Redisson's
 * suffixName(NAME, owner) + ":rwlock_timeout" (= KP:UUID:TID:rwlock_timeout). */
static int set_owner(lk_rwlock_t *rw, const char *client_id, uint64_t tid) {
  char owner[96], suffix[128];
  size_t tp_len;
  char *tp;
  int n = snprintf(owner, sizeof(owner), "%s:%" PRIu64, client_id, tid);
  if (n < 0 || (size_t)n >= sizeof(owner))
    return LK_EINVAL;
  snprintf(suffix, sizeof(suffix), "%s:rwlock_timeout", owner);
  tp = lk__suffix_name(rw->name, rw->name_len, suffix, &tp_len);
  if (tp == NULL)
    return LK_ENOMEM;
  lk__free(rw->tp);
  rw->tp = tp;
  rw->tp_len = tp_len;
  memcpy(rw->owner, owner, (size_t)n + 1);
  rw->owner_len = (size_t)n;
  rw->writer_len = (size_t)snprintf(rw->writer, sizeof(rw->writer), "%s:write", owner);
  /* The watchdog entries borrow these. */
  rw->wd[LK__RW_R].keys[1] = rw->tp;
  rw->wd[LK__RW_R].key_lens[1] = rw->tp_len;
  rw->wd[LK__RW_R].owner = rw->owner;
  rw->wd[LK__RW_R].owner_len = rw->owner_len;
  rw->wd[LK__RW_W].owner = rw->writer;
  rw->wd[LK__RW_W].owner_len = rw->writer_len;
  return 0;
}

int lk_rwlock_set_owner(lk_rwlock_t *rw, const char *client_id, uint64_t thread_id) {
  int rc = lk__hold_set_owner_check(rw ? &rw->base : NULL, client_id);
  if (rc != 0)
    return rc;
  if (rw->base.kind != LK__RW_OP_NONE || rw->side[LK__RW_R].count > 0 ||
      rw->side[LK__RW_W].count > 0 || lk__hold_watched(&rw->side[LK__RW_R]) ||
      lk__hold_watched(&rw->side[LK__RW_W]))
    return LK_EBUSY;
  rc = set_owner(rw, client_id ? client_id : LK__RW_CLIENT(rw)->id, thread_id);
  if (rc == 0)
    rw->owner_shared = 1;
  return rc;
}

/* --- lifecycle --- */

/* The typed callbacks and the handle's owner and token (core/hold.h); the
 * core answers for the name and held (either side held: base.sides). */
LK__LOCK_LIKE_DEFS(lk_rwlock_t, lk_rwlock_cb, lk_rwlock_close_cb)

static const lk__obj_ops_t lk__rwlock_ops = {
    LK__LOCK_LIKE_OPS(lk__rw),
    .close_release = lk__rw_close_release,
    LK__NAMED_BODY(lk_rwlock_t),
    .strings = {offsetof(lk_rwlock_t, channel), offsetof(lk_rwlock_t, kp),
                offsetof(lk_rwlock_t, tp), offsetof(lk_rwlock_t, token_key)},
    .message = lk__rw_on_message,
    .acquire_kind = LK__RW_OP_ACQUIRE,
    .release_kind = LK__RW_OP_RELEASE,
    .deferred = lk__rw_release_deferred,
    .read_value = read_value,
    .value_done = value_done,
    .handle_kind = LK_KIND_RWLOCK,
};

/* {NAME}, or NAME itself when it has a brace (Redisson's hash-tag rule):
 * the prefix of every owner's hold keys. */
static char *key_prefix(const char *name, size_t len, size_t *out_len) {
  int braced = memchr(name, '{', len) != NULL;
  char *kp = lk__malloc(len + 3);
  if (kp == NULL)
    return NULL;
  if (braced) {
    memcpy(kp, name, len);
    *out_len = len;
  } else {
    kp[0] = '{';
    memcpy(kp + 1, name, len);
    kp[len + 1] = '}';
    *out_len = len + 2;
  }
  kp[*out_len] = '\0';
  return kp;
}

/* Every key and channel in one slot (core/names.c): the name, the channel,
 * the token key (made by the first fenced acquire, the same way), and the
 * hold keys' prefix, open since every owner's id and a number follow it
 * (this owner's, as set_owner made it, and the bare prefix the scripts
 * extend with other owners' ids). */
static int check_name(lk_client_t *c, const lk_rwlock_t *rw) {
  lk__derived_t d[5] = {{rw->name, rw->name_len, 0},
                        {rw->channel, rw->channel_len, 0},
                        {rw->kp, rw->kp_len, 1},
                        {rw->tp, rw->kp_len + 1 <= rw->tp_len ? rw->kp_len + 1 : rw->tp_len, 1},
                        {NULL, 0, 0}};
  return lk__names_one_slot_later(c, "rwlock", rw->name, rw->name_len, d, 5,
                                  LK__RW_TOKEN_PREFIX);
}

int lk_rwlock_new(lk_client_t *c, const char *name, lk_rwlock_t **out) {
  int rc;
  lk_rwlock_t *rw = lk__obj_open(c, out, name, &lk__rwlock_ops, &rc);
  if (rw == NULL)
    return rc;
  rw->channel = lk__prefix_name(LK__RW_CHANNEL_PREFIX, name, rw->name_len, &rw->channel_len);
  rw->kp = key_prefix(name, rw->name_len, &rw->kp_len);
  rc = rw->channel && rw->kp ? set_owner(rw, c->id, ++c->next_tid) : LK_ENOMEM;
  if (rc == 0)
    rc = check_name(c, rw);
  if (rc != 0) {
    lk__obj_free(&rw->base);
    return rc;
  }
  rw->wd[LK__RW_R].cls = &lk__rw_wd_read_class;
  rw->wd[LK__RW_W].cls = &lk__rw_wd_write_class;
  for (int s = LK__RW_R; s <= LK__RW_W; s++) {
    rw->side[s].lease_ms = c->o.default_lease_ms;
    rw->side[s].wd = &rw->wd[s];
    rw->wd[s].keys[0] = rw->name;
    rw->wd[s].key_lens[0] = rw->name_len;
    rw->wd[s].on_event = lk__rw_on_wd_event;
    lk__queue_init(&rw->wd[s].node);
  }
  lk__obj_init_channel(&rw->base, c, &lk__rwlock_ops, rw->name, rw->channel, rw->channel_len);
  rw->base.sides = rw->side;
  rw->base.nsides = 2;
  *out = rw;
  return 0;
}

LK__KIND_CLOSE(lk_rwlock)

/* --- leases and accessors --- */

LK__KIND_SET_LOST_CB(lk_rwlock)

/* The read side's explicit deadline is its earliest hold's (core/hold.h,
 * `earliest`): held means every read hold this object counts is. */
int lk_rwlock_is_held(const lk_rwlock_t *rw, lk_rwlock_side_t side) {
  return rw != NULL && lk__rw_valid_side(side) && !rw->base.lost &&
         lk__hold_is_held(LK__RW_CLIENT(rw), &rw->side[lk__rw_side_index(side)]);
}

uint32_t lk_rwlock_hold_count(const lk_rwlock_t *rw, lk_rwlock_side_t side) {
  if (rw == NULL || !lk__rw_valid_side(side))
    return 0;
  return rw->side[lk__rw_side_index(side)].count;
}

int64_t lk_rwlock_token(const lk_rwlock_t *rw) { return rw ? lk_handle_token(LK__CH(rw)) : 0; }

int lk_rwlock_sync_acked(const lk_rwlock_t *rw) {
  return lk__obj_sync_acked(rw ? &rw->base : NULL);
}
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
int64_t lk_rwlock_result(const lk_rwlock_t *rw) { return lk__handle_result(LK__CH(rw)); }
LK__KIND_ALIASES(lk_rwlock, lk_rwlock_name)
const char *lk_rwlock_owner(const lk_rwlock_t *rw) { return lk_handle_owner(LK__CH(rw)); }
