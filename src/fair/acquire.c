/* Fair lock acquire: join the queue, wait for one's turn on one's own
 * channel, refresh one's deadline at every re-poll, and leave the queue when
 * the acquire ends without the lock (docs/fair.md, "How waiting works";
 * docs/design.md, "Waiting"). The wait itself is the object body's engine; this file says
 * what one attempt is and what its reply means. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "core/router.h"
#include "core/tokens.h"
#include "fair/fair_internal.h"

/* Script reply tags (scripts/fair/acquire.lua). */
enum { TAG_GRANTED = 0, TAG_QUEUED = 1, TAG_OUT = 2 };

/* --- leaving the queue --- */

lk__op_t *lk__fair_leave_op(lk_fair_t *f, int64_t cond, int64_t drop, lk__op_cb cb,
                            void *data, int send) {
  char cs[24], ds[24];
  int err = 0;
  lk__op_t *op;
  const char *argv[9];
  size_t lens[9];
  lk_client_t *c = LK__FAIR_CLIENT(f);
  snprintf(cs, sizeof(cs), "%" PRId64, cond);
  snprintf(ds, sizeof(ds), "%" PRId64, drop);
  lk__fair_leave_keys(f, argv, lens);
  argv[5] = f->owner, lens[5] = f->owner_len;
  argv[6] = lk__publish_cmd(c, &lens[6]);
  argv[7] = cs, lens[7] = strlen(cs);
  argv[8] = ds, lens[8] = strlen(ds);
  if (cb == NULL) {
    cb = lk__cleanup_cb;
    data = c;
  }
  op = (send ? lk__script_call : lk__script_prepare)(c, lk__fair_script("fair/leave"), 5, 4,
                                                     argv, lens, cb, data, &err);
  if (op == NULL)
    lk__log(c, LK_LOG_INFO,
            "cannot leave a fair lock's queue (%s); the entry is skipped once "
            "its deadline passes, a hold expires with its lease",
            lk_err_name(err));
  return op;
}

/* --- replies --- */

