/* Giving read and write holds back, lease keeping and losses
 * (rwlock_int.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/outcome.h"
#include "core/router.h"
#include "rwlock/rwlock_int.h"

/* Each side renews with its own script: a read entry's keys are the lock
 * and this owner's hold-key prefix (only this owner's holds are extended),
 * a write entry's the lock alone. */
const lk__wd_class_t lk__rw_wd_read_class = {"rwlock/renew_read", 2, NULL, 0};
const lk__wd_class_t lk__rw_wd_write_class = {"rwlock/renew_write", 1, NULL, 0};

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
  if (s == LK__RW_R) {
    argv[1] = rw->channel, lens[1] = rw->channel_len;
    argv[2] = rw->tp, lens[2] = rw->tp_len;
    argv[3] = rw->kp, lens[3] = rw->kp_len;
    argv[4] = rw->owner, lens[4] = rw->owner_len;
    argv[5] = lk__publish_cmd(LK__RW_CLIENT(rw), &lens[5]);
    argv[6] = bef, lens[6] = strlen(bef);
    argv[7] = cnt, lens[7] = strlen(cnt);
    argv[8] = mode, lens[8] = strlen(mode);
    nkeys = 4, nargs = 5;
  } else {
    /* The channel goes last, as an argument: a one-key write release gets
     * through a slot migration (scripts/rwlock/write_release.lua). */
    snprintf(lease, sizeof(lease), "%" PRId64, rw->side[LK__RW_W].lease_ms);
    argv[1] = rw->writer, lens[1] = rw->writer_len;
    argv[2] = lk__publish_cmd(LK__RW_CLIENT(rw), &lens[2]);
    argv[3] = lease, lens[3] = strlen(lease);
    argv[4] = bef, lens[4] = strlen(bef);
    argv[5] = cnt, lens[5] = strlen(cnt);
    argv[6] = mode, lens[6] = strlen(mode);
    argv[7] = rw->channel, lens[7] = rw->channel_len;
    nkeys = 1, nargs = 7;
  }
  return (send ? lk__script_call : lk__script_prepare)(
      LK__RW_CLIENT(rw),
      lk__script_find(s == LK__RW_R ? "rwlock/read_release" : "rwlock/write_release"),
      nkeys, nargs, argv, lens, cb, data, err);
}

void lk__rw_give_back(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = h == &rw->side[LK__RW_W] ? LK__RW_W : LK__RW_R, err = 0;
  lk__outcome_give_back(
      o, lk__rw_release_op(rw, s, cond, n, 1, lk__cleanup_cb, o->client, 0, &err));
}

/* What a lost or vanished hold leaves behind goes: all of this owner's on
 * side s, or only this object's own holds when the owner is shared. */
static void give_back_side(lk_rwlock_t *rw, int s) {
  lk__hold_t *h = &rw->side[s];
  if (h->count > 0)
    lk__rw_give_back(&rw->base, h, -1, rw->owner_shared ? h->count : LK__RW_ALL);
}

/* --- release --- */

static int release_attempt(lk_rwlock_t *rw, int resend) {
  int err = 0;
  rw->base.op = lk__rw_release_op(
      rw, rw->req_side, resend && !rw->owner_shared ? (int64_t)rw->release_before : -1, 1, 0,
      lk__obj_release_reply, &rw->base, 1, &err);
  return rw->base.op != NULL ? 0 : err;
}

/* A release ended: a side holding nothing has nothing to renew; otherwise
 * its renewal resumes (it was paused while the last hold's release was in
 * flight). */
void lk__rw_release_end(lk__obj_t *o, int status) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side;
  if (rw->side[s].count == 0)
    lk__hold_unwatch(LK__RW_CLIENT(rw), &rw->side[s]);
  rw->wd[s].paused = 0;
  if (rw->side[LK__RW_R].count == 0 && rw->side[LK__RW_W].count == 0)
    rw->base.lost = 0;
  lk__obj_finish(&rw->base, status);
}

int lk__rw_resend_release(lk__obj_t *o) { return release_attempt((lk_rwlock_t *)o, 1); }

/* The release scripts' answers (scripts/rwlock/read_release.lua,
 * write_release.lua): nil, the server has no hold of this owner's on that
 * side (the lease ran out, or the lock was forced); else the holds left. */
