/* The Redisson emulator's read/write lock: a blocking client that behaves on
 * the wire like a Redisson RReadWriteLock user (readLock() / writeLock() of
 * one thread), for interop tests without a JVM.
 *
 * It is OUR READING of Redisson's read/write lock (hash NAME with 'mode', reader
 * field "UUID:TID", writer field "UUID:TID:write", one key per read hold
 * "{NAME}:UUID:TID:rwlock_timeout:<i>", channel "redisson_rwlock:{NAME}" with
 * "0" from a read unlock and "1" from a write unlock, the unlock latch of
 * redisson_emu.h, the HKEYS scan of every hold key on a read unlock,
 * additive TTL on a write re-entry, no message on a downgrade; the layout is
 * docs/rwlock.md's, "Data layout"). The scripts were written from that
 * description, not copied from Redisson; if it is wrong, so is this.
 *
 * Connections are the caller's (rt_rlock_connect); transport or protocol
 * errors fail the test. Results as redisson_emu.h: RT_RLOCK_ACQUIRED,
 * a ttl >= 0, RT_RLOCK_BUSY_NO_TTL. */
#ifndef LK_TEST_HARNESS_REDISSON_RW_EMU_H
#define LK_TEST_HARNESS_REDISSON_RW_EMU_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redisson_emu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "redisson_rwlock:{name}" (or without the braces when name has one).
 * malloc'd; free(). */
char *rt_rwlock_channel(const char *name);
/* The key of uuid:tid's i-th read hold. malloc'd; free(). */
char *rt_rwlock_hold_key(const char *name, const char *uuid, long long tid, int i);

/* readLock().tryLock() / writeLock().tryLock() once with lease_ms. */
long long rt_rwlock_read_try(redisContext *ctx, const char *name, const char *uuid,
                             long long tid, int64_t lease_ms);
long long rt_rwlock_write_try(redisContext *ctx, const char *name, const char *uuid,
                              long long tid, int64_t lease_ms);

/* unlock() of either side, with a fresh request id and its latch (deleted
 * afterwards). 1 = the lock was released as a whole (and the side's message
 * published), 0 = still locked, -1 = not the owner (Redisson would throw).
 * The write unlock re-applies RT_RLOCK_DEFAULT_LEASE_MS on a partial
 * release, as Redisson's watchdog-leased lock does. */
int rt_rwlock_read_unlock(redisContext *ctx, const char *name, const char *uuid,
                          long long tid);
int rt_rwlock_write_unlock(redisContext *ctx, const char *name, const char *uuid,
                           long long tid);

/* lock() of one side bounded by timeout_ms (unscaled), as
 * rt_rlock_lock_blocking: try; SUBSCRIBE on sub; try; then wait for a
 * message for at most the holder's ttl and try again. 0 acquired, -1 not
 * within timeout_ms. */
int rt_rwlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                            const char *uuid, long long tid, int write, int64_t lease_ms,
                            int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_RW_EMU_H */
