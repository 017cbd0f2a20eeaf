/* Sentinel and TLS together (issue 25, "untested combinations"): the
 * sentinels, the master and its replica all serve TLS, replicate and
 * monitor over TLS (tls-replication yes), and the sentinels name the TLS
 * ports. A client with TLS on speaks it to every connection it opens, the
 * sentinels' included (docs/tls.md, docs/sentinel.md): it is given only
 * the sentinels' TLS ports, once as options and once as a
 * rediss+sentinel:// URL, so a plaintext word to any of them would fail.
 * It finds the master, holds and waits on a lock, follows a SENTINEL
 * FAILOVER to the promoted replica's TLS port, keeps the replicated hold
 * there (docs/sentinel.md, "What survives") and hands it over. */
#include "sentinel_fixture.h"
#include "tls_certs.h"

typedef struct tls_side_s {
  lk_client_t *c;
  lk_lock_t *l;
  sx_t acq;
  int lost;
} tls_side_t;

static void side_on_lost(lk_lock_t *l, int status, void *arg) {
  (void)l;
  ASSERT_EQ(status, LK_ELEASELOST);
  ((tls_side_t *)arg)->lost++;
}

/* Moves learnt from a sentinel's +switch-master message (over TLS), per
 * client; the lines are also printed as sn_log does. */
static int switch_msgs[2];

static void count_switch(lk_log_level_t level, const char *msg, void *arg) {
  int k = strcmp((const char *)arg, "waiter") == 0;
  sn_log(level, msg, arg);
  if (strstr(msg, "moved") != NULL && strstr(msg, "(+switch-master)") != NULL)
    switch_msgs[k]++;
}

/* A data server with TLS, replicating over TLS; replica_of_tls: the TLS
 * port of its master, or 0 for a master. */
static rt_server_t *tls_server(const rt_tls_certs_t *t, int replica_of_tls) {
  rt_server_opts_t so;
  char port[16];
  const char *master_args[] = {"--tls-replication", "yes", NULL};
  const char *replica_args[] = {"--tls-replication", "yes", "--replicaof", "127.0.0.1", port,
                                NULL};
  snprintf(port, sizeof port, "%d", replica_of_tls);
  rt_server_opts_init(&so);
  so.tls_cert_file = t->server_cert;
  so.tls_key_file = t->server_key;
  so.tls_ca_file = t->ca;
  so.extra_args = replica_of_tls ? replica_args : master_args;
  rt_server_t *s = rt_server_start(&so);
  ASSERT_NOT_NULL(s);
  ASSERT_GT(rt_server_tls_port(s), 0);
  return s;
}

/* Port of the first replica a sentinel lists for mymaster (0: none). */
static int sentinel_replica_port(rt_sentinel_t *s) {
  redisReply *r = rt_sentinel_cmd(s, "SENTINEL REPLICAS mymaster");
  int port = 0;
  ASSERT_NOT_NULL(r);
  if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
    redisReply *e = r->element[0];
    for (size_t i = 0; e->type == REDIS_REPLY_ARRAY && i + 1 < e->elements; i += 2)
      if (strcmp(e->element[i]->str, "port") == 0)
        port = atoi(e->element[i + 1]->str);
  }
  freeReplyObject(r);
  return port;
}

