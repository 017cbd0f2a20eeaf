/* RedLock over 5 real masters: the quorum rule for every subset of taken
 * masters, validity, re-entry, waiting woken by release messages, renewal
 * needing a quorum, fencing with skewed counters, Redisson interop, cancel,
 * close and bad inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi_fixture.h"
#include "redisson_emu.h"
#include "redisson_redlock_emu.h"

#define N 5

static int popcount5(int mask) {
  int k = 0, i;
  for (i = 0; i < N; i++)
    k += (mask >> i) & 1;
  return k;
}

TEST(rl_acquire_release_on_every_master) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-basic", NULL);
  ASSERT_EQ(lk_redlock_size(rl), N);
  ASSERT_EQ(lk_redlock_quorum(rl), 3);
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, -1, &s));
  ASSERT_EQ(s.held, 1);
  ASSERT_GT(s.validity_ms, 29000);
  ASSERT_GE(lk_redlock_votes(rl), 3);
  ASSERT_EQ(lk_redlock_hold_count(rl), 1);
  /* Masters that answer after the quorum are kept as extra holders. */
  mx_rl_settle(&m, rl);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
    /* Redisson's RLock layout on each master: one field, a lease. */
    ASSERT_EQ(rt_cmd_int(m.srv[i], "HLEN rl-basic"), 1);
    ASSERT_GT(rt_cmd_int(m.srv[i], "PTTL rl-basic"), 25000);
  }
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_settle(&m, rl); /* the release answered at its quorum */
  for (i = 0; i < N; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-basic"), 0);
  ASSERT_EQ(lk_redlock_is_held(rl), 0);
  ASSERT_EQ(lk_redlock_validity_ms(rl), 0);
  ASSERT_EQ(lk_redlock_release(rl, mx_rl_cb, &s), LK_ENOTHELD);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* docs/reliability.md, T30: for each of the 32 subsets of masters held by someone
 * else, one attempt succeeds iff at least 3 are free; after every failure
 * no master holds our owner id. */
TEST(rl_quorum_for_every_subset_of_taken_masters) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  int mask, i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-mask", NULL);
  lk_redlock_opts_init(&o);
  o.lease_ms = 10000;
  o.node_timeout_ms = 1000;
  for (mask = 0; mask < 32; mask++) {
    int free_n = N - popcount5(mask), rc;
    for (i = 0; i < N; i++)
      if (mask & (1 << i))
        mx_clog(&m, i, "rl-mask", 20000);
    rc = mx_rl_acquire_opts(&m, rl, &o, &s);
    mx_rl_settle(&m, rl);
    if (free_n >= 3) {
      ASSERT_OK(rc);
      /* The masters that answered after the quorum are kept too. */
      ASSERT_EQ(lk_redlock_votes(rl), (size_t)free_n);
    } else {
      ASSERT_EQ(rc, LK_ETIMEDOUT); /* every master answered: taken */
      for (i = 0; i < N; i++)
        ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 0);
    }
    for (i = 0; i < N; i++)
      ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), (mask & (1 << i)) ? LK_ENOTOWNER : 0);
    if (rc == 0) {
      ASSERT_OK(mx_rl_release(&m, rl));
      /* The release answered at its quorum: the next subset's attempt
       * starts once every master has answered it (a master still busy then
       * is asked only while that attempt is undecided: a loaded run's
       * straggler left this one asking 3 of its 4 free masters). */
      mx_rl_settle(&m, rl);
      for (i = 0; i < N; i++)
        ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 0);
    }
    for (i = 0; i < N; i++)
      if (mask & (1 << i)) {
        /* The foreign hold was never touched. */
        ASSERT_EQ(rt_cmd_int(m.srv[i], "HLEN rl-mask"), 1);
        mx_unclog(&m, i, "rl-mask");
      }
  }
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

TEST(rl_validity_is_lease_minus_elapsed_minus_drift) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  uint64_t t0;
  int64_t elapsed, drift = 10000 / 100 + 2;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-valid", NULL);
  t0 = uv_hrtime();
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  elapsed = (int64_t)((s.t_ns - t0) / 1000000u);
  ASSERT_LE(s.validity_ms, 10000 - drift);
  ASSERT_GE(s.validity_ms, 10000 - drift - elapsed - 5);
  ASSERT_OK(mx_rl_release(&m, rl));
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

