/* Replica sync (docs/replica-sync.md): WAIT after a grant on a master with
 * one replica, the two shortfall policies, a server that refuses WAIT, a
 * lost WAIT reply, cancel and close while the WAIT is out, the per-acquire
 * option, every primitive that grants, and what it buys: a hold that
 * survives the master's death on the promoted replica only with sync.
 *
 * The replica is paused with SIGSTOP where only its silence matters (it
 * acknowledges nothing). Where what it has applied matters (the failover
 * cases), it follows the master through a proxy whose master-to-replica
 * direction can be held: a SIGSTOPped replica on loopback would still find
 * the master's last writes in its own socket buffer when it wakes, so its
 * pause is not the lag that loses a write. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_fixture.h"
#include "lk_fixture.h"
#include "redis_replica.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

typedef struct rx_s {
  fx_t fx;          /* loop, the master (fx.srv), the client */
  rt_server_t *rep; /* the master's replica */
  rt_proxy_t *link; /* the replication link, when it runs through a proxy */
  int refused_logs, aof_logs;
} rx_t;

static void rx_log(lk_log_level_t level, const char *msg, void *arg) {
  rx_t *rx = arg;
  if (level < LK_LOG_WARN)
    return;
  if (strstr(msg, "refused replica sync") != NULL)
    rx->refused_logs++;
  if (strstr(msg, "no WAITAOF") != NULL)
    rx->aof_logs++;
}

/* A master and one replica, in sync. via_proxy: the replica follows the
 * master through rx->link. replica_aof: the replica writes an AOF. */
static const char *const aof_args[] = {"--appendfsync", "always", NULL};

static void rx_servers(rx_t *rx, int via_proxy, int replica_aof) {
  rt_server_opts_t so;
  redisReply *r;
  memset(rx, 0, sizeof(*rx));
  fx_start_server(&rx->fx, NULL);
  rt_server_opts_init(&so);
  so.appendonly = replica_aof;
  if (replica_aof)
    so.extra_args = aof_args; /* WAITAOF answers at once, not within 1 s */
  if (!via_proxy) {
    rt_replica_opts_t ro = {&so, NULL};
    rx->rep = rt_replica_start(rx->fx.srv, &ro);
  } else {
    char port[16];
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    r = rt_cmd(rx->fx.srv, "CONFIG SET repl-diskless-sync-delay 0");
    ASSERT_NOT_NULL(r);
    freeReplyObject(r);
    rx->link = rt_proxy_start(rt_server_port(rx->fx.srv));
    ASSERT_NOT_NULL(rx->link);
    snprintf(port, sizeof(port), "%d", rt_proxy_port(rx->link));
    so.extra_args = args;
    rx->rep = rt_server_start(&so);
    ASSERT_NOT_NULL(rx->rep);
    ASSERT_OK(rt_replica_wait_link_up(rx->rep, 10000));
  }
  ASSERT_NOT_NULL(rx->rep);
  /* The link is up before the master streams to it: after a diskless full
   * sync the master waits for the replica's first acknowledgement (sent
   * once a second), and a replica paused before that would stay silent for
   * up to a second after it resumes. One write seen on the replica ends
   * that phase. */
  r = rt_cmd(rx->fx.srv, "SET rs-ready 1");
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  ASSERT_OK(rt_replica_wait_caught_up(rx->fx.srv, rx->rep, 10000));
}

/* Client options: replica sync with n replicas, policy, timeout. */
static void rx_opts(rx_t *rx, lk_client_opts_t *o, int n, int policy, int64_t timeout_ms) {
  lk_client_opts_init(o);
  o->port = rt_server_port(rx->fx.srv);
  o->log = rx_log;
  o->log_arg = rx;
  o->sync_replicas = n;
  o->sync_policy = policy;
  o->sync_timeout_ms = timeout_ms;
}

static void rx_start(rx_t *rx, int n, int policy, int64_t timeout_ms) {
  lk_client_opts_t o;
  rx_servers(rx, 0, 0);
  rx_opts(rx, &o, n, policy, timeout_ms);
  fx_start_client(&rx->fx, &o);
}

static void rx_finish(rx_t *rx) {
  if (rt_server_running(rx->rep))
    rt_server_resume(rx->rep); /* a paused one dies too; SIGCONT is harmless */
  fx_finish(&rx->fx);
  rt_server_stop(rx->rep);
  rt_proxy_stop(rx->link);
}

