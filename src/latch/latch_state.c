/* Reads of the latch: await (through the shared wait engine) and get_count.
 * One read-only script returns the count, the strict mode's "opened" marker
 * and the deletion tombstone together, and decide() turns them into what
 * the latch is: armed, open, deleted under this awaiter, or lost. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latch/latch_internal.h"

enum verdict { V_ARMED, V_OPEN, V_DELETED, V_LOST, V_BAD };

static void on_state_reply(void *data, int status, redisReply *r);

static int send_state(lk_latch_t *l) {
  const char *argv[3] = {l->name, l->marker, l->tomb};
  size_t lens[3] = {l->name_len, l->marker_len, l->tomb_len};
  int err = 0;
  l->base.op = lk__script_call(LATCH_CLIENT(l), lk__latch_script("latch/state"), 3, 0,
                               argv, lens, on_state_reply, l, &err);
  return l->base.op != NULL ? 0 : err;
}

int lk__latch_attempt_state(lk__obj_t *o) { return send_state((lk_latch_t *)o); }

/* Redisson stores the count as a decimal string; anything else is not a
 * latch. */
static int parse_count(const redisReply *e, int64_t *out) {
  char buf[32], *end;
  long long v;
  if (e->len == 0 || e->len >= sizeof(buf))
    return 0;
  memcpy(buf, e->str, e->len);
  buf[e->len] = '\0';
  errno = 0;
  v = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0')
    return 0;
  *out = v;
  return 1;
}

static int well_formed(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
         (r->element[0]->type == REDIS_REPLY_NIL ||
          r->element[0]->type == REDIS_REPLY_STRING) &&
         r->element[1]->type == REDIS_REPLY_INTEGER &&
         (r->element[2]->type == REDIS_REPLY_NIL ||
          r->element[2]->type == REDIS_REPLY_STRING);
}

static int same_tomb(const lk_latch_t *l, const redisReply *t) {
  return l->tomb_seen && t->len == l->tomb_seen_len &&
         memcmp(t->str, l->tomb_seen_val, t->len) == 0;
}

/* What the latch is. An absent key is "open" in Redisson's reading; latchkey
 * tells two other cases apart: a latchkey deletion that happened after this
 * await saw the latch armed (the tombstone changed since), and, in strict
 * mode, an absent key that no count_down marked as opened. */
static enum verdict decide(const lk_latch_t *l, const redisReply *r, int64_t *count) {
  const redisReply *cnt = r->element[0], *tomb = r->element[2];
  int marked = r->element[1]->integer == 1, tomb_now = tomb->type == REDIS_REPLY_STRING;
  *count = 0;
  if (cnt->type == REDIS_REPLY_STRING) {
    if (!parse_count(cnt, count))
      return V_BAD;
    /* Zero or below is open for Redisson's await too. */
    return *count > 0 ? V_ARMED : V_OPEN;
  }
  if (l->armed_seen && tomb_now && !same_tomb(l, tomb))
    return V_DELETED;
  if (!l->strict || marked)
    return V_OPEN;
  return tomb_now ? V_DELETED : V_LOST;
}

/* The await saw the latch armed: remember which deletion (if any) came
 * before, so a later one is recognised. */
static void saw_armed(lk_latch_t *l, const redisReply *tomb) {
  l->armed_seen = 1;
  l->tomb_seen = tomb->type == REDIS_REPLY_STRING;
  l->tomb_seen_len = 0;
  if (!l->tomb_seen)
    return;
  if (tomb->len > sizeof(l->tomb_seen_val)) {
    /* Not one of ours: any later tombstone counts as a new deletion. */
    l->tomb_seen = 0;
    return;
  }
  memcpy(l->tomb_seen_val, tomb->str, tomb->len);
  l->tomb_seen_len = tomb->len;
}

static int verdict_status(enum verdict v) {
  switch (v) {
  case V_DELETED:
    return LK_EDELETED;
  case V_LOST:
    return LK_ELATCHLOST;
  case V_BAD:
    return LK_EWRONGTYPE;
  default:
    return 0;
  }
}

static void state_failed(lk_latch_t *l, int status, redisReply *r) {
  lk__obj_t *o = &l->base;
  int lost = lk__outcome_unknown(o, status);
  lk__obj_error(o, r);
  /* A read changes nothing: a lost reply leaves no outcome to be unsure
   * of, only an answer that did not arrive. */
  if (status == LK_EUNKNOWN)
    status = LK_ECONN;
  if (o->kind == LATCH_OP_AWAIT) {
    /* A read is safe to repeat: a failed one is just another poll, a
     * TRYAGAIN (its keys split by a slot migration) or CLUSTERDOWN too. */
    if (lk__obj_retryable(o, status))
      lk__obj_retry_or_finish(o, status);
    else
      lk__latch_finish(l, status);
    return;
  }
  /* get_count: asked again after a lost reply (a few times), not when the
   * server could not be reached at all. */
  if (lost && lk__outcome_may_resend(o, LK_EUNKNOWN) && send_state(l) == 0)
    return;
  lk__latch_finish(l, status);
}

static void on_state_reply(void *data, int status, redisReply *r) {
  lk_latch_t *l = data;
  enum verdict v;
  int64_t count;
  l->base.op = NULL;
  if (status != 0) {
    state_failed(l, status, r);
    return;
  }
  if (!well_formed(r)) {
    lk__latch_finish(l, LK_EPROTOCOL);
    return;
  }
  v = decide(l, r, &count);
  if (v == V_BAD)
    lk__obj_set_errtext(&l->base, "the latch key holds a value that is not a count");
  if (l->base.kind == LATCH_OP_GET_COUNT) {
    l->base.result = v == V_ARMED ? count : 0;
    lk__latch_finish(l, verdict_status(v));
    return;
  }
  if (v == V_ARMED) {
    saw_armed(l, r->element[2]);
    lk__obj_busy(&l->base, -1); /* no holder TTL: message, re-poll or budget */
    return;
  }
  lk__latch_finish(l, verdict_status(v));
}

int lk_latch_await(lk_latch_t *l, int64_t wait_ms, lk_latch_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__valid_wait(wait_ms))
    return LK_EINVAL;
  lk__latch_begin(l, LATCH_OP_AWAIT, cb, arg);
  l->armed_seen = 0;
  l->tomb_seen = 0;
  lk__obj_wait_begin(&l->base, wait_ms);
  return lk__obj_start(&l->base);
}

int lk_latch_get_count(lk_latch_t *l, lk_latch_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  lk__latch_begin(l, LATCH_OP_GET_COUNT, cb, arg);
  l->armed_seen = 0;
  rc = send_state(l);
  if (rc != 0)
    l->base.kind = LATCH_OP_NONE;
  return rc;
}