TEST(rl_reentry_counts_on_the_holding_masters) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  mx_clog(&m, 4, "rl-re", 20000);
  rl = mx_rl_new(&m, m.c, "rl-re", NULL);
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  mx_rl_settle(&m, rl);
  ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_ENOTOWNER);
  mx_unclog(&m, 4, "rl-re"); /* free now, but it is not ours */
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  ASSERT_EQ(lk_redlock_hold_count(rl), 2);
  for (i = 0; i < 4; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 2);
  ASSERT_EQ(rt_cmd_int(m.srv[4], "EXISTS rl-re"), 0); /* a re-entry asks holders only */
  ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_ENOTHELD);
  ASSERT_OK(mx_rl_release(&m, rl));
  for (i = 0; i < 4; i++)
    ASSERT(mx_rl_holds_settle_on(&m, rl, i, 1));
  ASSERT_OK(mx_rl_release(&m, rl));
  for (i = 0; i < N; i++)
    ASSERT(mx_rl_holds_settle_on(&m, rl, i, 0));
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

static uint64_t release_invoked_ns;

static void release_cb(uv_timer_t *t) {
  lk_redlock_t *rl = t->data;
  mx_t *s = lk_redlock_get_data(rl);
  release_invoked_ns = uv_hrtime();
  ASSERT_OK(lk_redlock_release(rl, mx_rl_cb, s));
}

/* A waiter sleeps until a release message from any master: not the
 * holder's ttl (30 s here) nor a re-poll (set to 20 s). */
TEST(rl_waiter_woken_by_release_message) {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *a, *w;
  uv_timer_t tm;
  mx_t sa, rel, sw;
  lk_redlock_opts_t o;
  int i;
  mfx_start(&m, N, NULL);
  for (i = 0; i < N; i++) {
    lk_client_opts_t co;
    mfx_client_opts(&m, i, &co);
    co.max_repoll_ms = 20000;
    ASSERT_OK(lk_client_new(&m.loop, &co, &b[i]));
  }
  a = mx_rl_new(&m, m.c, "rl-wake", NULL);
  w = mx_rl_new(&m, b, "rl-wake", NULL);
  ASSERT_OK(mx_rl_acquire(&m, a, 0, 30000, &sa));
  memset(&rel, 0, sizeof(rel));
  lk_redlock_set_data(a, &rel);
  uv_timer_init(&m.loop, &tm);
  tm.data = a;
  uv_timer_start(&tm, release_cb, 200, 0);
  lk_redlock_opts_init(&o);
  o.wait_ms = 10000;
  ASSERT_OK(mx_rl_acquire_opts(&m, w, &o, &sw));
  ASSERT_NE(release_invoked_ns, 0);
  ASSERT_GT(sw.t_ns, release_invoked_ns);
  ASSERT_LT((int64_t)((sw.t_ns - release_invoked_ns) / 1000000u),
            rt_stall_bound_since_ns(release_invoked_ns, 500));
  mfx_run_until(&m, &rel.done, 2000);
  ASSERT_OK(rel.status);
  ASSERT_OK(mx_rl_release(&m, w));
  uv_close((uv_handle_t *)&tm, NULL);
  lk_redlock_set_data(a, NULL);
  mfx_finish_rls(&m, (lk_redlock_t *[]){a, w, NULL}, b);
}

static void count_lost(lk_redlock_t *rl, int status, void *arg) {
  int *n = arg;
  ASSERT_EQ(status, LK_ELEASELOST);
  ASSERT_EQ(lk_redlock_is_held(rl), 0);
  (*n)++;
}

/* Renewal must reach a quorum: two masters losing the lock leave three,
 * still a quorum; a third makes it lost. The lease is scaled: renewal runs
 * on time only while the loop and the masters keep up. */
TEST(rl_renewal_needs_a_quorum) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  int lost = 0, i;
  const int64_t lease = rt_scaled_ms(1200);
  mfx_start_lease(&m, N, NULL, lease);
  rl = mx_rl_new(&m, m.c, "rl-renew", NULL);
  ASSERT_OK(lk_redlock_set_lost_cb(rl, count_lost, &lost));
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, -1, &s));
  /* Every master granted, also those answering after the quorum. */
  mx_rl_settle(&m, rl);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "DEL rl-renew"), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[1], "DEL rl-renew"), 1);
  /* Two lease lengths: renewed about 6 times on the other three. A renewal
   * goes out less than half a lease after the last one, so a machine stall
   * longer than half a lease may take the hold (stall.h). */
  int64_t mark = rt_stall_mark();
  mfx_spin(&m, 2 * lease);
  if (EXPECT_HOLD(lost == 0 && lk_redlock_is_held(rl) == 1, mark, lease / 2)) {
    /* An on-time validity stays above about half the lease; a quarter
     * leaves room for a late reply, or a stall of a quarter lease. */
    if (EXPECT_HOLD(lk_redlock_validity_ms(rl) > lease / 4, mark, lease / 4))
      for (i = 2; i < N; i++)
        ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
    ASSERT_EQ(rt_cmd_int(m.srv[2], "DEL rl-renew"), 1);
  }
  mfx_run_until(&m, &lost, 2000);
  ASSERT_EQ(lost, 1);
  /* What the last two still had is given back. */
  ASSERT_EQ(mfx_wait_key_gone(&m, 3, "rl-renew", 2000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-renew", 2000), 1);
  ASSERT_EQ(lk_redlock_release(rl, mx_rl_cb, &s), LK_ELEASELOST);
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, -1, &s));
  ASSERT_OK(mx_rl_release(&m, rl));
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* Fencing with skewed counters: tokens never go backwards, whichever
 * quorum grants and whichever process (client set) asks. */
