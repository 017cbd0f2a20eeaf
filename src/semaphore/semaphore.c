/* Counting semaphore, wire compatible with Redisson's RSemaphore
 * (docs/semaphore.md): string NAME = available permits, channel
 * redisson_sc:{NAME} carrying the new count.
 *
 * The server keeps no holder state, so the object counts what it holds and
 * refuses to give back more. Acquire, drain and release are made idempotent
 * by a private mark key per object (docs/semaphore.md, "Lost replies,
 * retries and LK_EUNKNOWN"): requests are numbered, the scripts record the
 * last one applied, and a resend after a lost reply is recognised instead of
 * applied twice (scripts/semaphore/).
 *
 * The mark records one request, so it can only judge the latest one made
 * under it. When the object leaves a request's outcome to clean-up (a lost
 * reply it stops resending, an acquire canceled in flight), that clean-up
 * keeps the mark and the object moves on to a fresh one: no later request
 * of the object ever overtakes the clean-up's view. Costs nothing on the
 * common path. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "core/router.h"
#include "core/spin.h"
#include "semaphore/sem_internal.h"

#define LK__SEM_MARK_PREFIX "latchkey_semaphore_req"

enum lk__sem_op { OP_NONE = 0, OP_ACQUIRE, OP_RELEASE, OP_TRY_SET, OP_ADD, OP_AVAILABLE, OP_DRAIN };

struct lk_semaphore_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  char *channel;
  size_t channel_len;
  char *mark; /* latchkey_semaphore_req:{NAME}:UUID:N, with a TTL */
  size_t mark_len;
  size_t mark_base_len; /* up to and including "UUID:" */
  int64_t held;
  uint64_t req;     /* number of the last request made */
  int mark_written; /* the mark may exist on the server */
  int tainted;      /* an attempt under this mark got no reply: a copy may
                       still arrive, so the mark must expire by itself */

  /* the pending operation (the rest is in base) */
  int64_t n;       /* permits it moves */
  uint64_t op_req; /* its request number */
  int unheld;      /* release without acquire */
  /* settles and resends left to the background: retried while the object
   * lives, waited for by close (sem_internal.h) */
  lk__sem_owner_t jobs;
};

#define CLIENT(s) ((s)->base.client)

static int64_t mark_ttl_ms(const lk_client_t *c) {
  /* Outlives every resend and clean-up of a request: those span a few
   * reply timeouts and reconnect cycles. */
  return 60000 + 10 * c->o.reply_timeout_ms;
}

/* How long a clean-up command may still be resent: until the mark that
 * judges it could have expired. The mark's TTL runs from the last attempt
 * that applied the request, which may precede the clean-up by every resend
 * (each bounded by a reply timeout, or a connect timeout and a backoff). */
static int64_t job_valid_ms(const lk_client_t *c) {
  const lk__opts_t *o = &c->o;
  return mark_ttl_ms(c) - o->reply_timeout_ms -
         (LK__OUTCOME_RESENDS + 1) *
             (o->reply_timeout_ms + o->connect_timeout_ms + o->reconnect_max_ms);
}

static void begin(lk_semaphore_t *s, enum lk__sem_op kind, lk_semaphore_cb cb, void *arg) {
  lk__obj_begin(&s->base, kind, (lk__fn_t)cb, arg);
  s->unheld = 0;
}

static void finish(lk_semaphore_t *s, int status) { lk__obj_finish(&s->base, status); }

/* --- marks --- */

/* The object leaves the current mark to clean-up commands (or to a copy of
 * an attempt still on its way) and goes on under a fresh one. */
static void switch_mark(lk_semaphore_t *s) {
  int n = snprintf(s->mark + s->mark_base_len, 24, "%" PRIu64, ++CLIENT(s)->next_tid);
  s->mark_len = s->mark_base_len + (size_t)n;
  s->mark_written = 0;
  s->tainted = 0;
}

/* --- settling an acquire whose outcome is open --- */

/* argv for settle and release: NAME, channel, mark; n, request, ttl, PUBLISH
 * (release adds the limit). */
typedef struct {
  char n[24], req[24], ttl[24], max[24];
  const char *argv[8];
  size_t lens[8];
} lk__sem_args_t;

