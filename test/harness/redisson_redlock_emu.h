/* Test-only emulation of Redisson's RedissonMultiLock and RedissonRedLock
 * (docs/multilock.md), built on the RLock emulator (redisson_emu.h): our
 * reading of how they behave, written in our own words, not Redisson's
 * code. Blocking; one connection per member.
 *
 * Redisson's RedLock is a MultiLock of RLocks that tolerates
 * n - (n/2 + 1) failed members: members are tried one after another in
 * constructor order (never in parallel), a failure is fatal only once more
 * than that many failed, and it stops asking as soon as a quorum is held.
 * It never computes a validity time. */
#ifndef LK_TEST_HARNESS_REDISSON_REDLOCK_EMU_H
#define LK_TEST_HARNESS_REDISSON_REDLOCK_EMU_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tryLock() with no wait over members i = 0..n-1 (lock names[i] on
 * ctxs[i], owner uuids[i]:tid, the lease lease_ms). failed_limit 0 is the
 * MultiLock, n - (n/2 + 1) the RedLock (one name on every master). Returns 1
 * held (held[i] says where), 0 not: then every member it took was unlocked
 * again. */
int rt_rmulti_try(redisContext **ctxs, int n, const char *const *names,
                  const char *const *uuids, long long tid, int64_t lease_ms, int failed_limit,
                  int *held);
/* unlock() on every member that held[i], ignoring failures (the RedLock
 * form). Clears held[]. */
void rt_rmulti_unlock(redisContext **ctxs, int n, const char *const *names,
                      const char *const *uuids, long long tid, int *held);
/* n - (n/2 + 1) */
int rt_redlock_failed_limit(int n);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_REDLOCK_EMU_H */
