/* Replica sync (docs/replica-sync.md) on a 3 + 3 cluster (issue 25,
 * "untested combinations"). The WAIT goes on the connection the grant came
 * back on, so on a cluster it goes to the master of the name's slot and
 * counts that master's replica; each master's connection has its own WAIT,
 * so a replica that lags holds back only the grants of its own master. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"

/* This owner's count on lock l as node i has it (0: none). A replica
 * answers HGET for a slot of its master only in READONLY mode. */
static long long holds_on(cfx_t *f, int i, lk_lock_t *l) {
  rt_server_t *s = cfx_srv(f, i);
  if (rt_cluster_is_master(f->cl, i) != 1) {
    char *ok = rt_cmd_str(s, "READONLY");
    ASSERT_STREQ(ok, "OK");
    free(ok);
  }
  char *v = rt_cmd_str(s, "HGET %s %s", lk_lock_name(l), lk_lock_owner(l));
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* Warnings that replica sync was refused (a misconfiguration's message). */
static int refused_logs;

static void count_refused(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level >= LK_LOG_WARN && strstr(msg, "refused replica sync") != NULL)
    refused_logs++;
}

static void start_synced(cfx_t *f, int64_t sync_timeout_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.log = count_refused;
  o.sync_replicas = 1;
  o.sync_policy = LK_SYNC_GIVE_BACK;
  o.sync_timeout_ms = sync_timeout_ms;
  cfx_start(f, 0, &o);
  /* After its first full sync a master waits for its replica's first
   * acknowledgement (sent once a second) before a WAIT can count it: one
   * write acknowledged on each master ends that phase before the test. */
  for (int i = 0; i < f->n_masters; i++) {
    char key[64];
    ASSERT_GE(rt_cluster_key_on(f->cl, f->masters[i], "rs-ready-", key, sizeof key), 0);
    char *ok = rt_cmd_str(cfx_srv(f, f->masters[i]), "SET %s 1", key);
    ASSERT_STREQ(ok, "OK");
    free(ok);
    ASSERT_EQ(rt_cmd_int(cfx_srv(f, f->masters[i]), "WAIT 1 %lld", (long long)rt_scaled_ms(5000)),
              1);
  }
}

/* Acquires on names of all three masters at once, from the fixture client
 * and from a second one seeded at a replica: every grant is acknowledged
 * by its own master's replica (which has the hold as the callback runs),
 * one WAIT per grant's master connection. */
TEST(replica_sync_on_each_master_gets_its_own_replicas_ack) {
  cfx_t f;
  char names[3][64];
  sx_t s[6];
  start_synced(&f, 1000);
  int seed2 = rt_cluster_replica_of(f.cl, f.masters[1]);
  ASSERT_GE(seed2, 0);
  lk_client_opts_t o2;
  lk_client_opts_init(&o2);
  o2.sync_replicas = 1;
  lk_client_t *c2 = cfx_client(&f, seed2, &o2);
  cfx_names(&f, "rs-cl-", names);
  lk_lock_t *l[6];
  for (int i = 0; i < 6; i++) {
    char name[80];
    snprintf(name, sizeof name, "{%s}%d", names[i % 3], i / 3);
    if (i < 3)
      l[i] = fx_lock(&f.fx, name);
    else
      ASSERT_OK(lk_lock_new(c2, name, &l[i]));
  }
  for (int i = 0; i < 6; i++)
    cfx_acquire_start(l[i], 0, LK_LEASE_DEFAULT, 0, &s[i]);
  FX_EVENTUALLY(&f.fx, s[0].done && s[1].done && s[2].done && s[3].done && s[4].done && s[5].done,
                10000);
  for (int i = 0; i < 6; i++) {
    int m = f.masters[i % 3], r = rt_cluster_replica_of(f.cl, m);
    ASSERT_GE(r, 0);
    ASSERT_OK(s[i].status);
    ASSERT_EQ(lk_lock_sync_acked(l[i]), 1);
    ASSERT_EQ(holds_on(&f, m, l[i]), 1);
    ASSERT_EQ(holds_on(&f, r, l[i]), 1); /* acknowledged means applied */
  }
  ASSERT_EQ(cfx_stats(f.fx.c).sync_shortfalls, 0);
  ASSERT_EQ(cfx_stats(c2).sync_shortfalls, 0);
  ASSERT_GE(cfx_stats(f.fx.c).sync_waits, 3);
  ASSERT_GE(cfx_stats(c2).sync_waits, 3);
  for (int i = 0; i < 6; i++)
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[i], NULL));
  for (int i = 0; i < 6; i++)
    fx_close_lock(&f.fx, l[i]);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* One master's replica paused (SIGSTOP): an acquire on that master's name
 * ends with LK_ENOREPLICAS after the WAIT's timeout, its hold given back;
 * acquires on the other masters' names started at the same moment are
 * synced and done before it (their WAITs go on other connections). With the
 * replica resumed, the same name is granted and synced again. */