TEST(tls_sentinels_lead_to_the_tls_master_and_a_failover_is_followed_over_tls) {
  sn_t e;
  tls_side_t a, b;
  char url[2048];
  rt_tls_certs_t *t = rt_tls_certs_make();
  ASSERT_NOT_NULL(t);
  memset(&e, 0, sizeof e);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  ASSERT_OK(uv_loop_init(&e.loop));
  e.m = tls_server(t, 0);
  char *ok = rt_cmd_str(e.m, "CONFIG SET repl-diskless-sync-delay 0");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  e.r = tls_server(t, rt_server_tls_port(e.m));
  ASSERT_OK(rt_replica_wait_link_up(e.r, 10000));
  rt_sentinel_opts_t so;
  rt_sentinel_opts_init(&so);
  so.tls_cert_file = t->server_cert;
  so.tls_key_file = t->server_key;
  so.tls_ca_file = t->ca;
  for (e.n = 0; e.n < 3; e.n++) {
    e.s[e.n] = rt_sentinel_start(rt_server_tls_port(e.m), &so);
    ASSERT_NOT_NULL(e.s[e.n]);
  }
  ASSERT_OK(rt_sentinels_wait_ready(e.s, e.n, 1, 20000));
  /* The sentinels know the replica by the TLS port it announces. */
  ASSERT_EQ(sentinel_replica_port(e.s[0]), rt_server_tls_port(e.r));
  e.list = rt_sentinels_tls_list(e.s, e.n);

  /* The holder: options. */
  lk_client_opts_t o;
  sn_opts(&e, &o);
  o.log = count_switch;
  o.log_arg = (void *)"holder";
  o.tls.enable = 1;
  o.tls.ca_file = t->ca;
  o.connect_timeout_ms = rt_scaled_ms(2000);
  a.c = sn_client(&e, &o);
  /* The waiter: a URL naming the same. */
  lk_client_opts_init(&o);
  o.log = count_switch;
  o.log_arg = (void *)"waiter";
  o.connect_timeout_ms = rt_scaled_ms(2000);
  snprintf(url, sizeof url, "rediss+sentinel://%s/mymaster?ca_file=%s", e.list, t->ca);
  ASSERT_OK(lk_client_opts_set_url(&o, url));
  b.c = sn_client(&e, &o);
  ASSERT_OK(lk_lock_new(a.c, "sn-tls", &a.l));
  ASSERT_OK(lk_lock_new(b.c, "sn-tls", &b.l));
  ASSERT_OK(lk_lock_set_lost_cb(a.l, side_on_lost, &a));
  ASSERT_OK(lk_lock_set_lost_cb(b.l, side_on_lost, &b));

  ASSERT_OK(sx_acquire_in(&e.loop, a.l, 10000, LK_LEASE_DEFAULT, &a.acq));
  ASSERT_EQ(rt_cmd_int(e.m, "EXISTS sn-tls"), 1);
  int64_t budget = rt_scaled_ms(25000);
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.wait_ms = budget;
  lo.lease_ms = 10000;
  ASSERT_OK(lk_lock_acquire(b.l, &lo, sx_cb, &b.acq));
  /* The waiter found it held and listens for its release. */
  rt_wait_subscribers(&e.loop, e.m, "redisson_lock__channel:{sn-tls}", 1);
  ASSERT_EQ(b.acq.done, 0);
  for (int k = 0; k < 2; k++) {
    lk_client_t *c = k ? b.c : a.c;
    ASSERT_GE(sn_stats(c).sentinel_queries, 1);
    ASSERT_GE(sn_stats(c).tls_handshakes, 2); /* a sentinel's and the master's at least */
    ASSERT_EQ(sn_stats(c).tls_failures, 0);
  }
  ASSERT_OK(rt_replica_wait_caught_up(e.m, e.r, 5000));
  ASSERT_EQ(rt_cmd_int(e.r, "EXISTS sn-tls"), 1);
  uint64_t renewals_before = sn_stats(a.c).renewals;
  uint64_t hs_before = sn_stats(a.c).tls_handshakes;

  redisReply *r = rt_sentinel_cmd(e.s[1], "SENTINEL FAILOVER mymaster");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  int64_t t0 = rt_now_ms(), end = t0 + rt_scaled_ms(20000);
  while (!(sn_stats(a.c).sentinel_switches >= 1 && lk_client_is_connected(a.c) &&
           sn_stats(b.c).sentinel_switches >= 1 && lk_client_is_connected(b.c))) {
    if (rt_now_ms() > end)
      FAIL("the clients did not follow the failover (switches %llu / %llu)",
           (unsigned long long)sn_stats(a.c).sentinel_switches,
           (unsigned long long)sn_stats(b.c).sentinel_switches);
    ASSERT(!b.acq.done || a.lost); /* never two holders */
    sn_spin(&e, 2);
  }
  fprintf(stderr, "note: both clients on the new master (over TLS) %lld ms after SENTINEL FAILOVER\n",
          (long long)(rt_now_ms() - t0));
  ASSERT_OK(rt_sentinels_wait_master(e.s, e.n, rt_server_tls_port(e.r), 10000));
  /* Learnt from the sentinels' announcement, heard on a TLS subscription
   * (not from a ROLE check of the demoted master). */
  ASSERT_EQ(switch_msgs[0], 1);
  ASSERT_EQ(switch_msgs[1], 1);
  char *role = rt_server_role(e.r);
  ASSERT_STREQ(role, "master");
  free(role);
  /* The replicated hold is verified on the new master and kept. */
  SN_EVENTUALLY(&e, sn_stats(a.c).renewals > renewals_before || a.lost, 5000);
  ASSERT_EQ(a.lost, 0);
  ASSERT(lk_lock_is_held(a.l));
  ASSERT_EQ(rt_cmd_int(e.r, "EXISTS sn-tls"), 1);
  ASSERT_GT(sn_stats(a.c).tls_handshakes, hs_before); /* the new master's session */
  ASSERT_EQ(sn_stats(a.c).tls_failures, 0);
  ASSERT_EQ(sn_stats(b.c).tls_failures, 0);
  sn_spin(&e, 200);
  ASSERT_EQ(b.acq.done, 0);

  uint64_t released_ns = uv_hrtime();
  sx_t rel;
  memset(&rel, 0, sizeof rel);
  ASSERT_OK(lk_lock_release(a.l, sx_cb, &rel));
  rt_run_until(&e.loop, &rel.done, 5000);
  ASSERT_OK(rel.status);
  rt_run_until(&e.loop, &b.acq.done, budget);
  ASSERT_OK(b.acq.status);
  ASSERT_GT(b.acq.t_ns, released_ns);
  fprintf(stderr, "note: waiter granted on the new master %.1f ms after the release\n",
          (double)(b.acq.t_ns - released_ns) / 1e6);
  ASSERT_EQ(rt_cmd_int(e.r, "EXISTS sn-tls"), 1);
  memset(&rel, 0, sizeof rel);
  ASSERT_OK(lk_lock_release(b.l, sx_cb, &rel));
  rt_run_until(&e.loop, &rel.done, 5000);
  ASSERT_OK(rel.status);

  sn_close_lock(&e, a.l);
  sn_close_lock(&e, b.l);
  sn_close_client(&e, a.c);
  sn_close_client(&e, b.c);
  sn_stop(&e);
  rt_tls_certs_free(t);
}