/* Closes the locks in the order given (NULL-terminated), then rx_finish. */
static void rx_finish_locks(rx_t *rx, lk_lock_t *const *locks) {
  for (; *locks != NULL; locks++)
    fx_close_lock(&rx->fx, *locks);
  rx_finish(rx);
}

static lk_client_stats_t stats(rx_t *rx) {
  lk_client_stats_t st;
  lk_client_get_stats(rx->fx.c, &st);
  return st;
}

/* This owner's count on lock l as server s has it (0: none). */
static long long holds_on(rt_server_t *s, lk_lock_t *l) {
  char *v = rt_cmd_str(s, "HGET %s %s", lk_lock_name(l), lk_lock_owner(l));
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* Starts an acquire with sync_replicas = sync (-1: the client's). */
static void lock_start(lk_lock_t *l, int sync, int64_t lease_ms, sx_t *s) {
  lk_lock_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_lock_opts_init(&o);
  o.lease_ms = lease_ms;
  o.sync_replicas = sync;
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, s));
}

static int lock_acquire(rx_t *rx, lk_lock_t *l, int sync, sx_t *s) {
  lock_start(l, sync, LK_LEASE_DEFAULT, s);
  rt_run_until(&rx->fx.loop, &s->done, 15000);
  return s->status;
}

/* The milliseconds an operation took, from its start to its callback. */
static int64_t took_ms(int64_t start_ms, const sx_t *s) {
  return (int64_t)(s->t_ns / 1000000u) - start_ms;
}

/* --- the basics --- */

TEST(grant_waits_for_one_replica_and_counts) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 1000);
  l = fx_lock(&rx.fx, "rs-basic");
  ASSERT_EQ(lk_lock_sync_acked(l), -1); /* nothing asked yet */
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  /* Acknowledged means applied: the replica has the hold as the callback
   * runs, with no waiting for it. */
  ASSERT_EQ(holds_on(rx.rep, l), 1);
  ASSERT_EQ(stats(&rx).sync_waits, 1);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 0);
  /* A re-entry waits too; a release does not. */
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(holds_on(rx.rep, l), 2);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  ASSERT_EQ(stats(&rx).sync_waits, 2);
  ASSERT_EQ(stats(&rx).acquires, 2);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(paused_replica_gives_back_enoreplicas_within_timeout) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  int64_t t0;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  l = fx_lock(&rx.fx, "rs-short");
  rt_server_pause(rx.rep);
  t0 = rt_now_ms();
  ASSERT_EQ(lock_acquire(&rx, l, -1, &s), LK_ENOREPLICAS);
  /* WAIT waited its timeout (the server's clock: a little slack), and not
   * much longer. */
  ASSERT_GE(took_ms(t0, &s), 250);
  ASSERT_LE(took_ms(t0, &s), 300 + rt_scaled_ms(1000));
  ASSERT_EQ(lk_lock_sync_acked(l), 0);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(lk_lock_is_held(l), 0);
  ASSERT(strstr(lk_lock_error_text(l), "0 of 1 replicas") != NULL);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 1);
  ASSERT_EQ(stats(&rx).acquires, 0);
  /* Given back on the master. */
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-short") == 0, 5000);
  /* The replica back: the next acquire is synced. */
  rt_server_resume(rx.rep);
  ASSERT_EQ(lock_acquire(&rx, l, -1, &s), 0);
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  ASSERT_EQ(holds_on(rx.rep, l), 1);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(report_policy_succeeds_and_reports_shortfall) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rx_start(&rx, 1, LK_SYNC_REPORT, 200);
  l = fx_lock(&rx.fx, "rs-report");
  rt_server_pause(rx.rep);
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), 0);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_EQ(lk_lock_is_held(l), 1);
  ASSERT_STREQ(lk_lock_error_text(l), "");
  ASSERT_EQ(holds_on(rx.fx.srv, l), 1);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 1);
  ASSERT_EQ(stats(&rx).acquires, 1);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(rx.fx.srv, "EXISTS rs-report"), 0);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

/* Success must mean is_held(): an explicit lease shorter than the wait
 * ended while the replicas were awaited. */
