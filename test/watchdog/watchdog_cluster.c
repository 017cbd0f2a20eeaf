/* The watchdog on a cluster: renewal scripts never cross a slot. A renewal
 * chunk holds entries of one class and one slot (at most 100), a slot whose
 * master changed is verified at once (lk__wd_verify_slots), and standalone
 * chunks still ignore slots.
 *
 * Most cases run on a one-node Redis Cluster owning all 16384 slots, which
 * the client finds to be a cluster on its own (LK_CLUSTER_AUTO): with one
 * master every slot lives on one connection, so a tick's scripts can be
 * counted exactly, and like every cluster master it refuses a script whose
 * keys span slots (CROSSSLOT): a renewal that mixed slots would fail there,
 * count in INFO errorstats and lose its holds
 * (cluster_node_refuses_a_renewal_across_slots shows that this check bites).
 * The two cases that need a plain server (a proxy in front, cluster mode
 * turned on late) force c->cluster_on there; with no slot map the router
 * then sends everything to that server. The 3-master case is
 * test/cluster/cluster_watchdog.c. Cases named cluster_* also carry the
 * ctest label cluster (test/lists/watchdog_tests.cmake). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/slot.h"
#include "core/watchdog.h"
#include "hostile.h"
#include "lk_fixture.h"
#include "redis_cluster.h"
#include "rw_fixture.h"
#include "fair_fixture.h"
#include "sem_fixture.h"

/* ---- helpers ------------------------------------------------------------------ */

static lk_client_stats_t stats_of(fx_t *fx) {
  lk_client_stats_t st;
  lk_client_get_stats(fx->c, &st);
  return st;
}

/* No command of the client waits for its reply. */
static void wait_quiet(fx_t *fx) {
  FX_EVENTUALLY(fx, stats_of(fx).commands_sent == stats_of(fx).replies, 5000);
}

/* Error replies the server has sent (INFO stats): any renewal refused for
 * crossing slots counts here. */
static long long server_errors(rt_server_t *s) {
  char *v = rt_server_info(s, "stats", "total_error_replies");
  long long n;
  ASSERT_NOT_NULL(v);
  n = atoll(v);
  free(v);
  return n;
}

static long long crossslot_errors(rt_server_t *s) {
  char *v = rt_server_info(s, "errorstats", "errorstat_CROSSSLOT");
  long long n = 0;
  if (v == NULL)
    return 0;
  ASSERT_EQ(sscanf(v, "count=%lld", &n), 1);
  free(v);
  return n;
}

/* Loop + a one-node cluster owning every slot + the fixture's client with
 * the given watchdog lease and cluster mode (lk_cluster_mode_t). */
static void start_slot_node(fx_t *fx, int64_t lease_ms, int mode) {
  char bus[16];
  const char *args[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-port", bus, NULL};
  rt_server_opts_t so;
  lk_client_opts_t o;
  char *ok;
  int attempt;
  int64_t end;

  memset(fx, 0, sizeof(*fx));
  ASSERT_OK(uv_loop_init(&fx->loop));
  rt_server_opts_init(&so);
  so.extra_args = args;
  /* The bus port is picked apart; one lost to a race fails the start. */
  for (attempt = 0; attempt < 3 && fx->srv == NULL; attempt++) {
    snprintf(bus, sizeof(bus), "%d", rt_pick_port());
    fx->srv = rt_server_start(&so);
  }
  ASSERT_NOT_NULL(fx->srv);
  ok = rt_cmd_str(fx->srv, "CLUSTER ADDSLOTSRANGE 0 16383");
  ASSERT_NOT_NULL(ok);
  ASSERT_STREQ(ok, "OK");
  free(ok);
  end = rt_now_ms() + rt_scaled_ms(10000);
  for (;;) {
    char *state = rt_server_info(fx->srv, "cluster", "cluster_enabled");
    redisReply *r = rt_cmd(fx->srv, "CLUSTER INFO");
    int up;
    ASSERT_NOT_NULL(state);
    ASSERT_STREQ(state, "1");
    free(state);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    up = strstr(r->str, "cluster_state:ok") != NULL;
    freeReplyObject(r);
    if (up)
      break;
    ASSERT_LT(rt_now_ms(), end);
    rt_sleep_ms(10);
  }
  lk_client_opts_init(&o);
  o.default_lease_ms = lease_ms;
  o.cluster = mode;
  o.port = rt_server_port(fx->srv);
  fx_start_client(fx, &o);
}

/* Loop + a plain server (behind a proxy when proxy is not NULL) + a client
 * with the given lease, cluster mode forced on: it groups by slot, and the
 * router, with no slot map, sends everything to that server. */
static void start_forced(fx_t *fx, int64_t lease_ms, rt_proxy_t **proxy) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.default_lease_ms = lease_ms;
  if (proxy != NULL) {
    *proxy = fx_start_proxied(fx, &o);
  } else {
    fx_start_with(fx, NULL, &o);
  }
  fx->c->cluster_on = 1;
}

