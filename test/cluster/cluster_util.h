/* Helpers shared by the cluster tests: slot maps read from a live cluster
 * through the library's own parser (src/core/topology.h). */
#ifndef LK_TEST_CLUSTER_UTIL_H
#define LK_TEST_CLUSTER_UTIL_H

#include <string.h>

#include "core/slot.h"
#include "core/topology.h"
#include "latchkey/errno.h"
#include "redis_cluster.h"
#include "test.h"

/* CLUSTER SHARDS (shards 1) or CLUSTER SLOTS (shards 0) of node i, parsed;
 * the parse must succeed. */
static inline lk__topo_t *cu_topo(rt_cluster_t *c, int i, int shards) {
  rt_server_t *s = rt_cluster_server(c, i);
  ASSERT_NOT_NULL(s);
  redisReply *r = rt_cmd(s, shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS");
  ASSERT_NOT_NULL(r);
  lk__topo_t *t = NULL;
  int rc = shards ? lk__topo_from_shards(r, "127.0.0.1", &t) : lk__topo_from_slots(r, "127.0.0.1", &t);
  freeReplyObject(r);
  ASSERT_OK(rc);
  ASSERT_NOT_NULL(t);
  return t;
}

/* The fixture's index of the node a map entry names (by node id). */
static inline int cu_index(rt_cluster_t *c, const lk__topo_node_t *n) {
  ASSERT_NOT_NULL(n);
  for (int i = 0; i < rt_cluster_size(c); i++)
    if (strcmp(rt_cluster_id(c, i), n->id) == 0)
      return i;
  FAIL("node %s (%s:%d) is not one of the fixture's", n->id, n->host, n->port);
}

/* Both maps name the same master (by id) for every slot. */
static inline void cu_assert_same_owners(const lk__topo_t *a, const lk__topo_t *b) {
  for (unsigned s = 0; s < LK__SLOTS; s++) {
    const lk__topo_node_t *x = lk__topo_slot_master(a, s), *y = lk__topo_slot_master(b, s);
    if ((x == NULL) != (y == NULL) || (x != NULL && strcmp(x->id, y->id) != 0))
      FAIL("slot %u: %s vs %s", s, x ? x->id : "none", y ? y->id : "none");
  }
  ASSERT_EQ(lk__topo_diff(a, b, NULL), 0);
}

/* Every slot the diff reports changed, and only those, went from node
 * `from` to node `to` (fixture indexes); with all, every slot `from` had
 * went. Returns how many changed. */
static inline size_t cu_assert_moved(rt_cluster_t *c, const lk__topo_t *before,
                                     const lk__topo_t *after, int from, int to, int all) {
  static uint8_t changed[LK__SLOTS / 8];
  size_t n = lk__topo_diff(before, after, changed), seen = 0;
  for (unsigned s = 0; s < LK__SLOTS; s++) {
    int was = cu_index(c, lk__topo_slot_master(before, s));
    int now = cu_index(c, lk__topo_slot_master(after, s));
    if (lk__topo_bit(changed, s)) {
      seen++;
      if (was != from || now != to)
        FAIL("slot %u reported changed: node %d -> %d, expected %d -> %d", s, was, now, from, to);
    } else if (was != now) {
      FAIL("slot %u moved (node %d -> %d) but the diff did not say so", s, was, now);
    } else if (all && was == from) {
      FAIL("slot %u stayed on node %d, which should have given all its slots up", s, from);
    }
  }
  ASSERT_EQ(seen, n);
  return n;
}

#endif /* LK_TEST_CLUSTER_UTIL_H */