TEST(replica_sync_with_one_masters_replica_paused_refuses_there_only) {
  const int64_t sync_timeout = 300;
  cfx_t f;
  char names[3][64];
  sx_t s[3];
  start_synced(&f, sync_timeout);
  cfx_names(&f, "rs-pause-", names);
  lk_lock_t *l[3];
  for (int i = 0; i < 3; i++)
    l[i] = fx_lock(&f.fx, names[i]);
  /* Every master's connection dialled and synced once before the pause. */
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(sx_acquire(&f.fx, l[i], 0, LK_LEASE_DEFAULT));
    ASSERT_EQ(lk_lock_sync_acked(l[i]), 1);
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[i], NULL));
  }
  int victim = f.masters[1], vr = rt_cluster_replica_of(f.cl, victim);
  ASSERT_GE(vr, 0);
  rt_cluster_pause(f.cl, vr);
  uint64_t t0 = uv_hrtime();
  for (int i = 0; i < 3; i++)
    cfx_acquire_start(l[i], 0, LK_LEASE_DEFAULT, 0, &s[i]);
  FX_EVENTUALLY(&f.fx, s[0].done && s[1].done && s[2].done, 10000);
  double took = cfx_ms_since(t0, s[1].t_ns);
  fprintf(stderr, "note: paused replica's master: %s after %.0f ms; others after %.1f / %.1f ms\n",
          lk_err_name(s[1].status), took, cfx_ms_since(t0, s[0].t_ns),
          cfx_ms_since(t0, s[2].t_ns));
  ASSERT_EQ(s[1].status, LK_ENOREPLICAS);
  ASSERT_GE(took, (double)(sync_timeout - 50)); /* WAIT's timeout, on the server's clock */
  ASSERT_LE(took, (double)(sync_timeout + rt_scaled_ms(1000)));
  ASSERT_EQ(lk_lock_sync_acked(l[1]), 0);
  ASSERT_EQ(lk_lock_hold_count(l[1]), 0);
  ASSERT(strstr(lk_lock_error_text(l[1]), "0 of 1 replicas") != NULL);
  FX_EVENTUALLY(&f.fx, cfx_exists(&f, victim, names[1]) == 0, 5000); /* given back */
  for (int i = 0; i < 3; i += 2) {
    ASSERT_OK(s[i].status);
    ASSERT_EQ(lk_lock_sync_acked(l[i]), 1);
    ASSERT_LT(s[i].t_ns, s[1].t_ns); /* not queued behind the other node's WAIT */
  }
  ASSERT_EQ(cfx_stats(f.fx.c).sync_shortfalls, 1);

  rt_cluster_resume(f.cl, vr);
  ASSERT_OK(sx_acquire(&f.fx, l[1], 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_lock_sync_acked(l[1]), 1);
  ASSERT_EQ(holds_on(&f, vr, l[1]), 1);
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[i], NULL));
    fx_close_lock(&f.fx, l[i]);
  }
  cfx_finish(&f);
}

/* Synced acquires streamed on one master's names through two graceful
 * failovers (CLUSTER FAILOVER on its replica, then back). Every success
 * was acknowledged by a replica: its hold is on both nodes of the shard
 * (the master that granted and the replica that acknowledged, which are
 * the old and the new master in either order). A grant whose WAIT meets
 * its master already demoted (Redis refuses WAIT on a replica, or unblocks
 * a waiting one with -UNBLOCKED) had no answer: LK_ENOREPLICAS, given
 * back, as docs/replica-sync.md says of a WAIT without an answer; it is no
 * refusal of replica sync (no such warning). */
