/* The double barrier's two waits (docs/barrier.md): enter and leave are
 * waiting operations of the shared object body (core/object.h: attempt →
 * busy → subscribe → re-poll), each attempt one script that also drops the
 * members whose lease ran out. Both scripts apply a resend at most once
 * (ZADD / ZREM of the same member), so lost replies are resent by the
 * outcome policy (core/outcome.h). What an enter may have put on the server
 * is taken out again whenever it ends without success (ops->complete). */
#include <string.h>

#include "barrier/barrier_internal.h"
#include "core/loglevel.h"
#include "core/outcome.h"
#include "core/router.h"

#define CLIENT(b) LK__BARRIER_CLIENT(b)

static int send_enter(lk_barrier_t *b) {
  char lease[24], n[24], round[24], keep[24];
  const char *argv[10] = {b->keys[0], b->keys[1], b->keys[2], b->keys[3], NULL,
                          lease,      n,          round,      NULL,       keep};
  size_t lens[10] = {b->key_lens[0], b->key_lens[1], b->key_lens[2], b->key_lens[3], 0};
  int err = 0;
  argv[4] = lk__barrier_member_id(b, &lens[4]);
  lens[5] = lk__i64_to_str(lease, b->lease.lease_ms);
  lens[6] = lk__i64_to_str(n, b->n);
  lens[7] = lk__i64_to_str(round, b->round);
  argv[8] = lk__publish_cmd(CLIENT(b), &lens[8]);
  lens[9] = lk__i64_to_str(keep, LK__BARRIER_KEEP_MS);
  b->in = 1; /* from the first send on, the server may have this member */
  b->base.op = lk__script_call(CLIENT(b), lk__barrier_script("barrier/enter"), 4, 6, argv,
                               lens, lk__obj_attempt_reply, &b->base, &err);
  return b->base.op != NULL ? 0 : err;
}

/* The leave script: 'l' for a leave, 'w' to take the member out. */
static lk__op_t *send_leave(lk_barrier_t *b, const char *mode, lk__op_cb cb, void *data,
                            int *err) {
  char round[24], keep[24];
  const char *argv[9] = {b->keys[0], b->keys[1], b->keys[2], b->keys[3], NULL,
                         round,      NULL,       keep,       mode};
  size_t lens[9] = {b->key_lens[0], b->key_lens[1], b->key_lens[2], b->key_lens[3], 0, 0, 0, 0, 1};
  argv[4] = lk__barrier_member_id(b, &lens[4]);
  lens[5] = lk__i64_to_str(round, b->round);
  argv[6] = lk__publish_cmd(CLIENT(b), &lens[6]);
  lens[7] = lk__i64_to_str(keep, LK__BARRIER_KEEP_MS);
  return lk__script_call(CLIENT(b), lk__barrier_script("barrier/leave"), 4, 5, argv, lens, cb,
                         data, err);
}

lk__op_t *lk__barrier_take_out(lk_barrier_t *b, lk__op_cb cb, void *data) {
  int err = 0;
  lk__op_t *op;
  lk__wd_own_stop(&b->lease);
  op = send_leave(b, "w", cb, data, &err);
  if (op == NULL)
    lk__log(CLIENT(b), lk__trouble_level(err),
            "barrier member not taken out (%s): dropped after its lease", lk_err_name(err));
  b->in = 0;
  b->entered = 0;
  b->round = 0;
  return op;
}

int lk__barrier_attempt(lk__obj_t *o) {
  lk_barrier_t *b = (lk_barrier_t *)o;
  int err = 0;
  if (o->kind == BARRIER_OP_ENTER)
    return send_enter(b);
  o->op = send_leave(b, "l", lk__obj_attempt_reply, o, &err);
  return o->op != NULL ? 0 : err;
}

static int int_at(const redisReply *r, size_t i, long long *v) {
  return i < r->elements && lk__reply_is_int(r->element[i], v);
}

static int string_array(const redisReply *r) {
  if (r->type != REDIS_REPLY_ARRAY)
    return 0;
  for (size_t i = 0; i < r->elements; i++)
    if (r->element[i]->type != REDIS_REPLY_STRING)
      return 0;
  return 1;
}

/* The enter script's answers, {code, round, ...}: 1 entered (the members
 * dropped on the way), 0 waiting (the round's TTL), -1 this member was
 * dropped, -3 the round's members entered with another count. */