static void fill_args(lk_semaphore_t *s, lk__sem_args_t *a, int64_t n, uint64_t req) {
  lk__sem_i64(a->n, n);
  lk__sem_i64(a->req, (int64_t)req);
  lk__sem_i64(a->ttl, mark_ttl_ms(CLIENT(s)));
  lk__sem_i64(a->max, LK_SEMAPHORE_MAX_PERMITS);
  a->argv[0] = s->name, a->lens[0] = s->name_len;
  a->argv[1] = s->channel, a->lens[1] = s->channel_len;
  a->argv[2] = s->mark, a->lens[2] = s->mark_len;
  a->argv[3] = a->n, a->lens[3] = strlen(a->n);
  a->argv[4] = a->req, a->lens[4] = strlen(a->req);
  a->argv[5] = a->ttl, a->lens[5] = strlen(a->ttl);
  a->argv[6] = lk__publish_cmd(CLIENT(s), &a->lens[6]);
  a->argv[7] = a->max, a->lens[7] = strlen(a->max);
}

/* Gives back the pending acquire's or drain's permits if it took them (a
 * drain's count is in the mark, s->n is 0), and voids any copy of it still
 * on its way: now, or after `after` answers. */
static void settle_request(lk_semaphore_t *s, lk__op_t *after, lk__sem_pred pred) {
  lk__sem_args_t a;
  fill_args(s, &a, s->n, s->op_req);
  lk__sem_background_owned(&s->jobs, job_valid_ms(CLIENT(s)), "semaphore/settle", 3, 4, a.argv,
                           a.lens, after, pred);
  switch_mark(s);
}

/* Completes a release in the background (now, or when `after`, the attempt
 * left behind, turns out to have no reply): a resend is applied at most
 * once, so sending it until it gets through is safe. */
static void release_later(lk_semaphore_t *s, int64_t n, uint64_t req, lk__op_t *after) {
  lk__sem_args_t a;
  fill_args(s, &a, n, req);
  lk__sem_background_owned(&s->jobs, job_valid_ms(CLIENT(s)), "semaphore/release", 3, 5, a.argv,
                           a.lens, after, after != NULL ? lk__sem_unconfirmed : lk__sem_always);
  switch_mark(s);
}

/* --- acquire --- */

static void on_acquire_reply(void *data, int status, redisReply *r);

static int attempt_acquire(lk__obj_t *o) {
  lk_semaphore_t *s = (lk_semaphore_t *)o;
  char n[24], req[24], ttl[24];
  const char *argv[5] = {s->name, s->mark, lk__sem_i64(n, s->n),
                         lk__sem_i64(req, (int64_t)s->op_req),
                         lk__sem_i64(ttl, mark_ttl_ms(o->client))};
  size_t lens[5] = {s->name_len, s->mark_len, strlen(n), strlen(req), strlen(ttl)};
  int err = 0;
  s->mark_written = 1;
  o->op = lk__script_call(o->client, lk__sem_script("semaphore/acquire"), 2, 3, argv, lens,
                          on_acquire_reply, s, &err);
  return o->op != NULL ? 0 : err;
}

/* The acquire or drain in flight is left behind (timeout, cancel, close):
 * if the server's late answer says it took permits, or none comes, settle
 * it. */
static void on_abandon(lk__obj_t *o) {
  lk_semaphore_t *s = (lk_semaphore_t *)o;
  if (o->kind == OP_RELEASE) {
    /* Only close abandons a release (its callback then says canceled):
     * should its reply be lost, it is finished in the background. */
    if (!s->unheld)
      s->held -= s->n;
    release_later(s, s->n, s->op_req, o->op);
    return;
  }
  if (o->kind != OP_ACQUIRE && o->kind != OP_DRAIN) {
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  /* An acquire, or a drain (only close abandons one): after an attempt
   * whose outcome is open, whatever this one answers says nothing of that
   * one's: settle in any case. */
  settle_request(s, o->op, o->outcome_open ? lk__sem_always : lk__sem_took_or_unknown);
  o->outcome_open = 0; /* settled here: lk__outcome_settle has nothing left */
}

/* Taken ({1, permits left}: the operation's result), or none to take now
 * (an integer: no holder's TTL to wait for, the re-poll bounds the wait). */
static int read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  int64_t flag, left;
  if (lk__sem_elem(r, 0, &flag) && flag == 1 && lk__sem_elem(r, 1, &left))
    return LK__ANSWER_GRANTED;
  if (r->type == REDIS_REPLY_INTEGER) {
    *v = -1;
    return LK__ANSWER_BUSY;
  }
  ((lk_semaphore_t *)o)->tainted = 1; /* what ran is unknown, as for a lost reply */
  return LK__ANSWER_GARBLED;
}

