/* Taking read and write holds, and waiting for them (rwlock_int.h).
 *
 * The scripts take the side's hold count the object expects, so a resend
 * after a lost reply is applied at most once (docs/design.md, "Unknown
 * outcomes"), and they report this owner's count on the other side too, so
 * a re-entry notices holds of either side that vanished behind its back. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/tokens.h"
#include "rwlock/rwlock_int.h"

int lk__rw_attempt(lk__obj_t *o) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side, err = 0, nkeys = 0, nargs = 0;
  char lease[24], before[24], floor[24];
  const char *argv[9];
  size_t lens[9];
  if (lk__outcome_defer_attempt(o))
    return 0;
  snprintf(lease, sizeof(lease), "%" PRId64, rw->req_lease_ms);
  snprintf(before, sizeof(before), "%" PRId64,
           rw->owner_shared ? (int64_t)-1 : (int64_t)rw->side[s].count);
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
  argv[nkeys + nargs] = o->outcome_open ? "1" : "0", lens[nkeys + nargs++] = 1;
  if (rw->req_fenced) {
    snprintf(floor, sizeof(floor), "%" PRId64,
             lk__token_highest(o->client, rw->name, rw->name_len) + 1);
    argv[nkeys + nargs] = floor, lens[nkeys + nargs++] = strlen(floor);
  }
  o->op = lk__script_call(o->client,
                          lk__script_find(s == LK__RW_R ? "rwlock/read_acquire"
                                                        : "rwlock/write_acquire"),
                          nkeys, nargs, argv, lens, lk__obj_attempt_reply, o, &err);
  return o->op != NULL ? 0 : err;
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

int lk__rw_counted(lk__obj_t *o) { return !((lk_rwlock_t *)o)->owner_shared; }

/* The hold an acquire's attempt may have added: conditional on this
 * owner's count on the side when the object knows it, else only a grant
 * seen. */
lk__op_t *lk__rw_undo(lk__obj_t *o, int known_grant) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side, err = 0;
  if (rw->owner_shared && !known_grant)
    return NULL;
  return lk__rw_release_op(rw, s, rw->owner_shared ? -1 : (int64_t)rw->side[s].count + 1, 1,
                           1, lk__cleanup_cb, o->client, 0, &err);
}

/* {count, other side's count} or, fenced, {count, other, token, regressed}. */
int lk__rw_is_grant(const redisReply *r) {
  return lk__reply_int_array(r) && (r->elements == 2 || r->elements == 4);
}

static int is_upgrade_refusal(const redisReply *r) {
  return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         r->len == 7 && memcmp(r->str, "upgrade", 7) == 0;
}

/* The server granted a hold: the core's grant routine counts it and keeps
 * its lease (core/hold.h). The script reports this owner's count on the
 * other side too, so a re-entry notices holds of either side that vanished;
 * the read side's explicit deadline is its earliest hold's. */
void lk__rw_acquired(lk__obj_t *o, const redisReply *r) {
  lk_rwlock_t *rw = (lk_rwlock_t *)o;
  int s = rw->req_side;
  lk__grant_t g = {0};
  g.hold = &rw->side[s];
  g.count = r->element[0]->integer;
  g.other = &rw->side[1 - s];
  g.other_count = r->element[1]->integer;
  g.lease_ms = rw->req_lease_ms;
  g.watchdog = rw->req_watchdog != 0;
  g.earliest = s == LK__RW_R;
  if (rw->req_fenced && r->elements == 4)
    lk__grant_token(&g, r, 2, &rw->token, rw->name, rw->name_len);
  lk__hold_grant(&rw->base, &g);
}

/* A grant, the holder's TTL, or "upgrade": this owner reads (through
 * another object sharing its identity), so waiting for the write side would
 * be waiting for itself. */
int lk__rw_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  if (is_upgrade_refusal(r)) {
    *v = LK_EUPGRADE;
    return LK__ANSWER_REFUSED;
  }
  return lk__obj_read_grant_or_busy(o, r, v);
}

/* --- waking --- */

/* Redisson's wake-up rule on the channel: '1' (a write release, a force
 * release) lets every local reader try again, readers may all enter, but
 * only one writer (the longest waiting), since one writer at most can get
 * in; '0' (a read release that freed the lock) wakes one, the longest
 * waiting, for the same reason (the core passes a wake-one on if that
 * one's wait ends without it). Anything else wakes everyone, to be safe.
 * Waiters that are not woken still re-poll on their timer. */
int lk__rw_on_message(lk__obj_t *o, const char *msg, size_t len) {
  if (len == 1 && msg[0] == '0')
    return LK__WAKE_ONE;
  if (len == 1 && msg[0] == '1' && ((lk_rwlock_t *)o)->req_side == LK__RW_W)
    return LK__WAKE_ONE;
  return LK__WAKE_ALL;
}
