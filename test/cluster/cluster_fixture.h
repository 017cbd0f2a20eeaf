/* A loop, a private 3-master + 3-replica cluster (test/harness/redis_cluster.h)
 * and a latchkey client seeded with one of its nodes: the set-up of every
 * test that runs a primitive on a cluster. */
#ifndef LK_TEST_CLUSTER_FIXTURE_H
#define LK_TEST_CLUSTER_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "redis_cluster.h"

typedef struct cfx_s {
  fx_t fx; /* fx.srv stays NULL: the nodes belong to cl */
  rt_cluster_t *cl;
  int masters[RT_CLUSTER_MAX_NODES];
  int n_masters;
} cfx_t;

/* Starts the loop and the cluster (options co, or NULL for the defaults)
 * and reads its masters; no client yet: the caller starts its own, or
 * none (a parent whose clients are other processes). */
static inline void cfx_start_cluster(cfx_t *f, const rt_cluster_opts_t *co) {
  rt_cluster_opts_t defaults;
  memset(f, 0, sizeof(*f));
  ASSERT_OK(uv_loop_init(&f->fx.loop));
  if (co == NULL) {
    rt_cluster_opts_init(&defaults);
    co = &defaults;
  }
  f->cl = rt_cluster_start(co);
  ASSERT_NOT_NULL(f->cl);
  f->n_masters = rt_cluster_masters(f->cl, f->masters, RT_CLUSTER_MAX_NODES);
  ASSERT_EQ(f->n_masters, 3);
}

/* Cluster options whose nodes have no sharded pub/sub, as a server before
 * 7.0: SSUBSCRIBE and SPUBLISH renamed away. */
static inline void cfx_opts_no_sharded_pubsub(rt_cluster_opts_t *co) {
  static const char *const extra[] = {"--rename-command", "SSUBSCRIBE", "lk-no-ssubscribe",
                                      "--rename-command", "SPUBLISH",   "lk-no-spublish",
                                      NULL};
  rt_cluster_opts_init(co);
  co->extra_args = extra;
}

/* Starts the cluster (options co, or NULL for the defaults) and a client
 * whose seed is node `seed` (options o, from lk_client_opts_init, or NULL
 * for defaults). */
static inline void cfx_start_with(cfx_t *f, const rt_cluster_opts_t *co, int seed,
                                  lk_client_opts_t *o) {
  lk_client_opts_t defaults;
  cfx_start_cluster(f, co);
  if (o == NULL) {
    lk_client_opts_init(&defaults);
    o = &defaults;
  }
  o->port = rt_cluster_port(f->cl, seed);
  fx_start_client(&f->fx, o);
}

/* cfx_start_with the default cluster. */
static inline void cfx_start(cfx_t *f, int seed, lk_client_opts_t *o) {
  cfx_start_with(f, NULL, seed, o);
}

static inline void cfx_finish(cfx_t *f) {
  fx_finish(&f->fx);
  rt_cluster_stop(f->cl);
}

/* How most cluster lock cases end: the locks are closed in the order given,
 * then the fixture ends. locks: NULL-terminated, e.g. (lk_lock_t *[]){a, b, NULL}. */
