/* Giving read and write holds back, lease keeping and losses
 * (rwlock_int.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rwlock/rwlock_int.h"

/* Each side renews with its own script: a read entry's keys are the lock
 * and this owner's hold-key prefix (only this owner's holds are extended),
 * a write entry's the lock alone. */
const lk__wd_class_t lk__rw_wd_read_class = {"rwlock/renew_read", 2};
const lk__wd_class_t lk__rw_wd_write_class = {"rwlock/renew_write", 1};

lk__op_t *lk__rw_release_op(lk_rwlock_t *rw, int s, int64_t before, uint32_t n, int exact,
                            lk__op_cb cb, void *data, int send, int *err) {
  char bef[24], cnt[16], lease[24];
  const char *argv[10];
  size_t lens[10];
  const char *mode = exact ? "exact" : "resend";
  int nkeys, nargs;
  snprintf(bef, sizeof(bef), "%" PRId64, before);
  snprintf(cnt, sizeof(cnt), "%" PRIu32, n);
  argv[0] = rw->name, lens[0] = rw->name_len;
  argv[1] = rw->channel, lens[1] = rw->channel_len;
  if (s == LK__RW_R) {
    argv[2] = rw->tp, lens[2] = rw->tp_len;
    argv[3] = rw->kp, lens[3] = rw->kp_len;
    argv[4] = rw->owner, lens[4] = rw->owner_len;
    argv[5] = "PUBLISH", lens[5] = 7;
    argv[6] = bef, lens[6] = strlen(bef);
    argv[7] = cnt, lens[7] = strlen(cnt);
    argv[8] = mode, lens[8] = strlen(mode);
    nkeys = 4, nargs = 5;
  } else {
    snprintf(lease, sizeof(lease), "%" PRId64, rw->side[LK__RW_W].lease_ms);
    argv[2] = rw->writer, lens[2] = rw->writer_len;
    argv[3] = "PUBLISH", lens[3] = 7;
    argv[4] = lease, lens[4] = strlen(lease);
    argv[5] = bef, lens[5] = strlen(bef);
    argv[6] = cnt, lens[6] = strlen(cnt);
    argv[7] = mode, lens[7] = strlen(mode);
    nkeys = 2, nargs = 6;
  }
  return (send ? lk__script_call : lk__script_prepare)(
      LK__RW_CLIENT(rw),
      lk__script_find(s == LK__RW_R ? "rwlock/read_release" : "rwlock/write_release"),
      nkeys, nargs, argv, lens, cb, data, err);
}

void lk__rw_give_back(lk_rwlock_t *rw, int s, int64_t before, uint32_t n) {
  int err = 0;
  lk__rw_release_op(rw, s, before, n, 1, lk__cleanup_cb, LK__RW_CLIENT(rw), 1, &err);
}

/* What a lost or vanished hold leaves behind goes: all of this owner's on
 * side s, or only this object's own holds when the owner is shared. */
static void give_back_side(lk_rwlock_t *rw, int s) {
  if (rw->side[s].holds > 0)
    lk__rw_give_back(rw, s, -1, rw->owner_shared ? rw->side[s].holds : LK__RW_ALL);
}

void lk__rw_stop_watching(lk_rwlock_t *rw, int s) {
  if (lk__wd_watching(&rw->side[s].wd))
    lk__wd_remove(LK__RW_CLIENT(rw), &rw->side[s].wd);
}

/* --- release --- */

static void on_release_reply(void *data, int status, redisReply *r);

static int release_attempt(lk_rwlock_t *rw, int resend) {
  int err = 0;
  rw->base.op = lk__rw_release_op(
      rw, rw->req_side, resend && !rw->owner_shared ? (int64_t)rw->release_before : -1, 1, 0,
      on_release_reply, rw, 1, &err);
  return rw->base.op != NULL ? 0 : err;
}

/* A release ended: a side holding nothing has nothing to renew; otherwise
 * its renewal resumes (it was paused while the last hold's release was in
 * flight). */
static void release_finish(lk_rwlock_t *rw, int status) {
  lk__rw_side_t *sd = &rw->side[rw->req_side];
  if (sd->holds == 0)
    lk__rw_stop_watching(rw, rw->req_side);
  sd->wd.paused = 0;
  if (rw->side[LK__RW_R].holds == 0 && rw->side[LK__RW_W].holds == 0)
    rw->lost = 0;
  lk__obj_finish(&rw->base, status);
}

static void on_release_reply(void *data, int status, redisReply *r) {
  lk_rwlock_t *rw = data;
  lk__rw_side_t *sd = &rw->side[rw->req_side];
  long long left;
  rw->base.op = NULL;
  if (status == 0 && r->type == REDIS_REPLY_NIL) {
    /* The server has no hold of this owner's on that side: the lease ran
     * out, or the lock was forced. */
    sd->holds = 0;
    release_finish(rw, LK_ENOTOWNER);
    return;
  }
  if (status == 0 && lk__reply_is_int(r, &left) && left >= 0) {
    sd->holds = rw->release_before - 1;
    if (left == 0)
      sd->holds = 0; /* the server's count is the truth when none is left */
    rw->base.result = sd->holds == 0;
    release_finish(rw, 0);
    return;
  }
  if (status == 0) {
    release_finish(rw, LK_EPROTOCOL);
    return;
  }
  lk__obj_error(&rw->base, r);
  /* Resend after a lost reply; a resend that could not even be sent (the
   * reconnect failed) is tried again too, within the same small budget. */
  if ((status == LK_EUNKNOWN || (status == LK_ECONN && rw->unknown_resends > 0)) &&
      !rw->owner_shared && rw->unknown_resends < LK__RW_UNKNOWN_RESENDS) {
    rw->unknown_resends++;
    if (release_attempt(rw, 1) == 0)
      return;
  }
  /* A resend that could not be sent leaves the first attempt's fate open. */
  release_finish(rw, rw->unknown_resends > 0 && status == LK_ECONN ? LK_EUNKNOWN : status);
}

