/* Sharded pub/sub on a 3-master cluster (issue 14): a waiter listens with
 * SSUBSCRIBE on the master of its channel's slot, releases SPUBLISH there,
 * and nothing reaches the other shards; the subscription follows its slot
 * through a migration and a failover; a paused node's pub/sub connection is
 * caught by the PING heartbeat; a cluster without sharded pub/sub falls back
 * to classic SUBSCRIBE; Redisson (emulated, sharded mode) interoperates.
 *
 * Every waiter has max_repoll_ms 30 s: within the bounds below only a
 * message (or a resubscription's re-poll) can let it in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster_emu.h"
#include "cluster_fixture.h"
#include "emu_waiter.h"
#include "redisson_emu.h"

#define REPOLL_MS 30000
/* A message-driven handoff takes milliseconds; polling would take 30 s. */
#define WAKE_MS 2000

static void waiter_opts(lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->max_repoll_ms = REPOLL_MS;
}

static long long shardnumsub(cfx_t *f, int i, const char *channel) {
  return rt_server_shardnumsub(cfx_srv(f, i), channel);
}

/* The channel has exactly one subscriber, sharded, on node owner, and none
 * (classic or sharded) on any other up node. */
static int only_sharded_on(cfx_t *f, int owner, const char *channel) {
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    if (rt_server_numsub(cfx_srv(f, i), channel) != 0)
      return 0;
    if (shardnumsub(f, i, channel) != (i == owner ? 1 : 0))
      return 0;
  }
  return 1;
}

/* latchkey pub/sub connections node i has (CLIENT LIST, by name). */
static int pubsub_clients(cfx_t *f, int i) {
  redisReply *r = rt_cmd(cfx_srv(f, i), "CLIENT LIST");
  int n = 0;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STRING);
  for (const char *p = r->str; (p = strstr(p, "name=latchkey-pubsub ")) != NULL; p++)
    n++;
  freeReplyObject(r);
  return n;
}

/* Pub/sub messages node i received over the cluster bus, classic
 * (PUBLISH, broadcast to every node) and sharded (SPUBLISH, to the slot's
 * replicas): CLUSTER INFO lists a counter once it is not zero. */
static long long bus_field(const char *text, const char *field) {
  const char *p = strstr(text, field);
  return p != NULL ? strtoll(p + strlen(field), NULL, 10) : 0;
}

static long long bus_messages(cfx_t *f, int i) {
  redisReply *r = rt_cmd(cfx_srv(f, i), "CLUSTER INFO");
  long long n;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STRING);
  n = bus_field(r->str, "cluster_stats_messages_publish_received:") +
      bus_field(r->str, "cluster_stats_messages_publishshard_received:");
  freeReplyObject(r);
  return n;
}

static lk_lock_t *lock_on(lk_client_t *c, const char *name) {
  lk_lock_t *l = NULL;
  ASSERT_OK(lk_lock_new(c, name, &l));
  return l;
}

static void channel_of(const char *name, char *out, size_t cap) {
  snprintf(out, cap, "redisson_lock__channel:{%s}", name);
}

/* Releases h and returns how long the waiter's acquire (in *sw) took from
 * then, in ms; the acquire must succeed. */
static double release_and_time_wake(cfx_t *f, lk_lock_t *h, sx_t *sw) {
  uint64_t t0 = cfx_release_last(f, h);
  rt_run_until(&f->fx.loop, &sw->done, rt_scaled_ms(10000));
  ASSERT_OK(sw->status);
  return cfx_ms_since(t0, sw->t_ns);
}

/* ---- the shard of a lock, and only it ---- */

/* On each master: the waiter's subscription is sharded, on that master
 * only; the holder (another client) releases and the message lets the
 * waiter in at once. */
