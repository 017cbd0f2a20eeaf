#ifndef LATCHKEY_ERRNO_H
#define LATCHKEY_ERRNO_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible function returns 0 or a negative code. Operating-system
 * errors are passed through as -errno; latchkey's own codes live in a private
 * band far below any errno value. Codes are never reused: extend the table at
 * the end. XX(name, offset, message).
 *
 * How the headers list codes. Each function that returns a status lists what
 * it returns "at once" (then its callback never runs) and, when it takes a
 * callback, every status that callback can get. Three shorthands stand for
 * fixed sets:
 *
 *   the entry codes   LK_EINVAL (a NULL object or argument, a value out of
 *                     range), LK_EWRONGTHREAD (not the loop's thread),
 *                     LK_EFORKED (in a forked child), LK_ECLOSED (the object
 *                     or its client is closing): any entry point that returns
 *                     a status;
 *   the start codes   the entry codes (LK_EINVAL also for a NULL callback),
 *                     LK_EBUSY (an operation is pending), LK_ENOMEM, and
 *                     LK_EAGAIN (the client's max_inflight is reached): any
 *                     call that starts an operation;
 *   the server codes  LK_EWRONGTYPE, LK_ENOPERM, LK_EAUTH, LK_EOOM,
 *                     LK_EREADONLY, LK_ELOADING, LK_ESERVERBUSY, LK_EMISCONF,
 *                     LK_ECLUSTER, LK_EREDIS: the server's error reply, or the
 *                     failed handshake of the connection a command waited for
 *                     (then also LK_ETLS, with TLS: docs/tls.md).
 *
 * A callback can also get LK_ENOMEM or LK_EAGAIN when a command its operation
 * sends after the call (a retry, a resend) cannot be queued. Which code means
 * what: docs/errors.md; how an operation ends after a lost, late or garbled
 * reply: docs/objects.md. */
#define LK_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, 1, "invalid argument")                                           \
  XX(ENAMETOOLONG, 2, "name longer than the client's name cap")               \
  XX(ETIMEDOUT, 3, "wait budget ran out before acquiring")                    \
  XX(ENOTOWNER, 4, "held by another owner, or no longer held by this one")    \
  XX(ENOTHELD, 5, "this object does not hold it")                             \
  XX(ELEASELOST, 6, "the lease was lost before release")                      \
  XX(ECANCELED, 7, "operation canceled")                                      \
  XX(ECLOSED, 8, "object or client is closing or closed")                     \
  XX(EBUSY, 9, "object already has an operation pending, or still in use")    \
  XX(EAGAIN, 10, "in-flight operation cap reached")                           \
  XX(ECONN, 11, "not connected to the server")                                \
  XX(EUNKNOWN, 12, "outcome unknown: reply lost and not learnable")           \
  XX(ENOQUORUM, 13, "no quorum of servers")                                   \
  XX(ELATCHLOST, 14, "latch key vanished")                                    \
  XX(EWRONGTHREAD, 15, "called from a thread other than the loop's")          \
  XX(EFORKED, 16, "client used in a forked child")                            \
  XX(EWRONGTYPE, 17, "server: key holds a value of the wrong type")           \
  XX(ENOPERM, 18, "server: ACL denies the command, key or channel")           \
  XX(EAUTH, 19, "server: authentication failed or required")                  \
  XX(EOOM, 20, "server: out of memory (maxmemory)")                           \
  XX(EREADONLY, 21, "server: read-only replica")                              \
  XX(ELOADING, 22, "server: loading the dataset")                             \
  XX(ESERVERBUSY, 23, "server: busy running a script")                        \
  XX(EMISCONF, 24, "server: misconfigured (persistence failing)")             \
  XX(ECLUSTER, 25, "server: cluster redirection or cluster down")             \
  XX(EPROTOCOL, 26, "unexpected reply from the server")                       \
  XX(EREDIS, 27, "server replied with an error")                              \
  XX(ENOMEM, 28, "out of memory")                                            \
  XX(ETOKEN, 29, "fencing token went backwards: the counter was set back")   \
  XX(EUPGRADE, 30, "read hold cannot be upgraded to a write hold")            \
  XX(EDELETED, 31, "the object was deleted while waited on")                 \
  XX(ETLS, 32, "TLS handshake or certificate verification failed")          \
  XX(ENOREPLICAS, 33, "too few replicas acknowledged the grant in time")   \
  XX(EREENTRY, 34, "non-reentrant acquire: this owner already holds it")  \
  XX(EGUARD, 35, "guarded write refused: lock not held by this owner or token not newest") \
  XX(ECROSSSLOT, 36, "a key is not in the lock's cluster slot")

#define LK__ERRNO_BASE (-30000)

typedef enum {
#define LK__ERR_ENUM(name, off, msg) LK_##name = LK__ERRNO_BASE - (off),
  LK_ERRNO_MAP(LK__ERR_ENUM)
#undef LK__ERR_ENUM
  LK__ERRNO_END = LK__ERRNO_BASE - 1000
} lk_errno_t;

/* Never allocate; unknown codes give a fixed string. */
LK_EXTERN const char *lk_strerror(int err);
LK_EXTERN const char *lk_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_ERRNO_H */