/* The tag of a well-formed reply, or -1. */
static int reply_tag(const redisReply *r) {
  if (!lk__reply_int_array(r) || r->elements < 2)
    return -1;
  switch (r->element[0]->integer) {
  case TAG_GRANTED:
    return r->elements == 2 || r->elements == 4 ? TAG_GRANTED : -1;
  case TAG_QUEUED:
    return r->elements == 3 ? TAG_QUEUED : -1;
  case TAG_OUT:
    return r->elements == 2 ? TAG_OUT : -1;
  default:
    return -1;
  }
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

int lk__fair_counted(lk__obj_t *o) { return !((lk_fair_t *)o)->owner_shared; }

int lk__fair_is_grant(const redisReply *r) { return reply_tag(r) == TAG_GRANTED; }

/* What an acquire's attempt may have left: a queue entry, and a hold. The
 * op leaves the queue, and drops that hold only if this owner's count shows
 * it (a shared owner's count is unknown: only a grant seen is dropped). The
 * queue is left by it, so the acquire's end need not leave it again. */
lk__op_t *lk__fair_undo(lk__obj_t *o, int known_grant) {
  lk_fair_t *f = (lk_fair_t *)o;
  int64_t cond = f->owner_shared ? -1 : (int64_t)f->hold.count + 1;
  f->maybe_queued = 0;
  return lk__fair_leave_op(f, cond, f->owner_shared && !known_grant ? 0 : 1, NULL, NULL, 0);
}

/* --- one attempt --- */

int lk__fair_attempt(lk__obj_t *o) {
  lk_fair_t *f = (lk_fair_t *)o;
  lk_client_t *c = o->client;
  char lease[24], before[24], timeout[24], allowance[24], floor[24];
  /* 5 keys (the token's when fenced) and 9 arguments (the floor when
   * fenced). */
  const char *argv[14];
  size_t lens[14];
  int n = 0, nkeys, err = 0;
  /* The last try (wait 0, or the budget is spent) never joins the queue and
   * leaves it if this owner is in it: one command, no clean-up after. */
  int last = o->wait_ms == 0;
  if (lk__outcome_defer_attempt(o))
    return 0;
  snprintf(lease, sizeof(lease), "%" PRId64, f->req_lease_ms);
  snprintf(before, sizeof(before), "%" PRId64,
           f->owner_shared ? (int64_t)-1 : (int64_t)f->hold.count);
  snprintf(timeout, sizeof(timeout), "%" PRId64, f->req_waiter_timeout_ms);
  argv[n] = f->name, lens[n++] = f->name_len;
  argv[n] = f->queue_key, lens[n++] = f->queue_key_len;
  argv[n] = f->timeout_key, lens[n++] = f->timeout_key_len;
  argv[n] = f->waiters_key, lens[n++] = f->waiters_key_len;
  if (f->req_fenced)
    argv[n] = f->token_key, lens[n++] = f->token_key_len;
  nkeys = n;
  argv[n] = lease, lens[n++] = strlen(lease);
  argv[n] = f->owner, lens[n++] = f->owner_len;
  argv[n] = before, lens[n++] = strlen(before);
  argv[n] = timeout, lens[n++] = strlen(timeout);
  argv[n] = last ? "last" : "wait", lens[n++] = 4;
  /* "Already applied" is read from the count on resends only. */
  argv[n] = o->outcome_open ? "1" : "0", lens[n++] = 1;
  snprintf(allowance, sizeof(allowance), "%d", LK__FAIR_REDISSON_WAIT_MS);
  argv[n] = allowance, lens[n++] = strlen(allowance);
  argv[n] = f->req_nonreentrant ? "0" : "1", lens[n++] = 1;
  if (f->req_fenced) {
    snprintf(floor, sizeof(floor), "%" PRId64,
             lk__token_highest(c, f->name, f->name_len) + 1);
    argv[n] = floor, lens[n++] = strlen(floor);
  }
  assert(n <= (int)(sizeof(argv) / sizeof(argv[0])));
  o->op = lk__script_call(c, lk__fair_script("fair/acquire"), nkeys, n - nkeys, argv, lens,
                          lk__obj_attempt_reply, o, &err);
  if (o->op == NULL)
    return err;
  if (!last)
    f->maybe_queued = 1;
  return 0;
}

/* The server granted a hold: the core's grant routine counts it, keeps its
 * lease and checks its token (core/hold.h). The queue entry went with it. */
void lk__fair_acquired(lk__obj_t *o, const redisReply *r) {
  lk_fair_t *f = (lk_fair_t *)o;
  lk__grant_t g = {0};
  f->maybe_queued = 0;
  f->position = -1;
  g.hold = &f->hold;
  g.count = r->element[1]->integer;
  g.lease_ms = f->req_lease_ms;
  g.watchdog = f->req_watchdog != 0;
  if (f->req_fenced && r->elements == 4)
    lk__grant_token(&g, r, 2, &f->token, f->name, f->name_len);
  lk__hold_grant(&f->base, &g);
}

/* Still waiting: report a new position, then sleep until a message on this
 * owner's channel, the script's hint, or the refresh interval. */
void lk__fair_queued(lk__obj_t *o, const redisReply *r) {
  lk_fair_t *f = (lk_fair_t *)o;
  long long hint = r->element[1]->integer, pos = r->element[2]->integer;
  int64_t refresh = f->req_waiter_timeout_ms / 3;
  f->maybe_queued = 1;
  if (pos != f->position) {
    f->position = pos;
    if (f->on_queued != NULL) {
      f->on_queued(f, 0, f->queued_arg);
      if (!o->waiting)
        return; /* canceled or closed from the callback */
    }
  }
  /* Re-polls refresh this waiter's deadline, so they come at least every
   * timeout/3; a waiter that is not next needs nothing else (its turn is
   * announced on its channel), the next one also wakes when the holder's
   * lease or a silent predecessor's deadline runs out. */
  if (hint < 0 || hint > refresh)
    hint = refresh;
  lk__obj_busy(o, hint);
}

/* The three answers of scripts/fair/acquire.lua: the lock, a place in the
 * queue, or taken (the holder's TTL). Any answer settles an earlier lost
 * one: a grant it took would show as the expected count plus one, and be
 * reported as this grant; joining the queue twice is a refresh. */
int lk__fair_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  lk_fair_t *f = (lk_fair_t *)o;
  switch (reply_tag(r)) {
  case TAG_GRANTED:
    return LK__ANSWER_GRANTED;
  case TAG_QUEUED:
    return LK__ANSWER_OWN;
  case TAG_OUT:
    f->maybe_queued = 0;
    f->position = -1;
    *v = r->element[1]->integer;
    return LK__ANSWER_BUSY;
  default:
    return LK__ANSWER_GARBLED;
  }
}

/* --- an attempt left behind (cancel, timeout, close) --- */