TEST(report_policy_lease_ending_during_wait_is_lost) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rx_start(&rx, 1, LK_SYNC_REPORT, 400);
  l = fx_lock(&rx.fx, "rs-short-lease");
  rt_server_pause(rx.rep);
  lock_start(l, -1, 150, &s);
  rt_run_until(&rx.fx.loop, &s.done, 15000);
  ASSERT_EQ(s.status, LK_ELEASELOST);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(lk_lock_is_held(l), 0);
  ASSERT_EQ(lk_lock_sync_acked(l), 0);
  ASSERT_EQ(rt_cmd_int(rx.fx.srv, "EXISTS rs-short-lease"), 0);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(two_replicas_asked_one_present_is_shortfall) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rx_start(&rx, 2, LK_SYNC_GIVE_BACK, 200);
  l = fx_lock(&rx.fx, "rs-two");
  ASSERT_EQ(lock_acquire(&rx, l, -1, &s), LK_ENOREPLICAS);
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  ASSERT(strstr(lk_lock_error_text(l), "1 of 2 replicas") != NULL);
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-two") == 0, 5000);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(per_acquire_override_on_and_off) {
  rx_t rx;
  lk_lock_opts_t bad;
  lk_lock_t *l;
  sx_t s;
  lk_client_t *synced;
  lk_client_opts_t o;
  lk_lock_t *m;
  /* The client does not sync; one acquire asks for it. */
  rx_start(&rx, 0, LK_SYNC_GIVE_BACK, 1000);
  l = fx_lock(&rx.fx, "rs-override");
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), -1);
  ASSERT_EQ(stats(&rx).sync_waits, 0);
  ASSERT_OK(lock_acquire(&rx, l, 1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  ASSERT_EQ(stats(&rx).sync_waits, 1);
  /* Out of range: refused at once. */
  lk_lock_opts_init(&bad);
  bad.sync_replicas = -2;
  ASSERT_EQ(lk_lock_acquire(l, &bad, sx_cb, &s), LK_EINVAL);
  bad.sync_replicas = 1001;
  ASSERT_EQ(lk_lock_acquire(l, &bad, sx_cb, &s), LK_EINVAL);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  fx_close_lock(&rx.fx, l);

  /* A client that syncs; one acquire turns it off, and does not wait for
   * the paused replica. */
  rx_opts(&rx, &o, 1, LK_SYNC_GIVE_BACK, 5000);
  ASSERT_OK(lk_client_new(&rx.fx.loop, &o, &synced));
  ASSERT_OK(lk_lock_new(synced, "rs-override-2", &m));
  rt_server_pause(rx.rep);
  lock_start(m, 0, LK_LEASE_DEFAULT, &s);
  rt_run_until(&rx.fx.loop, &s.done, 2000); /* well under the 5 s WAIT */
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_lock_sync_acked(m), -1);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, m, NULL));
  rt_server_resume(rx.rep);
  {
    int closed = 0;
    lk_lock_set_data(m, &closed);
    ASSERT_OK(lk_lock_close(m, fx_lock_closed_cb));
    rt_run_until(&rx.fx.loop, &closed, 10000);
  }
  fx_close_direct_client(&rx.fx, synced);
  rx_finish(&rx);
}

/* --- one WAIT per connection --- */

#define RS_MANY 32

/* Many grants in flight on one connection share WAITs instead of queueing
 * one behind another: with the replica paused, all of them end within about
 * one timeout, and no command behind them meets its reply timeout. */
TEST(concurrent_grants_share_one_wait) {
  rx_t rx;
  lk_lock_t *l[RS_MANY];
  sx_t s[RS_MANY];
  char name[32];
  int i, done;
  int64_t t0;
  lk_client_opts_t o;
  rx_servers(&rx, 0, 0);
  rx_opts(&rx, &o, 1, LK_SYNC_GIVE_BACK, 400);
  o.reply_timeout_ms = 1000; /* 32 WAITs in a row would blow it */
  fx_start_client(&rx.fx, &o);
  for (i = 0; i < RS_MANY; i++) {
    snprintf(name, sizeof(name), "rs-many-%d", i);
    l[i] = fx_lock(&rx.fx, name);
  }
  /* The replica answers: every grant is synced, with few WAITs. */
  for (i = 0; i < RS_MANY; i++)
    lock_start(l[i], -1, LK_LEASE_DEFAULT, &s[i]);
  for (i = 0; i < RS_MANY; i++) {
    rt_run_until(&rx.fx.loop, &s[i].done, 15000);
    ASSERT_OK(s[i].status);
    ASSERT_EQ(lk_lock_sync_acked(l[i]), 1);
  }
  {
    char *calls = rt_server_info(rx.fx.srv, "commandstats", "cmdstat_wait");
    ASSERT_NOT_NULL(calls);
    printf("32 grants, WAIT %s\n", calls);
    ASSERT_LT(atoi(strchr(calls, '=') + 1), RS_MANY);
    free(calls);
  }
  for (i = 0; i < RS_MANY; i++)
    ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l[i], NULL));
  /* The replica paused: all short, within about one timeout. */
  rt_server_pause(rx.rep);
  t0 = rt_now_ms();
  for (i = 0; i < RS_MANY; i++)
    lock_start(l[i], -1, LK_LEASE_DEFAULT, &s[i]);
  for (i = 0, done = 0; i < RS_MANY; i++) {
    rt_run_until(&rx.fx.loop, &s[i].done, 15000);
    ASSERT_EQ(s[i].status, LK_ENOREPLICAS);
    done++;
  }
  ASSERT_EQ(done, RS_MANY);
  for (i = 0; i < RS_MANY; i++)
    ASSERT_LE(took_ms(t0, &s[i]), 2 * 400 + rt_scaled_ms(500));
  ASSERT_EQ(stats(&rx).reply_timeouts, 0);
  ASSERT_EQ(stats(&rx).sync_shortfalls, RS_MANY);
  for (i = 0; i < RS_MANY; i++) {
    snprintf(name, sizeof(name), "EXISTS rs-many-%d", i);
    FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, name) == 0, 5000);
    fx_close_lock(&rx.fx, l[i]);
  }
  rx_finish(&rx);
}