/* Distinct slots, checked: names are built from these tags. */
static void assert_distinct_slots(const char *const *tags, int k) {
  int i, j;
  for (i = 0; i < k; i++)
    for (j = 0; j < i; j++)
      if (lk__key_slot(tags[i], strlen(tags[i])) == lk__key_slot(tags[j], strlen(tags[j])))
        FAIL("tags %s and %s share slot %u", tags[i], tags[j],
             (unsigned)lk__key_slot(tags[i], strlen(tags[i])));
}

typedef struct {
  lk_lock_t **locks;
  char (*names)[48];
  sx_t *acq;
  int n;
  int lost;
  int lost_index; /* the last lock reported lost */
  uint64_t scripts_at_lost; /* renewal_commands when on_lost ran */
  fx_t *fx;
} set_t;

static void set_on_lost(lk_lock_t *l, int status, void *arg) {
  set_t *s = arg;
  int i;
  ASSERT_EQ(status, LK_ELEASELOST);
  for (i = 0; i < s->n; i++)
    if (s->locks[i] == l)
      s->lost_index = i;
  s->lost++;
  s->scripts_at_lost = stats_of(s->fx).renewal_commands;
}

static void set_alloc(fx_t *fx, set_t *s, int n) {
  memset(s, 0, sizeof(*s));
  s->fx = fx;
  s->n = n;
  s->locks = calloc((size_t)n, sizeof(*s->locks));
  s->names = calloc((size_t)n, sizeof(*s->names));
  s->acq = calloc((size_t)n, sizeof(*s->acq));
  ASSERT(s->locks != NULL && s->names != NULL && s->acq != NULL);
  s->lost_index = -1;
}

/* Acquires every named lock of s at once (try once, watchdog lease). */
static void set_acquire_named(fx_t *fx, set_t *s) {
  int i, done, n = s->n;
  int64_t end;
  for (i = 0; i < n; i++) {
    lk_lock_opts_t o;
    s->locks[i] = fx_lock(fx, s->names[i]);
    ASSERT_OK(lk_lock_set_lost_cb(s->locks[i], set_on_lost, s));
    lk_lock_opts_init(&o);
    ASSERT_OK(lk_lock_acquire(s->locks[i], &o, sx_cb, &s->acq[i]));
  }
  end = rt_now_ms() + rt_scaled_ms(10000);
  do {
    ASSERT_LT(rt_now_ms(), end);
    uv_run(&fx->loop, UV_RUN_ONCE);
    for (done = 0, i = 0; i < n; i++)
      done += s->acq[i].done;
  } while (done < n);
  for (i = 0; i < n; i++)
    if (s->acq[i].status != 0)
      FAIL("lock %s: %s", s->names[i], lk_err_name(s->acq[i].status));
}

/* n watchdog locks named "{tag}:i", tags[i % k] (so a tag's locks are spread
 * over the ring), all acquired at once. */
static void set_acquire(fx_t *fx, set_t *s, const char *const *tags, int k, int n) {
  int i;
  set_alloc(fx, s, n);
  for (i = 0; i < n; i++)
    snprintf(s->names[i], sizeof(s->names[i]), "{%s}:%d", tags[i % k], i);
  set_acquire_named(fx, s);
}

/* The client found the one-node cluster (at its first connection). */
static void assert_cluster_found(fx_t *fx) {
  ASSERT_EQ(fx->c->cluster_on, 1);
}

static void set_close(fx_t *fx, set_t *s) {
  int i;
  for (i = 0; i < s->n; i++)
    fx_close_lock(fx, s->locks[i]);
  free(s->locks);
  free(s->names);
  free(s->acq);
}