TEST(waiter_on_each_master_is_woken_by_a_message_on_its_shard) {
  cfx_t f;
  lk_client_opts_t o;
  char names[3][64], channel[256];
  waiter_opts(&o);
  o.reply_timeout_ms = rt_scaled_ms(1000);
  cfx_start(&f, 0, &o);
  lk_client_t *hc = cfx_client(&f, 1, NULL);
  cfx_names(&f, "ps-wake-", names);
  for (int m = 0; m < 3; m++) {
    sx_t sh, sw;
    lk_lock_t *h = lock_on(hc, names[m]), *w = fx_lock(&f.fx, names[m]);
    channel_of(names[m], channel, sizeof channel);
    ASSERT_OK(sx_acquire_in(&f.fx.loop, h, 0, 30000, &sh));
    cfx_acquire_start(w, 20000, 30000, 0, &sw);
    FX_EVENTUALLY(&f.fx, only_sharded_on(&f, f.masters[m], channel), 5000);
    ASSERT_EQ(sw.done, 0);
    double ms = release_and_time_wake(&f, h, &sw);
    printf("master %d: the waiter had the lock %.2f ms after the release\n", m, ms);
    ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, w, NULL));
    fx_close_lock(&f.fx, h);
    fx_close_lock(&f.fx, w);
    /* The last listener gone, the shard forgets the channel. */
    FX_EVENTUALLY(&f.fx, shardnumsub(&f, f.masters[m], channel) == 0, 5000);
  }
  /* Each SUNSUBSCRIBE got its reply (which looks like the server's own
   * sunsubscribe push): nothing is left waiting for one, no reply timeout
   * drops a connection, nothing is taken for a stray reply. */
  fx_spin(&f.fx, 2 * o.reply_timeout_ms);
  lk_client_stats_t st = cfx_stats(f.fx.c);
  ASSERT_GE(st.pubsub_messages, 3);
  ASSERT_EQ(st.reply_timeouts, 0);
  ASSERT_EQ(st.pubsub_reconnects, 0);
  ASSERT_EQ(st.unattributable_replies, 0);
  fx_close_direct_client(&f.fx, hc);
  cfx_finish(&f);
}

/* Handoffs back and forth between two clients on one master: the other
 * shards receive no pub/sub message at all (cluster bus counters of every
 * other node, masters and replicas, unchanged; a classic subscriber on each
 * of them hears nothing), while the owner's replica receives one sharded
 * message per release. A control PUBLISH first shows the counters and the
 * subscribers do see broadcast traffic. */
TEST(handoffs_deliver_no_pubsub_traffic_to_other_shards) {
  enum { HANDOFFS = 20 };
  cfx_t f;
  lk_client_opts_t o;
  char name[64], channel[256];
  long long before[RT_CLUSTER_MAX_NODES] = {0}, after[RT_CLUSTER_MAX_NODES] = {0};
  redisContext *subs[RT_CLUSTER_MAX_NODES] = {0};
  waiter_opts(&o);
  cfx_start(&f, 0, &o);
  lk_client_t *c2 = cfx_client(&f, 1, &o);
  int owner = f.masters[0], owner_replica;
  int n = rt_cluster_size(f.cl);
  cfx_name_on(&f, owner, "ps-quiet-", name, sizeof name);
  channel_of(name, channel, sizeof channel);
  owner_replica = rt_cluster_replica_of(f.cl, owner);
  ASSERT_GE(owner_replica, 0);

  /* A classic subscriber on every node but the owner. */
  for (int i = 0; i < n; i++) {
    if (i == owner)
      continue;
    subs[i] = rt_rlock_connect(rt_cluster_port(f.cl, i));
    rt_sub_subscribe(subs[i], channel);
  }
  /* Control: a classic PUBLISH reaches every node and every subscriber. */
  for (int i = 0; i < n; i++)
    before[i] = bus_messages(&f, i);
  ASSERT_EQ(rt_cmd_int(cfx_srv(&f, owner), "PUBLISH %s control", channel), 0);
  for (int i = 0; i < n; i++) {
    if (i == owner)
      continue;
    redisReply *m = rt_sub_next_message(subs[i], rt_scaled_ms(5000));
    ASSERT_NOT_NULL(m);
    freeReplyObject(m);
    FX_EVENTUALLY(&f.fx, bus_messages(&f, i) == before[i] + 1, 5000);
  }

  lk_lock_t *l[2] = {fx_lock(&f.fx, name), lock_on(c2, name)};
  sx_t s[2];
  ASSERT_OK(sx_acquire_in(&f.fx.loop, l[0], 0, 30000, &s[0]));
  for (int i = 0; i < n; i++)
    before[i] = bus_messages(&f, i);
  double worst_ms = 0;
  for (int k = 0; k < HANDOFFS; k++) {
    int holder = k % 2, waiter = 1 - holder;
    cfx_acquire_start(l[waiter], 20000, 30000, 0, &s[waiter]);
    FX_EVENTUALLY(&f.fx, shardnumsub(&f, owner, channel) >= 1, 5000);
    double ms = release_and_time_wake(&f, l[holder], &s[waiter]);
    worst_ms = ms > worst_ms ? ms : worst_ms;
  }
  ASSERT_LT(worst_ms, rt_scaled_ms(WAKE_MS));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[HANDOFFS % 2], NULL));
  /* Bus messages are asynchronous: give stragglers time to land. */
  fx_spin(&f.fx, rt_scaled_ms(300));
  long long others = 0, shard = 0;
  for (int i = 0; i < n; i++) {
    after[i] = bus_messages(&f, i);
    int same_shard = i == owner || rt_cluster_master_of(f.cl, i) == owner;
    printf("node %d (%s%s): %lld pub/sub bus messages during %d handoffs\n", i,
           rt_cluster_is_master(f.cl, i) == 1 ? "master" : "replica",
           same_shard ? ", the lock's shard" : "", after[i] - before[i], HANDOFFS);
    if (same_shard)
      shard += after[i] - before[i];
    else
      others += after[i] - before[i];
  }
  printf("messages delivered to nodes outside the lock's shard per handoff: %.2f; "
         "to the owner's replica: %.2f; slowest wake %.2f ms\n",
         (double)others / HANDOFFS, (double)shard / HANDOFFS, worst_ms);
  ASSERT_EQ(others, 0);
  /* The owner's replica does count sharded messages: the measure sees them. */
  ASSERT_GE(after[owner_replica] - before[owner_replica], HANDOFFS);
  for (int i = 0; i < n; i++) {
    if (subs[i] == NULL)
      continue;
    redisReply *m = rt_sub_next_message(subs[i], 0);
    if (m != NULL)
      FAIL("node %d's classic subscriber received a message", i);
    redisFree(subs[i]);
  }
  lk_client_stats_t st = cfx_stats(f.fx.c);
  ASSERT_EQ(st.unattributable_replies, 0);
  fx_close_lock(&f.fx, l[0]);
  fx_close_lock(&f.fx, l[1]);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- the subscription follows its slot ---- */

