/* Taking read and write holds, and waiting for them (rwlock_int.h).
 *
 * The scripts take the side's hold count the object expects, so a resend
 * after a lost reply is applied at most once (DESIGN.md §1), and they report
 * this owner's count on the other side too, so a re-entry notices holds of
 * either side that vanished behind its back. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/tokens.h"
#include "rwlock/rwlock_int.h"

static void finish(lk_rwlock_t *rw, int status) { lk__obj_finish(&rw->base, status); }

/* on_lost may close the object: the canceled acquire's callback is queued
 * then, and it must stay the only one. */
static void finish_unless_queued(lk_rwlock_t *rw, int status) {
  if (!lk__queue_linked(&rw->base.done.node))
    finish(rw, status);
}

int lk__rw_abandoned_pending(const lk_rwlock_t *rw) {
  return rw->track != NULL && rw->track->pending > 0;
}

static void on_acquire_reply(void *data, int status, redisReply *r);

int lk__rw_attempt(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side, err = 0, nkeys = 0, nargs = 0;
  char lease[24], before[24], floor[24];
  const char *argv[9];
  size_t lens[9];
  if (lk__rw_abandoned_pending(rw)) {
    rw->attempt_deferred = 1; /* on_abandoned_settled sends it */
    return 0;
  }
  snprintf(lease, sizeof(lease), "%" PRId64, rw->req_lease_ms);
  snprintf(before, sizeof(before), "%" PRId64,
           rw->owner_shared ? (int64_t)-1 : (int64_t)rw->side[s].holds);
  argv[nkeys] = rw->name, lens[nkeys++] = rw->name_len;
  if (s == LK__RW_R)
    argv[nkeys] = rw->tp, lens[nkeys++] = rw->tp_len;
  if (rw->req_fenced)
    argv[nkeys] = rw->token_key, lens[nkeys++] = rw->token_key_len;
  argv[nkeys + nargs] = lease, lens[nkeys + nargs++] = strlen(lease);
  if (s == LK__RW_R) {
    argv[nkeys + nargs] = rw->owner, lens[nkeys + nargs++] = rw->owner_len;
    argv[nkeys + nargs] = rw->writer, lens[nkeys + nargs++] = rw->writer_len;
  } else {
    argv[nkeys + nargs] = rw->writer, lens[nkeys + nargs++] = rw->writer_len;
    argv[nkeys + nargs] = rw->owner, lens[nkeys + nargs++] = rw->owner_len;
  }
  argv[nkeys + nargs] = before, lens[nkeys + nargs++] = strlen(before);
  /* "Already applied" is read from the count on resends only: on a first
   * attempt a count one above is a stale one, not this attempt's grant. */
  argv[nkeys + nargs] = rw->outcome_open ? "1" : "0", lens[nkeys + nargs++] = 1;
  if (rw->req_fenced) {
    snprintf(floor, sizeof(floor), "%" PRId64,
             lk__token_highest(o->client, rw->name, rw->name_len) + 1);
    argv[nkeys + nargs] = floor, lens[nkeys + nargs++] = strlen(floor);
  }
  o->op = lk__script_call(o->client,
                          lk__script_find(s == LK__RW_R ? "rwlock/read_acquire"
                                                        : "rwlock/write_acquire"),
                          nkeys, nargs, argv, lens, on_acquire_reply, rw, &err);
  return o->op != NULL ? 0 : err;
}

static int is_grant(const redisReply *r) {
  size_t i;
  if (r->type != REDIS_REPLY_ARRAY || (r->elements != 2 && r->elements != 4))
    return 0;
  for (i = 0; i < r->elements; i++)
    if (r->element[i]->type != REDIS_REPLY_INTEGER)
      return 0;
  return 1;
}

static int is_upgrade_refusal(const redisReply *r) {
  return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         r->len == 7 && memcmp(r->str, "upgrade", 7) == 0;
}