/* A grant that asks for more replicas than the WAIT it joined waits once
 * more, within the same budget: here two replicas of one, so short. */
TEST(grant_asking_more_than_the_joined_wait_waits_again) {
  rx_t rx;
  lk_lock_t *a, *b;
  sx_t sa, sb;
  int64_t t0;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  a = fx_lock(&rx.fx, "rs-join-a");
  b = fx_lock(&rx.fx, "rs-join-b");
  t0 = rt_now_ms();
  lock_start(a, 1, LK_LEASE_DEFAULT, &sa); /* its WAIT 1 goes first */
  lock_start(b, 2, LK_LEASE_DEFAULT, &sb);
  rt_run_until(&rx.fx.loop, &sa.done, 15000);
  rt_run_until(&rx.fx.loop, &sb.done, 15000);
  ASSERT_OK(sa.status);
  ASSERT_EQ(lk_lock_sync_acked(a), 1);
  ASSERT_EQ(sb.status, LK_ENOREPLICAS);
  ASSERT_EQ(lk_lock_sync_acked(b), 1);
  ASSERT_LE(took_ms(t0, &sb), 300 + rt_scaled_ms(1000));
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-join-b") == 0, 5000);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, a, NULL));
  rx_finish_locks(&rx, (lk_lock_t *[]){a, b, NULL});
}

/* sync_timeout_ms past half the reply timeout is capped there: commands
 * behind the WAIT must still be answered in time. */
TEST(wait_is_capped_at_half_the_reply_timeout) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  int64_t t0;
  lk_client_opts_t o;
  rx_servers(&rx, 0, 0);
  rx_opts(&rx, &o, 1, LK_SYNC_GIVE_BACK, 10000);
  o.reply_timeout_ms = 600;
  fx_start_client(&rx.fx, &o);
  l = fx_lock(&rx.fx, "rs-cap");
  rt_server_pause(rx.rep);
  t0 = rt_now_ms();
  int64_t mark = rt_stall_mark();
  ASSERT_EQ(lock_acquire(&rx, l, -1, &s), LK_ENOREPLICAS);
  ASSERT_GE(took_ms(t0, &s), 250);
  ASSERT_LE(took_ms(t0, &s), 300 + rt_scaled_ms(1000));
  /* The cap leaves 300 ms of the reply timeout: a longer machine stall
   * times a reply out rightly. */
  EXPECT_HOLD(stats(&rx).reply_timeouts == 0, mark, 300);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

/* --- a WAIT refused, lost, or left behind --- */

static void start_acl_client(rx_t *rx, int policy) {
  lk_client_opts_t o;
  redisReply *r;
  rx_servers(rx, 0, 0);
  r = rt_cmd(rx->fx.srv, "ACL SETUSER nowait on >pw ~* &* +@all -wait");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  rx_opts(rx, &o, 1, policy, 1000);
  o.username = "nowait";
  o.password = "pw";
  fx_start_client(&rx->fx, &o);
}

