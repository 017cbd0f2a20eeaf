/* How soon a holder learns that the replica of a master killed with kill -9
 * took over (issue 25). While a master that owns slots is unreachable the
 * client re-reads the slot map from the other nodes on a short period
 * (docs/client.md, "Failover and holds"), so the window from the promotion
 * to the holder's verification no longer waits for its reconnect backoff
 * or its periodic read.
 *
 * The holder's client here has both long (10 s): before, it learnt of the
 * promotion only when one of them came round, seconds after the promotion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"

/* Emptied replica: the hold it never received is lost at the promotion
 * (see cluster_failover.c). */
static void empty_replica(cfx_t *f, int replica) {
  const char *steps[3] = {"CONFIG SET replica-read-only no", "FLUSHALL",
                          "CONFIG SET replica-read-only yes"};
  for (int i = 0; i < 3; i++) {
    char *ok = rt_cmd_str(cfx_srv(f, replica), steps[i]);
    ASSERT_STREQ(ok, "OK");
    free(ok);
  }
}

/* Kills master m (the seed when kill_seed) of a client holding a lock on
 * it, and checks the holder reports the lost hold soon after m's replica
 * takes over. pause_others: the other masters are stopped right after
 * the kill until the client's dials to them for the map have failed (each
 * by the default 2 s connect timeout, long enough for a loaded machine's
 * handshakes once they are back; each then waits out its 10 s reconnect
 * backoff unless a map read cuts it short). */
/* The client's log, timed from the test's start: what the router did is
 * in the test's output when the map is seen late (or not at all). */
static uint64_t g_log_t0;
static void log_timed(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level >= LK_LOG_INFO)
    fprintf(stderr, "log +%.0f ms: %s\n", (double)(uv_hrtime() - g_log_t0) / 1e6, msg);
}

/* A client holding a lock on master m (the seed, else another master)
 * whose replica r was emptied, so the hold is lost at r's promotion. */
typedef struct {
  cfx_t f;
  cfx_events_t ev;
  cfx_lost_t lost;
  lk_lock_t *a;
  int m, r;
} holder_t;

/* o: the holder's client options (the event callback is set here).
 * no_failover: r takes over only when told (CLUSTER FAILOVER). */
static void hold_on_master(holder_t *h, lk_client_opts_t *o, int on_seed, int no_failover) {
  char name[64];
  memset(h, 0, sizeof *h);
  o->on_event = cfx_on_event;
  o->event_arg = &h->ev;
  cfx_start(&h->f, 0, o);
  ASSERT_EQ(rt_cluster_is_master(h->f.cl, 0), 1); /* the seed */
  for (int i = 0; !on_seed && i < h->f.n_masters; i++)
    if (h->f.masters[i] != 0)
      h->m = h->f.masters[i];
  h->r = rt_cluster_replica_of(h->f.cl, h->m);
  ASSERT_GE(h->r, 0);
  if (no_failover) {
    char *ok = rt_cmd_str(cfx_srv(&h->f, h->r), "CONFIG SET cluster-replica-no-failover yes");
    ASSERT_STREQ(ok, "OK");
    free(ok);
  }
  cfx_name_on(&h->f, h->m, "promo-", name, sizeof name);
  h->a = fx_lock(&h->f.fx, name);
  ASSERT_OK(lk_lock_set_lost_cb(h->a, cfx_on_lost, &h->lost));
  ASSERT_OK(sx_acquire(&h->f.fx, h->a, 0, LK_LEASE_DEFAULT));
  empty_replica(&h->f, h->r);
  /* The hold on the seed needed no map; the client must have read one to
   * know any other node: a seed killed before the first map arrives leaves
   * a one-seed client nobody to ask (docs/client.md). Under load that read
   * could still be on its way here. */
  FX_EVENTUALLY(&h->f.fx, cfx_stats(h->f.fx.c).topology_refreshes >= 1, 20000);
}

