/* The non-reentrant acquire on a 3-master cluster: the refusal of a shared
 * owner comes back through the router from the name's master as
 * LK_EREENTRY, and a Redisson non-reentrant holder's unlock (sharded
 * publish, as Redisson on a Redis 7+ cluster) wakes a latchkey waiter. */
#include "../cluster/cluster_fixture.h"
#include "nr_fixture.h"

TEST(cluster_refusals_and_redisson_handover) {
  cfx_t f;
  char lname[64], fname[64];
  sx_t s;
  fsx_t fs;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = FX_NO_REPOLL_MS;
  cfx_start(&f, 0, &o);
  /* Names on masters the seed does not own. */
  cfx_name_on(&f, f.masters[2], "nr-cl-", lname, sizeof lname);
  cfx_name_on(&f, f.masters[1], "nrf-cl-", fname, sizeof fname);
  rt_server_t *lsrv = cfx_srv(&f, f.masters[2]);

  /* The lock: own re-entry at once, a shared owner's by the server. */
  lk_lock_t *a = fx_lock(&f.fx, lname), *b = fx_lock(&f.fx, lname);
  ASSERT_OK(nr_lock(&f.fx, a, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(nr_lock_start(a, 0, 30000, 0, &s), LK_EREENTRY);
  ASSERT_OK(lk_lock_set_owner(b, NULL, nr_tid_of(lk_lock_owner(a))));
  ASSERT_EQ(nr_lock(&f.fx, b, rt_scaled_ms(5000), 30000), LK_EREENTRY);
  ASSERT_EQ(nr_hget(lsrv, lname, lk_lock_owner(a)), 1);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, a, NULL));

  /* A Redisson non-reentrant holder, on the name's master, in sharded mode;
   * its unlock wakes latchkey's waiter. */
  rt_emu_set_sharded(1);
  redisContext *emu = rt_rlock_connect(rt_server_port(lsrv));
  ASSERT_EQ(rt_nrlock_try(emu, lname, NR_EMU_UUID, NR_EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_OK(nr_lock_start(a, rt_scaled_ms(10000), LK_LEASE_DEFAULT, 0, &s));
  char channel[128];
  cfx_lock_channel(lname, channel, sizeof channel);
  cfx_wait_subscribers(&f, channel, 1);
  fx_spin(&f.fx, 50);
  ASSERT_EQ(s.done, 0);
  uint64_t t_unlock = uv_hrtime();
  ASSERT_EQ(rt_rlock_unlock(emu, lname, NR_EMU_UUID, NR_EMU_TID), 1);
  rt_run_until(&f.fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  ASSERT_LT(ms_between(t_unlock, s.t_ns), rt_scaled_ms(1000));
  ASSERT_EQ(rt_nrlock_try(emu, lname, NR_EMU_UUID, NR_EMU_TID, 30000) >= 0, 1);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, a, NULL));
  redisFree(emu);
  rt_emu_set_sharded(0);

  /* The fair lock: a shared owner refused by the server, never queued. */
  rt_server_t *fsrv = cfx_srv(&f, f.masters[1]);
  lk_fair_t *fa = fx_fair(&f.fx, fname), *fb = fx_fair(&f.fx, fname);
  ASSERT_OK(nr_fair(&f.fx, fa, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(nr_fair_start(fa, 0, 30000, &fs), LK_EREENTRY);
  ASSERT_OK(lk_fair_set_owner(fb, NULL, nr_tid_of(lk_fair_owner(fa))));
  ASSERT_EQ(nr_fair(&f.fx, fb, rt_scaled_ms(5000), 30000), LK_EREENTRY);
  ASSERT_EQ(nr_hget(fsrv, fname, lk_fair_owner(fa)), 1);
  ASSERT_EQ(fair_llen(fsrv, fname), 0);
  ASSERT_OK(fsx_run(&f.fx, lk_fair_release, fa, NULL));

  fx_close_lock(&f.fx, a);
  fx_close_lock(&f.fx, b);
  fx_close_fair(&f.fx, fa);
  fx_close_fair(&f.fx, fb);
  cfx_finish(&f);
}