/* The lock's slot migrates to another master while the waiter listens:
 * Valkey ends the subscription with a sunsubscribe push, Redis 7.0 keeps it
 * where nothing is published any more and the topology read moves it.
 * Either way it lands on the new owner and the release's message there
 * lets the waiter in. */
TEST(subscription_follows_a_migrated_slot_and_the_waiter_gets_in) {
  cfx_t f;
  lk_client_opts_t o;
  char channel[256];
  cfx_handoff_t x;
  waiter_opts(&o);
  o.cluster_refresh_ms = 500; /* the waiter sends nothing: reads notice it */
  cfx_start(&f, 0, &o);
  int from = f.masters[0], to = f.masters[1];
  cfx_handoff_hold(&f, &x, cfx_client(&f, 1, NULL), from, "ps-mig-", 60000);
  int slot = cfx_slot(&f, x.name);
  channel_of(x.name, channel, sizeof channel);
  cfx_handoff_wait(&x, 30000, 30000);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, from, channel), 5000);

  ASSERT_OK(rt_cluster_migrate_slot(f.cl, slot, to));
  uint64_t t0 = uv_hrtime();
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, to, channel), 5000);
  printf("resubscribed on the new owner %.1f ms after the migration finished\n",
         cfx_ms_since(t0, uv_hrtime()));
  ASSERT_EQ(x.sw.done, 0);
  /* The confirmation's re-poll has found the lock still held. */
  fx_spin(&f.fx, rt_scaled_ms(200));
  ASSERT_EQ(x.sw.done, 0);
  double ms = release_and_time_wake(&f, x.h, &x.sw);
  printf("the waiter had the lock %.2f ms after the release on the new owner\n", ms);
  ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
  ASSERT_EQ(cfx_exists(&f, to, x.name), 1);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.w, NULL));
  ASSERT_EQ(cfx_stats(f.fx.c).unattributable_replies, 0);
  cfx_handoff_finish(&f, &x);
}

/* A coordinated failover of the lock's master: the old master, now a
 * replica, ends the sharded subscription with a sunsubscribe push (told
 * apart from a reply: the pub/sub connection is not dropped), the waiter
 * resubscribes on the new master and the release lets it in. */