static long long pttl(fx_t *fx, const char *key) {
  return rt_cmd_int(fx->srv, "PTTL %s", key);
}

/* Renews everything now, as one tick does (corked: one write), once nothing
 * is in flight; returns the scripts and leases it sent. */
static void renew_all_now(fx_t *fx, uint64_t *scripts, uint64_t *leases) {
  lk_client_stats_t a, b;
  wait_quiet(fx);
  a = stats_of(fx);
  lk__client_cork(fx->c);
  lk__wd_verify_all(fx->c);
  lk__client_uncork(fx->c);
  b = stats_of(fx);
  *scripts = b.renewal_commands - a.renewal_commands;
  *leases = b.renewals - a.renewals;
  wait_quiet(fx);
}

/* Spins until the client sends renewal scripts (a tick); returns what that
 * tick sent and when. */
static void await_renewals(fx_t *fx, int64_t timeout_ms, uint64_t *scripts, uint64_t *leases,
                           uint64_t *at_ns) {
  lk_client_stats_t a = stats_of(fx), b;
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  for (;;) {
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    b = stats_of(fx);
    if (b.renewal_commands != a.renewal_commands)
      break;
    if (rt_now_ms() > end)
      FAIL("no renewal within %lld ms", (long long)rt_scaled_ms(timeout_ms));
    rt_sleep_ms(1);
  }
  *at_ns = uv_hrtime();
  *scripts = b.renewal_commands - a.renewal_commands;
  *leases = b.renewals - a.renewals;
}

static const char *const TAGS4[] = {"wa", "wb", "wc", "wd"};

/* ---- grouping by slot ----------------------------------------------------------- */

/* 24 locks on 4 slots, interleaved on the ring: every tick that renews them
 * all sends exactly 4 scripts, one per slot, once per period; the one-node
 * cluster refuses none of them; all still held after more than a lease. */
TEST(cluster_renewals_grouped_by_slot) {
  enum { K = 4, N = 24, P = 4 };
  const int64_t lease = 1500;
  const uint64_t period_ns = (uint64_t)lease * 1000000u / 3, tick_ns = period_ns / 2;
  fx_t fx;
  set_t s;
  uint64_t scripts, leases, at, prev = 0, t_start;
  int full = 0, attempt, i;
  long long errors0;

  assert_distinct_slots(TAGS4, K);
  start_slot_node(&fx, lease, LK_CLUSTER_AUTO);
  errors0 = server_errors(fx.srv);
  set_acquire(&fx, &s, TAGS4, K, N);
  assert_cluster_found(&fx);
  t_start = uv_hrtime();

  /* All N renewed together, then P periods of ticks. The acquisitions left
   * microseconds apart, so a tick's horizon can (rarely) fall between them
   * and split the set over two ticks: then everything is renewed together
   * again and the count starts over. */
  for (attempt = 0; attempt < 3 && full < P; attempt++) {
    renew_all_now(&fx, &scripts, &leases);
    ASSERT_EQ(scripts, K);
    ASSERT_EQ(leases, N);
    prev = uv_hrtime();
    for (full = 0; full < P;) {
      await_renewals(&fx, 3 * lease, &scripts, &leases, &at);
      if (leases != N)
        break; /* split by timing: start over */
      ASSERT_EQ(scripts, K);
      /* Once per period, never sooner: taken half a tick early at most,
       * ticks stamped in whole milliseconds. */
      ASSERT_GE((int64_t)(at - prev), (int64_t)(period_ns - tick_ns / 2) - 2000000);
      prev = at;
      full++;
    }
    if (full < P)
      fprintf(stderr, "attempt %d: a tick renewed %llu of %d: again\n", attempt,
              (unsigned long long)leases, N);
  }
  ASSERT_EQ(full, P);
  wait_quiet(&fx);
  /* More than a lease has passed: only renewals kept them. */
  ASSERT_GE(uv_hrtime() - t_start, (uint64_t)lease * 1000000u);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", s.names[i]), 1);
    ASSERT_EQ(lk_lock_is_held(s.locks[i]), 1);
  }
  ASSERT_EQ(s.lost, 0);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  set_close(&fx, &s);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "{w*"), 0);
  fx_finish(&fx);
}

/* One slot with 250 holds and one with 30: 3 + 1 scripts, at most 100
 * holds each. */