static void acquired(lk__obj_t *o, const redisReply *r) {
  lk_semaphore_t *s = (lk_semaphore_t *)o;
  int64_t left = 0;
  (void)lk__sem_elem(r, 1, &left); /* read_attempt saw it */
  s->held += s->n;
  o->result = left;
  finish(s, 0);
}

/* The core reads the reply (lk__obj_attempt_reply); a failure that leaves
 * the outcome unknown taints the mark first: a copy of the attempt may still
 * arrive. A resend is safe: the mark tells an earlier attempt that took
 * permits. */
static void on_acquire_reply(void *data, int status, redisReply *r) {
  lk_semaphore_t *s = data;
  if (lk__outcome_unknown(&s->base, status))
    s->tainted = 1;
  lk__obj_attempt_reply(&s->base, status, r);
}

void lk_semaphore_opts_init(lk_semaphore_opts_t *o) {
  if (o == NULL)
    return;
  LK__WAIT_OPTS_DEFAULTS(o);
  o->permits = 1;
}

int lk_semaphore_acquire(lk_semaphore_t *s, const lk_semaphore_opts_t *opts, lk_semaphore_cb cb,
                         void *arg) {
  lk_semaphore_opts_t defaults;
  int rc = lk__obj_check_idle(s ? &s->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_semaphore_opts_init);
  if (!lk__sem_valid_count(opts->permits) || !lk__valid_wait(opts->wait_ms) ||
      opts->permits > LK_SEMAPHORE_MAX_PERMITS - s->held)
    return LK_EINVAL;
  rc = LK__OBJ_WAIT_WANTS(&s->base, opts);
  if (rc != 0)
    return rc;
  begin(s, OP_ACQUIRE, cb, arg);
  s->n = opts->permits;
  s->op_req = ++s->req;
  lk__obj_wait_begin(&s->base, opts->wait_ms);
  return lk__obj_start(&s->base);
}

int lk_semaphore_try_acquire(lk_semaphore_t *s, int64_t permits, lk_semaphore_cb cb, void *arg) {
  lk_semaphore_opts_t o;
  lk_semaphore_opts_init(&o);
  o.permits = permits;
  return lk_semaphore_acquire(s, &o, cb, arg);
}

int lk_semaphore_cancel(lk_semaphore_t *s) { return lk_handle_cancel(LK__H(s)); }

/* --- release --- */

static void on_release_reply(void *data, int status, redisReply *r);

static int release_attempt(lk_semaphore_t *s) {
  lk__sem_args_t a;
  int err = 0;
  fill_args(s, &a, s->n, s->op_req);
  s->mark_written = 1;
  s->base.op = lk__script_call(CLIENT(s), lk__sem_script("semaphore/release"), 3, 5, a.argv, a.lens,
                               on_release_reply, s, &err);
  return s->base.op != NULL ? 0 : err;
}

/* A release or drain got no answer it can read (status 0: a reply of a
 * shape the script never sends, which ran or not). Resends it with the same
 * request number while the outcome policy allows (the mark tells an applied
 * one) and returns 1; else 0, with o->outcome_open set when what ran on the
 * server is still unknown. */
static int resent(lk_semaphore_t *s, int status, const redisReply *r,
                  int (*attempt)(lk_semaphore_t *s)) {
  lk__obj_t *o = &s->base;
  if (status == 0)
    status = LK_EUNKNOWN;
  else
    lk__obj_error(o, r);
  if (lk__outcome_unknown(o, status)) {
    o->outcome_open = 1; /* until an answer: an attempt may have applied */
    s->tainted = 1;
  }
  return lk__outcome_may_resend(o, status) && attempt(s) == 0;
}

static void on_release_reply(void *data, int status, redisReply *r) {
  lk_semaphore_t *s = data;
  lk__obj_t *o = &s->base;
  int64_t avail;
  o->op = NULL;
  if (status == 0 && lk__sem_elem(r, 0, &avail)) {
    if (!s->unheld)
      s->held -= s->n;
    o->result = avail;
    finish(s, 0);
    return;
  }
  if (resent(s, status, r, release_attempt))
    return;
  if (o->outcome_open) {
    /* Still open: it is completed in the background (never twice), and the
     * permits are no longer this object's. */
    if (!s->unheld)
      s->held -= s->n;
    release_later(s, s->n, s->op_req, NULL);
    finish(s, LK_EUNKNOWN);
    return;
  }
  finish(s, lk__sem_status(status, r));
}