TEST(refused_wait_is_one_clear_error_and_given_back) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  int i;
  start_acl_client(&rx, LK_SYNC_GIVE_BACK);
  l = fx_lock(&rx.fx, "rs-acl");
  for (i = 0; i < 2; i++) {
    char *denied;
    ASSERT_EQ(lock_acquire(&rx, l, -1, &s), LK_ENOPERM);
    ASSERT(strstr(lk_lock_error_text(l), "NOPERM") != NULL);
    ASSERT_EQ(lk_lock_sync_acked(l), -1);
    ASSERT_EQ(lk_lock_hold_count(l), 0);
    FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-acl") == 0, 5000);
    /* No loop: one refused WAIT per acquire. */
    denied = rt_server_info(rx.fx.srv, "errorstats", "errorstat_NOPERM");
    ASSERT_NOT_NULL(denied);
    ASSERT_EQ(atoi(strchr(denied, '=') + 1), i + 1);
    free(denied);
  }
  ASSERT_EQ(rx.refused_logs, 1); /* said once per client */
  ASSERT_EQ(stats(&rx).sync_shortfalls, 2);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(refused_wait_under_report_succeeds_and_logs_once) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  start_acl_client(&rx, LK_SYNC_REPORT);
  l = fx_lock(&rx.fx, "rs-acl-report");
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_hold_count(l), 2);
  ASSERT_EQ(lk_lock_sync_acked(l), -1);
  ASSERT_EQ(holds_on(rx.fx.srv, l), 2);
  ASSERT_EQ(rx.refused_logs, 1);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 2);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

/* The client reaches the master through a proxy that cuts the connection
 * instead of delivering WAIT's reply: the grant happened, its replication
 * is unknown. */
static rt_proxy_t *start_cut_wait(rx_t *rx, int policy) {
  lk_client_opts_t o;
  rt_proxy_t *p;
  rx_servers(rx, 0, 0);
  p = rt_proxy_start(rt_server_port(rx->fx.srv));
  ASSERT_NOT_NULL(p);
  rx_opts(rx, &o, 1, policy, 1000);
  o.port = rt_proxy_port(p);
  fx_start_client(&rx->fx, &o);
  return p;
}

TEST(lost_wait_reply_gives_back_enoreplicas) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rt_proxy_t *p = start_cut_wait(&rx, LK_SYNC_GIVE_BACK);
  l = fx_lock(&rx.fx, "rs-lost");
  rt_proxy_on_reply(p, "WAIT", 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_EQ(lock_acquire(&rx, l, -1, &s), LK_ENOREPLICAS);
  ASSERT(strstr(lk_lock_error_text(l), "no answer") != NULL);
  ASSERT_EQ(lk_lock_sync_acked(l), -1);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  /* The give-back goes once the connection is back. */
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-lost") == 0, 10000);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
  rt_proxy_stop(p);
}

TEST(lost_wait_reply_under_report_keeps_the_hold) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rt_proxy_t *p = start_cut_wait(&rx, LK_SYNC_REPORT);
  l = fx_lock(&rx.fx, "rs-lost-report");
  rt_proxy_on_reply(p, "WAIT", 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), -1);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 1);
  ASSERT_EQ(holds_on(rx.fx.srv, l), 1);
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
  rt_proxy_stop(p);
}

/* Spins until the acquire's WAIT is out (its grant came back). */
static void wait_for_the_wait(rx_t *rx, const sx_t *s) {
  FX_EVENTUALLY(&rx->fx, stats(rx).sync_waits == 1, 5000);
  ASSERT_EQ(s->done, 0);
}

TEST(cancel_while_wait_in_flight_gives_back_one_callback) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 1000);
  l = fx_lock(&rx.fx, "rs-cancel");
  rt_server_pause(rx.rep);
  lock_start(l, -1, LK_LEASE_DEFAULT, &s);
  wait_for_the_wait(&rx, &s);
  ASSERT_OK(lk_lock_cancel(l));
  rt_run_until(&rx.fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-cancel") == 0, 5000);
  /* The WAIT's late answer reaches nobody: still one callback. */
  rt_server_resume(rx.rep);
  fx_spin(&rx.fx, 1100);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(stats(&rx).sync_shortfalls, 0);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

TEST(close_while_wait_in_flight_gives_back_one_callback) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  int closed = 0;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 1000);
  l = fx_lock(&rx.fx, "rs-close");
  rt_server_pause(rx.rep);
  lock_start(l, -1, LK_LEASE_DEFAULT, &s);
  wait_for_the_wait(&rx, &s);
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, fx_lock_closed_cb));
  rt_run_until(&rx.fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  rt_run_until(&rx.fx.loop, &closed, 10000);
  ASSERT_EQ(s.calls, 1);
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-close") == 0, 5000);
  rt_server_resume(rx.rep);
  rx_finish(&rx);
}

/* --- what it buys: the failover demonstration --- */

/* Kills the master at once (kill -9), drops the replication link with
 * whatever it still carried, and promotes the replica. */