static inline void cfx_finish_locks(cfx_t *f, lk_lock_t *const *locks) {
  for (; *locks != NULL; locks++)
    fx_close_lock(&f->fx, *locks);
  cfx_finish(f);
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

/* ---- where keys live ---- */

/* Node i's server (NULL once removed). */
static inline rt_server_t *cfx_srv(cfx_t *f, int i) { return rt_cluster_server(f->cl, i); }

/* The slot of key, asked of the servers (CLUSTER KEYSLOT). */
static inline int cfx_slot(cfx_t *f, const char *key) {
  return rt_cluster_key_slot(f->cl, key, strlen(key));
}

/* Names on every master: out[i] on f->masters[i], "<prefix><n>". */
static inline void cfx_names(cfx_t *f, const char *prefix, char out[][64]) {
  for (int i = 0; i < f->n_masters; i++)
    cfx_name_on(f, f->masters[i], prefix, out[i], 64);
}

/* key hashes to name's slot (so a script may name both), and that slot's
 * master is node m: what every key and channel a primitive derives from
 * name must satisfy on a cluster. */
static inline void cfx_assert_beside(cfx_t *f, const char *key, const char *name, int m) {
  int ks = cfx_slot(f, key), ns = cfx_slot(f, name);
  if (ks != ns)
    FAIL("%s is in slot %d, its name %s in slot %d", key, ks, name, ns);
  ASSERT_EQ(rt_cluster_slot_owner(f->cl, ks), m);
}

/* As cfx_assert_beside, and key exists on m (a node that does not own the
 * slot would answer MOVED, which fails the test). */
static inline void cfx_assert_key_on(cfx_t *f, const char *key, const char *name, int m) {
  cfx_assert_beside(f, key, name, m);
  if (cfx_exists(f, m, key) != 1)
    FAIL("%s is not on node %d", key, m);
}

/* Keys on node i matching pattern (KEYS: each node answers for its own). */
static inline size_t cfx_keys(cfx_t *f, int i, const char *pattern, char *first, size_t cap) {
  redisReply *r = rt_cmd(cfx_srv(f, i), "KEYS %s", pattern);
  size_t n;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  n = r->elements;
  if (first != NULL && cap > 0) {
    first[0] = '\0';
    if (n > 0)
      snprintf(first, cap, "%s", r->element[0]->str);
  }
  freeReplyObject(r);
  return n;
}

/* Keys matching pattern over every up master. */
static inline size_t cfx_keys_all(cfx_t *f, const char *pattern) {
  size_t n = 0;
  int m[RT_CLUSTER_MAX_NODES];
  int k = rt_cluster_masters(f->cl, m, RT_CLUSTER_MAX_NODES);
  for (int i = 0; i < k; i++)
    n += cfx_keys(f, m[i], pattern, NULL, 0);
  return n;
}

/* ---- more clients ---- */

/* Another client on the fixture's loop, seeded at node `seed` (options o,
 * or NULL for defaults; o->port is set here), as another process would
 * be. Close it with fx_close_direct_client(&f->fx, c). */
static inline lk_client_t *cfx_client(cfx_t *f, int seed, lk_client_opts_t *o) {
  lk_client_opts_t defaults;
  lk_client_t *c = NULL;
  if (o == NULL) {
    lk_client_opts_init(&defaults);
    o = &defaults;
  }
  o->port = rt_cluster_port(f->cl, seed);
  ASSERT_OK(lk_client_new(&f->fx.loop, o, &c));
  return c;
}

/* ---- what a fault test watches ---- */

/* A lock's on_lost calls: how many, and when the first came. */
typedef struct cfx_lost_s {
  int n;
  uint64_t t_ns;
} cfx_lost_t;

/* One on_lost call into lost (every kind's callback below is this). */
static inline void cfx_lost_note(cfx_lost_t *lost, int status) {
  ASSERT_EQ(status, LK_ELEASELOST);
  if (lost->n++ == 0)
    lost->t_ns = uv_hrtime();
}

static inline void cfx_on_lost(lk_lock_t *l, int status, void *arg) {
  (void)l;
  cfx_lost_note(arg, status);
}

/* The same for the other kinds that hold a lease. */
static inline void cfx_on_lost_fair(lk_fair_t *o, int s, void *a) { (void)o; cfx_lost_note(a, s); }
static inline void cfx_on_lost_rw(lk_rwlock_t *o, int s, void *a) { (void)o; cfx_lost_note(a, s); }
static inline void cfx_on_lost_psem(lk_psem_t *o, int s, void *a) { (void)o; cfx_lost_note(a, s); }

/* A client's events (opts.on_event, event_arg): topology changes counted,
 * with the time of the first. */
typedef struct cfx_events_s {
  int topology, suspended;
  uint64_t topology_ns;
} cfx_events_t;

static inline void cfx_on_event(lk_client_t *c, lk_event_t e, void *arg) {
  cfx_events_t *ev = arg;
  (void)c;
  if (e == LK_EVENT_TOPOLOGY_CHANGED && ev->topology++ == 0)
    ev->topology_ns = uv_hrtime();
  if (e == LK_EVENT_SUSPENDED)
    ev->suspended++;
}

static inline lk_client_stats_t cfx_stats(lk_client_t *c) {
  lk_client_stats_t st;
  lk_client_get_stats(c, &st);
  return st;
}

/* Default client options whose events are counted into ev. */
static inline void cfx_event_opts(lk_client_opts_t *o, cfx_events_t *ev) {
  lk_client_opts_init(o);
  o->on_event = cfx_on_event;
  o->event_arg = ev;
}

/* Starts an acquire (wait_ms, lease_ms as lk_lock_opts_t) whose outcome
 * lands in *s (sx_cb); the caller runs the loop. */
static inline void cfx_acquire_start(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, int fenced,
                                     sx_t *s) {
  sx_start_fenced(l, wait_ms, lease_ms, fenced, s);
}

/* ---- a holder and a waiter ---- */

/* h's release of its last hold (the result says released, 1): returns
 * when it was sent (uv_hrtime). */
static inline uint64_t cfx_release_last(cfx_t *f, lk_lock_t *h) {
  uint64_t t0 = uv_hrtime();
  int64_t r = -1;
  ASSERT_OK(sx_run(&f->fx, lk_lock_release, h, &r));
  ASSERT_EQ(r, 1);
  return t0;
}

/* A lock held through a second client (another process, as far as the
 * cluster can tell) and waited for through the fixture's own: the set-up
 * of a test whose waiter must be let in by the release. */
typedef struct cfx_handoff_s {
  lk_client_t *hc;  /* the holder's client (cfx_client) */
  lk_lock_t *h, *w; /* the holder's lock and the waiter's */
  sx_t sh, sw;      /* their acquires */
  char name[64];
} cfx_handoff_t;

/* Names a lock whose slot master m owns (prefix) and has the holder, on
 * client hc, take it for lease_ms. */
static inline void cfx_handoff_hold(cfx_t *f, cfx_handoff_t *x, lk_client_t *hc, int m,
                                    const char *prefix, int64_t lease_ms) {
  memset(x, 0, sizeof(*x));
  x->hc = hc;
  cfx_name_on(f, m, prefix, x->name, sizeof x->name);
  ASSERT_OK(lk_lock_new(hc, x->name, &x->h));
  x->w = fx_lock(&f->fx, x->name);
  ASSERT_OK(sx_acquire_in(&f->fx.loop, x->h, 0, lease_ms, &x->sh));
}

/* Starts the waiter's acquire (into x->sw); the caller runs the loop. */
static inline void cfx_handoff_wait(cfx_handoff_t *x, int64_t wait_ms, int64_t lease_ms) {
  cfx_acquire_start(x->w, wait_ms, lease_ms, 0, &x->sw);
}

/* Closes both locks and the holder's client, then the fixture (the
 * waiter's hold released by the test first). */
static inline void cfx_handoff_finish(cfx_t *f, cfx_handoff_t *x) {
  fx_close_lock(&f->fx, x->h);
  fx_close_lock(&f->fx, x->w);
  fx_close_direct_client(&f->fx, x->hc);
  cfx_finish(f);
}

/* EXISTS key on node i, preceded by ASKING: what a node importing key's
 * slot holds (without ASKING it answers MOVED for that slot). */
static inline long long cfx_exists_asking(cfx_t *f, int i, const char *key) {
  redisReply *r = rt_cmd(cfx_srv(f, i), "ASKING");
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  return rt_cmd_int(cfx_srv(f, i), "EXISTS %s", key);
}

/* The channel a lock's waiters listen on (Redisson's prefixName: a name
 * with a brace is used as it is, others are wrapped in a hash tag). */
static inline void cfx_lock_channel(const char *name, char *out, size_t cap) {
  snprintf(out, cap, strchr(name, '{') != NULL ? "redisson_lock__channel:%s"
                                                : "redisson_lock__channel:{%s}",
           name);
}

/* ms since t_ns (uv_hrtime), signed. */
static inline double cfx_ms_since(uint64_t t_ns, uint64_t now_ns) {
  return (double)((int64_t)(now_ns - t_ns)) / 1e6;
}

/* Whether node i, a replica, has its link to its master up (a manual
 * failover needs it: the master waits for the replica to catch up). */
static inline int cfx_replica_link_up(cfx_t *f, int i) {
  char *v = rt_server_info(cfx_srv(f, i), "replication", "master_link_status");
  int up = v != NULL && strcmp(v, "up") == 0;
  free(v);
  return up;
}

/* CLUSTER FAILOVER (coordinated) on replica r. */
static inline void cfx_failover_ask(cfx_t *f, int r) {
  char *ok = rt_cmd_str(cfx_srv(f, r), "CLUSTER FAILOVER");
  ASSERT_STREQ(ok, "OK");
  free(ok);
}

/* CLUSTER FAILOVER on replica r while the loop runs (a blocking harness
 * wait would hold every callback back and bunch them up), until r says
 * ROLE master; check (or NULL) runs at every pass so an invariant is
 * watched during the switch. It is asked once r's link is up, and Redis drops a manual failover that has not
 * finished in 5 s without a word (a slow replica on a busy machine): it
 * is asked again after 6 s (scaled). Returns when promoted (uv_hrtime). */
static inline uint64_t cfx_failover_live(cfx_t *f, int r, void (*check)(void *), void *arg) {
  int64_t asked = 0, end = rt_now_ms() + rt_scaled_ms(30000);
  while (rt_cluster_is_master(f->cl, r) != 1) {
    if (rt_now_ms() > end)
      FAIL("node %d not promoted (%s)", r, asked ? "asked" : "its link to its master never up");
    if ((asked == 0 || rt_now_ms() - asked > rt_scaled_ms(6000)) && cfx_replica_link_up(f, r)) {
      if (asked != 0)
        fprintf(stderr, "note: failover of node %d not done after %lld ms, asked again\n", r,
                (long long)(rt_now_ms() - asked));
      cfx_failover_ask(f, r);
      asked = rt_now_ms();
    }
    for (int i = 0; i < 10; i++) {
      fx_spin(&f->fx, 2);
      if (check != NULL)
        check(arg);
    }
  }
  return uv_hrtime();
}

#endif /* LK_TEST_CLUSTER_FIXTURE_H */
