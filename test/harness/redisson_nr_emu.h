/* The test-only Redisson emulator's non-reentrant locks: our reading of
 * Redisson 4.4's getNonReentrantLock and getNonReentrantFairLock on the wire
 * (docs/lock.md and docs/fair.md, "Non-reentrant acquire"). They keep
 * exactly the data of RLock and RFairLock (redisson_emu.h) and differ in the
 * acquire only: where RLock would add one more hold for an owner that already
 * holds, their script answers an error made of the word
 * NON_REENTRANT_REACQUIRE (passed to the script as an argument; Redis 7
 * sends a bare word as "ERR NON_REENTRANT_REACQUIRE") and changes nothing. Unlock, renewal, the channels and their messages are RLock's and
 * RFairLock's, so the emulator's rt_rlock_unlock and rt_rfair_unlock release
 * them. Scripts written from that description, not copied from Redisson.
 *
 * Same rules as redisson_emu.h: connections the caller owns, transport or
 * unexpected server errors fail the test. */
#ifndef LK_TEST_HARNESS_REDISSON_NR_EMU_H
#define LK_TEST_HARNESS_REDISSON_NR_EMU_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redisson_emu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The error word Redisson's non-reentrant scripts answer a re-acquire with. */
#define RT_NR_ERROR_WORD "NON_REENTRANT_REACQUIRE"
/* Result of every function below when the script refused a re-acquire by an
 * owner that holds (Redisson throws IllegalMonitorStateException). */
#define RT_NR_REENTRY (-4)

/* Non-reentrant tryLock() once: RT_RLOCK_ACQUIRED (-1) when the owner
 * uuid:tid took the free lock, RT_NR_REENTRY when it already held it, else
 * the holder's PTTL (>= 0) or RT_RLOCK_BUSY_NO_TTL. */
long long rt_nrlock_try(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms);

/* Non-reentrant lock() bounded by timeout_ms (unscaled), as
 * rt_rlock_lock_blocking: try; (S)SUBSCRIBE on sub; try; then wait for a
 * message at most the holder's ttl and try again. 0 acquired, -1 timed out,
 * RT_NR_REENTRY. */
int rt_nrlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                            const char *uuid, long long tid, int64_t lease_ms,
                            int64_t timeout_ms);

/* One attempt of the non-reentrant fair lock's waiting acquire (joins the
 * queue when it cannot take the lock): 1 acquired, 0 queued with *ttl set
 * (ttl may be NULL), RT_NR_REENTRY (nothing queued). wait_ms is Redisson's
 * WAIT, as in rt_rfair_attempt. */
int rt_nrfair_attempt(redisContext *ctx, const char *name, const char *uuid, long long tid,
                      int64_t lease_ms, int64_t wait_ms, long long *ttl);

/* Non-reentrant fair tryLock(wait) bounded by timeout_ms (unscaled), as
 * rt_rfair_lock_wait: attempt; subscribe to the own channel; attempt and
 * wait for a message at most the ttl; acquireFailed when it gives up.
 * 0 acquired, -1 timed out, RT_NR_REENTRY. */
int rt_nrfair_lock_wait(redisContext *ctx, redisContext *sub, const char *name,
                        const char *uuid, long long tid, int64_t lease_ms, int64_t wait_ms,
                        int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_NR_EMU_H */
