/* Writes to the latch: try_set_count, count_down, delete.
 *
 * No per-owner state exists on a latch, so a resend after a lost reply
 * cannot be recognised by an expected count (as the lock's are). Each object
 * keeps one private request record under the latch's hash tag instead
 * (docs/design.md, "Unknown outcomes"): "seq:reply" of its latest write,
 * with a TTL.
 * A write carries its sequence number; the script answers from the record
 * when it already holds that sequence (or a later one: a stale copy), so a
 * count_down is applied at most once however often it is resent. One key
 * per object, overwritten by each write: nothing accumulates per operation,
 * and the object deletes it on close. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/router.h"
#include "latch/latch_internal.h"

static void on_write_reply(void *data, int status, redisReply *r);

/* Awaiters notice a deletion at their next poll, which comes within their
 * client's max_repoll_ms: the tombstone outlives that comfortably. */
static int64_t tomb_ttl_ms(const lk_client_t *c) {
  int64_t t = 4 * c->o.max_repoll_ms + c->o.reply_timeout_ms;
  return t > LK__LATCH_TOMB_TTL_MIN_MS ? t : LK__LATCH_TOMB_TTL_MIN_MS;
}

static int send_write(lk_latch_t *l) {
  char seq[24], rec_ttl[24], num[24], tomb_ttl[24], tomb_val[128];
  const char *argv[10];
  size_t lens[10];
  const char *script;
  size_t pub_len;
  const char *pub = lk__publish_cmd(LATCH_CLIENT(l), &pub_len);
  int nkeys = 5, nargs = 4, err = 0, i;
  snprintf(seq, sizeof(seq), "%" PRIu64, l->seq);
  snprintf(rec_ttl, sizeof(rec_ttl), "%" PRId64, LK__LATCH_RECORD_TTL_MS);
  argv[0] = l->name, lens[0] = l->name_len;
  argv[1] = l->channel, lens[1] = l->channel_len;
  argv[2] = l->record, lens[2] = l->record_len;
  argv[3] = l->marker, lens[3] = l->marker_len;
  argv[4] = l->tomb, lens[4] = l->tomb_len;
  switch (l->base.kind) {
  case LATCH_OP_TRY_SET:
    script = "latch/try_set_count";
    snprintf(num, sizeof(num), "%" PRId64, l->req_count);
    nkeys = 4;
    argv[4] = num;
    argv[5] = pub;
    argv[6] = seq;
    argv[7] = rec_ttl;
    break;
  case LATCH_OP_COUNT_DOWN:
    script = "latch/count_down";
    /* The marker's TTL in strict mode, "0" (no marker) in interop mode. */
    snprintf(num, sizeof(num), "%" PRId64, l->strict ? l->marker_ttl_ms : (int64_t)0);
    argv[5] = pub;
    argv[6] = seq;
    argv[7] = rec_ttl;
    argv[8] = num;
    break;
  default: /* LATCH_OP_DELETE */
    script = "latch/delete";
    /* Unique per deletion: this object's id and the request's sequence. */
    snprintf(tomb_val, sizeof(tomb_val), "%s:%" PRIu64, l->owner, l->seq);
    snprintf(tomb_ttl, sizeof(tomb_ttl), "%" PRId64, tomb_ttl_ms(LATCH_CLIENT(l)));
    nargs = 5;
    argv[5] = pub;
    argv[6] = seq;
    argv[7] = rec_ttl;
    argv[8] = tomb_val;
    argv[9] = tomb_ttl;
    break;
  }
  for (i = nkeys; i < nkeys + nargs; i++)
    lens[i] = strlen(argv[i]);
  l->base.op = lk__script_call(LATCH_CLIENT(l), lk__latch_script(script), nkeys, nargs,
                               argv, lens, on_write_reply, l, &err);
  return l->base.op != NULL ? 0 : err;
}

static void write_failed(lk_latch_t *l, int status, const redisReply *r);

static void write_done(lk_latch_t *l, long long v) {
  int status = 0;
  switch (l->base.kind) {
  case LATCH_OP_COUNT_DOWN:
    if (v == -2)
      status = LK_ELATCHLOST;
    else if (v == -3)
      status = LK_EDELETED;
    else if (v < -3)
      status = LK_EPROTOCOL;
    break;
  default: /* try_set_count and delete answer 1 or 0 */
    if (v != 0 && v != 1)
      status = LK_EPROTOCOL;
    break;
  }
  if (status == LK_EPROTOCOL) {
    write_failed(l, LK_EUNKNOWN, NULL); /* a value the script never sends */
    return;
  }
  if (status == 0)
    l->base.result = v;
  lk__latch_finish(l, status);
}

/* A write failed or its outcome is unknown (core/outcome.h decides). After
 * an unknown outcome the write is resent with the same sequence: the record
 * answers for an earlier attempt that was applied. Resends go only within
 * the first half of the record's life, so the record is still there. */
static void write_failed(lk_latch_t *l, int status, const redisReply *r) {
  uint64_t window_ns = (uint64_t)(LK__LATCH_RECORD_TTL_MS / 2) * 1000000u;
  lk__obj_error(&l->base, r);
  if (lk__now_ns() - l->first_sent_ns < window_ns && lk__outcome_may_resend(&l->base, status) &&
      send_write(l) == 0)
    return;
  if (lk__outcome_unknown(&l->base, status)) {
    /* The first attempt may still have been applied, and a copy of it may
     * still arrive: the record must stay to answer for it. */
    l->record_unsettled = 1;
    status = LK_EUNKNOWN;
  }
  lk__latch_finish(l, status);
}

static void on_write_reply(void *data, int status, redisReply *r) {
  lk_latch_t *l = data;
  long long v;
  l->base.op = NULL;
  if (status != 0)
    write_failed(l, status, r);
  else if (lk__reply_is_int(r, &v))
    write_done(l, v);
  else
    write_failed(l, LK_EUNKNOWN, NULL); /* a shape the script never sends */
}

void lk__latch_write_abandoned(lk_latch_t *l) { l->record_unsettled = 1; }

static int start_write(lk_latch_t *l, enum lk__latch_op kind, lk_latch_cb cb, void *arg) {
  int rc;
  lk__latch_begin(l, kind, cb, arg);
  l->seq++;
  l->first_sent_ns = lk__now_ns();
  rc = send_write(l);
  if (rc != 0) {
    l->base.kind = LATCH_OP_NONE;
    return rc;
  }
  l->record_written = 1;
  return 0;
}

int lk_latch_try_set_count(lk_latch_t *l, int64_t count, lk_latch_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (count < 1 || count > LK_LATCH_MAX_COUNT)
    return LK_EINVAL;
  l->req_count = count;
  return start_write(l, LATCH_OP_TRY_SET, cb, arg);
}

int lk_latch_count_down(lk_latch_t *l, lk_latch_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  return start_write(l, LATCH_OP_COUNT_DOWN, cb, arg);
}

int lk_latch_delete(lk_latch_t *l, lk_latch_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  return start_write(l, LATCH_OP_DELETE, cb, arg);
}

/* On close: the object's request record goes with it, unless an outcome
 * is still open (then it expires with its TTL). Nothing to wait for. */
int lk__latch_close_cleanup(lk__obj_t *o) {
  lk_latch_t *l = (lk_latch_t *)o;
  const char *argv[2] = {"DEL", l->record};
  size_t lens[2] = {3, l->record_len};
  int err = 0;
  if (l->record_written && !l->record_unsettled)
    lk__cmd_argv(o->client, 2, argv, lens, lk__cleanup_cb, o->client, &err);
  return 0;
}