int lk_rwlock_release(lk_rwlock_t *rw, lk_rwlock_side_t side, lk_rwlock_cb cb,
                      void *arg) {
  int s, rc = lk__obj_check_idle(rw ? &rw->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__rw_valid_side(side))
    return LK_EINVAL;
  s = lk__rw_side_index(side);
  if (rw->side[s].holds == 0)
    return LK_ENOTHELD;
  if (rw->lost) {
    /* on_lost told the loss; the server's side was given back then. */
    rw->side[LK__RW_R].holds = rw->side[LK__RW_W].holds = 0;
    rw->lost = 0;
    return LK_ELEASELOST;
  }
  lk__obj_begin(&rw->base, LK__RW_OP_RELEASE);
  rw->cb = cb;
  rw->arg = arg;
  rw->unknown_resends = 0;
  rw->req_side = s;
  rw->release_before = rw->side[s].holds;
  rw->release_deferred = 0;
  /* No renewal may follow the release of the side's last hold. One already
   * in flight is ahead of it on the connection, so it cannot outlive it. */
  if (rw->side[s].holds == 1)
    rw->side[s].wd.paused = 1;
  if (lk__rw_abandoned_pending(rw)) {
    rw->release_deferred = 1; /* on_abandoned_settled sends it */
    return 0;
  }
  rc = release_attempt(rw, 0);
  if (rc != 0) {
    rw->side[s].wd.paused = 0;
    rw->base.kind = LK__RW_OP_NONE;
  }
  return rc;
}

void lk__rw_release_now(lk_rwlock_t *rw) {
  int rc = release_attempt(rw, 0);
  if (rc != 0)
    release_finish(rw, rc);
}

/* --- leases --- */

void lk__rw_on_wd_event(lk__wd_entry_t *e, int event) {
  int s = e->cls == &lk__rw_wd_read_class ? LK__RW_R : LK__RW_W;
  lk_rwlock_t *rw = s == LK__RW_R ? lk__container_of(e, lk_rwlock_t, side[LK__RW_R].wd)
                                  : lk__container_of(e, lk_rwlock_t, side[LK__RW_W].wd);
  (void)event; /* LK__WD_LOST, the only one */
  if (!rw->lost)
    lk__rw_lose(rw);
}

/* Both sides of one owner live in one hash: when either cannot be
 * confirmed, the object trusts neither. Renewal stops, whatever the server
 * may still have for this owner is given back (reads first, so the write
 * release then deletes the lock rather than downgrading it), and the holder
 * is told. */
void lk__rw_lose(lk_rwlock_t *rw) {
  lk_client_t *c = LK__RW_CLIENT(rw);
  int s;
  for (s = LK__RW_R; s <= LK__RW_W; s++) {
    /* Stop watching entirely: a renewal still in flight was sent before
     * the give-backs below, which therefore undo a late success of it. */
    if (lk__wd_watching(&rw->side[s].wd))
      lk__wd_remove(c, &rw->side[s].wd);
  }
  rw->lost = 1;
  c->stats.leases_lost++;
  lk__log(c, LK_LOG_WARN, "lease lost on a held read/write lock");
  give_back_side(rw, LK__RW_R);
  give_back_side(rw, LK__RW_W);
  if (rw->on_lost != NULL && !rw->base.closing)
    rw->on_lost(rw, LK_ELEASELOST, rw->lost_arg);
}

/* --- close --- */

static void on_close_release(void *data, int status, redisReply *r) {
  lk_rwlock_t *rw = data;
  (void)r;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(LK__RW_CLIENT(rw), LK_LOG_WARN, "release on close failed (%s); the "
                                            "lock expires with its lease",
            lk_err_name(status));
  if (--rw->close_left > 0)
    return;
  rw->side[LK__RW_R].holds = rw->side[LK__RW_W].holds = 0;
  lk__obj_close_done(&rw->base);
}

/* Close gives back every hold of both sides (reads first, then the write
 * side, which then deletes the lock), after stopping their renewal: all the
 * owner has when it is this object's alone, which also takes a late grant of
 * an abandoned acquire (it was sent before); else this object's holds. */
int lk__rw_close_release(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s, err = 0;
  rw->close_left = 0;
  for (s = LK__RW_R; s <= LK__RW_W; s++)
    lk__rw_stop_watching(rw, s);
  if (rw->lost)
    return 0; /* given back when the loss was declared */
  for (s = LK__RW_R; s <= LK__RW_W; s++)
    if (rw->side[s].holds > 0 &&
        lk__rw_release_op(rw, s, -1, rw->owner_shared ? rw->side[s].holds : LK__RW_ALL, 0,
                          on_close_release, rw, 1, &err) != NULL)
      rw->close_left++;
  return rw->close_left > 0;
}