TEST(cluster_chunks_split_at_100_per_slot) {
  static const char *const tags[] = {"ck1", "ck2"};
  fx_t fx;
  set_t big, small;
  uint64_t scripts, leases;
  long long errors0;

  assert_distinct_slots(tags, 2);
  start_slot_node(&fx, 30000, LK_CLUSTER_AUTO);
  errors0 = server_errors(fx.srv);
  set_acquire(&fx, &big, tags, 1, 250);
  assert_cluster_found(&fx);
  set_acquire(&fx, &small, tags + 1, 1, 30);
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 4);
  ASSERT_EQ(leases, 280);
  ASSERT_EQ(big.lost + small.lost, 0);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  set_close(&fx, &big);
  set_close(&fx, &small);
  fx_finish(&fx);
}

/* Standalone (cluster_on 0) on a plain server: chunks of 100 whatever the
 * slots, as before. */
TEST(standalone_chunks_ignore_slots) {
  enum { N = 150 };
  static unsigned char seen[LK__SLOTS];
  lk_client_opts_t o;
  fx_t fx;
  set_t s;
  uint64_t scripts, leases;
  const char *tags[N];
  char tag_text[N][16];
  int i, distinct = 0;

  for (i = 0; i < N; i++) {
    snprintf(tag_text[i], sizeof(tag_text[i]), "sa%d", i);
    tags[i] = tag_text[i];
    if (!seen[lk__key_slot(tags[i], strlen(tags[i]))]++)
      distinct++;
  }
  ASSERT_GE(distinct, 140); /* nearly one slot each */
  lk_client_opts_init(&o);
  fx_start_with(&fx, NULL, &o);
  ASSERT_EQ(fx.c->cluster_on, 0);
  set_acquire(&fx, &s, tags, N, N);
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 2);
  ASSERT_EQ(leases, N);
  ASSERT_EQ(s.lost, 0);
  set_close(&fx, &s);
  fx_finish(&fx);
}

/* The check the cluster cases rely on: with cluster mode off (slots
 * ignored), the one-node cluster refuses a renewal that spans two slots. */
TEST(cluster_node_refuses_a_renewal_across_slots) {
  static const char *const tags[] = {"xa", "xb"};
  fx_t fx;
  set_t s;
  uint64_t scripts, leases;

  assert_distinct_slots(tags, 2);
  start_slot_node(&fx, 30000, LK_CLUSTER_OFF);
  set_acquire(&fx, &s, tags, 2, 4);
  ASSERT_EQ(fx.c->cluster_on, 0);
  ASSERT_EQ(crossslot_errors(fx.srv), 0);
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 1);
  ASSERT_EQ(crossslot_errors(fx.srv), 1);
  set_close(&fx, &s);
  fx_finish(&fx);
}

/* The client turns cluster mode on after its holds were registered (as when
 * the router finds a cluster only after holds exist): their slots are
 * computed then, and renewals group by slot from the next tick on. On a
 * plain server: the count of scripts is what is checked. */
TEST(cluster_mode_turned_on_after_holds_exist) {
  enum { K = 3, N = 9 };
  const int64_t lease = 1500;
  fx_t fx;
  set_t s;
  uint64_t scripts, leases, at, t_start;
  long long errors0;
  int i;

  lk_client_opts_t o;

  assert_distinct_slots(TAGS4, K);
  lk_client_opts_init(&o);
  o.default_lease_ms = lease;
  fx_start_with(&fx, NULL, &o);
  errors0 = server_errors(fx.srv);
  set_acquire(&fx, &s, TAGS4, K, N);
  ASSERT_EQ(fx.c->cluster_on, 0);
  /* Standalone first: one script for the N holds. */
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 1);
  fx.c->cluster_on = 1;
  t_start = uv_hrtime();
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, K);
  ASSERT_EQ(leases, N);
  /* Held on by the ticks for more than a lease. */
  while (uv_hrtime() - t_start < (uint64_t)lease * 1000000u + 100000000u)
    await_renewals(&fx, 3 * lease, &scripts, &leases, &at);
  wait_quiet(&fx);
  for (i = 0; i < N; i++)
    ASSERT_EQ(lk_lock_is_held(s.locks[i]), 1);
  ASSERT_EQ(s.lost, 0);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  set_close(&fx, &s);
  fx_finish(&fx);
}

/* An allocator that refuses blocks of BIG bytes or more while armed: a
 * tick renewing more than 128 holds cannot move its array to the heap. */
