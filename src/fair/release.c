/* Fair lock release, force release, server queries and lease loss. A release
 * wakes only the next waiter in line, on its own channel. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/outcome.h"
#include "core/router.h"
#include "fair/fair_internal.h"

/* Formats the release script for n holds. `before` (-1: none) is the count
 * before a release's first attempt, on a resend: the lost attempt is not
 * applied twice. */
static lk__op_t *release_op(lk_fair_t *f, int64_t before, uint32_t n, lk__op_cb cb,
                            void *data, int send, int *err) {
  char lease[24], bef[24], cnt[16];
  const char *argv[10];
  size_t lens[10];
  snprintf(lease, sizeof(lease), "%" PRId64, f->hold.lease_ms);
  snprintf(bef, sizeof(bef), "%" PRId64, before);
  snprintf(cnt, sizeof(cnt), "%" PRIu32, n);
  lk__fair_leave_keys(f, argv, lens);
  argv[5] = lease, lens[5] = strlen(lease);
  argv[6] = f->owner, lens[6] = f->owner_len;
  argv[7] = lk__publish_cmd(LK__FAIR_CLIENT(f), &lens[7]);
  argv[8] = bef, lens[8] = strlen(bef);
  argv[9] = cnt, lens[9] = strlen(cnt);
  return (send ? lk__script_call : lk__script_prepare)(
      LK__FAIR_CLIENT(f), lk__fair_script("fair/release"), 5, 5, argv, lens, cb, data, err);
}

/* Gives back n holds the object no longer counts as its own (a lost lease,
 * a refused token), or, with cond >= 0, only if the owner's count is exactly
 * cond (the leave script makes that test). Best effort: what cannot be sent
 * expires with its lease. */
void lk__fair_give_back(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n) {
  lk_fair_t *f = (lk_fair_t *)o;
  int err = 0;
  (void)h; /* the fair lock has one side */
  if (n == 0)
    return;
  if (cond >= 0)
    lk__outcome_give_back(o, lk__fair_leave_op(f, cond, n, NULL, NULL, 0));
  else
    lk__outcome_give_back(o, release_op(f, -1, n, lk__cleanup_cb, o->client, 0, &err));
}

/* --- release --- */

static int release_attempt(lk_fair_t *f, int resend) {
  int err = 0;
  f->base.op = release_op(f, resend && !f->owner_shared ? (int64_t)f->release_before : -1,
                          1, lk__obj_release_reply, &f->base, 1, &err);
  return f->base.op != NULL ? 0 : err;
}

/* A release ended: nothing held means nothing to renew; otherwise renewal
 * resumes (it was paused while the last hold's release was in flight). */
void lk__fair_release_end(lk__obj_t *o, int status) {
  lk_fair_t *f = (lk_fair_t *)o;
  if (f->hold.count == 0) {
    f->base.lost = 0;
    lk__hold_unwatch(LK__FAIR_CLIENT(f), &f->hold);
  }
  f->wd.paused = 0;
  lk__fair_finish(f, status);
}

int lk__fair_resend_release(lk__obj_t *o) { return release_attempt((lk_fair_t *)o, 1); }

/* The release script's answers (scripts/fair/release.lua): nil, the server
 * has no hold for this owner (the lease ran out); 0, a hold released and
 * some left; 1, the lock released. A resend applies once: the expected
 * count tells an applied first attempt. */
int lk__fair_read_release(lk__obj_t *o, const redisReply *r, int *status) {
  lk_fair_t *f = (lk_fair_t *)o;
  long long v;
  if (lk__hold_release_nil(&f->hold, r, status))
    return 1;
  if (!lk__reply_is_int(r, &v) || (v != 0 && v != 1))
    return 0;
  f->base.result = v;
  return lk__hold_released(&f->hold, f->release_before, v == 1 && !f->owner_shared, status);
}

