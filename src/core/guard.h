#ifndef LK_CORE_GUARD_H
#define LK_CORE_GUARD_H

/* Guarded writes (docs/guarded.md, latchkey/guarded.h): the checks, the
 * command and the reply shared by every lock-like object whose owner check
 * is Redisson's (hash NAME, field OWNER): the lock today. */

#include "core/object.h"

/* What the guard checks on the server: the lock's hash and owner field,
 * and, when token > 0, that the name's token key holds exactly token. */
typedef struct lk__guard_s {
  const char *lock;
  size_t lock_len;
  const char *owner;
  size_t owner_len;
  const char *token_key; /* the name's fencing-token key (always passed) */
  size_t token_key_len;
  int64_t token; /* 0: not fenced */
} lk__guard_t;

/* Checks op before anything is sent: 0, LK_EINVAL (bad op), LK_ENOMEM, or
 * LK_ECROSSSLOT (a key outside the lock's slot; o's error text names it). */
int lk__guard_check(lk__obj_t *o, const lk__guard_t *g, const lk_guarded_op_t *op);

/* Sends op (checked) guarded by g, with lk__guard_reply as the callback and
 * o as its data; sets o->op. 0 or a code (nothing sent). */
int lk__guard_send(lk__obj_t *o, const lk__guard_t *g, const lk_guarded_op_t *op);

/* The reply's callback: ends o's pending operation with its status, the
 * reply summary readable through lk__guard_current while the user's
 * callback runs. */
void lk__guard_reply(void *data, int status, redisReply *r);

/* The summary of the reply whose callback is running for o, or NULL. */
const lk_guarded_reply_t *lk__guard_current(const lk__obj_t *o);

#endif /* LK_CORE_GUARD_H */