static uint32_t clamp_count(long long v) {
  return v <= 0 ? 0 : v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The local deadline of a side taken with an explicit lease. A write
 * re-entry keeps the longer of the old time left and the new lease, so its
 * deadline is the later one; read holds each have their own key and go
 * newest first, so the read side's deadline is the earliest hold's. */
static void set_explicit_deadline(lk_rwlock_t *rw, int s, uint32_t before,
                                  uint64_t sent) {
  lk__rw_side_t *sd = &rw->side[s];
  uint64_t dl = sent + (uint64_t)rw->req_lease_ms * 1000000u -
                lk__wd_drift_ns(rw->req_lease_ms);
  if (before == 0 || (s == LK__RW_W && dl > sd->deadline_ns) ||
      (s == LK__RW_R && dl < sd->deadline_ns))
    sd->deadline_ns = dl;
}

/* A re-entry found fewer holds than this owner had, on either side: the
 * earlier ones were lost (expired, deleted, force-released) and someone else
 * may have held the lock in between. Report the loss; give back what the
 * server now has for this owner, the fresh hold included. */
static void found_lost(lk_rwlock_t *rw, int s, long long count, long long other) {
  rw->side[s].holds = clamp_count(count);
  rw->side[1 - s].holds = clamp_count(other);
  lk__rw_lose(rw);
  rw->side[LK__RW_R].holds = rw->side[LK__RW_W].holds = 0;
  rw->lost = 0;
  finish_unless_queued(rw, LK_ELEASELOST);
}

/* The server granted a hold: count it, start or refresh its lease keeping,
 * check the fencing token. */
static void acquired(lk_rwlock_t *rw, redisReply *r) {
  lk_client_t *c = LK__RW_CLIENT(rw);
  uint64_t sent = c->completing_sent_ns;
  int s = rw->req_side;
  lk__rw_side_t *sd = &rw->side[s];
  long long count = r->element[0]->integer, other = r->element[1]->integer;
  uint32_t before = sd->holds;
  if (rw->lost) {
    /* A re-entry that was in flight when the loss was declared: the
     * give-back sent then did not count this hold; this one does. */
    lk__rw_give_back(rw, s, -1, 1);
    rw->lost = 0;
    rw->side[LK__RW_R].holds = rw->side[LK__RW_W].holds = 0;
    finish(rw, LK_ELEASELOST);
    return;
  }
  if (!rw->owner_shared &&
      ((before > 0 && count != (long long)before + 1) ||
       other < (long long)rw->side[1 - s].holds)) {
    found_lost(rw, s, count, other);
    return;
  }
  sd->holds++;
  sd->lease_ms = rw->req_lease_ms;
  if (rw->req_watchdog) {
    /* The script set the watchdog's lease at `sent`: that confirmation
     * starts (or restarts) this side's local deadline. */
    if (lk__wd_watching(&sd->wd))
      lk__wd_remove(c, &sd->wd);
    lk__wd_add(c, &sd->wd, sent);
  } else {
    set_explicit_deadline(rw, s, before, sent);
  }
  if (rw->req_fenced && r->elements == 4) {
    int64_t token = r->element[2]->integer;
    lk__token_seen(c, rw->name, rw->name_len, token);
    if (r->element[3]->integer != 0) {
      /* Handing this token out could let a stale writer win at the
       * resource: give the hold back and say why. The counter was lifted,
       * so the next acquisition gets a token above any seen before. */
      lk__log(c, LK_LOG_ERROR, "fencing token went backwards for a read/write "
                               "lock (server lost its data); acquisition refused");
      lk__rw_give_back(rw, s, -1, 1);
      sd->holds = before;
      if (before == 0)
        lk__rw_stop_watching(rw, s);
      finish(rw, LK_ETOKEN);
      return;
    }
    rw->token = token;
  }
  if (!lk_rwlock_is_held(rw, s == LK__RW_W ? LK_RW_WRITE : LK_RW_READ)) {
    /* Success must mean is_held(): the grant came back after its own local
     * deadline (the round trip took longer than the lease), or an earlier
     * read hold on this side (the side's deadline is its earliest hold's)
     * is past its own. The server may have expired it already, so it cannot
     * be used. With earlier holds (either side), the object cannot trust
     * them either: lost as a whole. */
    lk__log(c, LK_LOG_WARN, "acquisition answered after its lease ran out; given back");
    if (before > 0 || rw->side[1 - s].holds > 0) {
      lk__rw_lose(rw);
      rw->lost = 0;
      rw->side[LK__RW_R].holds = rw->side[LK__RW_W].holds = 0;
    } else {
      lk__rw_give_back(rw, s, -1, 1);
      sd->holds = 0;
      lk__rw_stop_watching(rw, s);
    }
    finish_unless_queued(rw, LK_ELEASELOST);
    return;
  }
  finish(rw, 0);
}

static void on_acquire_reply(void *data, int status, redisReply *r) {
  lk_rwlock_t *rw = data;
  long long ttl;
  rw->base.op = NULL;
  if (status == 0)
    rw->outcome_open = 0; /* answered: whatever was open is settled */
  if (status == 0 && is_grant(r)) {
    acquired(rw, r);
    return;
  }
  if (status == 0 && lk__reply_is_int(r, &ttl)) {
    lk__obj_busy(&rw->base, ttl);
    return;
  }
  if (status == 0 && is_upgrade_refusal(r)) {
    /* This owner reads (through another object sharing its identity):
     * waiting for the write side would be waiting for itself. */
    finish(rw, LK_EUPGRADE);
    return;
  }
  if (status == 0) {
    finish(rw, LK_EPROTOCOL);
    return;
  }
  lk__obj_error(&rw->base, r);
  if ((status == LK_EUNKNOWN || (status == LK_ECONN && rw->unknown_resends > 0)) &&
      !rw->owner_shared && rw->unknown_resends < LK__RW_UNKNOWN_RESENDS &&
      lk__obj_remaining_ms(&rw->base) > 0) {
    /* Safe to resend: the script recognises an earlier attempt that took
     * the hold by the expected count, so nothing is counted twice. */
    int rc;
    rw->unknown_resends++;
    rw->outcome_open = 1;
    rc = lk__obj_try(&rw->base);
    if (rc != 0)
      finish(rw, rc);
    return;
  }
  if (status == LK_EUNKNOWN || (status == LK_ECONN && rw->unknown_resends > 0)) {
    /* The budget is spent with the outcome open: on_complete queues a
     * release that applies only if the lost attempt did take the hold. */
    rw->outcome_open = 1;
    finish(rw, LK_EUNKNOWN);
    return;
  }
  if (lk__obj_transient(status)) {
    lk__obj_retry_or_finish(&rw->base, status);
    return;
  }
  finish(rw, status);
}

/* --- abandoned attempts --- */

static int granted(int status, const redisReply *r) {
  return status == 0 && r != NULL && r->type == REDIS_REPLY_ARRAY;
}

static int granted_or_unknown(int status, const redisReply *r) {
  return granted(status, r) || status == LK_EUNKNOWN;
}

static int always(int status, const redisReply *r) {
  (void)status;
  (void)r;
  return 1;
}

/* An abandoned acquire's outcome came and its give-back (if any) is on the
 * connection: what waited for it may go now. */
static void on_abandoned_settled(void *arg) {
  lk__rw_track_t *t = arg;
  lk_rwlock_t *rw = t->rw;
  int rc;
  t->pending--;
  if (rw == NULL) {
    if (t->pending == 0)
      lk__free(t);
    return;
  }
  if (t->pending > 0 || rw->base.op != NULL || lk__queue_linked(&rw->base.done.node))
    return;
  if (rw->attempt_deferred && rw->base.kind == LK__RW_OP_ACQUIRE) {
    rw->attempt_deferred = 0;
    rc = lk__obj_try(&rw->base);
    if (rc != 0)
      finish(rw, rc);
  } else if (rw->release_deferred && rw->base.kind == LK__RW_OP_RELEASE) {
    rw->release_deferred = 0;
    lk__rw_release_now(rw);
  }
}

/* The acquire in flight is left behind (timeout, cancel, close): a late
 * grant is given back. The release is prepared now and applies only if the
 * owner's count shows the grant, so it can follow an unknown outcome too.
 * Other commands' late outcomes matter to nobody. */
void lk__rw_abandon(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side, err = 0;
  lk__op_t *undo;
  int (*pred)(int status, const redisReply *r);
  if (o->kind != LK__RW_OP_ACQUIRE) {
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  /* When an earlier attempt's outcome is open (this one is its resend), the
   * give-back goes whatever this one answers: a LOADING reply to the resend
   * says nothing of the first attempt's grant. It applies only if the
   * owner's count shows a grant, and settles the open outcome. */
  pred = rw->owner_shared ? granted : rw->outcome_open ? always : granted_or_unknown;
  rw->outcome_open = 0;
  undo = lk__rw_release_op(rw, s, rw->owner_shared ? -1 : (int64_t)rw->side[s].holds + 1,
                           1, 1, lk__cleanup_cb, o->client, 0, &err);
  if (undo == NULL) {
    lk__log(o->client, LK_LOG_WARN, "cannot prepare giving back an abandoned "
                                    "acquire (%s); any hold expires with its lease",
            lk_err_name(err));
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  if (rw->track == NULL && (rw->track = lk__calloc(1, sizeof(*rw->track))) != NULL)
    rw->track->rw = rw;
  if (rw->track == NULL) {
    lk__op_follow_up(o->client, o->op, undo, pred);
    return;
  }
  if (lk__op_follow_up_then(o->client, o->op, undo, pred, on_abandoned_settled, rw->track) == 0)
    rw->track->pending++;
}

/* --- waking --- */

/* Redisson's wake-up rule on the channel: '1' (a write release, a force
 * release) lets every local waiter try again, readers may all enter; '0'
 * (a read release that freed the lock) wakes one, since one writer at most
 * can use it. Anything else wakes everyone, to be safe. Waiters that are not
 * woken still re-poll on their timer. */
int lk__rw_on_message(lk__obj_t *o, const char *msg, size_t len) {
  if (len == 1 && msg[0] == '0')
    return lk__sub_take(lk__obj_sub(o)) == 0;
  return 1;
}