static int enter_reply_ok(const redisReply *r) {
  long long code, round, ttl;
  return r->type == REDIS_REPLY_ARRAY && int_at(r, 0, &code) && int_at(r, 1, &round) &&
         !(code == 1 && (r->elements != 3 || !string_array(r->element[2]))) &&
         !(code == 0 && (r->elements != 3 || !int_at(r, 2, &ttl))) &&
         (code == 0 || code == 1 || code == -1 || code == -3);
}

/* The leave script's answers: {1, dropped} left, {0, ttl} waiting, {-1}
 * this member was dropped. */
static int leave_reply_ok(const redisReply *r) {
  long long code, ttl;
  return r->type == REDIS_REPLY_ARRAY && int_at(r, 0, &code) &&
         !(code == 1 && (r->elements != 2 || !string_array(r->element[1]))) &&
         !(code == 0 && (r->elements != 2 || !int_at(r, 1, &ttl))) &&
         !(code == -1 && r->elements != 1) && code >= -1 && code <= 1;
}

/* ops->read_attempt: every well-formed answer is read by own_answer. */
int lk__barrier_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  (void)v;
  if (o->kind == BARRIER_OP_ENTER)
    return enter_reply_ok(r) ? LK__ANSWER_OWN : LK__ANSWER_GARBLED;
  return leave_reply_ok(r) ? LK__ANSWER_OWN : LK__ANSWER_GARBLED;
}

static void entered(lk_barrier_t *b, const redisReply *r) {
  long long code = 0, round = 0, ttl = -1;
  (void)int_at(r, 0, &code); /* enter_reply_ok saw them */
  (void)int_at(r, 1, &round);
  (void)int_at(r, 2, &ttl);
  if (code == 1) {
    b->round = round;
    b->entered = 1;
    lk__barrier_keep_dropped(b, r->element[2]);
    lk__obj_finish(&b->base, 0);
    return;
  }
  if (code == -1) {
    /* Dropped: its lease ran out (a stalled process). The server has it no
     * more. */
    b->in = 0;
    b->round = 0;
    lk__wd_own_stop(&b->lease);
    lk__obj_tell_lost(&b->base); /* at risk first (object.h): no on_lost */
    lk__obj_finish(&b->base, LK_ELEASELOST);
    return;
  }
  if (code == -3) {
    lk__obj_set_errtext(&b->base, "the round's members entered with another member count");
    lk__obj_finish(&b->base, LK_EINVAL);
    return;
  }
  if (round > 0) {
    /* Registered: its lease is renewed from now on. */
    if (b->round != round)
      lk__wd_own_stop(&b->lease);
    b->round = round;
    lk__barrier_renew_start(b);
  } else {
    /* A late member: not in any round yet. */
    b->in = 0;
  }
  lk__obj_busy(&b->base, ttl >= 0 ? ttl + 1 : -1);
}

static void left(lk_barrier_t *b, const redisReply *r) {
  long long code = 0, ttl = -1;
  (void)int_at(r, 0, &code); /* leave_reply_ok saw them */
  (void)int_at(r, 1, &ttl);
  b->in = 0; /* out, whatever else the reply says */
  if (code == 1) {
    lk__barrier_keep_dropped(b, r->element[1]);
    lk__obj_finish(&b->base, 0);
  } else if (code == -1) {
    lk__obj_tell_lost(&b->base); /* at risk first (object.h): no on_lost */
    lk__obj_finish(&b->base, LK_ELEASELOST);
  } else {
    lk__obj_busy(&b->base, ttl >= 0 ? ttl + 1 : -1);
  }
}

/* ops->own_answer: the enter's or the leave's answer, settled by the core
 * (lk__obj_attempt_reply). */
void lk__barrier_answer(lk__obj_t *o, const redisReply *r) {
  if (o->kind == BARRIER_OP_ENTER)
    entered((lk_barrier_t *)o, r);
  else
    left((lk_barrier_t *)o, r);
}

/* Before the callback: an enter that did not succeed leaves nothing behind
 * (a timeout, a cancel, an unknown outcome), and a leave that never got
 * through takes the member out all the same. A close does it in its own
 * step (close_release), waiting for the reply. */
