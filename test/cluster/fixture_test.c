/* The cluster fixture (test/harness/redis_cluster.h) tested on itself, and
 * the slot map (src/core/topology.h) checked against what a real cluster
 * does: a failover, a kill -9, a slot migration, nodes added and removed.
 * One cluster per case (each case is its own process). The server binary is
 * $LK_REDIS_SERVER (redis-server by default; valkey-server works too). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster_util.h"
#include "server_faults.h"

static rt_cluster_t *start(void) {
  int64_t t0 = rt_now_ms();
  rt_cluster_t *c = rt_cluster_start(NULL);
  ASSERT_NOT_NULL(c);
  fprintf(stderr, "note: %s cluster of %d nodes ready in %lld ms\n",
          rt_cluster_is_valkey(c) ? "valkey" : "redis", rt_cluster_size(c),
          (long long)(rt_now_ms() - t0));
  return c;
}

/* A master and the replica that follows it. */
static void pick_pair(rt_cluster_t *c, int *master, int *replica) {
  int m[8];
  ASSERT_GE(rt_cluster_masters(c, m, 8), 1);
  *master = m[0];
  *replica = rt_cluster_replica_of(c, *master);
  ASSERT_GE(*replica, 0);
}

static void set_key(rt_cluster_t *c, int node, const char *key, const char *value) {
  char *ok = rt_cmd_str(rt_cluster_server(c, node), "SET %s %s", key, value);
  ASSERT_STREQ(ok, "OK");
  free(ok);
}

TEST(starts_three_masters_with_a_replica_each_and_stops_every_process) {
  rt_cluster_t *c = start();
  ASSERT_EQ(rt_cluster_size(c), 6);
  int m[8];
  ASSERT_EQ(rt_cluster_masters(c, m, 8), 3);
  int replicas_of[6] = {0};
  for (int i = 0; i < 6; i++) {
    ASSERT(rt_cluster_up(c, i));
    ASSERT_EQ(strlen(rt_cluster_id(c, i)), 40);
    ASSERT_EQ(rt_cluster_index_of_port(c, rt_cluster_port(c, i)), i);
    if (rt_cluster_is_master(c, i) == 0) {
      int of = rt_cluster_master_of(c, i);
      ASSERT_GE(of, 0);
      ASSERT_EQ(rt_cluster_is_master(c, of), 1);
      replicas_of[of]++;
    }
  }
  for (int k = 0; k < 3; k++)
    ASSERT_EQ(replicas_of[m[k]], 1);

  /* The owner the fixture names accepts the key; another master redirects. */
  char key[64];
  int slot = rt_cluster_key_on(c, m[1], "owned-", key, sizeof key);
  ASSERT_GE(slot, 0);
  ASSERT_EQ(rt_cluster_slot_owner(c, slot), m[1]);
  set_key(c, m[1], key, "v");
  redisReply *r = rt_cmd(rt_cluster_server(c, m[0]), "GET %s", key);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  char want[96];
  snprintf(want, sizeof want, "MOVED %d 127.0.0.1:%d", slot, rt_cluster_port(c, m[1]));
  ASSERT_STREQ(r->str, want);
  freeReplyObject(r);

  /* SIGSTOP / SIGCONT of a replica: left out of queries while stopped. */
  int replica = rt_cluster_replica_of(c, m[2]);
  rt_cluster_pause(c, replica);
  ASSERT(!rt_cluster_up(c, replica));
  ASSERT_EQ(rt_cluster_is_master(c, replica), -1);
  rt_cluster_resume(c, replica);
  ASSERT(rt_cluster_up(c, replica));
  ASSERT_OK(rt_cluster_wait_stable(c, 10000));

  pid_t pids[6];
  char dirs[6][512];
  for (int i = 0; i < 6; i++) {
    pids[i] = rt_server_pid(rt_cluster_server(c, i));
    ASSERT_GT(pids[i], 0);
    snprintf(dirs[i], sizeof dirs[i], "%s", rt_server_dir(rt_cluster_server(c, i)));
  }
  rt_cluster_stop(c);
  for (int i = 0; i < 6; i++) {
    struct stat st;
    errno = 0;
    ASSERT_EQ(kill(pids[i], 0), -1); /* killed and reaped: no such process */
    ASSERT_EQ(errno, ESRCH);
    ASSERT_NE(stat(dirs[i], &st), 0);
  }
}

