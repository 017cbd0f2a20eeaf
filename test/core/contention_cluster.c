/* No subscribe churn on a cluster either (docs/objects.md, "Waiting"): the
 * sharded subscription of a busy name is made once on the master of its
 * slot for many waits, and ended (SUNSUBSCRIBE) after the linger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/cluster_fixture.h"
#include "server_faults.h"

TEST(sharded_busy_name_subscribed_once_then_unsubscribed) {
  cfx_t f;
  lk_client_opts_t o;
  char name[64], channel[128], *ok;
  lk_client_t *c2;
  lk_lock_t *holder, *l;
  sx_t s;
  rt_server_t *owner;
  int i;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 20000;
  o.pubsub_linger_ms = 300;
  o.heartbeat_ms = 50;
  cfx_start(&f, 0, &o);
  owner = cfx_srv(&f, f.masters[0]);
  cfx_name_on(&f, f.masters[0], "linger-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  c2 = cfx_client(&f, 1, NULL);
  ASSERT_OK(lk_lock_new(c2, name, &holder));
  ASSERT_EQ(sx_acquire_in(&f.fx.loop, holder, 0, 60000, &s), 0);
  l = fx_lock(&f.fx, name);
  ok = rt_cmd_str(owner, "CONFIG RESETSTAT");
  free(ok);
  for (i = 0; i < 10; i++)
    ASSERT_EQ(sx_acquire(&f.fx, l, 20, 10000), LK_ETIMEDOUT);
  ASSERT_EQ(rt_server_cmd_calls(owner, "ssubscribe"), 1);
  ASSERT_EQ(rt_server_shardnumsub(owner, channel), 1);
  FX_EVENTUALLY(&f.fx, rt_server_shardnumsub(owner, channel) == 0, 5000);
  ASSERT_EQ(rt_server_cmd_calls(owner, "sunsubscribe"), 1);
  fx_close_lock(&f.fx, l);
  fx_close_lock(&f.fx, holder);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}