static int start_release(lk_semaphore_t *s, int64_t n, int unheld, lk_semaphore_cb cb, void *arg) {
  int rc = lk__obj_check_idle(s ? &s->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__sem_valid_count(n))
    return LK_EINVAL;
  if (!unheld && n > s->held)
    return LK_ENOTHELD;
  begin(s, OP_RELEASE, cb, arg);
  s->n = n;
  s->unheld = unheld;
  s->op_req = ++s->req;
  rc = release_attempt(s);
  if (rc != 0)
    s->base.kind = OP_NONE;
  return rc;
}

int lk_semaphore_release(lk_semaphore_t *s, int64_t permits, lk_semaphore_cb cb, void *arg) {
  return start_release(s, permits, 0, cb, arg);
}

int lk_semaphore_release_unheld(lk_semaphore_t *s, int64_t permits, lk_semaphore_cb cb, void *arg) {
  return start_release(s, permits, 1, cb, arg);
}

/* --- set, add, available --- */


static int start_simple(lk_semaphore_t *s, enum lk__sem_op kind, int64_t v, int valid,
                        lk_semaphore_cb cb, void *arg) {
  char num[24], max[24];
  const char *argv[5];
  size_t lens[5];
  int err = 0, rc = lk__obj_check_idle(s ? &s->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!valid)
    return LK_EINVAL;
  argv[0] = s->name, lens[0] = s->name_len;
  argv[1] = s->channel, lens[1] = s->channel_len;
  argv[2] = lk__sem_i64(num, v), lens[2] = strlen(num);
  argv[3] = lk__publish_cmd(CLIENT(s), &lens[3]);
  argv[4] = lk__sem_i64(max, LK_SEMAPHORE_MAX_PERMITS), lens[4] = strlen(max);
  begin(s, kind, cb, arg);
  switch (kind) {
  case OP_TRY_SET: /* NAME, channel; permits, PUBLISH */
    s->base.op = lk__script_call(CLIENT(s), lk__sem_script("semaphore/try_set"), 2, 2, argv, lens,
                                 lk__obj_value_reply, &s->base, &err);
    break;
  case OP_ADD: { /* NAME; delta, PUBLISH, max, channel: a one-key script
                  * gets through a slot migration (scripts/semaphore/add.lua) */
    const char *av[5] = {argv[0], argv[2], argv[3], argv[4], argv[1]};
    size_t al[5] = {lens[0], lens[2], lens[3], lens[4], lens[1]};
    s->base.op = lk__script_call(CLIENT(s), lk__sem_script("semaphore/add"), 1, 4, av, al,
                                 lk__obj_value_reply, &s->base, &err);
    break;
  }
  default: {
    const char *get[2] = {"GET", s->name};
    size_t glens[2] = {3, s->name_len};
    s->base.op = lk__cmd_argv(CLIENT(s), 2, get, glens, lk__obj_value_reply, &s->base, &err);
    break;
  }
  }
  /* available reads (GET); try_set and add change the count. */
  return lk__obj_value_sent(&s->base, s->base.op,
                            kind == OP_AVAILABLE ? LK__VALUE_TEXT
                                                 : LK__VALUE_TEXT | LK__VALUE_CHANGES,
                            err);
}

int lk_semaphore_try_set_permits(lk_semaphore_t *s, int64_t permits, lk_semaphore_cb cb,
                                 void *arg) {
  return start_simple(s, OP_TRY_SET, permits, lk__sem_valid_set(permits), cb, arg);
}

int lk_semaphore_add_permits(lk_semaphore_t *s, int64_t delta, lk_semaphore_cb cb, void *arg) {
  return start_simple(s, OP_ADD, delta, lk__sem_valid_delta(delta), cb, arg);
}

int lk_semaphore_available(lk_semaphore_t *s, lk_semaphore_cb cb, void *arg) {
  return start_simple(s, OP_AVAILABLE, 0, 1, cb, arg);
}

/* --- drain --- */

/* A drain takes permits as an acquire does, so it is numbered under the
 * mark like one: a resend reports what the first attempt took, and a drain
 * whose outcome stays open is settled (what it took goes back). */

static void on_drain_reply(void *data, int status, redisReply *r);

static int drain_attempt(lk_semaphore_t *s) {
  char req[24], ttl[24];
  const char *argv[4] = {s->name, s->mark, lk__sem_i64(req, (int64_t)s->op_req),
                         lk__sem_i64(ttl, mark_ttl_ms(CLIENT(s)))};
  size_t lens[4] = {s->name_len, s->mark_len, strlen(req), strlen(ttl)};
  int err = 0;
  s->mark_written = 1;
  s->base.op = lk__script_call(CLIENT(s), lk__sem_script("semaphore/drain"), 2, 2, argv, lens,
                               on_drain_reply, s, &err);
  return s->base.op != NULL ? 0 : err;
}

