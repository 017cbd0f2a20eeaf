/* The reentrant lock on a 3-master cluster: routing by slot, redirections
 * followed, waiters woken across nodes (issue 14). */
#include <stdio.h>

#include "cluster_fixture.h"

/* Locks whose names live on each of the three masters: each acquire lands
 * on its slot's master and nowhere else, and the release removes it. */
TEST(lock_on_every_master) {
  cfx_t f;
  char names[3][64];
  lk_lock_t *l[3];
  lk_client_stats_t st;
  cfx_start(&f, 0, NULL);
  for (int i = 0; i < 3; i++) {
    cfx_name_on(&f, f.masters[i], "cl-lock-", names[i], sizeof names[i]);
    l[i] = fx_lock(&f.fx, names[i]);
    ASSERT_OK(sx_acquire(&f.fx, l[i], 0, 30000));
  }
  /* Each hold is on its own slot's master (the others answer MOVED). */
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(cfx_exists(&f, f.masters[i], names[i]), 1);
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[i], NULL));
    ASSERT_EQ(cfx_exists(&f, f.masters[i], names[i]), 0);
    fx_close_lock(&f.fx, l[i]);
  }
  lk_client_get_stats(f.fx.c, &st);
  ASSERT_GE(st.topology_refreshes, 1);
  cfx_finish(&f);
}

/* Seeded with a replica, which answers MOVED to every write: the client
 * follows the redirection and learns the map. */
TEST(seed_on_a_replica_follows_moved) {
  cfx_t f;
  char name[64];
  int replica;
  lk_client_stats_t st;
  cfx_start_cluster(&f, NULL);
  replica = rt_cluster_replica_of(f.cl, f.masters[1]);
  ASSERT_GE(replica, 0);
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.port = rt_cluster_port(f.cl, replica);
  o.cluster = LK_CLUSTER_ON;
  fx_start_client(&f.fx, &o);
  cfx_name_on(&f, f.masters[2], "cl-moved-", name, sizeof name);
  lk_lock_t *l = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, l, 0, 30000));
  ASSERT_EQ(cfx_exists(&f, f.masters[2], name), 1);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, l, NULL));
  ASSERT_EQ(cfx_exists(&f, f.masters[2], name), 0);
  lk_client_get_stats(f.fx.c, &st);
  ASSERT_GE(st.topology_refreshes, 1);
  cfx_finish_locks(&f, (lk_lock_t *[]){l, NULL});
}

/* b starts waiting (20 s) behind a's hold of name and listens on the
 * lock's channel; then a's release (its result into *r unless NULL) lets b
 * in within 2 s, well before b's re-poll. */
static void release_wakes_the_waiter(cfx_t *f, const char *name, lk_lock_t *a, lk_lock_t *b,
                                     int64_t *r) {
  sx_t sb;
  cfx_acquire_start(b, 20000, 30000, 0, &sb);
  /* b found the lock taken and listens before the release. */
  char channel[96];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  cfx_wait_subscribers(f, channel, 1);
  ASSERT_EQ(sb.done, 0);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(sx_run(&f->fx, lk_lock_release, a, r));
  rt_run_until(&f->fx.loop, &sb.done, rt_scaled_ms(10000));
  ASSERT_OK(sb.status);
  ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_scaled_ms(2000));
}

/* A waiter on a lock whose master is not the seed is let in when the
 * holder releases, well before its re-poll interval would have. */
TEST(waiter_is_woken_across_nodes) {
  cfx_t f;
  char name[64];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 30000; /* only the release message can wake it in time */
  cfx_start(&f, 0, &o);
  cfx_name_on(&f, f.masters[2], "cl-wake-", name, sizeof name);
  lk_lock_t *a = fx_lock(&f.fx, name), *b = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, a, 0, 30000));
  release_wakes_the_waiter(&f, name, a, b, NULL);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, b, NULL));
  cfx_finish_locks(&f, (lk_lock_t *[]){a, b, NULL});
}


/* Scripts are loaded when first needed (docs/client.md, "Connection
 * behaviour"): a fresh client whose lock lives on a master other than the
 * seed loads there only the two scripts it calls, not every script on every
 * node it talks to (about 121 commands when all were loaded at connect). */
TEST(fresh_client_loads_only_what_it_calls_on_a_non_seed_master) {
  cfx_t f;
  char name[64];
  lk_client_stats_t st;
  long long loads = 0;
  cfx_start(&f, 0, NULL);
  cfx_name_on(&f, f.masters[2], "cl-fresh-", name, sizeof name);
  lk_lock_t *l = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, l, 0, 30000));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, l, NULL));
  lk_client_get_stats(f.fx.c, &st);
  for (int i = 0; i < rt_cluster_size(f.cl); i++)
    loads += rt_server_cmd_calls(cfx_srv(&f, i), "script|load");
  printf("commands sent: %llu, SCRIPT LOADs on all nodes: %lld\n",
         (unsigned long long)st.commands_sent, loads);
  ASSERT_EQ(rt_server_cmd_calls(cfx_srv(&f, f.masters[2]), "script|load"), 2);
  ASSERT_LE(loads, 3); /* and the acquire's, if it went to the seed first */
  ASSERT_LE(st.commands_sent, 14);
  ASSERT_EQ(st.noscript_reloads, 0);
  cfx_finish_locks(&f, (lk_lock_t *[]){l, NULL});
}

/* The lean layout on a cluster (docs/lock.md, "Lean layout"): a name on a
 * master other than the seed holds the plain string there, a re-entry and
 * its release keep it, and the last release wakes a waiter on its sharded
 * channel. */
TEST(lean_layout_lock_and_wake_on_a_cluster) {
  cfx_t f;
  char name[64];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 30000; /* only the release message can wake it in time */
  o.lock_layout = LK_LOCK_LAYOUT_LEAN;
  cfx_start(&f, 0, &o);
  cfx_name_on(&f, f.masters[1], "cl-lean-", name, sizeof name);
  lk_lock_t *a = fx_lock(&f.fx, name), *b = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, a, 0, 30000));
  ASSERT_OK(sx_acquire(&f.fx, a, 0, 30000));
  char *v = rt_cmd_str(cfx_srv(&f, f.masters[1]), "GET %s", name);
  ASSERT_NOT_NULL(v);
  ASSERT_STREQ(v, lk_lock_owner(a));
  free(v);
  int64_t r = -1;
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, a, &r));
  ASSERT_EQ(r, 0);
  ASSERT_EQ(cfx_exists(&f, f.masters[1], name), 1);
  release_wakes_the_waiter(&f, name, a, b, &r);
  ASSERT_EQ(r, 1);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, b, NULL));
  ASSERT_EQ(cfx_exists(&f, f.masters[1], name), 0);
  cfx_finish_locks(&f, (lk_lock_t *[]){a, b, NULL});
}
