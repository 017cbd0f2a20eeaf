/* Permit-expirable semaphore, wire compatible with Redisson's
 * RPermitExpirableSemaphore (docs/semaphore.md): string NAME =
 * available permits, zset {NAME}:timeout of raw 16-byte permit ids scored
 * by the end of their lease (epoch ms), channel redisson_sc:{NAME}.
 *
 * The promise is "never lost, never invented": every permit has an id, so
 * a resent acquire recognises its own ids and a resent release finds them
 * gone instead of adding twice; every permit has a lease, renewed by the
 * client's watchdog while this object holds it (beyond Redisson), so a
 * crashed holder's permits come back when the lease ends; and every script
 * reclaims expired permits first, by the server's clock. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "core/router.h"
#include "core/spin.h"
#include "semaphore/psem_internal.h"

enum lk__psem_op {
  OP_NONE = 0,
  OP_ACQUIRE,
  OP_RELEASE,    /* this object's permits */
  OP_RELEASE_ID, /* any permit, by id */
  OP_UPDATE,
  OP_TRY_SET,
  OP_ADD,
  OP_AVAILABLE,
  OP_ACQUIRED
};

static void begin(lk_psem_t *p, enum lk__psem_op kind, lk_psem_cb cb, void *arg) {
  lk__obj_begin(&p->base, kind, (lk__fn_t)cb, arg);
  p->req_n = 0;
}

static void finish(lk_psem_t *p, int status) { lk__obj_finish(&p->base, status); }

/* --- acquire --- */

static int attempt_acquire(lk__obj_t *o) {
  lk_psem_t *p = (lk_psem_t *)o;
  char n[24], lease[24];
  size_t pub_len;
  const char *pub = lk__publish_cmd(CLIENT(p), &pub_len);
  const char *argv[7] = {p->name,
                         p->zset,
                         p->channel,
                         lk__sem_i64(n, (int64_t)p->req_n),
                         (const char *)p->req_ids,
                         lk__sem_i64(lease, p->req_lease_ms),
                         pub};
  size_t lens[7] = {p->name_len,
                    p->zset_len,
                    p->channel_len,
                    strlen(n),
                    p->req_n * LK__PSEM_ID_BYTES,
                    strlen(lease),
                    pub_len};
  int err = 0;
  o->op = lk__script_call(o->client, lk__sem_script("semaphore/psem_acquire"), 3, 4, argv, lens,
                          lk__obj_attempt_reply, o, &err);
  return o->op != NULL ? 0 : err;
}

static void acquired(lk__obj_t *o, const redisReply *r) {
  lk_psem_t *p = (lk_psem_t *)o;
  uint64_t sent = CLIENT(p)->completing_sent_ns;
  size_t k;
  (void)r; /* {1}: nothing else to read */
  if (lk__grow((void **)&p->permits, &p->cap, p->count + p->req_n, sizeof(*p->permits), 4) !=
      0) {
    /* Taken but cannot be tracked: give them back rather than leak. */
    lk__psem_give_back(p, p->req_ids, p->req_n, p->req_lease_ms, NULL, lk__sem_always);
    finish(p, LK_ENOMEM);
    return;
  }
  for (k = 0; k < p->req_n; k++) {
    lk__permit_t *pm = &p->permits[p->count++];
    memcpy(pm->raw, p->req_ids + k * LK__PSEM_ID_BYTES, LK__PSEM_ID_BYTES);
    lk__psem_to_hex(pm->raw, pm->hex);
    pm->renewed = p->req_renew;
    pm->deadline_ns = lk__psem_deadline(sent, p->req_lease_ms);
  }
  if (p->req_renew)
    lk__psem_watch(p, sent);
  p->base.result = (int64_t)p->req_n;
  finish(p, 0);
}

/* Taken ({1}), or the ms until the nearest lease ends (-1: none ends). A
 * failed attempt is resent when safe: the script recognises its own ids if
 * an earlier attempt took them. */
static int read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  int64_t flag;
  (void)o;
  if (lk__sem_elem(r, 0, &flag) && flag == 1)
    return LK__ANSWER_GRANTED;
  if (r->type != REDIS_REPLY_INTEGER)
    return LK__ANSWER_GARBLED;
  *v = r->integer;
  return LK__ANSWER_BUSY;
}

void lk_psem_opts_init(lk_psem_opts_t *o) {
  if (o == NULL)
    return;
  LK__WAIT_OPTS_DEFAULTS(o);
  o->permits = 1;
  o->lease_ms = LK_LEASE_DEFAULT;
}