static void kill_and_watch(int kill_seed, int pause_others) {
  holder_t h;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 10000;
  o.reconnect_max_ms = 10000;
  o.cluster_refresh_ms = 10000;
  o.log = log_timed;
  g_log_t0 = uv_hrtime();
  hold_on_master(&h, &o, kill_seed, 0);
  int m = h.m, r = h.r;
  lk_lock_t *a = h.a;
  uint64_t before = cfx_stats(h.f.fx.c).reconnects;
  uint64_t t_kill = uv_hrtime();
  fprintf(stderr, "test +%.0f ms: killing master %d\n", (double)(t_kill - g_log_t0) / 1e6, m);
  rt_cluster_kill(h.f.cl, m);
  if (pause_others) {
    for (int i = 0; i < h.f.n_masters; i++)
      if (h.f.masters[i] != m)
        rt_cluster_pause(h.f.cl, h.f.masters[i]);
    /* The seed's connection dropped, then both other masters' dials
     * failed (each is a command connection gone to its backoff). */
    FX_EVENTUALLY(&h.f.fx, cfx_stats(h.f.fx.c).reconnects >= before + 3, 20000);
    for (int i = 0; i < h.f.n_masters; i++)
      if (h.f.masters[i] != m)
        rt_cluster_resume(h.f.cl, h.f.masters[i]);
  }
  FX_EVENTUALLY(&h.f.fx, rt_cluster_is_master(h.f.cl, r) == 1, 30000);
  uint64_t t_promoted = uv_hrtime();
  fprintf(stderr, "test +%.0f ms: replica %d promoted\n", (double)(t_promoted - g_log_t0) / 1e6, r);
  FX_EVENTUALLY(&h.f.fx, h.lost.n == 1, 30000);
  if (h.ev.topology == 0)
    fprintf(stderr, "test +%.0f ms: the hold was reported lost with no new map seen (%llu map "
            "reads, %llu reconnects)\n", (double)(h.lost.t_ns - g_log_t0) / 1e6,
            (unsigned long long)cfx_stats(h.f.fx.c).topology_refreshes,
            (unsigned long long)cfx_stats(h.f.fx.c).reconnects);
  ASSERT_GE(h.ev.topology, 1);
  double seen = cfx_ms_since(t_promoted, h.ev.topology_ns);
  double verified = cfx_ms_since(t_promoted, h.lost.t_ns);
  fprintf(stderr,
          "note: %s killed; replica promoted %.0f ms after the kill; the holder's client saw "
          "the new map %.0f ms and reported the lost hold %.0f ms after the promotion (%llu "
          "slot-map reads)\n",
          kill_seed ? "the seed" : "another master", cfx_ms_since(t_kill, t_promoted), seen,
          verified, (unsigned long long)cfx_stats(h.f.fx.c).topology_refreshes);
  /* Reads every 100 ms or so once the dead master is flagged failed, then
   * a dial and a script on the new master verify the hold: far below the
   * 10 s the backoff and the periodic read would take. 1 s was too tight on
   * a loaded machine (a rehearsal beside tools/load.sh: map seen 40 ms
   * after the promotion, the loss told at 3.5 s; that wait was a periodic
   * renewal queued on the dead seed's connection, which the verification
   * waited for until the seed's dial at the reply timeout failed: now moved
   * to the new master, see the last case); 4 s plus the stalls still tells
   * the two routes apart. */
  ASSERT_LE(verified, (double)rt_stall_bound_since_ns(t_promoted, 4000));
  ASSERT(!lk_lock_is_held(a));
  ASSERT_OK(rt_cluster_wait_stable(h.f.cl, 20000));
  cfx_finish_locks(&h.f, (lk_lock_t *[]){a, NULL});
}

TEST(killed_masters_promotion_is_seen_within_a_short_reread_period) { kill_and_watch(0, 0); }

/* The seed was the client's only connection: the map is read from another
 * master, dialled for it. */
TEST(killed_seeds_promotion_is_seen_through_another_master) { kill_and_watch(1, 0); }

/* ... and when the dials to the other masters failed once (they were
 * stopped), the map is still read soon after the promotion: the watch
 * cuts their reconnect backoff short instead of waiting it out. */
TEST(killed_seeds_promotion_is_seen_after_failed_dials_to_the_others) { kill_and_watch(1, 1); }

/* A renewal queued on the connection of a master that died waits there,
 * unsent, for that node's next dial (its reconnect backoff, or the reply
 * timeout), and the verification a map showing the new master asks for
 * used to wait for that renewal: the loss was told only when the dial to
 * the dead node failed (rehearsed under load: 3.3-4.1 s after the
 * promotion, with the 3 s reply timeout). The map moves the renewal to the
 * new master instead. Here both waits outlast the lease: before, the hold
 * ran out by its deadline; now a renewal on the new master finds it gone. */
TEST(renewal_parked_on_a_dead_master_goes_to_its_promoted_replica) {
  holder_t h;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.default_lease_ms = 30000; /* renewed after 10 s, lost at 30 s unconfirmed */
  o.reconnect_min_ms = 120000;
  o.reconnect_max_ms = 120000;
  o.reply_timeout_ms = 120000;
  /* Not the seed: its connection reads the maps. Its replica takes over
   * only when told (TAKEOVER below), once the renewal is parked. */
  hold_on_master(&h, &o, 0, 1);
  cfx_t *f = &h.f;
  uint64_t reconnects = cfx_stats(f->fx.c).reconnects;
  uint64_t renewals = cfx_stats(f->fx.c).renewal_commands;
  rt_cluster_kill(f->cl, h.m);
  FX_EVENTUALLY(&f->fx, cfx_stats(f->fx.c).reconnects > reconnects, 20000);
  /* The hold's renewal is queued on m's connection, in its backoff. */
  FX_EVENTUALLY(&f->fx, cfx_stats(f->fx.c).renewal_commands > renewals, 20000);
  ASSERT_EQ(h.lost.n, 0);
  ASSERT_OK(rt_cluster_failover(f->cl, h.r, "TAKEOVER"));
  FX_EVENTUALLY(&f->fx, h.lost.n == 1, 60000);
  ASSERT_GE(h.ev.topology, 1);
  lk_client_stats_t st = cfx_stats(f->fx.c);
  ASSERT_EQ(st.leases_lost, 1);
  ASSERT_EQ(st.leases_lost_deadline, 0); /* told by a renewal, not run out */
  ASSERT(!lk_lock_is_held(h.a));
  cfx_finish_locks(f, (lk_lock_t *[]){h.a, NULL});
}
