/* MultiLock and RedLock with a 3-master cluster (issue 14).
 *
 * A MultiLock's members may sit on different slots and different masters of
 * a cluster: each member is a lock routed by its own name, so all-or-nothing
 * holds across masters; members that share a hash tag share a slot.
 *
 * A RedLock is a quorum over independent deployments: a member may be a
 * client of a cluster, whose vote is the master owning the name's slot
 * (docs/multilock.md). Tested with one cluster and two standalone servers;
 * and a RedLock over three clients of one cluster, which are not
 * independent (they all reach the one master owning the slot), never gets
 * a quorum and leaves nothing behind. */
#include <stdio.h>
#include <stdlib.h>

#include "cluster_fixture.h"
#include "multi_fixture.h"

#define LEASE 30000
#define WAIT 20000

/* HGET name owner on node m as a number (0 when absent). */
static long long holds_on(rt_server_t *s, const char *name, const char *owner) {
  char *v = rt_cmd_str(s, "HGET %s %s", name, owner);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

static int ml_acquire(cfx_t *f, lk_multilock_t *ml, int64_t wait_ms, mx_t *s) {
  return mx_ml_acquire_in(&f->fx.loop, ml, wait_ms, LEASE, s);
}

static int ml_release(cfx_t *f, lk_multilock_t *ml) { return mx_ml_release_in(&f->fx.loop, ml); }

static void ml_close(cfx_t *f, lk_multilock_t *ml) { mx_ml_close_in(&f->fx.loop, ml); }

/* ---- MultiLock ---------------------------------------------------------------------------- */

/* Five members: one name on each master, and two names sharing a hash tag
 * (one slot, on master 0). Group A takes all five at once; group B, on
 * another client and asking for the same names, gets none of them; with
 * one member taken by a lone lock, A takes nothing, then waits and gets
 * all five when that lock is released. */
TEST(multilock_spans_slots_and_masters_all_or_nothing) {
  enum { N = 5 };
  cfx_t f;
  char names[N][64], tag[48];
  int owner[N];
  cfx_start(&f, 0, NULL);
  lk_client_t *c2 = cfx_client(&f, f.masters[1], NULL);
  cfx_names(&f, "cl-ml-", names);
  cfx_name_on(&f, f.masters[0], "cl-ml-tag-", tag, sizeof tag);
  snprintf(names[3], sizeof names[3], "{%s}.a", tag);
  snprintf(names[4], sizeof names[4], "{%s}.b", tag);
  ASSERT_EQ(cfx_slot(&f, names[3]), cfx_slot(&f, names[4]));
  ASSERT_EQ(cfx_slot(&f, names[3]), cfx_slot(&f, tag));
  for (int i = 0; i < N; i++)
    owner[i] = i < 3 ? f.masters[i] : f.masters[0];
  ASSERT_NE(cfx_slot(&f, names[0]), cfx_slot(&f, names[3]));

  lk_lock_t *a[N], *b[N];
  for (int i = 0; i < N; i++) {
    a[i] = fx_lock(&f.fx, names[i]);
    ASSERT_OK(lk_lock_new(c2, names[i], &b[i]));
  }
  lk_multilock_t *ma = NULL, *mb = NULL;
  ASSERT_OK(lk_multilock_new(a, N, &ma));
  ASSERT_OK(lk_multilock_new(b, N, &mb));
  mx_t s, sb;

  ASSERT_OK(ml_acquire(&f, ma, 0, &s));
  ASSERT(s.held);
  for (int i = 0; i < N; i++) {
    cfx_assert_key_on(&f, names[i], names[i], owner[i]);
    ASSERT_EQ(holds_on(cfx_srv(&f, owner[i]), names[i], lk_lock_owner(a[i])), 1);
  }
  /* B: refused, holding nothing anywhere. */
  ASSERT_EQ(ml_acquire(&f, mb, 0, &sb), LK_ETIMEDOUT);
  ASSERT(!lk_multilock_is_held(mb));
  for (int i = 0; i < N; i++)
    ASSERT_EQ(holds_on(cfx_srv(&f, owner[i]), names[i], lk_lock_owner(b[i])), 0);
  ASSERT_OK(ml_release(&f, ma));
  for (int i = 0; i < N; i++)
    ASSERT_EQ(cfx_exists(&f, owner[i], names[i]), 0);

  /* One member (the second tagged name) taken by a lone lock of B's
   * client: A takes nothing at once, then gets all of them once it goes. */
  lk_lock_t *lone = NULL;
  ASSERT_OK(lk_lock_new(c2, names[4], &lone));
  ASSERT_OK(sx_acquire(&f.fx, lone, 0, LEASE));
  ASSERT_EQ(ml_acquire(&f, ma, 0, &s), LK_ETIMEDOUT);
  ASSERT_EQ(lk_multilock_member_status(ma, 4), LK_ETIMEDOUT);
  for (int i = 0; i < 4; i++)
    ASSERT_EQ(cfx_exists(&f, owner[i], names[i]), 0);
  lk_multilock_opts_t o;
  lk_multilock_opts_init(&o);
  o.wait_ms = WAIT;
  o.lease_ms = LEASE;
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_multilock_acquire(ma, &o, mx_ml_cb, &s));
  fx_spin(&f.fx, 50);
  ASSERT_EQ(s.done, 0);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, lone, NULL));
  rt_run_until(&f.fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  for (int i = 0; i < N; i++)
    ASSERT_EQ(holds_on(cfx_srv(&f, owner[i]), names[i], lk_lock_owner(a[i])), 1);
  ASSERT_OK(ml_release(&f, ma));
  for (int i = 0; i < N; i++)
    ASSERT_EQ(cfx_exists(&f, owner[i], names[i]), 0);

  fx_close_lock(&f.fx, lone);
  ml_close(&f, ma);
  ml_close(&f, mb);
  for (int i = 0; i < N; i++) {
    fx_close_lock(&f.fx, a[i]);
    fx_close_lock(&f.fx, b[i]);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- RedLock ------------------------------------------------------------------------------ */

static int rl_acquire(cfx_t *f, lk_redlock_t *rl, int64_t wait_ms, int fenced, mx_t *s) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = LEASE;
  o.node_timeout_ms = rt_scaled_ms(300);
  o.fenced = fenced;
  return mx_rl_acquire_opts_in(&f->fx.loop, rl, &o, s);
}

static int rl_release(cfx_t *f, lk_redlock_t *rl) { return mx_rl_release_in(&f->fx.loop, rl); }

static void rl_close(cfx_t *f, lk_redlock_t *rl) { mx_rl_close_in(&f->fx.loop, rl); }

/* Runs the loop until every master asked has answered (the attempt is
 * decided at the quorum; later grants are kept as extra holders). */
static void rl_settle(cfx_t *f, lk_redlock_t *rl) {
  for (size_t i = 0; i < lk_redlock_size(rl); i++)
    FX_EVENTUALLY(&f->fx, lk_redlock_node_status(rl, i) != LK_EUNKNOWN, 5000);
}

static lk_client_t *standalone_client(cfx_t *f, rt_server_t *s) {
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  lk_client_opts_init(&o);
  o.port = rt_server_port(s);
  ASSERT_OK(lk_client_new(&f->fx.loop, &o, &c));
  return c;
}

static void wait_connected(cfx_t *f, lk_client_t *const *set, int n) {
  for (int i = 0; i < n; i++)
    FX_EVENTUALLY(&f->fx, lk_client_is_connected(set[i]), 10000);
}

/* Masters of RedLock rl holding name for it: the cluster member's vote is
 * on node `cl_node`, the standalone members' on s1 and s2. */
static int holding(cfx_t *f, lk_redlock_t *rl, int cl_node, rt_server_t *s1, rt_server_t *s2) {
  rt_server_t *srv[3] = {cfx_srv(f, cl_node), s1, s2};
  int k = 0;
  for (int i = 0; i < 3; i++)
    if (holds_on(srv[i], lk_redlock_name(rl),
                 lk_lock_owner(lk_redlock_node_lock(rl, (size_t)i))) > 0)
      k++;
  return k;
}

/* Members: a client of the cluster and two standalone servers. The
 * cluster's vote lands on the master that owns the name's slot; a second
 * RedLock (other clients, same deployments) is kept out and let in by the
 * release; fencing tokens increase, the cluster's counter beside the name;
 * after a failover of the slot's master the cluster member abstains for
 * the quarantine, as after a restart; with the slot's master killed, the
 * two standalone votes still make a quorum. Three clients of the one cluster, seeded at three masters, are
 * not independent: they reach the same master, so such a RedLock never
 * gets a quorum. */
TEST(redlock_with_a_cluster_member_and_two_standalone_servers) {
  cfx_t f;
  char name[64], key[96];
  lk_client_opts_t co;
  lk_client_opts_init(&co);
  co.cluster_refresh_ms = 200; /* sees the failover below soon */
  cfx_start(&f, 0, &co);
  rt_server_t *s1 = rt_server_start(NULL), *s2 = rt_server_start(NULL);
  ASSERT_NOT_NULL(s1);
  ASSERT_NOT_NULL(s2);
  /* The name's slot is on a master that is not the seed. */
  int node = f.masters[1];
  cfx_name_on(&f, node, "cl-redlock-", name, sizeof name);
  lk_client_t *ca[3] = {f.fx.c, standalone_client(&f, s1), standalone_client(&f, s2)};
  lk_client_t *cb[3] = {cfx_client(&f, f.masters[2], NULL), standalone_client(&f, s1),
                        standalone_client(&f, s2)};
  wait_connected(&f, ca, 3);
  wait_connected(&f, cb, 3);
  lk_redlock_t *ra = NULL, *rb = NULL;
  ASSERT_OK(lk_redlock_new(ca, 3, name, NULL, &ra));
  ASSERT_OK(lk_redlock_new(cb, 3, name, NULL, &rb));
  mx_t s, sb;

  ASSERT_OK(rl_acquire(&f, ra, 0, 1, &s));
  ASSERT(s.held);
  rl_settle(&f, ra);
  ASSERT_EQ(lk_redlock_votes(ra), 3);
  ASSERT_EQ(holding(&f, ra, node, s1, s2), 3);
  cfx_assert_key_on(&f, name, name, node);
  int64_t t1 = s.token;
  ASSERT_GT(t1, 0);
  snprintf(key, sizeof key, "redisson_lock_token:{%s}", name);
  cfx_assert_key_on(&f, key, name, node);

  /* The other RedLock: refused at once, then let in by the release. */
  ASSERT_EQ(rl_acquire(&f, rb, 0, 1, &sb), LK_ETIMEDOUT);
  ASSERT_EQ(holding(&f, rb, node, s1, s2), 0);
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = WAIT;
  o.lease_ms = LEASE;
  o.node_timeout_ms = rt_scaled_ms(300);
  o.fenced = 1;
  memset(&sb, 0, sizeof sb);
  ASSERT_OK(lk_redlock_acquire(rb, &o, mx_rl_cb, &sb));
  fx_spin(&f.fx, 50);
  ASSERT_EQ(sb.done, 0);
  ASSERT_OK(rl_release(&f, ra));
  rt_run_until(&f.fx.loop, &sb.done, 10000);
  ASSERT_OK(sb.status);
  ASSERT_GT(sb.token, t1);
  rl_settle(&f, rb);
  ASSERT_EQ(holding(&f, rb, node, s1, s2), 3);
  ASSERT_OK(rl_release(&f, rb));
  ASSERT_EQ(cfx_exists(&f, node, name), 0);

  /* Three clients of one cluster: one master answers for all three. */
  lk_client_t *cc[3];
  for (int i = 0; i < 3; i++)
    cc[i] = cfx_client(&f, f.masters[i], NULL);
  wait_connected(&f, cc, 3);
  lk_redlock_t *rc = NULL;
  ASSERT_OK(lk_redlock_new(cc, 3, name, NULL, &rc));
  mx_t sc;
  int st = rl_acquire(&f, rc, 0, 0, &sc);
  ASSERT(st == LK_ETIMEDOUT || st == LK_ENOQUORUM);
  ASSERT(!lk_redlock_is_held(rc));
  FX_EVENTUALLY(&f.fx, cfx_exists(&f, node, name) == 0, 5000);
  rl_close(&f, rc);
  for (int i = 0; i < 3; i++)
    fx_close_direct_client(&f.fx, cc[i]);

  /* The slot's master fails over. Replication is asynchronous, so to the
   * RedLock this is a restart without persistence of that member: it
   * abstains for the quarantine, and the standalone servers make the
   * quorum. */
  int replica = rt_cluster_replica_of(f.cl, node);
  ASSERT_GE(replica, 0);
  ASSERT_OK(rt_cluster_failover(f.cl, replica, NULL));
  FX_EVENTUALLY(&f.fx, lk_redlock_node_quarantined(ra, 0), 10000);
  ASSERT_OK(rl_acquire(&f, ra, 0, 0, &s));
  ASSERT_EQ(lk_redlock_votes(ra), 2);
  ASSERT_EQ(lk_redlock_node_status(ra, 0), LK_ENOQUORUM);
  ASSERT_OK(rl_release(&f, ra));
  node = replica;

  /* The slot's master dies: the standalone servers still make a quorum. */
  rt_cluster_kill(f.cl, node);
  ASSERT_OK(rl_acquire(&f, ra, 0, 0, &s));
  /* Decided at the quorum: the dead master cannot have granted. (Its
   * status stays LK_EUNKNOWN: its try ended with an unknown outcome, which
   * reads the same as "no answer yet".) */
  ASSERT_EQ(lk_redlock_votes(ra), 2);
  ASSERT_NE(lk_redlock_node_status(ra, 0), 0);
  ASSERT_EQ(holds_on(s1, name, lk_lock_owner(lk_redlock_node_lock(ra, 1))), 1);
  ASSERT_EQ(holds_on(s2, name, lk_lock_owner(lk_redlock_node_lock(ra, 2))), 1);
  ASSERT_OK(rl_release(&f, ra));

  rl_close(&f, ra);
  rl_close(&f, rb);
  for (int i = 1; i < 3; i++)
    fx_close_direct_client(&f.fx, ca[i]);
  for (int i = 0; i < 3; i++)
    fx_close_direct_client(&f.fx, cb[i]);
  rt_server_stop(s1);
  rt_server_stop(s2);
  cfx_finish(&f);
}