TEST(subscription_follows_a_failover_and_the_waiter_gets_in) {
  cfx_t f;
  lk_client_opts_t o;
  char channel[256];
  cfx_handoff_t x;
  waiter_opts(&o);
  /* No periodic topology read within the test: only the push can tell. */
  o.cluster_refresh_ms = 600000;
  cfx_start(&f, 0, &o);
  int old = f.masters[2];
  int replica = rt_cluster_replica_of(f.cl, old);
  ASSERT_GE(replica, 0);
  cfx_handoff_hold(&f, &x, cfx_client(&f, 1, NULL), old, "ps-fo-", 60000);
  channel_of(x.name, channel, sizeof channel);
  cfx_handoff_wait(&x, 30000, 30000);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, old, channel), 5000);
  /* Start-up topology reads still due are done by now (they are at most
   * 100 ms apart): after the failover only the push can tell. */
  fx_spin(&f.fx, 500);
  lk_client_stats_t st0 = cfx_stats(f.fx.c);

  ASSERT_OK(rt_cluster_failover(f.cl, replica, NULL));
  uint64_t t0 = uv_hrtime();
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, replica, channel), 5000);
  printf("resubscribed on the new master %.1f ms after the failover settled\n",
         cfx_ms_since(t0, uv_hrtime()));
  fx_spin(&f.fx, rt_scaled_ms(200));
  ASSERT_EQ(x.sw.done, 0);
  lk_client_stats_t st1 = cfx_stats(f.fx.c);
  ASSERT_EQ(st1.pubsub_reconnects, st0.pubsub_reconnects);
  ASSERT_EQ(st1.unattributable_replies, 0);
  double ms = release_and_time_wake(&f, x.h, &x.sw);
  printf("the waiter had the lock %.2f ms after the release on the new master\n", ms);
  ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.w, NULL));
  cfx_handoff_finish(&f, &x);
}

/* kill -9 of the lock's master: nothing ends the subscription but the
 * lost connection; the failed redials ask for the topology, which shows
 * the replica promoted, and the channel moves there. The dead node's
 * pub/sub connection, with no channel left, is not dialled again. The
 * hold was replicated (WAIT) before the kill, so the confirmation's
 * re-poll finds it held; a DEL and an SPUBLISH on the new master (standing
 * in for the holder's release) let the waiter in. */
TEST(subscription_moves_off_a_killed_master_whose_node_is_not_dialled_again) {
  cfx_t f;
  lk_client_opts_t o;
  char channel[256];
  cfx_handoff_t x;
  waiter_opts(&o);
  o.reconnect_max_ms = 200;
  cfx_start(&f, 0, &o);
  int dead = f.masters[1];
  int heir = rt_cluster_replica_of(f.cl, dead);
  ASSERT_GE(heir, 0);
  cfx_handoff_hold(&f, &x, cfx_client(&f, 1, NULL), dead, "ps-kill-", 60000);
  channel_of(x.name, channel, sizeof channel);
  ASSERT_EQ(rt_cmd_int(cfx_srv(&f, dead), "WAIT 1 %d", (int)rt_scaled_ms(2000)), 1);
  cfx_handoff_wait(&x, 60000, 30000);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, dead, channel), 5000);

  rt_cluster_kill(f.cl, dead);
  uint64_t t0 = uv_hrtime();
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, heir, channel), 20000);
  printf("resubscribed on the promoted replica %.0f ms after the kill\n",
         cfx_ms_since(t0, uv_hrtime()));
  fx_spin(&f.fx, rt_scaled_ms(500));
  ASSERT_EQ(x.sw.done, 0);
  uint64_t drops = cfx_stats(f.fx.c).pubsub_reconnects;
  fx_spin(&f.fx, rt_scaled_ms(1500)); /* 7 redials at reconnect_max_ms */
  ASSERT_EQ(cfx_stats(f.fx.c).pubsub_reconnects, drops);

  ASSERT_EQ(rt_cmd_int(cfx_srv(&f, heir), "DEL %s", x.name), 1);
  uint64_t t1 = uv_hrtime();
  ASSERT_EQ(rt_cmd_int(cfx_srv(&f, heir), "SPUBLISH %s 0", channel), 1);
  rt_run_until(&f.fx.loop, &x.sw.done, rt_scaled_ms(10000));
  ASSERT_OK(x.sw.status);
  ASSERT_LT(cfx_ms_since(t1, x.sw.t_ns), rt_scaled_ms(WAKE_MS));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.w, NULL));
  cfx_handoff_finish(&f, &x);
}

/* ---- heartbeat ---- */

