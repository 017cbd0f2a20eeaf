/* Replica sync's WAIT meeting the master that granted already demoted
 * (issue 25: found by cluster.replica_sync_through_a_graceful_failover_...,
 * which meets it by chance in a stream of grants through CLUSTER
 * FAILOVER). Here it is made to happen every time: the client reaches the
 * master through a proxy that holds the grant's reply; meanwhile the
 * master and its replica swap roles; then the reply is let through and
 * the client's WAIT reaches a replica, which refuses it ("WAIT cannot be
 * used with replica instances"). That is a WAIT without an answer
 * (docs/replica-sync.md): LK_ENOREPLICAS under LK_SYNC_GIVE_BACK, a
 * counted shortfall under LK_SYNC_REPORT, and no warning that replica sync
 * is refused (it is not: the next grant, on a master, is synced). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "redis_replica.h"

static int refused_logs;

static void count_refused(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level >= LK_LOG_WARN && strstr(msg, "refused replica sync") != NULL)
    refused_logs++;
}

static long blocked_clients(rt_server_t *s) {
  char *v = rt_server_info(s, "clients", "blocked_clients");
  long n = v != NULL ? atol(v) : -1;
  free(v);
  return n;
}

/* A replica of fx's server, streaming: after its first full sync the
 * master waits for the replica's first acknowledgement (sent once a
 * second) before a WAIT can count it; one write seen on the replica ends
 * that phase (as in replica_sync.c). */
static rt_server_t *streaming_replica(fx_t *fx) {
  rt_server_t *rep = rt_replica_start(fx->srv, NULL);
  ASSERT_NOT_NULL(rep);
  char *ok = rt_cmd_str(fx->srv, "SET rs-ready 1");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  ASSERT_OK(rt_replica_wait_caught_up(fx->srv, rep, 10000));
  return rep;
}

static void swap_roles(rt_server_t *m, rt_server_t *r) {
  char *ok = rt_cmd_str(r, "REPLICAOF NO ONE");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  ok = rt_cmd_str(m, "REPLICAOF 127.0.0.1 %d", rt_server_port(r));
  ASSERT_STREQ(ok, "OK");
  free(ok);
}

/* A client on o (its port, sync timeout and policy set) that waits for one
 * replica and counts refusal warnings, and its lock on name after one
 * synced grant and release: all as usual. */
static lk_lock_t *synced_lock(fx_t *fx, lk_client_opts_t *o, const char *name) {
  refused_logs = 0;
  o->sync_replicas = 1;
  o->log = count_refused;
  fx_start_client(fx, o);
  lk_lock_t *l = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, l, 0, 30000));
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  ASSERT_OK(sx_run(fx, lk_lock_release, l, NULL));
  return l;
}

static void demoted_case(int policy) {
  fx_t fx;
  lk_client_opts_t o;
  sx_t s;
  fx_start_server(&fx, NULL);
  rt_server_t *rep = streaming_replica(&fx);
  rt_proxy_t *p = rt_proxy_start(rt_server_port(fx.srv));
  ASSERT_NOT_NULL(p);
  lk_client_opts_init(&o);
  o.port = rt_proxy_port(p);
  o.sync_policy = policy;
  o.sync_timeout_ms = 500;
  /* Connected, scripts loaded, one synced grant: all as usual. */
  lk_lock_t *l = synced_lock(&fx, &o, "rs-demoted");

  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_HOLD, NULL, 0);
  memset(&s, 0, sizeof s);
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(l, &lo, sx_cb, &s));
  FX_WAIT_RULE_APPLIED(&fx, p, 5000); /* the grant is made, its reply held */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS rs-demoted"), 1);
  swap_roles(fx.srv, rep);
  rt_proxy_release(p);
  rt_run_until(&fx.loop, &s.done, 10000);
  fprintf(stderr, "note: %s: %s (%s)\n", policy == LK_SYNC_REPORT ? "report" : "give back",
          lk_err_name(s.status), lk_lock_error_text(l) ? lk_lock_error_text(l) : "");
  lk_client_stats_t st;
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.sync_shortfalls, 1);
  ASSERT_EQ(refused_logs, 0);
  if (policy == LK_SYNC_REPORT) {
    ASSERT_OK(s.status);
    ASSERT_EQ(lk_lock_hold_count(l), 1);
  } else {
    ASSERT_EQ(s.status, LK_ENOREPLICAS);
    ASSERT(strstr(lk_lock_error_text(l), "no longer a master") != NULL);
    ASSERT_EQ(lk_lock_hold_count(l), 0);
  }
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
  rt_proxy_stop(p);
  rt_server_stop(rep);
}

TEST(wait_refused_by_a_demoted_master_gives_back_enoreplicas) { demoted_case(LK_SYNC_GIVE_BACK); }

TEST(wait_refused_by_a_demoted_master_under_report_keeps_the_hold) {
  demoted_case(LK_SYNC_REPORT);
}

/* The same demotion while the WAIT is blocked on the master (its replica
 * paused, so nobody acknowledges): the server answers the WAIT with an
 * error as it turns into a replica (-UNBLOCKED on Redis 7.0), or counts
 * none. Either way: LK_ENOREPLICAS, no refusal warning. */
TEST(wait_blocked_when_its_master_is_demoted_gives_back_enoreplicas) {
  fx_t fx;
  lk_client_opts_t o;
  sx_t s;
  fx_start_server(&fx, NULL);
  rt_server_t *rep = streaming_replica(&fx);
  lk_client_opts_init(&o);
  o.port = rt_server_port(fx.srv);
  o.sync_timeout_ms = 1400; /* under half the reply timeout (3000) */
  lk_lock_t *l = synced_lock(&fx, &o, "rs-blocked");
  rt_server_pause(rep);
  memset(&s, 0, sizeof s);
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(l, &lo, sx_cb, &s));
  /* The WAIT is blocked on the master. */
  FX_EVENTUALLY(&fx, blocked_clients(fx.srv) == 1, 5000);
  char *ok = rt_cmd_str(fx.srv, "REPLICAOF 127.0.0.1 %d", rt_server_port(rep));
  ASSERT_STREQ(ok, "OK");
  free(ok);
  rt_run_until(&fx.loop, &s.done, 10000);
  fprintf(stderr, "note: %s (%s)\n", lk_err_name(s.status),
          lk_lock_error_text(l) ? lk_lock_error_text(l) : "");
  ASSERT_EQ(s.status, LK_ENOREPLICAS);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(refused_logs, 0);
  rt_server_resume(rep);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
  rt_server_stop(rep);
}