TEST(rl_fenced_tokens_never_go_backwards_with_skewed_counters) {
  enum { SETS = 3, ROUNDS = 24 };
  static const long long skew[N] = {100, 5, 0, 50, 7};
  mfx_t m;
  lk_client_t *sets[SETS][N];
  lk_redlock_t *rl[SETS];
  lk_redlock_opts_t o;
  int64_t last = 0;
  uint64_t rng = 0x853c49e6748fea9bULL;
  int i, k, r;
  mfx_start(&m, N, NULL);
  for (i = 0; i < N; i++)
    if (skew[i] > 0)
      free(rt_cmd_str(m.srv[i], "SET redisson_lock_token:{rl-fence} %lld", skew[i]));
  for (k = 0; k < SETS; k++) {
    mfx_clients(&m, sets[k], 0);
    rl[k] = mx_rl_new(&m, sets[k], "rl-fence", NULL);
  }
  lk_redlock_opts_init(&o);
  o.fenced = 1;
  o.lease_ms = 10000;
  /* With two masters clogged, an attempt needs all three others within the
   * node timeout (500 ms): a machine stall that long fails one attempt
   * (LK_ETIMEDOUT), so each round may try again within a budget. Every
   * attempt's tokens count: the one granted must still be the highest. */
  o.wait_ms = 10000;
  for (r = 0; r < ROUNDS; r++) {
    mx_t s;
    int mask = 0, nclog, ok = 0;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    /* Two masters taken by someone else, a different pair each round. */
    nclog = 0;
    while (nclog < 2) {
      int b = (int)((rng >> (nclog * 8 + 3)) % N);
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      if (!(mask & (1 << b))) {
        mask |= 1 << b;
        nclog++;
      }
    }
    for (i = 0; i < N; i++)
      if (mask & (1 << i))
        mx_clog(&m, i, "rl-fence", 20000);
    k = r % SETS;
    ASSERT_OK(mx_rl_acquire_opts(&m, rl[k], &o, &s));
    ASSERT_GT(s.token, last);
    last = s.token;
    /* The token was written back: a quorum of masters holds >= it. */
    for (i = 0; i < N; i++) {
      char *v = rt_cmd_str(m.srv[i], "GET redisson_lock_token:{rl-fence}");
      if (v != NULL && atoll(v) >= s.token)
        ok++;
      free(v);
    }
    ASSERT_GE(ok, 3);
    ASSERT_OK(mx_rl_release(&m, rl[k]));
    mx_rl_settle(&m, rl[k]); /* its stragglers too, before the next round's clogs */
    for (i = 0; i < N; i++)
      if (mask & (1 << i))
        mx_unclog(&m, i, "rl-fence");
  }
  printf("last token %lld after %d rounds (counters started at 100,5,0,50,7)\n",
         (long long)last, ROUNDS);
  for (k = 0; k < SETS; k++) {
    mx_rl_close(&m, rl[k]);
    mfx_close_set(&m, sets[k]);
  }
  mfx_finish(&m);
}

/* Redisson's RedLock (emulated: sequential tryLock, quorum, no validity)
 * and ours exclude each other on the same masters and layout. */