TEST(replica_sync_through_a_graceful_failover_never_reports_an_unacknowledged_grant) {
  enum { W = 8 };
  cfx_t f;
  char tag[64];
  sx_t s[W];
  int running[W];
  int ok = 0, short_ = 0, other = 0, after = 0;
  start_synced(&f, 300);
  int node[2];
  node[0] = f.masters[0];
  node[1] = rt_cluster_replica_of(f.cl, node[0]);
  ASSERT_GE(node[1], 0);
  ASSERT_GE(rt_cluster_key_on(f.cl, node[0], "rs-fo-", tag, sizeof tag), 0);
  lk_lock_t *l[W];
  for (int i = 0; i < W; i++) {
    char name[96];
    snprintf(name, sizeof name, "{%s}%d", tag, i);
    l[i] = fx_lock(&f.fx, name);
    running[i] = 1;
    cfx_acquire_start(l[i], 2000, LK_LEASE_DEFAULT, 0, &s[i]);
  }
  /* Failovers: to node[1] after 800 ms, back to node[0] 700 ms after the
   * first promotion, and the stream stops 700 ms after the second. */
  int64_t start = rt_now_ms(), next = start + 800;
  int failovers = 0, promoted = 0, pending = W;
  int64_t asked = 0;
  uint64_t t_first = 0;
  while (pending > 0) {
    fx_spin(&f.fx, 2);
    /* A manual failover needs the replica's link to its master up (the
     * demoted node resyncs first), and Redis drops one that does not
     * finish within 5 s without a word: ask again after 6 s (scaled). */
    if (failovers == promoted && failovers < 2 && rt_now_ms() >= next &&
        cfx_replica_link_up(&f, node[(failovers + 1) % 2])) {
      cfx_failover_ask(&f, node[(failovers + 1) % 2]);
      failovers++;
      asked = rt_now_ms();
    } else if (promoted < failovers && rt_now_ms() - asked > rt_scaled_ms(6000) &&
               cfx_replica_link_up(&f, node[failovers % 2])) {
      fprintf(stderr, "note: failover %d not done after %lld ms, asked again\n", failovers,
              (long long)(rt_now_ms() - asked));
      cfx_failover_ask(&f, node[failovers % 2]);
      asked = rt_now_ms();
    }
    if (promoted < failovers && rt_cluster_is_master(f.cl, node[failovers % 2]) == 1) {
      promoted++;
      next = rt_now_ms() + 700;
      if (t_first == 0)
        t_first = uv_hrtime();
    }
    if (rt_now_ms() - start > rt_scaled_ms(40000))
      FAIL("the stream did not wind down (%d failovers, %d promoted)", failovers, promoted);
    for (int i = 0; i < W; i++) {
      if (!running[i] || !s[i].done)
        continue;
      if (s[i].status == 0) {
        ok++;
        after += t_first != 0 && s[i].t_ns > t_first;
        ASSERT_GE(lk_lock_sync_acked(l[i]), 1);
        long long h0 = holds_on(&f, node[0], l[i]), h1 = holds_on(&f, node[1], l[i]);
        if (h0 != 1 || h1 != 1)
          FAIL("a synced grant of %s is not on both nodes of its shard (%lld on node %d, %lld "
               "on node %d)",
               lk_lock_name(l[i]), h0, node[0], h1, node[1]);
        ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[i], NULL));
      } else if (s[i].status == LK_ENOREPLICAS) {
        short_++;
        fprintf(stderr, "note: acquire %d ended LK_ENOREPLICAS: %s\n", i, lk_lock_error_text(l[i]));
        ASSERT_EQ(lk_lock_hold_count(l[i]), 0);
      } else {
        other++;
        fprintf(stderr, "note: acquire %d ended %s: %s\n", i, lk_err_name(s[i].status),
                lk_lock_error_text(l[i]));
        ASSERT_EQ(lk_lock_hold_count(l[i]), 0);
      }
      if (promoted == 2 && rt_now_ms() >= next) {
        running[i] = 0;
        pending--;
        continue;
      }
      cfx_acquire_start(l[i], 2000, LK_LEASE_DEFAULT, 0, &s[i]);
    }
  }
  fprintf(stderr,
          "note: %d synced grants (%d after the first failover), %d LK_ENOREPLICAS, %d other\n",
          ok, after, short_, other);
  ASSERT_GT(after, 0);
  /* Before the fix, a WAIT that met the granting master already demoted
   * ended its acquire with LK_EREDIS ("WAIT cannot be used with replica
   * instances") and the client warned that replica sync was refused. */
  ASSERT_EQ(other, 0);
  ASSERT_EQ(refused_logs, 0);
  for (int i = 0; i < W; i++)
    fx_close_lock(&f.fx, l[i]);
  cfx_finish(&f);
}