enum { BIG = 16 * 1024 };
static int refuse_big, refused;

static void *big_malloc(size_t n) {
  if (refuse_big && n >= BIG) {
    refused++;
    return NULL;
  }
  return malloc(n);
}

static void *big_calloc(size_t n, size_t sz) {
  if (refuse_big && sz != 0 && n >= BIG / sz) {
    refused++;
    return NULL;
  }
  return calloc(n, sz);
}

static void *big_realloc(void *old, size_t n) {
  if (refuse_big && n >= BIG) {
    refused++;
    return NULL;
  }
  return realloc(old, n);
}

/* Without memory for a big tick's array, the tick sends what it gathered
 * (128 holds at a time: 2 slots, so 2 scripts each time) and goes on: all
 * 300 renewed, no script crosses a slot. */
TEST(cluster_tick_without_memory_still_groups_by_slot) {
  static const char *const tags[] = {"om1", "om2"};
  fx_t fx;
  set_t s;
  lk_client_stats_t a, b;
  uint64_t scripts, leases;
  long long errors0;

  ASSERT_OK(lk_replace_allocator(big_malloc, big_realloc, big_calloc, free));
  assert_distinct_slots(tags, 2);
  start_slot_node(&fx, 30000, LK_CLUSTER_AUTO);
  errors0 = server_errors(fx.srv);
  set_acquire(&fx, &s, tags, 2, 300);
  assert_cluster_found(&fx);
  wait_quiet(&fx);
  a = stats_of(&fx);
  refuse_big = 1; /* only while the tick runs */
  lk__client_cork(fx.c);
  lk__wd_verify_all(fx.c);
  lk__client_uncork(fx.c);
  refuse_big = 0;
  b = stats_of(&fx);
  scripts = b.renewal_commands - a.renewal_commands;
  leases = b.renewals - a.renewals;
  wait_quiet(&fx);
  ASSERT_GE(refused, 1);
  ASSERT_EQ(leases, 300);
  ASSERT_EQ(scripts, 6); /* windows of 128, 128 and 44, two slots in each */
  ASSERT_EQ(s.lost, 0);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  /* With memory again, one array: 2 x 100 + 2 x 50. */
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 4);
  set_close(&fx, &s);
  fx_finish(&fx);
}

/* ---- classes ---------------------------------------------------------------------- */

typedef struct {
  lk_lock_t *lock;
  lk_fair_t *fair;
  lk_rwlock_t *rw_read, *rw_write;
  lk_psem_t *psem;
} mix_t;

static void mix_open(fx_t *fx, mix_t *m, const char *tag) {
  char name[48];
  snprintf(name, sizeof(name), "{%s}lock", tag);
  m->lock = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, m->lock, 0, -1));
  snprintf(name, sizeof(name), "{%s}fair", tag);
  m->fair = fx_fair(fx, name);
  ASSERT_OK(fsx_acquire(fx, m->fair, 0, -1));
  snprintf(name, sizeof(name), "{%s}rwr", tag);
  m->rw_read = fx_rwlock(fx, name);
  ASSERT_OK(rw_acquire(fx, m->rw_read, RW_R, 0, -1));
  snprintf(name, sizeof(name), "{%s}rww", tag);
  m->rw_write = fx_rwlock(fx, name);
  ASSERT_OK(rw_acquire(fx, m->rw_write, RW_W, 0, -1));
  snprintf(name, sizeof(name), "{%s}psem", tag);
  m->psem = fx_psem(fx, name);
  ASSERT_OK(psem_run_n(fx, lk_psem_try_set_permits, m->psem, 3, NULL));
  ASSERT_OK(psem_acquire(fx, m->psem, 1, 0, -1));
}

static void mix_check_held(const mix_t *m) {
  ASSERT_EQ(lk_lock_is_held(m->lock), 1);
  ASSERT_EQ(lk_fair_is_held(m->fair), 1);
  ASSERT_EQ(lk_rwlock_is_held(m->rw_read, RW_R), 1);
  ASSERT_EQ(lk_rwlock_is_held(m->rw_write, RW_W), 1);
  ASSERT_EQ(lk_psem_is_held(m->psem), 1);
}