static void fail_over(rx_t *rx) {
  redisReply *r;
  rt_server_kill(rx->fx.srv, SIGKILL);
  rt_proxy_reset_all(rx->link);
  r = rt_cmd(rx->rep, "REPLICAOF NO ONE");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
}

static void start_failover_case(rx_t *rx, int n) {
  lk_client_opts_t o;
  rx_servers(rx, 1, 0);
  rx_opts(rx, &o, n, LK_SYNC_GIVE_BACK, 1000);
  fx_start_client(&rx->fx, &o);
}

/* With sync: the grant was acknowledged, the master dies right after the
 * callback, and the promoted replica has the hold. */
TEST(failover_with_sync_hold_survives_on_promoted_replica) {
  rx_t rx;
  lk_lock_t *l;
  sx_t s;
  char *owner;
  start_failover_case(&rx, 1);
  l = fx_lock(&rx.fx, "rs-failover");
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), 1);
  fail_over(&rx);
  owner = rt_cmd_str(rx.rep, "HGET rs-failover %s", lk_lock_owner(l));
  ASSERT_NOT_NULL(owner);
  ASSERT_STREQ(owner, "1");
  free(owner);
  ASSERT_GT(rt_cmd_int(rx.rep, "PTTL rs-failover"), 0);
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

/* Without sync, the replication link lagging (held in the proxy) at the
 * grant: the master dies, the promoted replica never had the hold. In the
 * same window a synced acquire does not succeed at all. */
TEST(failover_without_sync_hold_lost_on_promoted_replica) {
  rx_t rx;
  lk_lock_t *l, *synced;
  sx_t s;
  char *owner;
  start_failover_case(&rx, 0);
  l = fx_lock(&rx.fx, "rs-nosync");
  synced = fx_lock(&rx.fx, "rs-nosync-synced");
  rt_proxy_pause(rx.link, RT_PROXY_DOWN, 1);
  ASSERT_OK(lock_acquire(&rx, l, -1, &s));
  ASSERT_EQ(lk_lock_sync_acked(l), -1);
  ASSERT_EQ(holds_on(rx.fx.srv, l), 1);
  ASSERT_EQ(lock_acquire(&rx, synced, 1, &s), LK_ENOREPLICAS);
  ASSERT_EQ(lk_lock_sync_acked(synced), 0);
  fail_over(&rx);
  owner = rt_cmd_str(rx.rep, "HGET rs-nosync %s", lk_lock_owner(l));
  ASSERT_NULL(owner); /* the program was told it holds a lock nobody has */
  rx_finish_locks(&rx, (lk_lock_t *[]){l, synced, NULL});
}

/* --- the other primitives --- */