TEST(rl_redisson_redlock_interop) {
  mfx_t m;
  lk_redlock_t *rl;
  redisContext *ctx[N];
  const char *uuids[N];
  const char *names[N] = {"rl-interop", "rl-interop", "rl-interop", "rl-interop", "rl-interop"};
  int held[N], i;
  char idbuf[N][40];
  mx_t s;
  mfx_start(&m, N, NULL);
  for (i = 0; i < N; i++) {
    ctx[i] = rt_rlock_connect(rt_server_port(m.srv[i]));
    snprintf(idbuf[i], sizeof(idbuf[i]), "0f0e0d0c-0b0a-4909-8807-06050403020%d", i);
    uuids[i] = idbuf[i];
  }
  rl = mx_rl_new(&m, m.c, "rl-interop", NULL);
  /* Redisson holds on a majority (master 0 and 1 taken by us first, so it
   * gets 2, 3, 4). */
  mx_clog(&m, 0, "rl-interop", 20000);
  mx_clog(&m, 1, "rl-interop", 20000);
  ASSERT_EQ(rt_rmulti_try(ctx, N, names, uuids, 7, 10000, rt_redlock_failed_limit(N),
                          held),
            1);
  mx_unclog(&m, 0, "rl-interop");
  mx_unclog(&m, 1, "rl-interop");
  ASSERT_EQ(mx_rl_acquire(&m, rl, 0, 10000, &s), LK_ETIMEDOUT);
  for (i = 2; i < N; i++)
    ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), LK_ENOTOWNER);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 0);
  rt_rmulti_unlock(ctx, N, names, uuids, 7, held);

  /* Ours holds: Redisson's fails and leaves nothing behind. */
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  ASSERT_EQ(rt_rmulti_try(ctx, N, names, uuids, 7, 10000, rt_redlock_failed_limit(N),
                          held),
            0);
  for (i = 0; i < N; i++) {
    char *v = rt_cmd_str(m.srv[i], "HGET rl-interop %s:7", uuids[i]);
    ASSERT_NULL(v);
  }
  /* Our holds are Redisson-shaped: Redisson's RLock sees a ttl. */
  ASSERT_GT(rt_rlock_try(ctx[0], "rl-interop", uuids[0], 8, 10000), 0);
  ASSERT_OK(mx_rl_release(&m, rl));
  /* And the release message wakes Redisson's waiters: its next try works. */
  ASSERT_EQ(rt_rmulti_try(ctx, N, names, uuids, 7, 10000, rt_redlock_failed_limit(N),
                          held),
            1);
  rt_rmulti_unlock(ctx, N, names, uuids, 7, held);
  for (i = 0; i < N; i++)
    redisFree(ctx[i]);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

