#ifndef LK_CORE_SPIN_H
#define LK_CORE_SPIN_H

/* Spin mode (docs/lock.md, "Spin mode"; docs/objects.md, "Waiting"): a wait
 * that never subscribes.
 * After a busy answer it sleeps a back-off and tries again: the first sleep
 * is about the initial back-off, each next one's base doubles up to the
 * largest, and every sleep is drawn between half its base and its base
 * (jitter: waiters that started together drift apart instead of hitting the
 * server in step). The wait engine (object.c, sleep_then_retry) takes the
 * sleep from lk__spin_next instead of subscribing; the budget, the holder's
 * TTL and the last try at the deadline bound it as they bound every wait.
 *
 * Redisson's RSpinLock waits the same way (its ExponentialBackOff: 1 ms
 * first, doubling, at most 128 ms); these are the defaults here too. */

#include "core/object.h"

/* Defaults of the client's spin_initial_ms and spin_max_ms (0 there). */
#define LK__SPIN_INITIAL_MS 1
#define LK__SPIN_MAX_MS 128

/* 1 when v is a valid spin switch (-1 = the client's, 0, 1) for an acquire. */
static inline int lk__valid_spin(int v) { return v >= -1 && v <= 1; }
/* 1 when v is a valid back-off bound (0 = default, 1..LK_SPIN_MAX_MS). */
static inline int lk__valid_spin_ms(int64_t v) { return v >= 0 && v <= LK_SPIN_MAX_MS; }

/* From a primitive's acquire, after its checks and before lk__obj_begin:
 * the acquire's spin options (spin -1 = the client's; a bound 0 = the
 * client's). Sets o->spin and, for a spinning wait (wait_ms != 0), makes the
 * wait part and starts its back-off from the initial value. 0, LK_EINVAL
 * (out of range) or LK_ENOMEM. */
int lk__obj_spin_want(lk__obj_t *o, int64_t wait_ms, int spin, int64_t initial_ms,
                      int64_t max_ms);
/* The two wants every acquire with replica sync and spin options states the
 * same way, from its options struct opts (fields sync_replicas, wait_ms,
 * spin, spin_initial_ms, spin_max_ms): lk__obj_sync_want, then
 * lk__obj_spin_want. 0 or the first one's code. */
#define LK__OBJ_WAIT_WANTS(o, opts)                                                 \
  lk__obj_wait_wants((o), (opts)->sync_replicas, (opts)->wait_ms, (opts)->spin,     \
                     (opts)->spin_initial_ms, (opts)->spin_max_ms)
int lk__obj_wait_wants(lk__obj_t *o, int sync_replicas, int64_t wait_ms, int spin,
                       int64_t initial_ms, int64_t max_ms);
/* The defaults of those fields in every such options struct, as each
 * kind's _opts_init documents them: no wait, and the client's replica sync
 * and spin settings. */
#define LK__WAIT_OPTS_DEFAULTS(opts)                                                 \
  ((opts)->wait_ms = 0, (opts)->sync_replicas = -1, (opts)->spin = -1,              \
   (opts)->spin_initial_ms = 0, (opts)->spin_max_ms = 0)
/* The next sleep of a spinning wait, ms (>= 1), and the back-off grows. */
int64_t lk__spin_next(lk__obj_t *o);

#endif /* LK_CORE_SPIN_H */
