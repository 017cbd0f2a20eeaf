/* A hold's health through a failover (docs/objects.md, "Health"): a master
 * with its replica under Redis Sentinel, a lock held with a renewed lease,
 * and the replica promoted by SENTINEL FAILOVER. The old master drops its
 * clients (or answers READONLY): the hold is at risk, with time left, until
 * the client has followed the sentinels to the promoted replica and the
 * verification renewal there confirms it (SAFE: the hold was replicated),
 * or the lease runs out first (a loss no earlier than announced). */
#include "../sentinel/sentinel_fixture.h"
#include "health_fixture.h"

/* Long enough for a failover on a loaded machine, short enough that the
 * test stays a few seconds. */
#define LEASE_MS 6000

TEST(sentinel_failover_lock_at_risk_then_safe) {
  sn_t e;
  lk_client_opts_t o;
  lk_client_t *c;
  lk_lock_t *l;
  hist_t h;
  sx_t s;
  const int64_t lease = rt_scaled_ms(LEASE_MS);
  sn_start(&e, 3, NULL);
  sn_opts(&e, &o);
  o.default_lease_ms = lease;
  o.log = NULL;
  c = sn_client(&e, &o);
  ASSERT_OK(lk_lock_new(c, "health-fo", &l));
  hx_watch(lk_lock_handle(l), &h);
  ASSERT_OK(sx_acquire_in(&e.loop, l, 5000, LK_LEASE_DEFAULT, &s));
  /* The hold is on the replica before the master goes. */
  ASSERT_OK(rt_replica_wait_caught_up(e.m, e.r, 5000));
  ASSERT_EQ(rt_cmd_int(e.r, "EXISTS health-fo"), 1);
  int64_t mark = rt_stall_mark();
  uint64_t t0 = uv_hrtime();
  redisReply *r = rt_sentinel_cmd(e.s[0], "SENTINEL FAILOVER mymaster");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  hx_wait_events(&e.loop, &h, 1, 20000);
  ASSERT_EQ(h.kind[0], 'R');
  ASSERT_GT(h.ms_left[0], 0);
  fprintf(stderr, "note: at risk %.0f ms after the failover began, %lld ms left\n",
          hx_ms_since(t0, h.t_ns[0]), (long long)h.ms_left[0]);
  hx_wait_events(&e.loop, &h, 2, 2 * lease);
  if (EXPECT_HOLD(h.kind[1] == 'S', mark, fx_renewal_slack(lease))) {
    ASSERT_STREQ(h.kind, "RS");
    fprintf(stderr, "note: safe again %.0f ms after at risk\n",
            hx_ms_since(h.t_ns[0], h.t_ns[1]));
    ASSERT_GE(sn_stats(c).sentinel_switches, 1);
    ASSERT_EQ(lk_lock_is_held(l), 1);
    ASSERT_EQ(rt_cmd_int(e.r, "EXISTS health-fo"), 1); /* renewed on the new master */
    sx_t rel;
    memset(&rel, 0, sizeof rel);
    ASSERT_OK(lk_lock_release(l, sx_cb, &rel));
    rt_run_until(&e.loop, &rel.done, 5000);
    ASSERT_OK(rel.status);
  } else {
    hx_expect_risk_then_lost("failover (excused)", &h);
  }
  sn_close_lock(&e, l);
  sn_close_client(&e, c);
  sn_stop(&e);
}