int lk__rw_read_release(lk__obj_t *o, const redisReply *r, int *status) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  lk__hold_t *h = &rw->side[rw->req_side];
  long long left;
  if (lk__hold_release_nil(h, r, status))
    return 1;
  if (!lk__reply_is_int(r, &left) || left < 0)
    return 0;
  (void)lk__hold_released(h, rw->release_before, left == 0, status);
  rw->base.result = h->count == 0;
  return 1;
}

int lk_rwlock_release(lk_rwlock_t *rw, lk_rwlock_side_t side, lk_rwlock_cb cb,
                      void *arg) {
  int s, rc = lk__obj_check_idle(rw ? &rw->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__rw_valid_side(side))
    return LK_EINVAL;
  s = lk__rw_side_index(side);
  rc = lk__hold_release_check(&rw->base, &rw->side[s]);
  if (rc != 0)
    return rc;
  rw->req_side = s;
  rw->release_before = rw->side[s].count;
  /* After an unanswered give-back it waits (lk__rw_release_deferred), the
   * side renewed meanwhile. */
  return lk__obj_release_begin(&rw->base, LK__RW_OP_RELEASE, (lk__fn_t)cb, arg);
}

/* No renewal may follow the release of the side's last hold. One already
 * in flight is ahead of it on the connection, so it cannot outlive it. */
int lk__rw_send_release(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side, rc;
  if (rw->side[s].count == 1)
    rw->wd[s].paused = 1;
  rc = release_attempt(rw, 0);
  if (rc != 0)
    rw->wd[s].paused = 0; /* nothing was sent: still held, keep renewing */
  return rc;
}

void lk__rw_release_deferred(lk__obj_t *o) {
  int rc = lk__rw_send_release(o);
  if (rc != 0)
    lk__rw_release_end(o, rc);
}

/* --- leases --- */

void lk__rw_on_wd_event(lk__wd_entry_t *e, int event) {
  int s = e->cls == &lk__rw_wd_read_class ? LK__RW_R : LK__RW_W;
  lk_rwlock_t *rw = s == LK__RW_R ? lk__container_of(e, lk_rwlock_t, wd[LK__RW_R])
                                  : lk__container_of(e, lk_rwlock_t, wd[LK__RW_W]);
  (void)event; /* LK__WD_LOST, the only one */
  if (!rw->base.lost)
    lk__rw_lose(&rw->base);
}

/* Both sides of one owner live in one hash: when either cannot be
 * confirmed, the object trusts neither. Renewal stops, whatever the server
 * may still have for this owner is given back (reads first, so the write
 * release then deletes the lock rather than downgrading it), and the holder
 * is told. */
void lk__rw_lose(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  lk_client_t *c = o->client;
  int s;
  /* Stop watching entirely: a renewal still in flight was sent before the
   * give-backs below, which therefore undo a late success of it. */
  for (s = LK__RW_R; s <= LK__RW_W; s++)
    lk__hold_unwatch(c, &rw->side[s]);
  o->lost = 1;
  c->stats.leases_lost++;
  lk__log(c, lk__lost_level(o), "lease lost on a held read/write lock");
  give_back_side(rw, LK__RW_R);
  give_back_side(rw, LK__RW_W);
  lk__obj_tell_lost(&rw->base);
}

/* --- close --- */

static void on_close_release(void *data, int status, redisReply *r) {
  lk_rwlock_t *rw = data;
  (void)r;
  lk__obj_close_release_failed(&rw->base, status, "release", "the lock");
  if (--rw->close_left > 0)
    return;
  rw->side[LK__RW_R].count = rw->side[LK__RW_W].count = 0;
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
    lk__hold_unwatch(o->client, &rw->side[s]);
  if (o->lost)
    return 0; /* given back when the loss was declared */
  for (s = LK__RW_R; s <= LK__RW_W; s++)
    if (rw->side[s].count > 0 &&
        lk__rw_release_op(rw, s, -1, rw->owner_shared ? rw->side[s].count : LK__RW_ALL, 0,
                          on_close_release, rw, 1, &err) != NULL)
      rw->close_left++;
  return rw->close_left > 0;
}