int lk_psem_acquire(lk_psem_t *p, const lk_psem_opts_t *opts, lk_psem_cb cb, void *arg) {
  lk_psem_opts_t defaults;
  int rc = lk__obj_check_idle(p ? &p->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_psem_opts_init);
  if (opts->permits < 1 || opts->permits > LK_PSEM_MAX_ACQUIRE || !lk__valid_wait(opts->wait_ms) ||
      !lk__valid_lease(opts->lease_ms))
    return LK_EINVAL;
  rc = LK__OBJ_WAIT_WANTS(&p->base, opts);
  if (rc != 0)
    return rc;
  rc = lk__psem_set_req(p, (size_t)opts->permits);
  if (rc == 0)
    rc = uv_random(NULL, NULL, p->req_ids, p->req_n * LK__PSEM_ID_BYTES, 0, NULL);
  if (rc != 0)
    return rc;
  begin(p, OP_ACQUIRE, cb, arg);
  p->req_n = (size_t)opts->permits;
  p->req_renew = opts->lease_ms == LK_LEASE_DEFAULT;
  p->req_lease_ms = p->req_renew ? CLIENT(p)->o.default_lease_ms : opts->lease_ms;
  if (p->max_lease_ms < p->req_lease_ms)
    p->max_lease_ms = p->req_lease_ms;
  lk__obj_wait_begin(&p->base, opts->wait_ms);
  return lk__obj_start(&p->base);
}

int lk_psem_cancel(lk_psem_t *p) { return lk_handle_cancel(LK__H(p)); }

/* --- release --- */

static void on_release_reply(void *data, int status, redisReply *r);

/* The longest lease the ids of the pending release may have on the server:
 * this object's permits got theirs from its own commands; a permit of
 * another's (release_id) may have any, so its give-back is resent for as
 * long as the object lives. */
static int64_t release_lease_ms(const lk_psem_t *p) {
  return p->base.kind == OP_RELEASE ? p->max_lease_ms : LK_MAX_TIME_MS;
}

static int release_attempt(lk_psem_t *p) {
  size_t pub_len;
  const char *pub = lk__publish_cmd(CLIENT(p), &pub_len);
  const char *argv[5] = {p->name, p->zset, p->channel, (const char *)p->req_ids, pub};
  size_t lens[5] = {p->name_len, p->zset_len, p->channel_len, p->req_n * LK__PSEM_ID_BYTES,
                    pub_len};
  int err = 0;
  p->base.op = lk__script_call(CLIENT(p), lk__sem_script("semaphore/psem_release"), 3, 2, argv,
                               lens, on_release_reply, p, &err);
  return p->base.op != NULL ? 0 : err;
}

/* The ids of the release are no longer this object's, whatever the reply:
 * released now, or gone already. */
static void release_done(lk_psem_t *p, int status) {
  lk__psem_drop_req(p);
  lk__psem_watch(p, 0);
  finish(p, status);
}

static void on_release_reply(void *data, int status, redisReply *r) {
  lk_psem_t *p = data;
  lk__obj_t *o = &p->base;
  int64_t removed;
  o->op = NULL;
  if (status == 0 && lk__sem_elem(r, 0, &removed)) {
    int all = removed == (int64_t)p->req_n;
    if (o->resends > 0) {
      /* Ids already gone were most likely released by the attempt whose
       * outcome was unknown (or expired meanwhile): either way they are
       * back. */
      all = 1;
      removed = (int64_t)p->req_n;
    }
    o->result = removed;
    if (o->kind == OP_RELEASE_ID)
      release_done(p, removed > 0 ? 0 : LK_ENOTHELD);
    else
      release_done(p, all ? 0 : LK_ELEASELOST);
    return;
  }
  if (status == 0)
    status = LK_EUNKNOWN; /* a shape the script never sends: ran or not */
  else
    lk__obj_error(o, r);
  if (lk__outcome_unknown(o, status))
    o->outcome_open = 1; /* until an answer: an attempt may have applied */
  /* Resent with the same ids: one already released adds nothing. */
  if (lk__outcome_may_resend(o, status) && release_attempt(p) == 0)
    return;
  if (o->outcome_open) {
    /* Still open: finished in the background (an id adds a permit at most
     * once), and no longer this object's. */
    lk__psem_give_back(p, p->req_ids, p->req_n, release_lease_ms(p), NULL, lk__sem_always);
    release_done(p, LK_EUNKNOWN);
    return;
  }
  p->wd.paused = 0;
  finish(p, status);
}