int lk_fair_release(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  int rc = lk__obj_check_idle(f ? &f->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  return lk__hold_release_begin(&f->base, &f->hold, &f->release_before, LK__FAIR_OP_RELEASE,
                                (lk__fn_t)cb, arg);
}

/* No renewal may follow the release of the last hold. */
int lk__fair_send_release(lk__obj_t *o) {
  lk_fair_t *f = (lk_fair_t *)o;
  int rc;
  if (f->hold.count == 1)
    f->wd.paused = 1;
  rc = release_attempt(f, 0);
  if (rc != 0)
    f->wd.paused = 0; /* nothing was sent: still held, keep renewing */
  return rc;
}

/* --- force release and queries --- */

/* A force release: the holds are gone. */
void lk__fair_value_done(lk__obj_t *o, int kind) {
  lk_fair_t *f = (lk_fair_t *)o;
  if (kind == LK__FAIR_OP_FORCE)
    lk__hold_forced(o, &f->hold);
}

static int start_simple(lk_fair_t *f, enum lk__fair_op kind, lk_fair_cb cb, void *arg) {
  const char *argv[6];
  size_t lens[6];
  lk_client_t *c;
  lk__op_t *op;
  int err = 0, rc = lk__obj_check_idle(f ? &f->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  c = LK__FAIR_CLIENT(f);
  lk__fair_begin(f, kind, cb, arg);
  switch (kind) {
  case LK__FAIR_OP_FORCE:
    lk__fair_leave_keys(f, argv, lens);
    argv[5] = lk__publish_cmd(LK__FAIR_CLIENT(f), &lens[5]);
    op = lk__script_call(c, lk__fair_script("fair/force_release"), 5, 1, argv, lens,
                         lk__obj_value_reply, &f->base, &err);
    return lk__obj_value_sent(&f->base, op, LK__VALUE_CHANGES, err);
  case LK__FAIR_OP_QUERY_QUEUE:
    argv[0] = f->queue_key, lens[0] = f->queue_key_len;
    argv[1] = f->timeout_key, lens[1] = f->timeout_key_len;
    argv[2] = f->waiters_key, lens[2] = f->waiters_key_len;
    op = lk__script_call(c, lk__fair_script("fair/queue_length"), 3, 0, argv, lens,
                         lk__obj_value_reply, &f->base, &err);
    return lk__obj_value_sent(&f->base, op, 0, err);
  case LK__FAIR_OP_QUERY_HOLDS:
    return lk__hold_query(&f->base, LK__HOLD_FIELD, f->name, f->name_len, f->owner,
                          f->owner_len);
  default:
    return lk__hold_query(&f->base,
                          kind == LK__FAIR_OP_QUERY_TTL ? LK__HOLD_TTL : LK__HOLD_EXISTS,
                          f->name, f->name_len, NULL, 0);
  }
}

int lk_fair_force_release(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  return start_simple(f, LK__FAIR_OP_FORCE, cb, arg);
}
int lk_fair_is_locked(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  return start_simple(f, LK__FAIR_OP_QUERY_EXISTS, cb, arg);
}
int lk_fair_remaining_ttl(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  return start_simple(f, LK__FAIR_OP_QUERY_TTL, cb, arg);
}
int lk_fair_server_hold_count(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  return start_simple(f, LK__FAIR_OP_QUERY_HOLDS, cb, arg);
}
int lk_fair_queue_length(lk_fair_t *f, lk_fair_cb cb, void *arg) {
  return start_simple(f, LK__FAIR_OP_QUERY_QUEUE, cb, arg);
}

/* --- leases --- */

void lk__fair_on_wd_event(lk__wd_entry_t *e, int event) {
  lk_fair_t *f = lk__container_of(e, lk_fair_t, wd);
  (void)event; /* LK__WD_LOST, the only one */
  lk__fair_lose(&f->base);
}

/* The holds are gone: stop renewing, give back what the server may still
 * have for this owner (waking the next waiter), tell the holder. */
void lk__fair_lose(lk__obj_t *o) {
  lk_fair_t *f = (lk_fair_t *)o;
  lk_client_t *c = o->client;
  /* Stop watching entirely: a renewal still in flight was sent before the
   * give-back below, which therefore undoes a late success of it. */
  lk__hold_unwatch(c, &f->hold);
  o->lost = 1;
  c->stats.leases_lost++;
  lk__log(c, lk__lost_level(o), "lease lost on a held fair lock");
  /* An owner of our own gives back everything, a re-entry still in flight
   * included; a shared owner exactly what this object counts. */
  lk__fair_give_back(o, &f->hold, -1, f->owner_shared ? f->hold.count : UINT32_MAX);
  lk__obj_tell_lost(&f->base);
}