/* The named vectors of the slot function, asked of a real cluster. */
TEST(cluster_keyslot_agrees_with_lk_key_slot) {
  rt_cluster_t *c = start();
  static const struct {
    const char *key;
    int slot;
  } v[] = {{"123456789", 12739},       {"foo", 12182},          {"{user1000}.following", 3443},
           {"{user1000}.followers", 3443}, {"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015},
           {"{bar", 4015},              {"foo{bar}{zap}", 5061}, {"bar", 5061},
           {"", 0}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    size_t len = strlen(v[i].key);
    ASSERT_EQ(rt_cluster_key_slot(c, v[i].key, len), v[i].slot);
    ASSERT_EQ(lk__key_slot(v[i].key, len), v[i].slot);
  }
  rt_cluster_stop(c);
}

/* CLUSTER SHARDS and CLUSTER SLOTS from every node give one map: every slot
 * covered, three masters with one replica each, all the fixture's nodes. */
TEST(shards_and_slots_replies_parse_to_the_same_map) {
  rt_cluster_t *c = start();
  lk__topo_t *first = NULL;
  for (int i = 0; i < 6; i++) {
    for (int shards = 1; shards >= 0; shards--) {
      lk__topo_t *t = cu_topo(c, i, shards);
      ASSERT_EQ(t->covered, LK__SLOTS);
      ASSERT_EQ(t->n_masters, 3);
      ASSERT_EQ(t->n_nodes, 6);
      for (size_t k = 0; k < t->n_nodes; k++) {
        const lk__topo_node_t *n = &t->nodes[k];
        int idx = cu_index(c, n);
        ASSERT_STREQ(n->host, "127.0.0.1");
        ASSERT_EQ(n->port, rt_cluster_port(c, idx));
        ASSERT_EQ(n->tls_port, 0);
        ASSERT_EQ(n->role == LK__TOPO_MASTER, rt_cluster_is_master(c, idx) == 1);
        if (n->role == LK__TOPO_MASTER) {
          ASSERT_EQ(n->n_replicas, 1);
          ASSERT_EQ(n->master, LK__TOPO_NONE);
          ASSERT_GT(n->n_slots, 0);
          ASSERT_EQ(n->health, LK__TOPO_ONLINE);
        } else {
          ASSERT_NE(n->master, LK__TOPO_NONE);
          ASSERT_EQ(cu_index(c, &t->nodes[n->master]), rt_cluster_master_of(c, idx));
          ASSERT_EQ(n->n_slots, 0);
        }
        ASSERT_EQ(lk__topo_find(t, "127.0.0.1", n->port), (int)k);
        ASSERT_EQ(lk__topo_find_id(t, n->id), (int)k);
      }
      /* Spot checks against the cluster's own answer. */
      for (unsigned s = 0; s < LK__SLOTS; s += 1021)
        ASSERT_EQ(cu_index(c, lk__topo_slot_master(t, s)), rt_cluster_slot_owner(c, (int)s));
      if (first == NULL) {
        first = t;
      } else {
        cu_assert_same_owners(first, t);
        lk__topo_free(t);
      }
    }
  }
  lk__topo_free(first);
  rt_cluster_stop(c);
}

/* CLUSTER FAILOVER on one replica: the map diff names exactly the slots of
 * its old master, now its own. */
TEST(failover_changes_exactly_the_old_masters_slots) {
  rt_cluster_t *c = start();
  int master, replica;
  pick_pair(c, &master, &replica);
  lk__topo_t *before = cu_topo(c, 0, 1);
  uint32_t had = before->nodes[lk__topo_find_id(before, rt_cluster_id(c, master))].n_slots;
  int64_t t0 = rt_now_ms();
  ASSERT_OK(rt_cluster_failover(c, replica, NULL));
  fprintf(stderr, "note: CLUSTER FAILOVER done and stable in %lld ms\n",
          (long long)(rt_now_ms() - t0));
  ASSERT_EQ(rt_cluster_is_master(c, replica), 1);
  ASSERT_EQ(rt_cluster_master_of(c, master), replica); /* the old master follows it */
  for (int shards = 1; shards >= 0; shards--) {
    lk__topo_t *after = cu_topo(c, 0, shards);
    ASSERT_EQ(cu_assert_moved(c, before, after, master, replica, 1), had);
    lk__topo_free(after);
  }
  lk__topo_free(before);
  rt_cluster_stop(c);
}

/* kill -9 of a master: its replica is elected within a bounded wait (node
 * timeout 2 s, then the election), and the map diff names the old master's
 * slots. On Valkey 8 the dead master stays listed in its shard beside the
 * new one; the parser must pick the live one. */
TEST(killed_master_is_replaced_by_its_replica) {
  rt_cluster_t *c = start();
  int master, replica;
  pick_pair(c, &master, &replica);
  lk__topo_t *before = cu_topo(c, replica, 1);
  uint32_t had = before->nodes[lk__topo_find_id(before, rt_cluster_id(c, master))].n_slots;
  int64_t t0 = rt_now_ms();
  rt_cluster_kill(c, master);
  ASSERT(!rt_cluster_up(c, master));
  ASSERT_OK(rt_cluster_wait_master(c, replica, 20000));
  int64_t took = rt_now_ms() - t0;
  ASSERT_OK(rt_cluster_wait_stable(c, 20000));
  fprintf(stderr, "note: replica promoted %lld ms after kill -9 (stable after %lld ms)\n",
          (long long)took, (long long)(rt_now_ms() - t0));
  ASSERT_LE(took, rt_scaled_ms(20000));
  for (int shards = 1; shards >= 0; shards--) {
    lk__topo_t *after = cu_topo(c, replica, shards);
    ASSERT_EQ(cu_assert_moved(c, before, after, master, replica, 1), had);
    if (shards) {
      /* The dead node is still known, as a failed master with no slots. */
      int dead = lk__topo_find_id(after, rt_cluster_id(c, master));
      ASSERT_GE(dead, 0);
      ASSERT_EQ(after->nodes[dead].health, LK__TOPO_FAILED);
      ASSERT_EQ(after->nodes[dead].n_slots, 0);
    }
    lk__topo_free(after);
  }
  lk__topo_free(before);
  rt_cluster_stop(c);
}

/* One slot migrated in steps: ASK for a moved key in the middle, then the
 * diff names exactly that slot. */
TEST(slot_migration_moves_one_slot_with_ask_in_between) {
  rt_cluster_t *c = start();
  int m[8];
  ASSERT_EQ(rt_cluster_masters(c, m, 8), 3);
  char key[64];
  int slot = rt_cluster_key_on(c, m[0], "mig-", key, sizeof key);
  ASSERT_GE(slot, 0);
  /* Two keys in that slot (one hash tag), so one can move before the other. */
  char k1[96], k2[96];
  snprintf(k1, sizeof k1, "{%s}:one", key);
  snprintf(k2, sizeof k2, "{%s}:two", key);
  ASSERT_EQ(rt_cluster_key_slot(c, k1, strlen(k1)), slot);
  set_key(c, m[0], k1, "1");
  set_key(c, m[0], k2, "2");
  lk__topo_t *before = cu_topo(c, m[2], 1);

  ASSERT_OK(rt_cluster_migrate_start(c, slot, m[1]));
  ASSERT_EQ(rt_cluster_migrate_keys(c, slot, 1), 1);
  /* The source answers ASK for the key it no longer has and still serves
   * the one it has; the target serves the moved key only after ASKING. */
  rt_server_t *src = rt_cluster_server(c, m[0]), *dst = rt_cluster_server(c, m[1]);
  int moved_is_k1 = rt_server_count_keys(dst, k1) == 1;
  const char *moved = moved_is_k1 ? k1 : k2, *kept = moved_is_k1 ? k2 : k1;
  redisReply *r = rt_cmd(src, "GET %s", moved);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  char want[96];
  snprintf(want, sizeof want, "ASK %d 127.0.0.1:%d", slot, rt_cluster_port(c, m[1]));
  ASSERT_STREQ(r->str, want);
  freeReplyObject(r);
  char *v = rt_cmd_str(src, "GET %s", kept);
  ASSERT_STREQ(v, moved_is_k1 ? "2" : "1");
  free(v);
  r = rt_cmd(dst, "GET %s", moved);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  ASSERT_EQ(strncmp(r->str, "MOVED ", 6), 0);
  freeReplyObject(r);
  /* The map does not change during the migration. */
  lk__topo_t *during = cu_topo(c, m[2], 1);
  ASSERT_EQ(lk__topo_diff(before, during, NULL), 0);
  lk__topo_free(during);

  ASSERT_OK(rt_cluster_migrate_finish(c, slot));
  ASSERT_EQ(rt_cluster_slot_owner(c, slot), m[1]);
  v = rt_cmd_str(dst, "GET %s", kept);
  ASSERT_STREQ(v, moved_is_k1 ? "2" : "1");
  free(v);
  for (int shards = 1; shards >= 0; shards--) {
    lk__topo_t *after = cu_topo(c, m[2], shards);
    ASSERT_EQ(cu_assert_moved(c, before, after, m[0], m[1], 0), 1);
    ASSERT_EQ(lk__topo_slot_index(after, (unsigned)slot),
              lk__topo_find_id(after, rt_cluster_id(c, m[1])));
    lk__topo_free(after);
  }
  lk__topo_free(before);
  rt_cluster_stop(c);
}

/* A fourth master joins, takes one slot, gives it back and leaves; a second
 * replica joins a master and leaves. */
TEST(nodes_are_added_and_removed) {
  rt_cluster_t *c = start();
  int m[8];
  ASSERT_EQ(rt_cluster_masters(c, m, 8), 3);
  int fresh = rt_cluster_add_node(c, -1);
  ASSERT_EQ(fresh, 6);
  ASSERT_EQ(rt_cluster_is_master(c, fresh), 1);
  lk__topo_t *t = cu_topo(c, 0, 1);
  ASSERT_EQ(t->n_nodes, 7);
  ASSERT_EQ(t->n_masters, 4);
  ASSERT_EQ(t->nodes[lk__topo_find_id(t, rt_cluster_id(c, fresh))].n_slots, 0);

  int owner0 = cu_index(c, lk__topo_slot_master(t, 0));
  ASSERT_OK(rt_cluster_migrate_slot(c, 0, fresh));
  lk__topo_t *moved = cu_topo(c, 0, 1);
  ASSERT_EQ(cu_assert_moved(c, t, moved, owner0, fresh, 0), 1);
  ASSERT_OK(rt_cluster_migrate_slot(c, 0, owner0));
  lk__topo_t *back = cu_topo(c, 0, 1);
  ASSERT_EQ(lk__topo_diff(t, back, NULL), 0);
  lk__topo_free(moved);
  lk__topo_free(back);
  lk__topo_free(t);

  int extra = rt_cluster_add_node(c, m[0]);
  ASSERT_EQ(extra, 7);
  ASSERT_EQ(rt_cluster_master_of(c, extra), m[0]);
  t = cu_topo(c, 1, 0);
  ASSERT_EQ(t->nodes[lk__topo_find_id(t, rt_cluster_id(c, m[0]))].n_replicas, 2);
  lk__topo_free(t);

  ASSERT_OK(rt_cluster_remove_node(c, extra));
  ASSERT_OK(rt_cluster_remove_node(c, fresh));
  ASSERT_NULL(rt_cluster_server(c, fresh));
  t = cu_topo(c, 0, 1);
  ASSERT_EQ(t->n_nodes, 6);
  ASSERT_EQ(t->n_masters, 3);
  ASSERT_EQ(t->covered, LK__SLOTS);
  lk__topo_free(t);
  rt_cluster_stop(c);
}