static void mix_close(fx_t *fx, mix_t *m) {
  fx_close_lock(fx, m->lock);
  fx_close_fair(fx, m->fair);
  fx_close_rwlock(fx, m->rw_read);
  fx_close_rwlock(fx, m->rw_write);
  fx_close_psem(fx, m->psem);
}

/* A lock, a fair lock, a read hold, a write hold and an expirable permit in
 * each of two slots: one script per class and slot. The fair lock renews as
 * a lock (same class, same script), so 4 classes: 8 scripts for 10 holds,
 * none refused, all held on by the ticks for more than a lease. */
TEST(cluster_classes_in_one_slot_renew_separately) {
  static const char *const tags[] = {"mx1", "mx2"};
  const int64_t lease = 1500;
  fx_t fx;
  mix_t m[2];
  uint64_t scripts, leases, at, t_start;
  long long errors0;

  assert_distinct_slots(tags, 2);
  start_slot_node(&fx, lease, LK_CLUSTER_AUTO);
  errors0 = server_errors(fx.srv);
  mix_open(&fx, &m[0], tags[0]);
  assert_cluster_found(&fx);
  mix_open(&fx, &m[1], tags[1]);
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, 8);
  ASSERT_EQ(leases, 10);
  t_start = uv_hrtime();
  while (uv_hrtime() - t_start < (uint64_t)lease * 1000000u + 100000000u) {
    await_renewals(&fx, 3 * lease, &scripts, &leases, &at);
    /* A tick renews a subset; never more scripts than (class, slot) pairs
     * among them, nor more than there are pairs. */
    ASSERT_LE(scripts, leases);
    ASSERT_LE(scripts, 8);
  }
  wait_quiet(&fx);
  mix_check_held(&m[0]);
  mix_check_held(&m[1]);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  mix_close(&fx, &m[0]);
  mix_close(&fx, &m[1]);
  fx_finish(&fx);
}

/* ---- lk__wd_verify_slots ------------------------------------------------------------ */

static void flag_slot(uint8_t *changed, const char *tag) {
  unsigned slot = lk__key_slot(tag, strlen(tag));
  changed[slot / 8] |= (uint8_t)(1u << (slot % 8));
}

/* Four slots, three holds each; slots wa and wb change masters, and one
 * hold of wa was deleted on the server. verify_slots sends two scripts at
 * once (one per flagged slot), the deleted hold is reported lost by that
 * renewal (before any tick renewed anything), the flagged slots' other
 * holds are refreshed, and the others' TTLs keep falling. */
