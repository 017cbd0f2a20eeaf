/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* Hold records and the grant routine (hold.h). */
#include <string.h>

#include "core/hold.h"
#include "core/metrics.h"
#include "core/sync.h"
#include "core/tokens.h"

uint64_t lk__hold_deadline(const lk_client_t *c, const lk__hold_t *h) {
  if (h->count == 0)
    return 0;
  if (lk__hold_watched(h))
    return lk__wd_deadline(c, h->wd);
  return h->deadline_ns;
}

int lk__hold_is_held(const lk_client_t *c, const lk__hold_t *h) {
  return h->count > 0 && lk__now_ns() < lk__hold_deadline(c, h);
}

int lk__hold_watched(const lk__hold_t *h) { return h->wd != NULL && lk__wd_watching(h->wd); }

void lk__hold_unwatch(lk_client_t *c, lk__hold_t *h) {
  if (lk__hold_watched(h))
    lk__wd_remove(c, h->wd);
}

void lk__hold_drop(lk_client_t *c, lk__hold_t *h, uint32_t n) {
  h->count = n >= h->count ? 0 : h->count - n;
  if (h->count == 0)
    lk__hold_unwatch(c, h);
}

void lk__grant_token(lk__grant_t *g, const redisReply *r, size_t at, int64_t *token_out,
                     const char *name, size_t name_len) {
  g->fenced = 1;
  g->token = r->element[at]->integer;
  g->regressed = r->element[at + 1]->integer != 0;
  g->token_out = token_out;
  g->name = name;
  g->name_len = name_len;
}

int lk__hold_release_nil(lk__hold_t *h, const redisReply *r, int *status) {
  if (r->type != REDIS_REPLY_NIL)
    return 0;
  h->count = 0;
  *status = LK_ENOTOWNER;
  return 1;
}

int lk__hold_released(lk__hold_t *h, uint32_t before, int none_left, int *status) {
  h->count = none_left ? 0 : before - 1;
  *status = 0;
  return 1;
}

void lk__hold_close_reply(void *data, int status, redisReply *r) {
  (void)r;
  lk__obj_close_release_reply(data, status, "release", "the lock");
}

void lk__hold_afresh(lk__obj_t *o) {
  int i;
  if (!o->lost)
    return;
  /* on_lost told the loss; what the server may have kept was given back
   * then. */
  for (i = 0; i < o->nsides; i++)
    o->sides[i].count = 0;
  o->lost = 0;
}

int lk__hold_release_check(lk__obj_t *o, const lk__hold_t *h) {
  if (h->count == 0)
    return LK_ENOTHELD;
  if (o->lost) {
    lk__hold_afresh(o);
    return LK_ELEASELOST;
  }
  return 0;
}

int lk__hold_release_begin(lk__obj_t *o, const lk__hold_t *h, uint32_t *before, int kind,
                           lk__fn_t cb, void *arg) {
  int rc = lk__hold_release_check(o, h);
  if (rc != 0)
    return rc;
  *before = h->count;
  return lk__obj_release_begin(o, kind, cb, arg);
}

int lk__hold_query(lk__obj_t *o, int what, const char *name, size_t name_len, const char *field,
                   size_t field_len) {
  static const char *const verb[] = {"EXISTS", "PTTL", "HGET"};
  const char *argv[3] = {verb[what], name, field};
  size_t lens[3] = {strlen(verb[what]), name_len, field_len};
  int err = 0;
  lk__op_t *op = lk__cmd_argv(o->client, what == LK__HOLD_FIELD ? 3 : 2, argv, lens,
                              lk__obj_value_reply, o, &err);
  return lk__obj_value_sent(o, op, what == LK__HOLD_FIELD ? LK__VALUE_TEXT : 0, err);
}

void lk__hold_forced(lk__obj_t *o, lk__hold_t *h) {
  h->count = 0;
  o->lost = 0;
  lk__hold_unwatch(o->client, h);
}

int lk__hold_acquire_check(const lk__hold_t *h, int64_t wait_ms, int64_t lease_ms) {
  if (!lk__valid_wait(wait_ms) || !lk__valid_lease(lease_ms) || h->count == UINT32_MAX)
    return LK_EINVAL;
  return 0;
}

int lk__hold_set_owner_check(const lk__obj_t *o, const char *client_id) {
  int rc = lk__obj_check(o);
  if (rc != 0)
    return rc;
  if (client_id != NULL && !lk__valid_client_id(client_id))
    return LK_EINVAL;
  return 0;
}

int lk__hold_token_key(char **key, size_t *key_len, const char *prefix, const char *name,
                       size_t name_len) {
  if (*key == NULL)
    *key = lk__prefix_name(prefix, name, name_len, key_len);
  return *key != NULL ? 0 : LK_ENOMEM;
}