/* The lock's master is paused (SIGSTOP; the node timeout is long, so no
 * failover): the PING heartbeat on the waiter's pub/sub connection goes
 * unanswered, the reply timeout drops the connection. After SIGCONT the
 * channel is subscribed again and the release's message lets the waiter
 * in. */
TEST(heartbeat_drops_a_paused_nodes_pubsub_connection_and_resubscribes) {
  cfx_t f;
  rt_cluster_opts_t co;
  lk_client_opts_t o;
  char channel[256];
  cfx_handoff_t x;
  rt_cluster_opts_init(&co);
  co.node_timeout_ms = 60000;
  waiter_opts(&o);
  o.heartbeat_ms = 100;
  o.reply_timeout_ms = rt_scaled_ms(500);
  o.connect_timeout_ms = rt_scaled_ms(500);
  o.reconnect_max_ms = 200;
  cfx_start_with(&f, &co, 0, &o);
  int m = f.masters[1];
  cfx_handoff_hold(&f, &x, cfx_client(&f, 1, NULL), m, "ps-hb-", 60000);
  channel_of(x.name, channel, sizeof channel);
  cfx_handoff_wait(&x, 60000, 30000);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, m, channel), 5000);
  /* Healthy: heartbeats are answered, nothing is dropped. */
  fx_spin(&f.fx, rt_scaled_ms(500));
  lk_client_stats_t st0 = cfx_stats(f.fx.c);
  ASSERT_EQ(st0.pubsub_reconnects, 0);

  rt_cluster_pause(f.cl, m);
  uint64_t t0 = uv_hrtime();
  FX_EVENTUALLY(&f.fx, cfx_stats(f.fx.c).pubsub_reconnects > st0.pubsub_reconnects, 5000);
  lk_client_stats_t st1 = cfx_stats(f.fx.c);
  printf("pub/sub connection dropped %.1f ms after the pause (heartbeat %d ms, reply "
         "timeout %lld ms)\n",
         cfx_ms_since(t0, uv_hrtime()), 100, (long long)o.reply_timeout_ms);
  ASSERT_GT(st1.reply_timeouts, st0.reply_timeouts);
  ASSERT_EQ(x.sw.done, 0);
  rt_cluster_resume(f.cl, m);

  /* Back: one sharded subscriber on m again (the dropped connections are
   * gone once the server ran again), from the reconnected connection. */
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, m, channel) && pubsub_clients(&f, m) == 1, 10000);
  fx_spin(&f.fx, rt_scaled_ms(300));
  ASSERT_EQ(x.sw.done, 0);
  double ms = release_and_time_wake(&f, x.h, &x.sw);
  printf("the waiter had the lock %.2f ms after the release\n", ms);
  ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.w, NULL));
  cfx_handoff_finish(&f, &x);
}

/* ---- servers without sharded pub/sub ---- */

static int warnings_seen;

static void count_fallback_warning(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level == LK_LOG_WARN && strstr(msg, "sharded pub/sub") != NULL)
    warnings_seen++;
}

/* SSUBSCRIBE and SPUBLISH renamed away, as on a server before 7.0: the
 * first SSUBSCRIBE is refused as unknown, the client says so once, waits
 * with classic SUBSCRIBE on its seed node and publishes with PUBLISH; the
 * waiter is woken by the message. */
TEST(without_sharded_pubsub_waiters_fall_back_to_classic_subscribe) {
  cfx_t f;
  rt_cluster_opts_t co;
  lk_client_opts_t o;
  char names[3][64], channel[256];
  cfx_opts_no_sharded_pubsub(&co);
  waiter_opts(&o);
  o.log = count_fallback_warning;
  cfx_start_with(&f, &co, 0, &o);
  cfx_names(&f, "ps-classic-", names);
  for (int m = 0; m < 3; m++) {
    sx_t sh, sw;
    lk_lock_t *h = fx_lock(&f.fx, names[m]), *w = fx_lock(&f.fx, names[m]);
    channel_of(names[m], channel, sizeof channel);
    ASSERT_OK(sx_acquire_in(&f.fx.loop, h, 0, 30000, &sh));
    cfx_acquire_start(w, 20000, 30000, 0, &sw);
    /* Classic, on the seed (node 0), whatever master owns the name. */
    FX_EVENTUALLY(&f.fx, rt_server_numsub(cfx_srv(&f, 0), channel) == 1, 5000);
    ASSERT_EQ(sw.done, 0);
    uint64_t t0 = uv_hrtime();
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, h, NULL));
    rt_run_until(&f.fx.loop, &sw.done, rt_scaled_ms(10000));
    ASSERT_OK(sw.status);
    ASSERT_LT(cfx_ms_since(t0, sw.t_ns), rt_scaled_ms(WAKE_MS));
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, w, NULL));
    fx_close_lock(&f.fx, h);
    fx_close_lock(&f.fx, w);
  }
  ASSERT_EQ(warnings_seen, 1);
  cfx_finish(&f);
}