TEST(cluster_verify_slots_renews_only_flagged_slots) {
  enum { K = 4, N = 12 };
  const int64_t lease = 6000; /* next tick renewal >= 1.5 s after the sync */
  static uint8_t changed[LK__SLOTS / 8];
  fx_t fx;
  set_t s;
  uint64_t scripts, leases;
  lk_client_stats_t a, b;
  long long before[N], after, errors0;
  int i, victim = 0; /* "{wa}:0" */

  assert_distinct_slots(TAGS4, K);
  start_slot_node(&fx, lease, LK_CLUSTER_AUTO);
  errors0 = server_errors(fx.srv);
  set_acquire(&fx, &s, TAGS4, K, N);
  assert_cluster_found(&fx);
  renew_all_now(&fx, &scripts, &leases);
  ASSERT_EQ(scripts, K);
  /* Let the TTLs fall a little, so a refresh shows. */
  FX_EVENTUALLY(&fx, pttl(&fx, s.names[N - 1]) < lease - 400, 3000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL %s", s.names[victim]), 1);
  for (i = 0; i < N; i++)
    before[i] = pttl(&fx, s.names[i]);
  memset(changed, 0, sizeof(changed));
  flag_slot(changed, "wa");
  flag_slot(changed, "wb");

  a = stats_of(&fx);
  lk__wd_verify_slots(fx.c, changed);
  b = stats_of(&fx);
  ASSERT_EQ(b.renewal_commands - a.renewal_commands, 2);
  ASSERT_EQ(b.renewals - a.renewals, N / K * 2);
  rt_run_until(&fx.loop, &s.lost, 5000);
  ASSERT_EQ(s.lost, 1);
  ASSERT_EQ(s.lost_index, victim);
  /* Told by verify_slots' own renewal: no tick had sent anything yet. */
  ASSERT_EQ(s.scripts_at_lost, b.renewal_commands);
  wait_quiet(&fx);
  ASSERT_EQ(stats_of(&fx).renewal_commands, b.renewal_commands);
  for (i = 0; i < N; i++) {
    if (i == victim)
      continue;
    after = pttl(&fx, s.names[i]);
    if (i % K < 2) {
      if (after <= before[i])
        FAIL("%s (flagged): PTTL %lld, was %lld: not refreshed", s.names[i], after,
             before[i]);
    } else if (after > before[i]) {
      FAIL("%s (not flagged): PTTL %lld, was %lld: refreshed", s.names[i], after, before[i]);
    }
    ASSERT_EQ(lk_lock_is_held(s.locks[i]), 1);
  }
  ASSERT_EQ(lk_lock_is_held(s.locks[victim]), 0);
  ASSERT_EQ(server_errors(fx.srv), errors0);
  set_close(&fx, &s);
  fx_finish(&fx);
}

/* A renewal already in flight when its slot's master changes may be
 * answered by the old master: once it is, the slot's holds are renewed once
 * more (and only they), so a hold the new master lacks is still told at
 * once. Here the in-flight renewal's reply is held by a proxy while the hold
 * is deleted on the server; that reply says "extended", the renewal that
 * follows says it is gone. */
TEST(cluster_verify_slots_renews_again_after_a_renewal_in_flight) {
  static const char *const tags[] = {"wa", "wb"};
  const int64_t lease = 6000;
  static uint8_t changed[LK__SLOTS / 8];
  const lk__script_t *renew = lk__script_find("lock/renew");
  char match[64];
  fx_t fx;
  set_t s;
  rt_proxy_t *p = NULL;
  lk_client_stats_t a, b;
  long long calls0;
  char *v;
  int victim = 0; /* "{wa}:0" */

  ASSERT_NOT_NULL(renew);
  assert_distinct_slots(tags, 2);
  start_forced(&fx, lease, &p);
  rt_hostile_preload(fx.srv);
  set_acquire(&fx, &s, tags, 2, 4);
  wait_quiet(&fx);

  /* Both slots' renewals go out; their replies are held. */
  snprintf(match, sizeof(match), "EVALSHA %s", renew->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_HOLD, NULL, 0);
  v = rt_server_info(fx.srv, "commandstats", "cmdstat_evalsha");
  ASSERT_NOT_NULL(v);
  ASSERT_EQ(sscanf(v, "calls=%lld", &calls0), 1);
  free(v);
  a = stats_of(&fx);
  lk__client_cork(fx.c);
  lk__wd_verify_all(fx.c);
  lk__client_uncork(fx.c);
  ASSERT_EQ(stats_of(&fx).renewal_commands - a.renewal_commands, 2);
  FX_WAIT_RULE_APPLIED(&fx, p, 3000); /* the first reply is held */
  /* The server ran both (the hold was still there), then loses it. */
  for (;;) {
    long long calls;
    v = rt_server_info(fx.srv, "commandstats", "cmdstat_evalsha");
    ASSERT_NOT_NULL(v);
    ASSERT_EQ(sscanf(v, "calls=%lld", &calls), 1);
    free(v);
    if (calls >= calls0 + 2)
      break;
    fx_spin(&fx, 2);
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL %s", s.names[victim]), 1);

  memset(changed, 0, sizeof(changed));
  flag_slot(changed, "wa");
  a = stats_of(&fx);
  lk__wd_verify_slots(fx.c, changed);
  b = stats_of(&fx);
  ASSERT_EQ(b.renewal_commands, a.renewal_commands); /* in flight: owed */
  ASSERT_EQ(s.lost, 0);

  rt_proxy_release(p);
  rt_run_until(&fx.loop, &s.lost, 5000);
  ASSERT_EQ(s.lost_index, victim);
  /* Told by the one renewal owed to slot wa, not by a tick. */
  ASSERT_EQ(s.scripts_at_lost, a.renewal_commands + 1);
  wait_quiet(&fx);
  ASSERT_EQ(stats_of(&fx).renewal_commands, a.renewal_commands + 1);
  ASSERT_EQ(lk_lock_is_held(s.locks[2]), 1); /* {wa}:2 */
  ASSERT_EQ(lk_lock_is_held(s.locks[1]), 1); /* {wb}:1 */
  ASSERT_EQ(lk_lock_is_held(s.locks[3]), 1);
  set_close(&fx, &s);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

/* ---- a master answering late ---------------------------------------------------------- */

/* The ring stays ordered by confirmation time (the order lk__wd_check and
 * the ticks rely on). */
static void assert_ring_ordered(lk_client_t *c) {
  lk__queue_t *q;
  uint64_t last = 0;
  size_t i = 0;
  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next, i++) {
    const lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    if (e->confirmed_ns < last)
      FAIL("ring entry %zu confirmed %llu ns before the one ahead of it", i,
           (unsigned long long)(last - e->confirmed_ns));
    last = e->confirmed_ns;
  }
}

/* How many of the set's locks are held. */
static int set_held(const set_t *s) {
  int i, n = 0;
  for (i = 0; i < s->n; i++)
    n += lk_lock_is_held(s->locks[i]);
  return n;
}

/* On a 3-master cluster (no replicas) one master is paused across two
 * ticks, which renew two groups of holds half a period apart: the other
 * masters confirm both groups at once, the paused one answers the first
 * group after the second group's confirmations are in. Each late
 * confirmation takes its place in the ring's order (found from the nearer
 * end), no hold is lost, and the ring stays ordered while the holds live on
 * for two more periods. */
TEST(cluster_late_master_keeps_the_ring_in_order) {
  enum { PER = 30 }; /* holds per master and group */
  const int64_t lease = 3000; /* period 1 s, ticks every 500 ms */
  rt_cluster_opts_t co;
  rt_cluster_t *cl;
  lk_client_opts_t o;
  int m[3], g, k, i;
  fx_t fx;
  set_t set[2];
  uint64_t scripts, leases, at, t_end;

  rt_cluster_opts_init(&co);
  co.replicas = 0;
  co.node_timeout_ms = 15000; /* the pause is no failure */
  memset(&fx, 0, sizeof(fx));
  ASSERT_OK(uv_loop_init(&fx.loop));
  cl = rt_cluster_start(&co);
  ASSERT_NOT_NULL(cl);
  ASSERT_EQ(rt_cluster_masters(cl, m, 3), 3);
  lk_client_opts_init(&o);
  o.default_lease_ms = lease;
  o.port = rt_cluster_port(cl, m[0]);
  fx_start_client(&fx, &o);

  /* Group 0, then group 1 a tick later: they renew in alternate ticks. */
  for (g = 0; g < 2; g++) {
    set_alloc(&fx, &set[g], 3 * PER);
    for (k = 0; k < 3; k++)
      for (i = 0; i < PER; i++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "late:%d:%d:%d:", g, k, i);
        ASSERT_GE(rt_cluster_key_on(cl, m[k], prefix, set[g].names[k * PER + i],
                                    sizeof(set[g].names[0])),
                  0);
      }
    set_acquire_named(&fx, &set[g]);
    ASSERT_EQ(fx.c->cluster_on, 1);
    if (g == 0)
      fx_spin(&fx, lease / 6 + 50);
  }
  wait_quiet(&fx);
  assert_ring_ordered(fx.c);

  /* Master m[1] stops across two ticks, then answers. */
  int64_t paused = rt_stall_mark();
  rt_cluster_pause(cl, m[1]);
  fx_spin(&fx, lease / 2 + 300);
  rt_cluster_resume(cl, m[1]);
  wait_quiet(&fx);
  assert_ring_ordered(fx.c);

  t_end = uv_hrtime() + 2 * (uint64_t)lease / 3 * 1000000u;
  while (uv_hrtime() < t_end) {
    await_renewals(&fx, lease, &scripts, &leases, &at);
    assert_ring_ordered(fx.c);
  }
  wait_quiet(&fx);
  assert_ring_ordered(fx.c);
  /* The slack the pause leaves: the group confirmed a tick before it
   * started has the lease less the drift, the pause and that tick left.
   * Only a machine stall longer than that may take holds (each then told
   * once). */
  const int64_t slack = lease - (lease / 100 + 2) - (lease / 2 + 300) - lease / 6;
  for (g = 0; g < 2; g++) {
    if (!EXPECT_HOLD(set[g].lost == 0 && set_held(&set[g]) == set[g].n, paused, slack))
      FX_EVENTUALLY(&fx, set[g].lost + set_held(&set[g]) == set[g].n, 3000);
    set_close(&fx, &set[g]);
  }
  fx_finish(&fx);
  rt_cluster_stop(cl);
}