TEST(rwlock_read_and_write_sync) {
  rx_t rx;
  lk_rwlock_t *rw;
  lk_rwlock_opts_t o;
  sx_t s;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  rw = fx_rwlock(&rx.fx, "rs-rw");
  ASSERT_OK(rw_acquire(&rx.fx, rw, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_rwlock_sync_acked(rw), 1);
  ASSERT_OK(rw_release(&rx.fx, rw, RW_W, NULL));
  /* A read hold refused: given back, and the object holds none. */
  rt_server_pause(rx.rep);
  ASSERT_EQ(rw_acquire(&rx.fx, rw, RW_R, 0, LK_LEASE_DEFAULT), LK_ENOREPLICAS);
  ASSERT_EQ(lk_rwlock_sync_acked(rw), 0);
  ASSERT_EQ(lk_rwlock_hold_count(rw, RW_R), 0);
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-rw") == 0, 5000);
  /* The override turns it off for one acquire. */
  memset(&s, 0, sizeof(s));
  lk_rwlock_opts_init(&o);
  o.sync_replicas = 0;
  ASSERT_OK(lk_rwlock_acquire(rw, RW_R, &o, rw_cb, &s));
  rt_run_until(&rx.fx.loop, &s.done, 2000);
  ASSERT_OK(s.status);
  ASSERT_OK(rw_release(&rx.fx, rw, RW_R, NULL));
  rt_server_resume(rx.rep);
  fx_close_rwlock(&rx.fx, rw);
  rx_finish(&rx);
}

TEST(fair_lock_sync) {
  rx_t rx;
  lk_fair_t *f;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  f = fx_fair(&rx.fx, "rs-fair");
  ASSERT_OK(fsx_acquire(&rx.fx, f, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_fair_sync_acked(f), 1);
  ASSERT_OK(fsx_run(&rx.fx, lk_fair_release, f, NULL));
  rt_server_pause(rx.rep);
  ASSERT_EQ(fsx_acquire(&rx.fx, f, 0, LK_LEASE_DEFAULT), LK_ENOREPLICAS);
  ASSERT_EQ(lk_fair_is_held(f), 0);
  FX_EVENTUALLY(&rx.fx, rt_cmd_int(rx.fx.srv, "EXISTS rs-fair") == 0, 5000);
  rt_server_resume(rx.rep);
  fx_close_fair(&rx.fx, f);
  rx_finish(&rx);
}

TEST(semaphore_sync_and_refusal) {
  rx_t rx;
  lk_semaphore_t *sem;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  sem = fx_sem(&rx.fx, "rs-sem");
  ASSERT_OK(sem_run_n(&rx.fx, lk_semaphore_try_set_permits, sem, 2, NULL));
  ASSERT_OK(sem_acquire(&rx.fx, sem, 1, 0));
  ASSERT_EQ(lk_semaphore_sync_acked(sem), 1);
  ASSERT_EQ(srv_count(rx.rep, "rs-sem"), 1);
  rt_server_pause(rx.rep);
  ASSERT_EQ(sem_acquire(&rx.fx, sem, 1, 0), LK_ENOREPLICAS);
  ASSERT_EQ(lk_semaphore_sync_acked(sem), 0);
  ASSERT_EQ(lk_semaphore_held(sem), 1);
  ASSERT(fx_wait_count(&rx.fx, "rs-sem", 1, 5000)); /* the permit came back */
  rt_server_resume(rx.rep);
  ASSERT_OK(sem_run_n(&rx.fx, lk_semaphore_release, sem, 1, NULL));
  ASSERT_EQ(srv_count(rx.fx.srv, "rs-sem"), 2);
  fx_close_sem(&rx.fx, sem);
  rx_finish(&rx);
}

TEST(psem_sync_and_refusal) {
  rx_t rx;
  lk_psem_t *p;
  rx_start(&rx, 1, LK_SYNC_GIVE_BACK, 300);
  p = fx_psem(&rx.fx, "rs-psem");
  ASSERT_OK(psem_run_n(&rx.fx, lk_psem_try_set_permits, p, 1, NULL));
  ASSERT_OK(psem_acquire(&rx.fx, p, 1, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_psem_sync_acked(p), 1);
  ASSERT_OK(psem_run_id(&rx.fx, lk_psem_release, p, NULL, NULL));
  rt_server_pause(rx.rep);
  ASSERT_EQ(psem_acquire(&rx.fx, p, 1, 0, LK_LEASE_DEFAULT), LK_ENOREPLICAS);
  ASSERT_EQ(lk_psem_sync_acked(p), 0);
  ASSERT_EQ(lk_psem_permit_count(p), 0);
  ASSERT_EQ(lk_psem_is_held(p), 0);
  ASSERT(fx_wait_count(&rx.fx, "rs-psem", 1, 5000)); /* the permit came back */
  ASSERT_EQ(rt_cmd_int(rx.fx.srv, "ZCARD {rs-psem}:timeout"), 0);
  rt_server_resume(rx.rep);
  fx_close_psem(&rx.fx, p);
  rx_finish(&rx);
}

/* --- WAITAOF --- */

static int server_has_waitaof(rt_server_t *s) {
  char *v = rt_server_info(s, "server", "redis_version");
  int major = 0, minor = 0;
  ASSERT_NOT_NULL(v);
  sscanf(v, "%d.%d", &major, &minor);
  free(v);
  return major > 7 || (major == 7 && minor >= 2);
}

/* sync_aof: WAITAOF where the server has it (the replica writes an AOF, so
 * it acknowledges); WAIT, said once, where it does not (Redis 7.0). */
TEST(sync_aof_uses_waitaof_or_falls_back_to_wait_once) {
  rx_t rx;
  lk_lock_t *l;
  lk_client_opts_t o;
  sx_t s;
  int i, has;
  rx_servers(&rx, 0, 1);
  has = server_has_waitaof(rx.fx.srv);
  rx_opts(&rx, &o, 1, LK_SYNC_GIVE_BACK, 2000);
  o.sync_aof = 1;
  fx_start_client(&rx.fx, &o);
  l = fx_lock(&rx.fx, "rs-aof");
  for (i = 0; i < 2; i++) {
    ASSERT_OK(lock_acquire(&rx, l, -1, &s));
    ASSERT_EQ(lk_lock_sync_acked(l), 1);
    ASSERT_EQ(holds_on(rx.rep, l), i + 1);
  }
  ASSERT_EQ(rx.aof_logs, has ? 0 : 1);
  printf("server %s WAITAOF\n", has ? "has" : "lacks");
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  ASSERT_OK(sx_run(&rx.fx, lk_lock_release, l, NULL));
  rx_finish_locks(&rx, (lk_lock_t *[]){l, NULL});
}

/* --- what it costs --- */

/* One lock acquired and released `left` times in a row, with sync_replicas
 * = sync for each acquire. */
typedef struct pump_s {
  lk_lock_t *l;
  int sync, left, failed;
  int *running, *all_done;
} pump_t;

static void pump_next(pump_t *p);

static void pump_released(lk_lock_t *l, int status, void *arg) {
  pump_t *p = arg;
  (void)l;
  if (status != 0)
    p->failed++;
  pump_next(p);
}

static void pump_acquired(lk_lock_t *l, int status, void *arg) {
  pump_t *p = arg;
  if (status != 0 || (p->sync > 0 && lk_lock_sync_acked(l) < 1)) {
    p->failed++;
    p->left = 0;
    pump_next(p);
    return;
  }
  ASSERT_OK(lk_lock_release(l, pump_released, p));
}

static void pump_next(pump_t *p) {
  lk_lock_opts_t o;
  if (p->left == 0) {
    if (--*p->running == 0)
      *p->all_done = 1;
    return;
  }
  p->left--;
  lk_lock_opts_init(&o);
  o.sync_replicas = p->sync;
  ASSERT_OK(lk_lock_acquire(p->l, &o, pump_acquired, p));
}

/* n locks, each `pairs` acquire/release pairs: microseconds per pair. */
static double pump_run(rx_t *rx, lk_lock_t **l, int n, int pairs, int sync) {
  pump_t p[64];
  int i, running = n, all_done = 0;
  uint64_t t0 = uv_hrtime();
  for (i = 0; i < n; i++) {
    p[i].l = l[i], p[i].sync = sync, p[i].left = pairs, p[i].failed = 0;
    p[i].running = &running, p[i].all_done = &all_done;
  }
  for (i = 0; i < n; i++)
    pump_next(&p[i]);
  rt_run_until(&rx->fx.loop, &all_done, 60000);
  for (i = 0; i < n; i++)
    ASSERT_EQ(p[i].failed, 0);
  return (double)(uv_hrtime() - t0) / 1e3 / ((double)n * pairs);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define RS_ROUNDS 9

/* Prints what sync costs per acquisition on a master with one replica, both
 * ways in the same run, interleaved round by round (medians of the rounds):
 * one lock at a time (the latency a caller sees) and 64 at once (what one
 * connection carries). Checks only that every synced grant was
 * acknowledged. */
TEST(cost_per_acquisition_printed) {
  rx_t rx;
  lk_lock_t *l[64];
  char name[32];
  double seq[2][RS_ROUNDS], par[2][RS_ROUNDS], s0, s1, p0, p1;
  int i, round, sync;
  const int seq_pairs = 200, par_pairs = 30;
  rx_start(&rx, 0, LK_SYNC_GIVE_BACK, 1000);
  for (i = 0; i < 64; i++) {
    snprintf(name, sizeof(name), "rs-cost-%d", i);
    l[i] = fx_lock(&rx.fx, name);
  }
  for (round = 0; round < RS_ROUNDS; round++)
    for (sync = 0; sync < 2; sync++) {
      seq[sync][round] = pump_run(&rx, l, 1, seq_pairs, sync);
      par[sync][round] = pump_run(&rx, l, 64, par_pairs, sync);
    }
  s0 = median(seq[0], RS_ROUNDS), s1 = median(seq[1], RS_ROUNDS);
  p0 = median(par[0], RS_ROUNDS), p1 = median(par[1], RS_ROUNDS);
  printf("replica sync cost (master + 1 replica, loopback, medians of %d rounds): one lock "
         "at a time: %.1f us/pair off, %.1f us/pair on (%+.1f us); 64 locks at once: %.0f "
         "pairs/s off, %.0f pairs/s on\n",
         RS_ROUNDS, s0, s1, s1 - s0, 1e6 / p0, 1e6 / p1);
  {
    char *calls = rt_server_info(rx.fx.srv, "commandstats", "cmdstat_wait");
    ASSERT_NOT_NULL(calls);
    printf("WAIT %s for %d synced grants\n", calls, RS_ROUNDS * (seq_pairs + 64 * par_pairs));
    free(calls);
  }
  for (i = 0; i < 64; i++)
    fx_close_lock(&rx.fx, l[i]);
  rx_finish(&rx);
}