/* A retired identity's clean-up goes whatever the attempt's outcome: lost
 * or not, granted or queued, nothing of that identity may stay. */
static int always(int status, const redisReply *r) {
  (void)status;
  (void)r;
  return 1;
}

void lk__fair_abandon(lk__obj_t *o) {
  lk_fair_t *f = (lk_fair_t *)o;
  lk_client_t *c = o->client;
  lk__op_t *undo;
  if (o->kind != LK__FAIR_OP_ACQUIRE) {
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  f->maybe_queued = 0;
  if (!f->owner_shared && f->hold.count == 0) {
    /* Retire this identity. Once the attempt's outcome is known, whatever
     * it left (a queue entry, a hold) is removed; the object goes on under a
     * fresh owner, so a later acquire can never be mistaken for this one,
     * however the connection reorders or loses things. */
    o->outcome_open = 0;
    undo = lk__fair_leave_op(f, -1, -1, NULL, NULL, 0);
    if (undo != NULL)
      lk__op_follow_up(c, o->op, undo, always);
    else
      lk__op_retarget(o->op, NULL, NULL);
    if (!o->closing)
      lk__fair_take_owner(f, c->id, ++c->next_tid);
    return;
  }
  /* The identity stays (it holds, or the user chose it). A shared owner's
   * queue entry goes now, so the next waiter does not wait on this reply; a
   * hold the attempt may have added is given back once its outcome is
   * known, by the core's rule (ops->undo), before this object's next
   * command. (A re-entry of a counted owner never queues.) */
  if (f->owner_shared)
    lk__outcome_give_back(o, lk__fair_leave_op(f, -1, 0, NULL, NULL, 0));
  lk__outcome_abandon(o);
}

/* --- the entry point --- */

/* Try once, not fenced; the rest as fair.h gives its defaults. */
void lk_fair_opts_init(lk_fair_opts_t *o) {
  if (o != NULL)
    *o = (lk_fair_opts_t){.lease_ms = LK_LEASE_DEFAULT,
                          .waiter_timeout_ms = LK_FAIR_WAITER_TIMEOUT_DEFAULT,
                          .sync_replicas = -1,
                          .reentrant = 1};
}

int lk_fair_acquire(lk_fair_t *f, const lk_fair_opts_t *opts, lk_fair_cb cb, void *arg) {
  lk_fair_opts_t defaults;
  int rc = lk__obj_check_idle(f ? &f->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_fair_opts_init);
  if (opts->waiter_timeout_ms < LK_FAIR_WAITER_TIMEOUT_MIN ||
      opts->waiter_timeout_ms > LK_MAX_TIME_MS)
    return LK_EINVAL;
  rc = lk__hold_acquire_check(&f->hold, opts->wait_ms, opts->lease_ms);
  if (rc != 0)
    return rc;
  /* Non-reentrant: as for the lock, this object's own second acquire never
   * reaches the server. */
  if (!opts->reentrant && lk_fair_is_held(f))
    return LK_EREENTRY;
  rc = lk__obj_sync_want(&f->base, opts->sync_replicas);
  if (rc != 0)
    return rc;
  if (opts->fenced && (rc = lk__hold_token_key(&f->token_key, &f->token_key_len,
                                                LK__FAIR_TOKEN_PREFIX, f->name, f->name_len)) != 0)
    return rc;
  lk__hold_afresh(&f->base);
  lk__fair_begin(f, LK__FAIR_OP_ACQUIRE, cb, arg);
  lk__obj_wait_begin(&f->base, opts->wait_ms);
  f->req_fenced = opts->fenced != 0;
  f->req_nonreentrant = opts->reentrant == 0;
  f->req_waiter_timeout_ms = opts->waiter_timeout_ms;
  /* As for the reentrant lock: a re-entry while the watchdog keeps this
   * owner's lease keeps the watchdog's lease. */
  f->req_watchdog = opts->lease_ms == LK_LEASE_DEFAULT || lk__hold_watched(&f->hold);
  f->req_lease_ms = f->req_watchdog ? LK__FAIR_CLIENT(f)->o.default_lease_ms : opts->lease_ms;
  rc = lk__obj_try(&f->base);
  if (rc != 0) {
    f->base.kind = LK__FAIR_OP_NONE;
    f->base.waiting = 0;
  }
  return rc;
}

int lk_fair_cancel(lk_fair_t *f) { return lk_handle_cancel(LK__H(f)); }
