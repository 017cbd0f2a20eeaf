/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* The outcome policy (outcome.h): every resend, give-back and end of an
 * operation whose command may have been applied goes through here. */
#include "core/outcome.h"
#include "core/router.h"

/* What the object sent that its next attempt or release must not overtake:
 * abandoned attempts whose outcome is still out, and give-backs not yet
 * answered. The close waits for them too (lk__outcome_defer_close); it
 * lives apart from the object for a forked child's close, which frees the
 * object at once: the last to settle frees it once the object is gone. */
typedef struct lk__outcome_track_s {
  lk__obj_t *obj; /* NULL once the object is freed */
  lk_client_t *client;
  unsigned pending;
} lk__outcome_track_t;

static lk__outcome_track_t *track_of(lk__obj_t *o) {
  if (o->track == NULL && (o->track = lk__calloc(1, sizeof(*o->track))) != NULL) {
    o->track->obj = o;
    o->track->client = o->client;
  }
  return o->track;
}

static void settled(lk__outcome_track_t *t);

/* A give-back's reply (or its failure): reported as any clean-up is, then
 * what waited for it may go. */
static void on_given_back(void *data, int status, redisReply *r) {
  lk__outcome_track_t *t = data;
  lk__cleanup_cb(t->client, status, r);
  settled(t);
}

/* Makes op's callback on_given_back, counted in the track. 0 when the
 * track could not be allocated (the give-back still goes, untracked). */
static int track_give_back(lk__obj_t *o, lk__op_t *op) {
  lk__outcome_track_t *t = track_of(o);
  if (t == NULL)
    return 0;
  t->pending++;
  lk__op_retarget(op, on_given_back, t);
  return 1;
}

/* Tracks op, then submits it (a submit may complete it at once, so the
 * tracking comes first); on failure op is freed untracked. */
static int submit_tracked(lk__obj_t *o, lk__op_t *op) {
  int tracked = track_give_back(o, op);
  int rc = lk__op_submit(o->client, op);
  if (rc != 0) {
    if (tracked)
      o->track->pending--;
    lk__op_free(op);
  }
  return rc;
}

void lk__outcome_give_back(lk__obj_t *o, lk__op_t *op) {
  if (op == NULL)
    return; /* could not be prepared: logged there, expires with its lease */
  if (submit_tracked(o, op) != 0)
    lk__log(o->client, LK_LOG_INFO, "cannot send a give-back; what it meant to give back "
                                    "expires with its lease");
}

static int counted(lk__obj_t *o) { return o->ops->counted != NULL && o->ops->counted(o); }

int lk__outcome_may_resend(lk__obj_t *o, int status) {
  if (!lk__outcome_unknown(o, status) || !counted(o) || o->resends >= LK__OUTCOME_RESENDS)
    return 0;
  o->resends++;
  return 1;
}

void lk__outcome_failed(lk__obj_t *o, int status, const redisReply *r) {
  lk__obj_error(o, r);
  if (status == LK_ECONN && o->outcome_open && counted(o)) {
    /* A resend that could not even be sent (the connection is down): the
     * first attempt's fate is still open and nothing new was risked. Wait
     * for the connection within the budget and resend then; the allowance
     * is for outcomes that stayed unknown, not for a reconnect's length. */
    lk__obj_retry_or_finish(o, status);
    return;
  }
  if (lk__outcome_unknown(o, status)) {
    /* Open until an answer or a give-back settles it. */
    o->outcome_open = 1;
    if (lk__obj_remaining_ms(o) > 0 && lk__outcome_may_resend(o, status)) {
      /* Safe to resend: the script recognises an earlier attempt's grant
       * by the expected count, so nothing is counted twice. */
      int rc = lk__obj_try(o);
      if (rc != 0)
        lk__obj_finish(o, rc);
      return;
    }
    /* lk__outcome_settle gives back what the attempt may have taken. */
    lk__obj_finish(o, LK_EUNKNOWN);
    return;
  }
  if (lk__obj_retryable(o, status)) {
    /* TRYAGAIN or CLUSTERDOWN (LK_ECLUSTER) too: the command did not run,
     * and the router resent it for as long as the reply timeout allows one
     * command; a wait goes on trying within its own budget. */
    lk__obj_retry_or_finish(o, status);
    return;
  }
  lk__obj_finish(o, status);
}

void lk__outcome_garbled(lk__obj_t *o) {
  lk__log(o->client, LK_LOG_WARN, "a reply of a shape its script never sends: outcome unknown");
  lk__outcome_failed(o, LK_EUNKNOWN, NULL);
}

static int is_acquire(const lk__obj_t *o, int kind) {
  return o->ops->acquire_kind != 0 && kind == o->ops->acquire_kind;
}

int lk__outcome_settle(lk__obj_t *o, int status) {
  lk__op_t *undo;
  if (!o->outcome_open || !is_acquire(o, o->kind))
    return status;
  o->outcome_open = 0;
  if (status == 0)
    return 0;
  /* Nothing since settled the lost attempt (a resend met a loading server,
   * then the budget ran out, or the acquire was canceled between resends):
   * give back the hold it may have taken, before the callback can start
   * anything. Applied only if the owner's count shows it. */
  undo = o->ops->undo != NULL ? o->ops->undo(o, 0) : NULL;
  /* Tracked: what the callback starts next waits for its answer. */
  if (undo != NULL && submit_tracked(o, undo) != 0)
    lk__log(o->client, LK_LOG_INFO, "cannot give back an acquire whose outcome is "
                                    "unknown; any hold expires with its lease");
  else if (undo != NULL)
    o->client->stats.give_backs++;
  return status == LK_ECANCELED ? status : LK_EUNKNOWN;
}