static uint32_t clamp_count(long long v) {
  return v <= 0 ? 0 : v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int counted(lk__obj_t *o) { return o->ops->counted != NULL && o->ops->counted(o); }

static void give_back(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n) {
  if (n > 0)
    o->ops->give_back(o, h, cond, n);
}

/* on_lost may cancel or close the object, which queues the operation's one
 * completion: that one stands. */
static void finish_unless_cut(lk__obj_t *o, int status) {
  if (!lk__queue_linked(&o->done.node))
    lk__obj_finish(o, status);
}

static void zero_sides(const lk__grant_t *g) {
  g->hold->count = 0;
  if (g->other != NULL)
    g->other->count = 0;
}

/* The holds are gone behind the object's back: report the loss (lose gives
 * back what the server still has for this owner), and start afresh. */
static void lost_as_a_whole(lk__obj_t *o, const lk__grant_t *g) {
  lk__metrics_lost(o->client, LK__LOST_GONE);
  o->ops->lose(o);
  zero_sides(g);
  o->lost = 0;
  finish_unless_cut(o, LK_ELEASELOST);
}

/* Starts or refreshes the side's lease keeping: the script set the lease
 * at `sent`, which starts (or restarts) the local deadline. */
static void keep_lease(lk__obj_t *o, const lk__grant_t *g, uint32_t before, uint64_t sent) {
  lk_client_t *c = o->client;
  lk__hold_t *h = g->hold;
  h->lease_ms = g->lease_ms;
  if (g->watchdog) {
    /* The object is told of the entry's health; a re-entry's grant confirms
     * the hold as a renewal would. */
    h->wd->obj = o;
    if (lk__hold_watched(h))
      lk__wd_grant_confirms(c, h->wd, sent);
    lk__hold_unwatch(c, h);
    lk__wd_add(c, h->wd, sent);
    return;
  }
  /* A re-entry keeps the later deadline, except on a side whose holds each
   * have their own key and expire oldest first (read holds): the earliest. */
  uint64_t dl = sent + (uint64_t)g->lease_ms * 1000000u - lk__wd_drift_ns(g->lease_ms);
  if (before == 0 || (g->earliest ? dl < h->deadline_ns : dl > h->deadline_ns))
    h->deadline_ns = dl;
}

void lk__hold_grant(lk__obj_t *o, const lk__grant_t *g) {
  lk_client_t *c = o->client;
  uint64_t sent = c->completing_sent_ns;
  lk__hold_t *h = g->hold;
  uint32_t before = h->count;
  if (o->lost) {
    /* A re-entry that was in flight when the loss was declared: the
     * give-back sent then did not count this hold. Give it back, applied
     * only if the owner's count still shows it. */
    give_back(o, h, g->count, 1);
    o->lost = 0;
    zero_sides(g);
    lk__obj_finish(o, LK_ELEASELOST);
    return;
  }
  if (counted(o) && ((before > 0 && g->count != (long long)before + 1) ||
                     (g->other != NULL && g->other_count < (long long)g->other->count))) {
    /* A re-entry found fewer holds than this owner had (on either side):
     * the earlier ones were lost (expired, deleted, force-released) and
     * someone else may have held the lock in between. */
    h->count = clamp_count(g->count);
    if (g->other != NULL)
      g->other->count = clamp_count(g->other_count);
    lost_as_a_whole(o, g);
    return;
  }
  h->count++;
  keep_lease(o, g, before, sent);
  if (g->fenced) {
    lk__token_seen(c, g->name, g->name_len, g->token);
    if (g->regressed) {
      /* Handing this token out could let a stale writer win at the
       * resource: give the hold back and say why. The counter was lifted,
       * so the next acquisition gets a token above any seen before. */
      /* The acquire's callback gets LK_ETOKEN: the program is told (and a
       * RedLock counts the master out, as after a restart). */
      lk__log(c, LK_LOG_INFO, "fencing token went backwards (the counter was set "
                              "back); acquisition refused");
      give_back(o, h, -1, 1);
      h->count = before;
      if (before == 0)
        lk__hold_unwatch(c, h);
      lk__obj_finish(o, LK_ETOKEN);
      return;
    }
    *g->token_out = g->token;
  }
  if (!lk__hold_is_held(c, h)) {
    /* Success must mean is_held(): the grant came back after its own local
     * deadline (the round trip took longer than the lease), or an earlier
     * hold of the side is past its own. The server may have expired it, so
     * it cannot be used (Redlock's "validity <= 0"). With earlier holds
     * (either side) the object cannot trust them either. */
    lk__log(c, LK_LOG_INFO, "acquisition answered after its lease ran out; given back");
    if (before > 0 || (g->other != NULL && g->other->count > 0)) {
      lost_as_a_whole(o, g);
      return;
    }
    give_back(o, h, -1, 1);
    h->count = 0;
    lk__hold_unwatch(c, h);
    finish_unless_cut(o, LK_ELEASELOST);
    return;
  }
  /* Replica sync may still refuse this grant (core/sync.h). */
  lk__sync_note_grant(o, h, g->count, before);
  lk__obj_finish(o, 0);
}

void lk__hold_take_back(lk__obj_t *o, lk__hold_t *h, long long count, uint32_t before) {
  /* Conditional on the owner's count showing this grant: nothing else of
   * this owner changed it since (the operation was still pending). */
  give_back(o, h, count, 1);
  h->count = before;
  if (before == 0)
    lk__hold_unwatch(o->client, h);
}
