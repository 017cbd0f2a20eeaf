/* A master that is one no more while the client is connected to it, before
 * any sentinel says so (docs/sentinel.md): a READONLY reply, or the
 * periodic ROLE answering slave. The sentinels monitor the master through a
 * fault proxy, so the client reaches it through the proxy as well and the
 * proxy can make it answer like a demoted master. */
#include "sentinel_fixture.h"

static const char readonly_reply[] = "-READONLY You can't write against a read only replica.\r\n";
static const char slave_role[] =
    "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:100\r\n";

/* The acquire's reply is READONLY (a demoted master refuses the script
 * before it writes): the client asks the sentinels again, reconnects, and
 * sends the same command there, which settles the one the proxy hid (it
 * did run here: the count stays 1). */
TEST(readonly_makes_the_client_ask_again_and_resend) {
  sn_t e;
  sx_t s;
  sn_start_proxied(&e, 3);
  lk_client_t *c = sn_client(&e, &e.o);
  SN_EVENTUALLY(&e, lk_client_is_connected(c), 5000);
  lk_lock_t *l = sn_lock(c, "sn-ro");
  lk_client_stats_t before = sn_stats(c);
  rt_proxy_on_reply(e.p, "EVALSHA", 1, RT_PROXY_REPLACE, readonly_reply,
                    sizeof(readonly_reply) - 1);
  ASSERT_OK(sx_acquire_in(&e.loop, l, 5000, 10000, &s));
  ASSERT_EQ(rt_proxy_rule_state(e.p), RT_PROXY_RULE_APPLIED);
  lk_client_stats_t after = sn_stats(c);
  ASSERT_GE(after.reconnects, before.reconnects + 1);
  ASSERT_GE(after.sentinel_queries, before.sentinel_queries + 1);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  char *count = rt_cmd_str(e.m, "HGET sn-ro %s", lk_lock_owner(l));
  ASSERT_STREQ(count, "1");
  free(count);
  sn_finish_given_back(&e, c, l);
}

/* ROLE, asked every heartbeat_ms on the command connection, answers slave:
 * the client drops node 0, asks the sentinels again, and verifies its held
 * lease on the master it reconnects to. */
TEST(role_saying_slave_makes_the_client_ask_again) {
  sn_t e;
  sx_t s;
  sn_start_proxied(&e, 3);
  e.o.heartbeat_ms = 100;
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_lock(c, "sn-role");
  ASSERT_OK(sx_acquire_in(&e.loop, l, 5000, -1, &s)); /* renewed by the watchdog */
  lk_client_stats_t before = sn_stats(c);
  rt_proxy_on_reply(e.p, "ROLE", 1, RT_PROXY_REPLACE, slave_role, sizeof(slave_role) - 1);
  SN_EVENTUALLY(&e, rt_proxy_rule_state(e.p) == RT_PROXY_RULE_APPLIED, 5000);
  SN_EVENTUALLY(&e, sn_stats(c).reconnects > before.reconnects && lk_client_is_connected(c),
                5000);
  /* Verified at once on the master it came back to, not a lease/3 later. */
  SN_EVENTUALLY(&e, sn_stats(c).renewals > before.renewals, 2000);
  lk_client_stats_t after = sn_stats(c);
  ASSERT_GE(after.sentinel_queries, before.sentinel_queries + 1);
  ASSERT_EQ(after.sentinel_switches, 0); /* the same master, as the sentinels say */
  ASSERT(lk_lock_is_held(l));
  sn_finish(&e, c, l);
}
