#ifndef LATCHKEY_GUARDED_H
#define LATCHKEY_GUARDED_H

#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes guarded by the lock (docs/guarded.md): a write to the same Redis
 * that the server applies only while this object's owner holds the lock
 * and, when the hold is fenced, only while its fencing token is the newest
 * issued for the name. Check and write run in one script: atomic. */

/* One guarded operation. Either a command of the list (script NULL):
 * argv[0] is SET, DEL, UNLINK, HSET, HDEL, HINCRBY, INCR, INCRBY, DECR,
 * DECRBY, APPEND, EXPIRE, PEXPIRE, PERSIST, SADD, SREM, LPUSH, RPUSH, ZADD
 * or ZREM (any case), argv[1] its key (DEL and UNLINK: every argument is a
 * key); or a Lua script (script non-NULL): its body, run with KEYS =
 * argv[0..nkeys-1] and ARGV = the rest, exactly as EVAL would, after the
 * guard's check. Every key must be in the lock's cluster slot (give it the
 * lock's hash tag: "{NAME}..."), on every server, so that a program that
 * works standalone works on a cluster. */
typedef struct lk_guarded_op_s {
  const char *script; /* NULL: argv is a command of the list */
  size_t script_len;  /* 0: strlen(script) */
  int nkeys;          /* with a script: how many of argv are keys */
  int argc;           /* 1..LK_GUARDED_MAX_ARGS */
  const char *const *argv;
  const size_t *lens; /* NULL: strlen of each argument */
} lk_guarded_op_t;

#define LK_GUARDED_MAX_ARGS 1024

/* The reply of a guarded operation that succeeded, readable in its callback
 * (lk_lock_guarded_reply): the server's reply, summarized. */
typedef enum {
  LK_GUARDED_NIL = 0,
  LK_GUARDED_INTEGER = 1,
  LK_GUARDED_STRING = 2, /* a bulk or status reply ("OK") */
  LK_GUARDED_ARRAY = 3
} lk_guarded_reply_type_t;

typedef struct lk_guarded_reply_s {
  int type;        /* lk_guarded_reply_type_t */
  int64_t integer; /* LK_GUARDED_INTEGER */
  const char *str; /* LK_GUARDED_STRING: not NUL-safe, use len */
  size_t len;
  size_t elements; /* LK_GUARDED_ARRAY: the count only */
} lk_guarded_reply_t;

/* Runs op guarded by the lock. Sent whatever the object counts: the
 * server decides. An integer reply is also lk_lock_result() in the callback.
 * At once: the start codes (LK_EINVAL also for op NULL, argc out of range, a
 * NULL argument, a command not in the list or without its key, nkeys out of
 * range, an empty script); LK_ECROSSSLOT (a key outside the lock's cluster
 * slot: nothing sent; lk_lock_error_text names the key).
 * Callback: 0 (applied; lk_lock_guarded_reply); LK_EGUARD (refused: this
 * owner does not hold the lock, or a newer token was issued; nothing was
 * written); LK_EUNKNOWN (the reply was lost: the write may or may not have
 * applied; never resent); LK_ECONN (not sent); LK_ECANCELED (the lock is
 * closing: the write may still apply); the server codes (the command's own
 * error, or the script's: lk_lock_error_text). */
LK_EXTERN int lk_lock_guarded(lk_lock_t *lock, const lk_guarded_op_t *op,
                              lk_lock_cb cb, void *arg);

/* The reply of the lk_lock_guarded whose callback is running with 0; NULL
 * elsewhere. Borrowed: valid only during that callback. */
LK_EXTERN const lk_guarded_reply_t *lk_lock_guarded_reply(const lk_lock_t *lock);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_GUARDED_H */