/* --- abandoned attempts --- */

typedef struct lk__outcome_follow_s {
  lk__outcome_track_t *track;
  lk__op_t *undo;
  int (*is_grant)(const redisReply *r);
  uint8_t when; /* FOLLOW_* */
} lk__outcome_follow_t;

enum {
  FOLLOW_GRANT = 0,        /* only a reply showing a grant */
  FOLLOW_GRANT_OR_UNKNOWN, /* that, or a lost reply */
  FOLLOW_ALWAYS            /* whatever comes (the undo is conditional) */
};

/* A release that waited (lk__outcome_defer_command, from
 * lk__obj_release_begin) goes now, for a kind with no ops->deferred of its
 * own: a send that fails ends the operation with its code. */
static void send_deferred_release(lk__obj_t *o) {
  int rc = o->ops->send_release(o);
  if (rc != 0)
    lk__obj_finish(o, rc);
}

static void settled(lk__outcome_track_t *t) {
  lk__obj_t *o = t->obj;
  int rc;
  t->pending--;
  if (o == NULL) {
    if (t->pending == 0)
      lk__free(t);
    return;
  }
  if (t->pending > 0)
    return;
  if (o->close_deferred) {
    o->close_deferred = 0;
    lk__obj_close_done(o); /* the close waited for this one */
    return;
  }
  if (o->op != NULL || lk__queue_linked(&o->done.node))
    return;
  if (o->attempt_deferred && is_acquire(o, o->kind)) {
    o->attempt_deferred = 0;
    rc = lk__obj_try(o);
    if (rc != 0)
      lk__obj_finish(o, rc);
  } else if (o->command_deferred && o->kind != 0) {
    o->command_deferred = 0;
    if (o->ops->deferred != NULL)
      o->ops->deferred(o);
    else
      send_deferred_release(o);
  }
}

static void on_followed(void *data, int status, redisReply *r) {
  lk__outcome_follow_t *f = data;
  lk__outcome_track_t *t = f->track;
  int grant = status == 0 && r != NULL && f->is_grant != NULL && f->is_grant(r);
  int send = f->when == FOLLOW_ALWAYS || grant ||
             (f->when == FOLLOW_GRANT_OR_UNKNOWN && status == LK_EUNKNOWN);
  lk_client_t *c = f->undo->client;
  if (send) {
    /* The abandoned attempt's place in the track passes to its give-back,
     * settled when the give-back is answered: on the connection is not
     * enough (lk__outcome_give_back). */
    if (t != NULL)
      lk__op_retarget(f->undo, on_given_back, t);
    if (lk__op_submit(c, f->undo) == 0) {
      f->undo = NULL;
      t = NULL;
      c->stats.give_backs++;
    }
  }
  if (f->undo != NULL)
    lk__op_free(f->undo);
  lk__free(f);
  if (t != NULL)
    settled(t);
}

void lk__outcome_abandon(lk__obj_t *o) {
  lk__outcome_follow_t *f;
  lk__op_t *undo;
  int own = counted(o);
  if (!is_acquire(o, o->kind)) {
    /* Other commands' late outcomes matter to nobody. */
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  /* The release is prepared now, while the object's data is at hand. An
   * owner with a count makes it conditional, so it may follow an unknown
   * outcome too; when an earlier attempt's outcome is open (this one is its
   * resend), it goes whatever this one answers: a LOADING reply to the
   * resend says nothing of the first attempt's grant. */
  undo = o->ops->undo != NULL ? o->ops->undo(o, !own) : NULL;
  f = undo != NULL ? lk__malloc(sizeof(*f)) : NULL;
  if (f == NULL) {
    if (undo != NULL) {
      lk__op_free(undo);
      lk__log(o->client, LK_LOG_INFO, "cannot prepare giving back an abandoned "
                                      "acquire; any hold expires with its lease");
    }
    o->outcome_open = 0;
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  f->undo = undo;
  f->is_grant = o->ops->is_grant;
  f->when = !own ? FOLLOW_GRANT : o->outcome_open ? FOLLOW_ALWAYS : FOLLOW_GRANT_OR_UNKNOWN;
  o->outcome_open = 0;
  f->track = track_of(o);
  if (f->track != NULL)
    f->track->pending++;
  lk__op_retarget(o->op, on_followed, f);
}

static int give_backs_pending(const lk__obj_t *o) {
  return o->track != NULL && o->track->pending > 0;
}

int lk__outcome_defer_attempt(lk__obj_t *o) {
  if (!give_backs_pending(o))
    return 0;
  o->attempt_deferred = 1; /* settled() sends it */
  return 1;
}

int lk__outcome_defer_command(lk__obj_t *o) {
  if (!give_backs_pending(o))
    return 0;
  o->command_deferred = 1; /* settled() runs ops->deferred */
  return 1;
}

int lk__outcome_defer_close(lk__obj_t *o) {
  if (!give_backs_pending(o))
    return 0;
  o->close_deferred = 1; /* settled() ends the close */
  return 1;
}

void lk__outcome_free(lk__obj_t *o) {
  if (o->track == NULL)
    return;
  if (o->track->pending == 0)
    lk__free(o->track);
  else
    o->track->obj = NULL; /* the last settled give-back frees it */
  o->track = NULL;
}
