#ifndef LK_CORE_OUTCOME_H
#define LK_CORE_OUTCOME_H

/* The outcome policy: the one place that decides what happens when a
 * command of an object's pending operation does not come back with an
 * answer the object can read (docs/objects.md, "Outcomes").
 *
 *   lost reply, reply timeout, unattributable reply  -> LK_EUNKNOWN
 *   a reply of a shape the verb never sends          -> treated the same
 *   a resend that could not be sent                  -> still unknown
 *
 * An unknown outcome is resent when a resend is applied at most once for
 * this object (ops->counted) and budget and resends are left; otherwise the
 * operation ends with LK_EUNKNOWN and, for an acquire, what the server may
 * have granted is given back (ops->undo: applied only if the owner's count
 * shows the grant). An attempt left behind (timeout, cancel, close) gets the
 * same give-back once its outcome arrives, and the object's next attempt
 * waits until every give-back it sent is answered (sent earlier, it would
 * take the late grant for its own and then lose it to the give-back).
 *
 * Like c-ares routing every retry and end of a query through one function,
 * the primitives only say what their verbs are: how to resend (ops->attempt
 * or their own resend), whether a resend is safe (ops->counted), how to give
 * back (ops->undo), and what their attempts' replies mean (ops->read_attempt:
 * the core's one dispatch, lk__obj_attempt_reply in core/attempt.c, calls
 * lk__outcome_failed, _answered and _garbled for them). */

#include "core/object.h"

/* Resends of one command after unknown outcomes before the operation gives
 * up with LK_EUNKNOWN (each also needs wait budget left, for acquires). */
#define LK__OUTCOME_RESENDS 3

/* The status says the command's outcome is unknown: its reply was lost, or
 * a resend of it could not even be sent (the first attempt's fate is still
 * open). */
static inline int lk__outcome_unknown(const lk__obj_t *o, int status) {
  return status == LK_EUNKNOWN || (status == LK_ECONN && o->resends > 0);
}

/* A reply that the object could read arrived for the pending operation:
 * whatever an earlier attempt left open is settled by it (the scripts read
 * an earlier attempt's grant from the owner's count and report it), and the
 * resend allowance starts over: it bounds unknown outcomes in a row, so a
 * long wait survives any number of separate blips. */
static inline void lk__outcome_answered(lk__obj_t *o) {
  o->outcome_open = 0;
  o->resends = 0;
}

/* For resends outside the wait engine (releases): 1 when the command whose
 * outcome is unknown may be sent again now; the resend is counted. */
int lk__outcome_may_resend(lk__obj_t *o, int status);

/* The waiting operation's attempt failed with status (r: the error reply,
 * or NULL). Resends it, retries later, or ends the operation: the one
 * decision for every acquire. */
void lk__outcome_failed(lk__obj_t *o, int status, const redisReply *r);

/* The attempt's reply has a shape its script never sends: what ran on the
 * server is unknown, so it is settled like a lost reply. */
void lk__outcome_garbled(lk__obj_t *o);

/* Called by the core when an operation ends (before the user's callback):
 * an acquire that ends without success while an attempt's outcome is open
 * gives back what that attempt may have been granted, and reports
 * LK_EUNKNOWN (LK_ECANCELED stays). Returns the status to report. */
int lk__outcome_settle(lk__obj_t *o, int status);

/* Called by the core when the pending operation's command is left behind
 * (budget spent, cancel, close). */
void lk__outcome_abandon(lk__obj_t *o);

/* From ops->attempt, first: 1 when the attempt must wait for an abandoned
 * attempt's outcome or a give-back's answer (the core sends it later
 * through lk__obj_try). */
int lk__outcome_defer_attempt(lk__obj_t *o);

/* A command other than an attempt (a release) must wait likewise: 1 when it
 * must, and then ops->deferred(o) runs once it may go. */
int lk__outcome_defer_command(lk__obj_t *o);

/* The close's last step (lk__obj_close_done) must wait likewise: 1 when it
 * must, and then lk__obj_close_done(o) runs again once every give-back and
 * abandoned attempt of the object is answered (or failed: each is bounded
 * by the client's reply timeout). So close_cb comes after every give-back
 * the object sent, a grant that raced the close included. */
int lk__outcome_defer_close(lk__obj_t *o);

/* Sends op (prepared, not submitted; NULL when it could not be prepared),
 * which gives back what the object held or may hold (a lost lease, a
 * refused token, a queue entry): the object's next attempt and release wait
 * for its answer. Sent before them is not enough: in a cluster the router
 * keeps a command that met TRYAGAIN for a later retry, and a give-back
 * naming every hold of the owner that landed after the owner's next grant
 * would delete that grant. Best effort: what cannot be sent expires with
 * its lease. */
void lk__outcome_give_back(lk__obj_t *o, lk__op_t *op);

/* The object is being freed: abandoned attempts still out forget it. */
void lk__outcome_free(lk__obj_t *o);

#endif /* LK_CORE_OUTCOME_H */
