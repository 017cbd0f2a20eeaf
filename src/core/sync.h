#ifndef LK_CORE_SYNC_H
#define LK_CORE_SYNC_H

/* Replica sync (docs/replica-sync.md): after a grant, and before the
 * acquire's callback, WAIT numreplicas timeout (WAITAOF 0 numreplicas
 * timeout with sync_aof) on the connection the grant came back on, then the
 * client's policy when too few replicas acknowledged it.
 *
 * It sits in the object body, once for every primitive: lk__obj_finish
 * hands an acquire's success here first (lk__sync_intercept), and the step
 * ends by calling lk__obj_finish again with the outcome. A refused grant
 * (shortfall under LK_SYNC_GIVE_BACK, WAIT refused or unanswered, the
 * acquire canceled or closed meanwhile) is given back through the object's
 * ops->refuse, or for holding objects through the hold lk__hold_grant noted
 * (lk__hold_take_back): the same give-back verb a grant found after its own
 * deadline uses.
 *
 * One WAIT per connection at a time: a WAIT blocks its connection on the
 * server, and every grant whose reply arrives while one is in flight ran
 * before it (replies come in order), so it joins that one instead of
 * queueing another behind it. The primitives only pass the acquire's option
 * (lk__obj_sync_want, object.h) and read the count (lk__obj_sync_acked). */

#include "core/object.h"

struct lk__hold_s;

/* From lk__obj_finish, first. 1: the sync step took the acquire's success
 * over (a WAIT is in flight; it finishes the operation later). 0: finish
 * now with *status, which a sync decided at once may have changed. */
int lk__sync_intercept(lk__obj_t *o, int *status);
/* From the core when the pending operation is cut short (cancel, close,
 * budget): a grant waiting for its WAIT is given back and leaves it. */
void lk__sync_abandon(lk__obj_t *o);
/* From lk__hold_grant, just before it finishes with success: the grant the
 * sync step may have to take back (side, the owner's count after it, the
 * object's count before it). */
void lk__sync_note_grant(lk__obj_t *o, struct lk__hold_s *h, long long count, uint32_t before);
/* The object's memory goes. */
void lk__sync_free(lk__obj_t *o);

#endif /* LK_CORE_SYNC_H */
