/* A loop, a private 3-master + 3-replica cluster (test/harness/redis_cluster.h)
 * and a latchkey client seeded with one of its nodes: the set-up of every
 * test that runs a primitive on a cluster. */
#ifndef LK_TEST_CLUSTER_FIXTURE_H
#define LK_TEST_CLUSTER_FIXTURE_H

#include "lk_fixture.h"
#include "redis_cluster.h"

typedef struct cfx_s {
  fx_t fx; /* fx.srv stays NULL: the nodes belong to cl */
  rt_cluster_t *cl;
  int masters[RT_CLUSTER_MAX_NODES];
  int n_masters;
} cfx_t;

/* Starts the cluster and a client whose seed is node `seed` (options o,
 * from lk_client_opts_init, or NULL for defaults). */
static inline void cfx_start(cfx_t *f, int seed, lk_client_opts_t *o) {
  lk_client_opts_t defaults;
  rt_cluster_opts_t co;
  memset(f, 0, sizeof(*f));
  ASSERT_OK(uv_loop_init(&f->fx.loop));
  rt_cluster_opts_init(&co);
  f->cl = rt_cluster_start(&co);
  ASSERT_NOT_NULL(f->cl);
  f->n_masters = rt_cluster_masters(f->cl, f->masters, RT_CLUSTER_MAX_NODES);
  ASSERT_EQ(f->n_masters, 3);
  if (o == NULL) {
    lk_client_opts_init(&defaults);
    o = &defaults;
  }
  o->port = rt_cluster_port(f->cl, seed);
  fx_start_client(&f->fx, o);
}

static inline void cfx_finish(cfx_t *f) {
  fx_finish(&f->fx);
  rt_cluster_stop(f->cl);
}

/* A name whose slot master m (a fixture node index) owns, into out. */
static inline void cfx_name_on(cfx_t *f, int m, const char *prefix, char *out, size_t cap) {
  ASSERT_GE(rt_cluster_key_on(f->cl, m, prefix, out, cap), 0);
}

/* EXISTS key on node i. */
static inline long long cfx_exists(cfx_t *f, int i, const char *key) {
  rt_server_t *s = rt_cluster_server(f->cl, i);
  ASSERT_NOT_NULL(s);
  return rt_cmd_int(s, "EXISTS %s", key);
}

/* Subscribers of channel over the whole cluster: classic ones (PUBSUB
 * NUMSUB) and sharded ones (PUBSUB SHARDNUMSUB), summed over every up node
 * (a sharded channel counts only on its slot's owner). */
static inline long long cfx_subscribers(cfx_t *f, const char *channel) {
  long long n = 0;
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    const char *verbs[2] = {"NUMSUB", "SHARDNUMSUB"};
    for (int k = 0; k < 2; k++) {
      redisReply *r = rt_cmd(rt_cluster_server(f->cl, i), "PUBSUB %s %s", verbs[k], channel);
      if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[1]->type == REDIS_REPLY_INTEGER)
        n += r->element[1]->integer;
      if (r != NULL)
        freeReplyObject(r);
    }
  }
  return n;
}

/* Runs the loop until channel has at least n subscribers (bounded). */
static inline void cfx_wait_subscribers(cfx_t *f, const char *channel, long long n) {
  FX_EVENTUALLY(&f->fx, cfx_subscribers(f, channel) >= n, 5000);
}

#endif /* LK_TEST_CLUSTER_FIXTURE_H */
