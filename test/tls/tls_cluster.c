/* A Redis Cluster over TLS (docs/tls.md, "Cluster"): every node listens
 * with TLS (--tls-cluster yes, --tls-replication yes: the bus and the
 * replicas too) and tells TLS clients its TLS port in CLUSTER SLOTS. The
 * client, seeded with one node's TLS port, opens TLS connections to every
 * master it learns of, each checked against that node's own address, and
 * a lock and a pub/sub wake-up work on every master. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redis_cluster.h"
#include "tls_util.h"

/* PUBSUB SHARDNUMSUB channel on one node. */
static long long shard_subscribers(rt_server_t *s, const char *channel) {
  long long n = 0;
  redisReply *r = rt_cmd(s, "PUBSUB SHARDNUMSUB %s", channel);
  if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      r->element[1]->type == REDIS_REPLY_INTEGER)
    n = r->element[1]->integer;
  if (r != NULL)
    freeReplyObject(r);
  return n;
}

TEST(cluster_over_tls_locks_and_wakes_on_every_master) {
  fx_t fx;
  rt_cluster_opts_t co;
  rt_cluster_t *cl;
  lk_client_opts_t o;
  tu_log_t log;
  const char *args[] = {"--tls-cluster", "yes", "--tls-replication", "yes", NULL};
  int masters[RT_CLUSTER_MAX_NODES], n, m;
  rt_tls_certs_t *t = rt_tls_certs_make();
  lk_client_stats_t st;
  ASSERT_NOT_NULL(t);
  memset(&fx, 0, sizeof fx);
  ASSERT_OK(uv_loop_init(&fx.loop));
  rt_cluster_opts_init(&co);
  co.extra_args = args;
  co.tls_cert_file = t->server_cert;
  co.tls_key_file = t->server_key;
  co.tls_ca_file = t->ca;
  cl = rt_cluster_start(&co);
  ASSERT_NOT_NULL(cl);
  n = rt_cluster_masters(cl, masters, RT_CLUSTER_MAX_NODES);
  ASSERT_EQ(n, 3);

  lk_client_opts_init(&o);
  o.cluster = LK_CLUSTER_ON;
  o.port = rt_server_tls_port(rt_cluster_server(cl, masters[0]));
  o.tls.enable = 1;
  o.tls.ca_file = t->ca;
  o.connect_timeout_ms = rt_scaled_ms(2000);
  o.reply_timeout_ms = rt_scaled_ms(3000);
  o.max_repoll_ms = 20000; /* wake-ups must come from the messages */
  memset(&log, 0, sizeof log);
  o.log = tu_on_log;
  o.log_arg = &log;
  fx_start_client(&fx, &o);

  for (m = 0; m < n; m++) {
    char name[64], channel[96];
    lk_lock_t *a, *b;
    sx_t s;
    ASSERT_GE(rt_cluster_key_on(cl, masters[m], "tls-cl-", name, sizeof name), 0);
    a = fx_lock(&fx, name);
    b = fx_lock(&fx, name);
    ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
    ASSERT_EQ(rt_cmd_int(rt_cluster_server(cl, masters[m]), "EXISTS %s", name), 1);
    tu_wait_behind(b, &s);
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    FX_EVENTUALLY(&fx, shard_subscribers(rt_cluster_server(cl, masters[m]), channel) > 0, 5000);
    fx_spin(&fx, 50);
    ASSERT_EQ(s.done, 0);
    tu_release_wakes(&fx, a, &s);
    ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
    ASSERT_EQ(rt_cmd_int(rt_cluster_server(cl, masters[m]), "EXISTS %s", name), 0);
    fx_close_lock(&fx, a);
    fx_close_lock(&fx, b);
  }
  st = tu_stats(fx.c);
  /* A command and a pub/sub connection per master at least. */
  ASSERT_GE(st.tls_handshakes, 6);
  ASSERT_EQ(st.tls_failures, 0);
  ASSERT_GE(st.topology_refreshes, 1);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 0);
  fx_finish(&fx);
  rt_cluster_stop(cl);
  rt_tls_certs_free(t);
}