void lk__barrier_complete(lk__obj_t *o, int kind, int status) {
  lk_barrier_t *b = (lk_barrier_t *)o;
  /* Out of the barrier (left, or an enter that failed): no episode goes on. */
  if (kind == BARRIER_OP_LEAVE || (status != 0 && !b->in))
    lk__obj_health_end(o);
  if (kind == BARRIER_OP_ENTER && status == 0) {
    lk__barrier_renew_start(b);
    return;
  }
  if (status == 0 || !b->in || o->closing)
    return;
  lk__barrier_take_out(b, lk__cleanup_cb, CLIENT(b));
}

/* An enter wakes for a release ("R<round>") and a round's end ("F<round>":
 * a late member may join now); a leave only for a round's end. */
int lk__barrier_message(lk__obj_t *o, const char *msg, size_t len) {
  if (len == 0)
    return 0;
  return msg[0] == 'F' || (msg[0] == 'R' && o->kind == BARRIER_OP_ENTER);
}

void lk_barrier_opts_init(lk_barrier_opts_t *o) {
  if (o == NULL)
    return;
  o->wait_ms = LK_WAIT_FOREVER;
  o->lease_ms = LK_LEASE_DEFAULT;
  o->member = NULL;
}

static int keep_member(lk_barrier_t *b, const char *m) {
  size_t len;
  char *p;
  if (m == NULL) {
    lk__free(b->member);
    b->member = NULL;
    b->member_len = 0;
    return 0;
  }
  len = strlen(m);
  p = lk__memdup0(m, len);
  if (p == NULL)
    return LK_ENOMEM;
  lk__free(b->member);
  b->member = p;
  b->member_len = len;
  return 0;
}

static void begin(lk_barrier_t *b, int kind, lk_barrier_cb cb, void *arg, int64_t wait_ms) {
  lk__obj_begin(&b->base, kind, (lk__fn_t)cb, arg);
  lk__barrier_clear_dropped(b);
  lk__obj_wait_begin(&b->base, wait_ms);
}

int lk_barrier_enter(lk_barrier_t *b, const lk_barrier_opts_t *opts, lk_barrier_cb cb,
                     void *arg) {
  lk_barrier_opts_t defaults;
  size_t mlen = 1;
  int rc = lk__obj_check_idle(b ? &b->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_barrier_opts_init);
  if (opts->member != NULL)
    mlen = strnlen(opts->member, LK_BARRIER_MEMBER_MAX + 1);
  if (!lk__valid_wait(opts->wait_ms) ||
      !lk__valid_lease_from(opts->lease_ms, LK_BARRIER_LEASE_MIN_MS) || mlen == 0 ||
      mlen > LK_BARRIER_MEMBER_MAX)
    return LK_EINVAL;
  if (b->entered || b->in)
    return LK_EBUSY; /* in the barrier: leave first */
  if (lk__wd_own_want_timer(&b->lease) != 0 || keep_member(b, opts->member) != 0)
    return LK_ENOMEM;
  b->lease.lease_ms =
      opts->lease_ms == LK_LEASE_DEFAULT ? CLIENT(b)->o.default_lease_ms : opts->lease_ms;
  b->round = 0;
  begin(b, BARRIER_OP_ENTER, cb, arg, opts->wait_ms);
  rc = lk__obj_try(&b->base);
  if (rc != 0) {
    b->base.kind = BARRIER_OP_NONE;
    b->in = 0;
  }
  return rc;
}

int lk_barrier_leave(lk_barrier_t *b, const lk_barrier_opts_t *opts, lk_barrier_cb cb,
                     void *arg) {
  int64_t wait_ms = opts != NULL ? opts->wait_ms : LK_WAIT_FOREVER;
  int rc = lk__obj_check_idle(b ? &b->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__valid_wait(wait_ms))
    return LK_EINVAL;
  if (!b->entered)
    return LK_ENOTHELD;
  /* Leaving from here on: no more renewals (the script takes it out). */
  lk__wd_own_stop(&b->lease);
  b->entered = 0;
  begin(b, BARRIER_OP_LEAVE, cb, arg, wait_ms);
  rc = lk__obj_try(&b->base);
  if (rc != 0) {
    /* Not sent: it is dropped after its lease, unless taken out now. */
    b->base.kind = BARRIER_OP_NONE;
    lk__barrier_take_out(b, lk__cleanup_cb, CLIENT(b));
  }
  return rc;
}

int lk_barrier_cancel(lk_barrier_t *b) { return lk_handle_cancel(LK__H(b)); }
