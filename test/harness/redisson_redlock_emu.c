/* Redisson MultiLock / RedLock emulation (see redisson_redlock_emu.h). */
#include "redisson_redlock_emu.h"

#include "redisson_emu.h"

int rt_redlock_failed_limit(int n) { return n - (n / 2 + 1); }

int rt_rmulti_try(redisContext **ctxs, int n, const char *const *names,
                  const char *const *uuids, long long tid, int64_t lease_ms, int failed_limit,
                  int *held) {
  int i, failed = 0, taken = 0;
  for (i = 0; i < n; i++)
    held[i] = 0;
  for (i = 0; i < n; i++) {
    if (rt_rlock_try(ctxs[i], names[i], uuids[i], tid, lease_ms) == RT_RLOCK_ACQUIRED) {
      held[i] = 1;
      taken++;
      continue;
    }
    failed++;
    if (failed > failed_limit) {
      rt_rmulti_unlock(ctxs, n, names, uuids, tid, held);
      return 0;
    }
    /* Enough held already to stop asking (the RedLock's early exit). */
    if (failed_limit > 0 && taken >= n - failed_limit)
      return 1;
  }
  return 1;
}

void rt_rmulti_unlock(redisContext **ctxs, int n, const char *const *names,
                      const char *const *uuids, long long tid, int *held) {
  int i;
  for (i = 0; i < n; i++)
    if (held[i]) {
      rt_rlock_unlock(ctxs[i], names[i], uuids[i], tid);
      held[i] = 0;
    }
}
