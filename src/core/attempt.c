/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* The one reply dispatch of the waiting primitives (object.h, "the
 * attempt's reply"): a primitive says what its script's replies mean
 * (ops->read_attempt, ops->granted, ops->own_answer), and the bookkeeping
 * that comes with every reply is done here, in one order for all: the
 * command is no longer in flight; a failure or a garbled reply goes to the
 * outcome policy; an answer settles an earlier lost one before the object
 * acts on it (its grant may be that lost attempt's, reported again). */
#include "core/hold.h"
#include "core/loglevel.h"
#include "core/outcome.h"

int lk__obj_read_grant_or_busy(lk__obj_t *o, const redisReply *r, int64_t *v) {
  long long ttl;
  if (o->ops->is_grant != NULL && o->ops->is_grant(r))
    return LK__ANSWER_GRANTED;
  if (lk__reply_is_int(r, &ttl)) {
    *v = ttl;
    return LK__ANSWER_BUSY;
  }
  return LK__ANSWER_GARBLED;
}

void lk__obj_attempt_reply(void *data, int status, redisReply *r) {
  lk__obj_t *o = data;
  int64_t v = -1;
  int answer;
  o->op = NULL;
  if (status != 0) {
    if (o->ops->map_error != NULL)
      status = o->ops->map_error(status, r);
    lk__outcome_failed(o, status, r);
    return;
  }
  answer = o->ops->read_attempt != NULL ? o->ops->read_attempt(o, r, &v)
                                        : lk__obj_read_grant_or_busy(o, r, &v);
  if (answer == LK__ANSWER_GARBLED) {
    lk__outcome_garbled(o);
    return;
  }
  lk__outcome_answered(o);
  switch (answer) {
  case LK__ANSWER_GRANTED:
    o->ops->granted(o, r);
    break;
  case LK__ANSWER_BUSY:
    lk__obj_busy(o, v);
    break;
  case LK__ANSWER_REFUSED:
    lk__obj_finish(o, (int)v);
    break;
  default:
    o->ops->own_answer(o, r);
    break;
  }
}

static void release_end(lk__obj_t *o, int status) {
  if (o->ops->release_end != NULL)
    o->ops->release_end(o, status);
  else
    lk__obj_finish(o, status);
}

void lk__obj_release_reply(void *data, int status, redisReply *r) {
  lk__obj_t *o = data;
  int end = 0;
  o->op = NULL;
  if (status == 0 && o->ops->read_release(o, r, &end)) {
    release_end(o, end);
    return;
  }
  if (status == 0)
    status = LK_EUNKNOWN; /* a shape the script never sends: ran or not */
  else
    lk__obj_error(o, r);
  /* Resend after an unknown outcome (the script recognises an applied
   * first attempt by the count before it); a resend that could not be sent
   * (the reconnect failed) is tried again too, within the same budget. */
  if (lk__outcome_may_resend(o, status) && o->ops->resend_release(o) == 0)
    return;
  release_end(o, lk__outcome_unknown(o, status) ? LK_EUNKNOWN : status);
}

int lk__obj_release_begin(lk__obj_t *o, int kind, lk__fn_t cb, void *arg) {
  int rc;
  lk__obj_begin(o, kind, cb, arg);
  if (lk__outcome_defer_command(o))
    return 0;
  rc = o->ops->send_release(o);
  if (rc != 0)
    o->kind = 0; /* not sent: nothing is pending */
  return rc;
}

void lk__obj_close_release_failed(lk__obj_t *o, int status, const char *verb,
                                  const char *what) {
  if (status != 0 && status != LK_ECANCELED)
    lk__log(o->client, lk__trouble_level(status), "%s on close failed (%s); %s expires with its lease",
            verb, lk_err_name(status), what);
}

void lk__obj_close_release_reply(lk__obj_t *o, int status, const char *verb, const char *what) {
  int i;
  o->op = NULL;
  lk__obj_close_release_failed(o, status, verb, what);
  for (i = 0; i < o->nsides; i++)
    o->sides[i].count = 0;
  lk__obj_close_done(o);
}