static void on_drain_reply(void *data, int status, redisReply *r) {
  lk_semaphore_t *s = data;
  lk__obj_t *o = &s->base;
  int64_t took, n;
  o->op = NULL;
  /* {0} (settled already) cannot answer a request still pending: it is a
   * reply the script never sends to it, like any other shape. */
  if (status == 0 && lk__sem_elem(r, 0, &took) && took == 1 && lk__sem_elem(r, 1, &n) &&
      n >= 0) {
    s->held = n > LK_SEMAPHORE_MAX_PERMITS - s->held ? LK_SEMAPHORE_MAX_PERMITS : s->held + n;
    o->result = n;
    finish(s, 0);
    return;
  }
  if (resent(s, status, r, drain_attempt))
    return;
  if (o->outcome_open) {
    /* As for an acquire whose outcome stays open: whatever it took goes
     * back in the background, and the object counts none of it. */
    settle_request(s, NULL, lk__sem_always);
    finish(s, LK_EUNKNOWN);
    return;
  }
  finish(s, lk__sem_status(status, r));
}

int lk_semaphore_drain(lk_semaphore_t *s, lk_semaphore_cb cb, void *arg) {
  int rc = lk__obj_check_idle(s ? &s->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  begin(s, OP_DRAIN, cb, arg);
  s->n = 0; /* how many it takes is the server's: a settle reads it from the mark */
  s->op_req = ++s->req;
  rc = drain_attempt(s);
  if (rc != 0)
    s->base.kind = OP_NONE;
  return rc;
}

/* --- lifecycle --- */

static void close_finish(lk_semaphore_t *s) { lk__sem_close_after_jobs(&s->jobs, &s->base); }

static void on_mark_forgotten(void *data, int status, redisReply *r) {
  lk_semaphore_t *s = data;
  (void)r;
  s->base.op = NULL;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(CLIENT(s), LK_LOG_DEBUG, "semaphore mark not deleted (%s); it expires",
            lk_err_name(status));
  close_finish(s);
}

/* Last step of close: the mark is deleted once no request of this object
 * can still be resent or cleaned up (else it is left to expire), then the
 * object is done. Returns 0 when there was nothing to delete. */
static int forget_mark(lk_semaphore_t *s) {
  const char *argv[2] = {"DEL", s->mark};
  size_t lens[2] = {3, s->mark_len};
  int err = 0;
  if (!s->mark_written || s->tainted)
    return 0;
  s->mark_written = 0;
  s->base.op = lk__cmd_argv(CLIENT(s), 2, argv, lens, on_mark_forgotten, s, &err);
  return s->base.op != NULL;
}

static void on_close_release(void *data, int status, redisReply *r) {
  lk_semaphore_t *s = data;
  int64_t avail;
  s->base.op = NULL;
  if (status == 0 && lk__sem_elem(r, 0, &avail)) {
    s->held = 0;
  } else if (lk__sem_unconfirmed(status, r)) {
    /* Not sent, or its reply lost or of a shape the script never sends, or
     * a loading or busy server: resent in the background (applied once),
     * which close waits for. */
    release_later(s, s->held, s->op_req, NULL);
    s->held = 0;
  } else if (status != LK_ECANCELED) {
    lk__log(CLIENT(s), LK_LOG_WARN,
            "semaphore release on close failed (%s); its permits stay taken", lk_err_name(status));
  }
  if (!forget_mark(s))
    close_finish(s);
}

/* Close gives back every permit held. */
static int on_close_release_start(lk__obj_t *o) {
  lk_semaphore_t *s = (lk_semaphore_t *)o;
  lk__sem_args_t a;
  int err = 0;
  if (s->held <= 0) {
    if (!forget_mark(s))
      close_finish(s);
    return 1;
  }
  s->op_req = ++s->req;
  fill_args(s, &a, s->held, s->op_req);
  s->mark_written = 1;
  o->op = lk__script_call(o->client, lk__sem_script("semaphore/release"), 3, 5, a.argv, a.lens,
                          on_close_release, s, &err);
  if (o->op == NULL) {
    /* Not sent (too many commands in flight, memory): the background
     * resends it, and close waits for it. */
    lk__log(o->client, LK_LOG_DEBUG, "semaphore release on close not sent now (%s); resent",
            lk_err_name(err));
    release_later(s, s->held, s->op_req, NULL);
    s->held = 0;
    if (!forget_mark(s))
      close_finish(s);
  }
  return 1;
}

LK__OBJ_CALLS(lk_semaphore_t, lk_semaphore_cb, lk_semaphore_close_cb)

static int on_message(lk__obj_t *o, const char *msg, size_t len) {
  return lk__sem_worth_waking(o, msg, len, ((lk_semaphore_t *)o)->n);
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

/* An acquire ended with its outcome open: settle it in the background,
 * which resends across reconnects and which close waits for (the mark makes
 * it conditional on the request having taken permits). Nothing is left for
 * the core to send. */
static lk__op_t *undo_acquire(lk__obj_t *o, int known_grant) {
  (void)known_grant;
  settle_request((lk_semaphore_t *)o, NULL, lk__sem_always);
  return NULL;
}

/* Replica sync refused the acquire that just succeeded (core/sync.h): its
 * permits are no longer this object's, and go back in the background (the
 * mark shows the request took them). */
static void refuse_acquire(lk__obj_t *o) {
  lk_semaphore_t *s = (lk_semaphore_t *)o;
  s->held -= s->n;
  settle_request(s, NULL, lk__sem_always);
}

/* The handle's answers (core/handle.c): held is permits acquired by this
 * object and not released (they never expire: nothing can be lost). */
static int handle_is_held(const lk__obj_t *o) { return ((const lk_semaphore_t *)o)->held > 0; }

/* Every request is numbered under the object's mark: a resend is applied at
 * most once (LK__SEM_OPS). */
static const lk__obj_ops_t lk__semaphore_ops = {
    LK__SEM_OPS,
    LK__NAMED_BODY(lk_semaphore_t),
    .strings = {offsetof(lk_semaphore_t, channel), offsetof(lk_semaphore_t, mark)},
    .handle_kind = LK_KIND_SEMAPHORE,
};

int lk_semaphore_new(lk_client_t *c, const char *name, lk_semaphore_t **out) {
  size_t len, base_len;
  char *base, tail[64];
  int rc, n;
  lk_semaphore_t *s = lk__obj_open(c, out, name, &lk__semaphore_ops, &rc);
  if (s == NULL)
    return rc;
  len = s->name_len;
  s->channel = lk__prefix_name(LK__SEM_CHANNEL_PREFIX, name, len, &s->channel_len);
  /* The mark is private to this object: this client's id and a number of
   * its own, under the semaphore's hash tag. */
  base = lk__prefix_name(LK__SEM_MARK_PREFIX, name, len, &base_len);
  n = snprintf(tail, sizeof(tail), ":%s:", c->id);
  if (base != NULL && n > 0 && (size_t)n < sizeof(tail)) {
    /* room for the number switch_mark writes: up to 20 digits and a NUL */
    s->mark = lk__malloc(base_len + (size_t)n + 24);
    if (s->mark != NULL) {
      memcpy(s->mark, base, base_len);
      memcpy(s->mark + base_len, tail, (size_t)n);
      s->mark_base_len = base_len + (size_t)n;
    }
  }
  lk__free(base);
  if (s->channel == NULL || s->mark == NULL) {
    lk__obj_free(&s->base);
    return LK_ENOMEM;
  }
  {
    /* One slot for all (core/names.c); the mark's prefix is open: this
     * client's id and a number follow it. */
    const lk__derived_t d[3] = {{s->name, s->name_len, 0},
                                {s->channel, s->channel_len, 0},
                                {s->mark, base_len, 1}};
    rc = lk__names_one_slot(c, "semaphore", s->name, s->name_len, d, 3);
    if (rc != 0) {
      lk__obj_free(&s->base);
      return rc;
    }
  }
  s->base.client = c;
  switch_mark(s);
  lk__obj_init_channel(&s->base, c, &lk__semaphore_ops, s->name, s->channel, s->channel_len);
  lk__sem_owner_init(&s->jobs, c);
  *out = s;
  return 0;
}

LK__KIND_CLOSE(lk_semaphore)

/* --- accessors --- */

int64_t lk_semaphore_held(const lk_semaphore_t *s) { return s ? s->held : 0; }
int64_t lk_semaphore_result(const lk_semaphore_t *s) { return lk__handle_result(LK__CH(s)); }
int lk_semaphore_sync_acked(const lk_semaphore_t *s) {
  return lk__obj_sync_acked(s ? &s->base : NULL);
}
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_ALIASES(lk_semaphore, lk_semaphore_name)
