/* Countdown latch, wire compatible with Redisson's RCountDownLatch
 * (docs/latch.md, "Data layout"): lifecycle, keys and accessors. Reads are in
 * latch_state.c, writes in latch_write.c. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "latch/latch_internal.h"

const lk__script_t *lk__latch_script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

void lk__latch_begin(lk_latch_t *l, enum lk__latch_op kind, lk_latch_cb cb,
                     void *arg) {
  lk__obj_begin(&l->base, kind, (lk__fn_t)cb, arg);
}

/* The command in flight is left behind (cancel, timeout, close). A read's
 * late answer matters to nobody; a write's may still apply. */
static void on_abandon(lk__obj_t *o) {
  lk_latch_t *l = (lk_latch_t *)o;
  if (o->kind == LATCH_OP_TRY_SET || o->kind == LATCH_OP_COUNT_DOWN ||
      o->kind == LATCH_OP_DELETE)
    lk__latch_write_abandoned(l);
  lk__op_retarget(o->op, NULL, NULL);
}

LK__OBJ_CALLS(lk_latch_t, lk_latch_cb, lk_latch_close_cb)

/* Every message wakes an awaiter (.message NULL): "0" (opened) and "1"
 * (re-armed, or deleted: the tombstone is only seen by looking). The
 * handle's answers (core/handle.c): the core's name; the latch holds
 * nothing. */
static const lk__obj_ops_t lk__latch_ops = {
    .attempt = lk__latch_attempt_state,
    .abandon = on_abandon,
    /* Writes carry this object's request sequence, which the record answers
     * for, and reads change nothing: every command may be resent. */
    .counted = lk__obj_counted_always,
    .close_release = lk__latch_close_cleanup,
    LK__OBJ_CALLED,
    LK__NAMED_BODY(lk_latch_t),
    .strings = {offsetof(lk_latch_t, channel), offsetof(lk_latch_t, marker),
                offsetof(lk_latch_t, tomb), offsetof(lk_latch_t, record)},
    .message = NULL,
    .handle_kind = LK_KIND_LATCH,
    .cancel_kind = LATCH_OP_AWAIT,
};

void lk_latch_opts_init(lk_latch_opts_t *o) {
  if (o == NULL)
    return;
  o->strict = 0;
  o->marker_ttl_ms = LK_LATCH_MARKER_TTL_DEFAULT;
}

/* prefixName(RECORD_PREFIX, NAME) + ":" + owner: under the name's hash tag
 * and unique to this object. */
static char *make_record(const lk_latch_t *l, size_t *out_len) {
  size_t bl, n;
  char *base = lk__prefix_name(LK__LATCH_RECORD_PREFIX, l->name, l->name_len, &bl);
  char *k;
  if (base == NULL)
    return NULL;
  n = bl + 1 + l->owner_len;
  k = lk__malloc(n + 1);
  if (k != NULL) {
    memcpy(k, base, bl);
    k[bl] = ':';
    memcpy(k + bl + 1, l->owner, l->owner_len);
    k[n] = '\0';
    *out_len = n;
  }
  lk__free(base);
  return k;
}

int lk_latch_new(lk_client_t *c, const char *name, const lk_latch_opts_t *opts,
                 lk_latch_t **out) {
  lk_latch_opts_t defaults;
  lk_latch_t *l;
  size_t len;
  int n, rc = lk__check_client_new(c);
  if (rc != 0)
    return rc;
  /* The options are checked before the name (lk__obj_open). */
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_latch_opts_init);
  if (out == NULL || opts->marker_ttl_ms < 1 || opts->marker_ttl_ms > LK_LATCH_MARKER_TTL_DEFAULT)
    return LK_EINVAL;
  l = lk__obj_open(c, out, name, &lk__latch_ops, &rc);
  if (l == NULL)
    return rc;
  len = l->name_len;
  n = snprintf(l->owner, sizeof(l->owner), "%s:%" PRIu64, c->id, ++c->next_tid);
  l->owner_len = (size_t)n;
  l->strict = opts->strict != 0;
  l->marker_ttl_ms = opts->marker_ttl_ms;
  l->channel = lk__braced_name(LK__LATCH_CHANNEL_PREFIX, name, len, &l->channel_len);
  l->marker = lk__prefix_name(LK__LATCH_MARKER_PREFIX, name, len, &l->marker_len);
  l->tomb = lk__prefix_name(LK__LATCH_TOMB_PREFIX, name, len, &l->tomb_len);
  l->record = make_record(l, &l->record_len);
  rc = LK_ENOMEM;
  if (l->channel == NULL || l->marker == NULL || l->tomb == NULL || l->record == NULL)
    goto fail;
  {
    /* One slot for all (core/names.c). Redisson's channel wraps the whole
     * name in braces, so no name with a brace passes. The record's prefix
     * is open: the owner follows it. */
    const lk__derived_t d[5] = {{l->name, l->name_len, 0},
                                {l->channel, l->channel_len, 0},
                                {l->marker, l->marker_len, 0},
                                {l->tomb, l->tomb_len, 0},
                                {l->record, l->record_len - l->owner_len - 1, 1}};
    rc = lk__names_one_slot(c, "latch", l->name, l->name_len, d, 5);
    if (rc != 0)
      goto fail;
  }
  lk__obj_init_channel(&l->base, c, &lk__latch_ops, l->name, l->channel, l->channel_len);
  *out = l;
  return 0;
fail:
  lk__obj_free(&l->base); /* memory only: lk__obj_init has not run */
  return rc;
}

LK__KIND_CLOSE(lk_latch)

int lk_latch_cancel(lk_latch_t *l) { return lk_handle_cancel(LK__H(l)); }

/* --- accessors --- */

int lk_latch_is_strict(const lk_latch_t *l) { return l ? l->strict : 0; }
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
int64_t lk_latch_result(const lk_latch_t *l) { return lk__handle_result(LK__CH(l)); }
LK__KIND_ALIASES(lk_latch, lk_latch_name)