/* ---- Redisson (emulated) in sharded mode, as shardedSubscriptionMode AUTO ---- */

#define EMU_UUID "c1a55e5e-0000-4000-8000-000000000014"
#define EMU_TID 7

/* The emulator holds on the lock's master and unlocks with SPUBLISH: the
 * latchkey waiter, subscribed on that shard, gets in at once. */
TEST(redisson_sharded_release_wakes_a_latchkey_waiter) {
  cfx_t f;
  lk_client_opts_t o;
  char name[64], channel[256];
  sx_t sw;
  rt_emu_set_sharded(1);
  waiter_opts(&o);
  cfx_start(&f, 0, &o);
  int m = f.masters[1];
  cfx_name_on(&f, m, "ps-emu-", name, sizeof name);
  channel_of(name, channel, sizeof channel);
  redisContext *emu = cfx_emu_hold(&f, m, name, EMU_UUID, EMU_TID, 30000);
  lk_lock_t *w = fx_lock(&f.fx, name);
  cfx_acquire_start(w, 20000, 30000, 0, &sw);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, m, channel), 5000);
  ASSERT_EQ(sw.done, 0);
  cfx_emu_unlock_wakes(&f, emu, name, EMU_UUID, EMU_TID, &sw, WAKE_MS,
                       "the emulator's sharded unlock");
  /* And the emulator is shut out in turn. */
  ASSERT_GT(rt_rlock_try(emu, name, EMU_UUID, EMU_TID, 30000), 0);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, w, NULL));
  redisFree(emu);
  fx_close_lock(&f.fx, w);
  rt_emu_set_sharded(0);
  cfx_finish(&f);
}

/* Redisson's lock(), 30 s lease (rt_emu_wait_fn). */
static int emu_lock_wait(redisContext *c, redisContext *sub, const char *name, int64_t timeout_ms) {
  return rt_rlock_lock_blocking(c, sub, name, EMU_UUID, EMU_TID, 30000, timeout_ms);
}

/* latchkey holds; the emulator blocks in lock() with SSUBSCRIBE on the
 * lock's master (another thread); latchkey's release (SPUBLISH) wakes it
 * long before latchkey's 30 s lease would have ended. */
TEST(latchkey_release_wakes_a_sharded_redisson_waiter) {
  cfx_t f;
  char name[64], channel[256];
  rt_emu_waiter_t ew;
  pthread_t th;
  rt_emu_set_sharded(1);
  cfx_start(&f, 0, NULL);
  int m = f.masters[2];
  cfx_name_on(&f, m, "ps-emu-w-", name, sizeof name);
  channel_of(name, channel, sizeof channel);
  lk_lock_t *h = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, h, 0, 30000));
  rt_emu_waiter_start(&ew, &th, emu_lock_wait, rt_cluster_port(f.cl, m), name);
  FX_EVENTUALLY(&f.fx, only_sharded_on(&f, m, channel), 5000);
  fx_spin(&f.fx, 100);
  if (atomic_load(&ew.done))
    FAIL("the emulator's lock() returned (rc %d) while latchkey held the lock", ew.result);
  uint64_t t0 = cfx_release_last(&f, h);
  if (!rt_emu_waiter_returned_within(&ew, 5000))
    FAIL("the emulator's lock() did not return after latchkey released");
  ASSERT_OK(pthread_join(th, NULL));
  ASSERT_EQ(ew.result, 0);
  double ms = cfx_ms_since(t0, ew.t_ns);
  printf("the emulator had the lock %.2f ms after latchkey's release\n", ms);
  ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
  redisContext *emu = rt_rlock_connect(ew.port);
  ASSERT_EQ(rt_rlock_unlock(emu, name, EMU_UUID, EMU_TID), 1);
  redisFree(emu);
  fx_close_lock(&f.fx, h);
  rt_emu_set_sharded(0);
  cfx_finish(&f);
}
