/* Redisson's lock (test/harness/redisson_emu.h) against a latchkey waiter
 * on a cluster: what the pub/sub tests (cluster_pubsub.c, sharded, and
 * cluster_pubsub_mode.c, classic) share. */
#ifndef LK_TEST_CLUSTER_EMU_H
#define LK_TEST_CLUSTER_EMU_H

#include <stdio.h>

#include "cluster_fixture.h"
#include "redisson_emu.h"

/* The emulator (owner uuid:tid) takes name on master m for lease_ms: its
 * connection, to unlock with. */
static inline redisContext *cfx_emu_hold(cfx_t *f, int m, const char *name, const char *uuid,
                                         long long tid, int64_t lease_ms) {
  redisContext *emu = rt_rlock_connect(rt_cluster_port(f->cl, m));
  ASSERT_EQ(rt_rlock_try(emu, name, uuid, tid, lease_ms), RT_RLOCK_ACQUIRED);
  return emu;
}

/* The emulator's unlock (published its own way) lets the latchkey waiter,
 * its acquire in sw, in within wake_ms (scaled). what: the unlock, for the
 * note printed. */
static inline void cfx_emu_unlock_wakes(cfx_t *f, redisContext *emu, const char *name,
                                        const char *uuid, long long tid, sx_t *sw,
                                        int64_t wake_ms, const char *what) {
  uint64_t t0 = uv_hrtime();
  ASSERT_EQ(rt_rlock_unlock(emu, name, uuid, tid), 1);
  rt_run_until(&f->fx.loop, &sw->done, rt_scaled_ms(10000));
  ASSERT_OK(sw->status);
  double ms = cfx_ms_since(t0, sw->t_ns);
  printf("latchkey had the lock %.2f ms after %s\n", ms, what);
  ASSERT_LT(ms, rt_scaled_ms(wake_ms));
}

#endif /* LK_TEST_CLUSTER_EMU_H */
