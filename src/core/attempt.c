/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* The one reply dispatch of the waiting primitives (object.h, "the
 * attempt's reply"): a primitive says what its script's replies mean
 * (ops->read_attempt, ops->granted, ops->own_answer), and the bookkeeping
 * that comes with every reply is done here, in one order for all: the
 * command is no longer in flight; a failure or a garbled reply goes to the
 * outcome policy; an answer settles an earlier lost one before the object
 * acts on it (its grant may be that lost attempt's, reported again). */
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