TEST(rl_cancel_and_close_while_waiting) {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *a, *w;
  lk_redlock_opts_t o;
  mx_t s, sw;
  int closed = 0, i;
  mfx_start(&m, N, NULL);
  mfx_clients(&m, b, 0);
  a = mx_rl_new(&m, m.c, "rl-cancel", NULL);
  w = mx_rl_new(&m, b, "rl-cancel", NULL);
  ASSERT_OK(mx_rl_acquire(&m, a, 0, 10000, &s));
  lk_redlock_opts_init(&o);
  o.wait_ms = 10000;
  memset(&sw, 0, sizeof(sw));
  ASSERT_OK(lk_redlock_acquire(w, &o, mx_rl_cb, &sw));
  mfx_spin(&m, 50);
  ASSERT_OK(lk_redlock_cancel(w));
  ASSERT_EQ(sw.done, 0);
  mfx_run_until(&m, &sw.done, 2000);
  ASSERT_EQ(sw.status, LK_ECANCELED);
  ASSERT_EQ(lk_redlock_cancel(w), LK_EINVAL);
  /* Close with an acquire pending: its callback first, then close_cb. */
  memset(&sw, 0, sizeof(sw));
  ASSERT_OK(lk_redlock_acquire(w, &o, mx_rl_cb, &sw));
  lk_redlock_set_data(w, &closed);
  ASSERT_OK(lk_redlock_close(w, mx_rl_closed));
  ASSERT_EQ(lk_redlock_close(w, mx_rl_closed), LK_ECLOSED);
  mfx_run_until(&m, &closed, 5000);
  ASSERT_EQ(sw.done, 1);
  ASSERT_EQ(sw.status, LK_ECANCELED);
  mfx_close_set(&m, b);
  /* Close while held releases every master. */
  mx_rl_close(&m, a);
  for (i = 0; i < N; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-cancel"), 0);
  mfx_finish(&m);
}

TEST(rl_bad_inputs) {
  mfx_t m;
  lk_client_t *dup[3], *same_port;
  lk_redlock_t *rl = NULL;
  lk_redlock_config_t cfg;
  lk_redlock_opts_t o;
  lk_client_opts_t co;
  mx_t s;
  char big[5000];
  mfx_start(&m, 3, NULL);
  ASSERT_EQ(lk_redlock_new(m.c, 0, "x", NULL, &rl), LK_EINVAL);
  ASSERT_EQ(lk_redlock_new(NULL, 3, "x", NULL, &rl), LK_EINVAL);
  ASSERT_EQ(lk_redlock_new(m.c, 3, "x", NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_redlock_new(m.c, LK_REDLOCK_MAX_NODES + 1, "x", NULL, &rl), LK_EINVAL);
  ASSERT_EQ(lk_redlock_new(m.c, 3, NULL, NULL, &rl), LK_EINVAL);
  ASSERT_EQ(lk_redlock_new(m.c, 3, "", NULL, &rl), LK_EINVAL);
  memset(big, 'n', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  ASSERT_EQ(lk_redlock_new(m.c, 3, big, NULL, &rl), LK_ENAMETOOLONG);
  /* One server twice breaks independence: the same client, or another
   * client for the same address. */
  dup[0] = m.c[0], dup[1] = m.c[1], dup[2] = m.c[0];
  ASSERT_EQ(lk_redlock_new(dup, 3, "x", NULL, &rl), LK_EINVAL);
  mfx_client_opts(&m, 1, &co);
  ASSERT_OK(lk_client_new(&m.loop, &co, &same_port));
  dup[0] = m.c[0], dup[1] = m.c[1], dup[2] = same_port;
  ASSERT_EQ(lk_redlock_new(dup, 3, "x", NULL, &rl), LK_EINVAL);
  dup[2] = NULL;
  ASSERT_EQ(lk_redlock_new(dup, 3, "x", NULL, &rl), LK_EINVAL);
  lk_redlock_config_init(&cfg);
  cfg.quarantine_ms = -1;
  ASSERT_EQ(lk_redlock_new(m.c, 3, "x", &cfg, &rl), LK_EINVAL);
  lk_redlock_config_init(&cfg);
  cfg.retry_jitter_ms = -5;
  ASSERT_EQ(lk_redlock_new(m.c, 3, "x", &cfg, &rl), LK_EINVAL);
  ASSERT_NULL(rl);
  rl = mx_rl_new(&m, m.c, "x", NULL);
  /* The RedLock owns its node locks: they cannot be closed under it. */
  ASSERT_EQ(lk_lock_close(lk_redlock_node_lock(rl, 0), NULL), LK_EBUSY);
  ASSERT_NULL(lk_redlock_node_lock(rl, 3));
  ASSERT_EQ(lk_redlock_node_status(rl, 3), LK_EINVAL);
  lk_redlock_opts_init(&o);
  o.lease_ms = 0;
  ASSERT_EQ(lk_redlock_acquire(rl, &o, mx_rl_cb, &s), LK_EINVAL);
  lk_redlock_opts_init(&o);
  o.wait_ms = -7;
  ASSERT_EQ(lk_redlock_acquire(rl, &o, mx_rl_cb, &s), LK_EINVAL);
  lk_redlock_opts_init(&o);
  o.node_timeout_ms = -1;
  ASSERT_EQ(lk_redlock_acquire(rl, &o, mx_rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_redlock_acquire(rl, NULL, NULL, &s), LK_EINVAL);
  ASSERT_EQ(lk_redlock_release(rl, mx_rl_cb, &s), LK_ENOTHELD);
  ASSERT_EQ(lk_redlock_cancel(rl), LK_EINVAL);
  ASSERT_EQ(lk_client_close(m.c[2], NULL), LK_EBUSY); /* its node lock is open */
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_acquire(rl, NULL, mx_rl_cb, &s));
  ASSERT_EQ(lk_redlock_acquire(rl, NULL, mx_rl_cb, &s), LK_EBUSY);
  mfx_run_until(&m, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_close(&m, rl);
  mfx_close_client(&m, same_port);
  {
    /* The unix socket of a server already reached over TCP: accepted at
     * creation, caught by the servers' run_id once both are connected. */
    lk_client_t *set[3], *alias;
    mfx_client_opts(&m, 2, &co);
    co.unix_path = rt_server_unix_path(m.srv[2]);
    ASSERT_OK(lk_client_new(&m.loop, &co, &alias));
    set[0] = m.c[0], set[1] = m.c[2], set[2] = alias;
    ASSERT_OK(lk_redlock_new(set, 3, "alias", NULL, &rl));
    mfx_wait_connected(&m, set);
    ASSERT_EQ(lk_redlock_acquire(rl, NULL, mx_rl_cb, &s), LK_EINVAL);
    mx_rl_close(&m, rl);
    mfx_close_client(&m, alias);
  }
  mfx_finish(&m);
}