/* Sends the first attempt of a release or update, with the renewal paused
 * until it is answered (a renewal behind it could find an id gone, or moved
 * out of the renewed set, and report a loss; one already in flight is ahead
 * of it). Not sent: the object is idle and renewing again. */
static int send_paused(lk_psem_t *p, int (*attempt)(lk_psem_t *p)) {
  int rc;
  p->wd.paused = 1;
  rc = attempt(p);
  if (rc != 0) {
    p->base.kind = OP_NONE;
    p->wd.paused = 0;
  }
  return rc;
}

static int start_release(lk_psem_t *p, enum lk__psem_op kind, const unsigned char *one,
                         lk_psem_cb cb, void *arg) {
  int rc = lk__psem_stage_ids(p, one);
  if (rc != 0)
    return rc;
  begin(p, kind, cb, arg);
  p->req_n = one != NULL ? 1 : p->count;
  return send_paused(p, release_attempt);
}

int lk_psem_release(lk_psem_t *p, const char *id, lk_psem_cb cb, void *arg) {
  unsigned char raw[LK__PSEM_ID_BYTES];
  int rc = lk__obj_check_idle(p ? &p->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (id == NULL)
    return p->count > 0 ? start_release(p, OP_RELEASE, NULL, cb, arg) : LK_ENOTHELD;
  rc = lk__psem_from_hex(id, raw);
  if (rc != 0)
    return rc;
  if (lk__psem_find(p, raw) < 0)
    return LK_ENOTHELD;
  return start_release(p, OP_RELEASE, raw, cb, arg);
}

int lk_psem_release_id(lk_psem_t *p, const char *id, lk_psem_cb cb, void *arg) {
  unsigned char raw[LK__PSEM_ID_BYTES];
  int rc = lk__obj_check_idle(p ? &p->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  rc = lk__psem_from_hex(id, raw);
  if (rc != 0)
    return rc;
  return start_release(p, lk__psem_find(p, raw) >= 0 ? OP_RELEASE : OP_RELEASE_ID, raw, cb, arg);
}

/* --- update lease --- */

static void on_update_reply(void *data, int status, redisReply *r);

static int update_attempt(lk_psem_t *p) {
  char lease[24];
  size_t pub_len;
  const char *pub = lk__publish_cmd(CLIENT(p), &pub_len);
  const char *argv[6] = {
      p->name,  p->zset, p->channel, (const char *)p->req_ids, lk__sem_i64(lease, p->req_lease_ms),
      pub};
  size_t lens[6] = {
      p->name_len, p->zset_len, p->channel_len, p->req_n * LK__PSEM_ID_BYTES, strlen(lease),
      pub_len};
  int err = 0;
  p->base.op = lk__script_call(CLIENT(p), lk__sem_script("semaphore/psem_update"), 3, 3, argv, lens,
                               on_update_reply, p, &err);
  return p->base.op != NULL ? 0 : err;
}

static void on_update_reply(void *data, int status, redisReply *r) {
  lk_psem_t *p = data;
  uint64_t sent = CLIENT(p)->completing_sent_ns;
  size_t k, missing = 0;
  p->base.op = NULL;
  if (status == 0 && r->type == REDIS_REPLY_ARRAY && r->elements == p->req_n) {
    for (k = 0; k < p->req_n; k++) {
      long i = lk__psem_find(p, p->req_ids + k * LK__PSEM_ID_BYTES);
      int64_t ok;
      if (i < 0)
        continue;
      if (!lk__sem_elem(r, k, &ok) || ok != 1) {
        lk__psem_drop(p, (size_t)i); /* its lease had ended */
        missing++;
        continue;
      }
      p->permits[i].renewed = p->req_renew;
      p->permits[i].deadline_ns = lk__psem_deadline(sent, p->req_lease_ms);
    }
    p->base.result = (int64_t)(p->req_n - missing);
    lk__psem_watch(p, p->req_renew ? sent : 0);
    finish(p, missing > 0 ? LK_ELEASELOST : 0);
    return;
  }
  if (status == 0)
    status = LK_EUNKNOWN; /* a shape the script never sends: ran or not */
  else
    lk__obj_error(&p->base, r);
  /* Setting a lease twice is the same as once. */
  if (lk__outcome_may_resend(&p->base, status) && update_attempt(p) == 0)
    return;
  /* Not learnt: the permits keep their old terms here, which is safe (a
   * fixed lease that may have been extended ends no later than believed;
   * renewed ones keep being renewed). */
  p->wd.paused = 0;
  finish(p, lk__outcome_unknown(&p->base, status) ? LK_EUNKNOWN : status);
}

int lk_psem_update_lease(lk_psem_t *p, const char *id, int64_t lease_ms, lk_psem_cb cb, void *arg) {
  unsigned char raw[LK__PSEM_ID_BYTES];
  int rc = lk__obj_check_idle(p ? &p->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__valid_lease(lease_ms))
    return LK_EINVAL;
  if (id != NULL) {
    rc = lk__psem_from_hex(id, raw);
    if (rc != 0)
      return rc;
    if (lk__psem_find(p, raw) < 0)
      return LK_ENOTHELD;
  } else if (p->count == 0) {
    return LK_ENOTHELD;
  }
  rc = lk__psem_stage_ids(p, id != NULL ? raw : NULL);
  if (rc != 0)
    return rc;
  begin(p, OP_UPDATE, cb, arg);
  p->req_n = id != NULL ? 1 : p->count;
  p->req_renew = lease_ms == LK_LEASE_DEFAULT;
  p->req_lease_ms = p->req_renew ? CLIENT(p)->o.default_lease_ms : lease_ms;
  if (p->max_lease_ms < p->req_lease_ms)
    p->max_lease_ms = p->req_lease_ms;
  return send_paused(p, update_attempt);
}

/* --- set, add, counts --- */

/* The count queries read one element of psem_counts' reply. */
static int read_value(lk__obj_t *o, const redisReply *r, int64_t *v) {
  if (o->kind != OP_AVAILABLE && o->kind != OP_ACQUIRED)
    return -1;
  return lk__sem_elem(r, o->kind == OP_AVAILABLE ? 0 : 1, v);
}

static int start_simple(lk_psem_t *p, enum lk__psem_op kind, int64_t v, int valid, lk_psem_cb cb,
                        void *arg) {
  char num[24], max[24];
  const char *argv[6];
  size_t lens[6];
  int err = 0, rc = lk__obj_check_idle(p ? &p->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!valid)
    return LK_EINVAL;
  begin(p, kind, cb, arg);
  argv[0] = p->name, lens[0] = p->name_len;
  switch (kind) {
  case OP_TRY_SET: /* NAME, channel; permits, PUBLISH */
    argv[1] = p->channel, lens[1] = p->channel_len;
    argv[2] = lk__sem_i64(num, v), lens[2] = strlen(num);
    argv[3] = lk__publish_cmd(CLIENT(p), &lens[3]);
    p->base.op = lk__script_call(CLIENT(p), lk__sem_script("semaphore/try_set"), 2, 2, argv, lens,
                                 lk__obj_value_reply, &p->base, &err);
    break;
  case OP_ADD: /* NAME, zset, channel; delta, PUBLISH, max */
    argv[1] = p->zset, lens[1] = p->zset_len;
    argv[2] = p->channel, lens[2] = p->channel_len;
    argv[3] = lk__sem_i64(num, v), lens[3] = strlen(num);
    argv[4] = lk__publish_cmd(CLIENT(p), &lens[4]);
    argv[5] = lk__sem_i64(max, LK_SEMAPHORE_MAX_PERMITS), lens[5] = strlen(max);
    p->base.op = lk__script_call(CLIENT(p), lk__sem_script("semaphore/psem_add"), 3, 3, argv, lens,
                                 lk__obj_value_reply, &p->base, &err);
    break;
  default: /* NAME, zset, channel; PUBLISH */
    argv[1] = p->zset, lens[1] = p->zset_len;
    argv[2] = p->channel, lens[2] = p->channel_len;
    argv[3] = lk__publish_cmd(CLIENT(p), &lens[3]);
    p->base.op = lk__script_call(CLIENT(p), lk__sem_script("semaphore/psem_counts"), 3, 1, argv,
                                 lens, lk__obj_value_reply, &p->base, &err);
    break;
  }
  /* try_set and add change the count; the count queries only read. */
  return lk__obj_value_sent(&p->base, p->base.op,
                            kind == OP_TRY_SET || kind == OP_ADD
                                ? LK__VALUE_TEXT | LK__VALUE_CHANGES
                                : 0,
                            err);
}

int lk_psem_try_set_permits(lk_psem_t *p, int64_t permits, lk_psem_cb cb, void *arg) {
  return start_simple(p, OP_TRY_SET, permits, lk__sem_valid_set(permits), cb, arg);
}

int lk_psem_add_permits(lk_psem_t *p, int64_t delta, lk_psem_cb cb, void *arg) {
  return start_simple(p, OP_ADD, delta, lk__sem_valid_delta(delta), cb, arg);
}

int lk_psem_available(lk_psem_t *p, lk_psem_cb cb, void *arg) {
  return start_simple(p, OP_AVAILABLE, 0, 1, cb, arg);
}

int lk_psem_acquired(lk_psem_t *p, lk_psem_cb cb, void *arg) {
  return start_simple(p, OP_ACQUIRED, 0, 1, cb, arg);
}

/* --- lifecycle --- */

/* The command in flight is left behind (timeout, cancel, close). */
static void on_abandon(lk__obj_t *o) {
  lk_psem_t *p = (lk_psem_t *)o;
  switch (o->kind) {
  case OP_ACQUIRE:
    /* Its ids may be taken by the late answer: give them back then (after
     * an attempt whose outcome is open, whatever this one answers). */
    lk__psem_give_back(p, p->req_ids, p->req_n, p->req_lease_ms, o->op,
                       o->outcome_open ? lk__sem_always : lk__sem_took_or_unknown);
    o->outcome_open = 0; /* settled here: lk__outcome_settle has nothing left */
    break;
  case OP_RELEASE:
  case OP_RELEASE_ID:
    /* Only close abandons a release: resent should its reply be lost. */
    lk__psem_give_back(p, p->req_ids, p->req_n, release_lease_ms(p), o->op,
                       lk__sem_unconfirmed);
    lk__psem_drop_req(p);
    lk__psem_watch(p, 0);
    break;
  default:
    lk__op_retarget(o->op, NULL, NULL);
    p->wd.paused = 0;
    break;
  }
}

static void close_finish(lk_psem_t *p) { lk__sem_close_after_jobs(&p->jobs, &p->base); }

static void on_close_release(void *data, int status, redisReply *r) {
  lk_psem_t *p = data;
  p->base.op = NULL;
  if (lk__sem_unconfirmed(status, r)) {
    /* Not sent, or its reply lost or of a shape the script never sends, or
     * a loading or busy server: given back in the background (an id adds a
     * permit at most once), which close waits for. */
    lk__psem_give_back(p, p->req_ids, p->req_n, p->max_lease_ms, NULL, lk__sem_always);
  } else if (status != 0 && status != LK_ECANCELED) {
    lk__log(CLIENT(p), LK_LOG_WARN,
            "permit release on close failed (%s); the permits come back when "
            "their leases end",
            lk_err_name(status));
  }
  p->count = 0;
  close_finish(p);
}

/* Close stops renewing, then gives back every permit held, then waits for
 * the give-backs under way. */
static int on_close_release_start(lk__obj_t *o) {
  lk_psem_t *p = (lk_psem_t *)o;
  int err = 0;
  const char *argv[5];
  size_t lens[5];
  if (lk__wd_watching(&p->wd))
    lk__wd_remove(o->client, &p->wd);
  if (p->count == 0) {
    close_finish(p);
    return 1;
  }
  if (lk__psem_stage_ids(p, NULL) != 0) {
    lk__log(o->client, LK_LOG_WARN,
            "permit release on close: out of memory; the permits come back "
            "when their leases end");
    p->count = 0;
    close_finish(p);
    return 1;
  }
  argv[0] = p->name, lens[0] = p->name_len;
  argv[1] = p->zset, lens[1] = p->zset_len;
  argv[2] = p->channel, lens[2] = p->channel_len;
  argv[3] = (const char *)p->req_ids, lens[3] = p->req_n * LK__PSEM_ID_BYTES;
  argv[4] = lk__publish_cmd(CLIENT(p), &lens[4]);
  o->op = lk__script_call(o->client, lk__sem_script("semaphore/psem_release"), 3, 2, argv, lens,
                          on_close_release, p, &err);
  if (o->op == NULL) {
    /* Not sent now (too many commands in flight, memory): the background
     * sends it, and close waits for it. */
    lk__log(o->client, LK_LOG_DEBUG, "permit release on close not sent now (%s); resent",
            lk_err_name(err));
    lk__psem_give_back(p, p->req_ids, p->req_n, p->max_lease_ms, NULL, lk__sem_always);
    p->count = 0;
    close_finish(p);
  }
  return 1;
}

LK__OBJ_CALLS(lk_psem_t, lk_psem_cb, lk_psem_close_cb)

/* The permits and their ids, then the named body (core/object.h). */
static void free_psem(lk__obj_t *o) {
  lk_psem_t *p = (lk_psem_t *)o;
  lk__free(p->permits);
  lk__free(p->wd_ids);
  lk__free(p->req_ids);
  lk__obj_free(o);
}

static int on_message(lk__obj_t *o, const char *msg, size_t len) {
  return lk__sem_worth_waking(o, msg, len, (int64_t)((lk_psem_t *)o)->req_n);
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

/* An acquire ended with its outcome open: its fresh ids may be taken, with
 * this acquire's lease at most. They are given back in the background,
 * which resends across reconnects and which close waits for (an id that is
 * not there adds nothing). Nothing is left for the core to send. */
static lk__op_t *undo_acquire(lk__obj_t *o, int known_grant) {
  lk_psem_t *p = (lk_psem_t *)o;
  (void)known_grant;
  lk__psem_give_back(p, p->req_ids, p->req_n, p->req_lease_ms, NULL, lk__sem_always);
  return NULL;
}

/* Replica sync refused the acquire that just succeeded (core/sync.h): its
 * permits leave the object and their ids go back in the background. */
static void refuse_acquire(lk__obj_t *o) {
  lk_psem_t *p = (lk_psem_t *)o;
  lk__psem_drop_req(p);
  lk__psem_watch(p, 0);
  lk__psem_give_back(p, p->req_ids, p->req_n, p->req_lease_ms, NULL, lk__sem_always);
  o->result = 0;
}

/* The handle's answers (core/handle.c). */
static int handle_is_held(const lk__obj_t *o) { return lk__psem_held((const lk_psem_t *)o); }

/* Every permit has an id: a resent acquire recognises its own ids, a resent
 * release or update finds them as the first left them (LK__SEM_OPS). */
static const lk__obj_ops_t lk__psem_ops = {
    LK__SEM_OPS,
    .free = free_psem,
    LK__NAMED_BODY(lk_psem_t),
    .strings = {offsetof(lk_psem_t, zset), offsetof(lk_psem_t, channel)},
    .read_value = read_value,
    .handle_kind = LK_KIND_PSEM,
    .tells_lost = 1,
};

int lk_psem_new(lk_client_t *c, const char *name, lk_psem_t **out) {
  int rc;
  lk_psem_t *p = lk__obj_open(c, out, name, &lk__psem_ops, &rc);
  if (p == NULL)
    return rc;
  p->zset = lk__suffix_name(name, p->name_len, "timeout", &p->zset_len);
  p->channel = lk__prefix_name(LK__SEM_CHANNEL_PREFIX, name, p->name_len, &p->channel_len);
  if (p->zset == NULL || p->channel == NULL) {
    lk__obj_free(&p->base);
    return LK_ENOMEM;
  }
  {
    /* One slot for all (core/names.c). The renewal script builds the
     * channel again from the name, the same way (psem_renew.lua). */
    const lk__derived_t d[3] = {{p->name, p->name_len, 0},
                                {p->zset, p->zset_len, 0},
                                {p->channel, p->channel_len, 0}};
    rc = lk__names_one_slot(c, "permit semaphore", p->name, p->name_len, d, 3);
    if (rc != 0) {
      lk__obj_free(&p->base);
      return rc;
    }
  }
  p->wd.cls = &lk__wd_psem_class;
  p->wd.keys[0] = p->name;
  p->wd.key_lens[0] = p->name_len;
  p->wd.keys[1] = p->zset;
  p->wd.key_lens[1] = p->zset_len;
  p->wd.on_event = lk__psem_on_wd_event;
  p->wd.obj = &p->base;
  lk__queue_init(&p->wd.node);
  lk__obj_init_channel(&p->base, c, &lk__psem_ops, p->name, p->channel, p->channel_len);
  lk__sem_owner_init(&p->jobs, c);
  *out = p;
  return 0;
}

LK__KIND_CLOSE(lk_psem)

/* --- accessors --- */

int64_t lk_psem_result(const lk_psem_t *p) { return lk__handle_result(LK__CH(p)); }
int lk_psem_sync_acked(const lk_psem_t *p) { return lk__obj_sync_acked(p ? &p->base : NULL); }
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_ALIASES(lk_psem, lk_psem_name)
