/* Regression tests for the findings of the hostile-server review (issue 15).
 * The findings' garbled reply is a well-formed reply of a shape the verb
 * never sends (an integer where an array is due, a bulk string where an
 * array or an integer is): the reply behind their LK_EPROTOCOL. (Bytes that
 * are not RESP at all make the client drop the connection, which settles
 * the command like a lost reply: the matrix's "garbled" column.)
 *
 *   F1  a garbled reply to a counting-semaphore release must not create a
 *       permit (the release ran; the object went on counting the permit, and
 *       its close gave it back a second time: two holders of one permit);
 *   F2  a garbled reply to a counting-semaphore acquire must not lose the
 *       permit for good;
 *   F3  after a garbled acquire reply, every holding primitive gives back the
 *       hold the server may have granted, promptly, not at the end of its
 *       lease (the reentrant lock did; the read/write lock, the fair lock and
 *       the expirable semaphore left it for the whole lease);
 *   F6  an acquire with a wait budget while the server is unreachable ends
 *       with LK_ETIMEDOUT (docs/errors.md), not LK_ECONN.
 *
 * Each case prints what it saw (status, counts, keys), so a failure says
 * what the code did. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile_cell.h"

/* ---- F1 / F2: the counting semaphore --------------------------------------------------- */

/* Once every object is closed, the server holds the one permit it started
 * with; then the cell's status check and stop. */
static void sem_cell_finish(hc_t *c) {
  hc_close_clients(c);
  long long n = srv_count(c->fx.srv, HC_NAME);
  if (n != 1)
    FAIL("%lld permits after every object closed, of 1", n);
  hc_check_status(c, 0, 0); /* settled (resent), or LK_EUNKNOWN: never LK_EPROTOCOL */
  hc_stop(c);
}

TEST(f1_garbled_semaphore_release_creates_no_permit) {
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_semaphore_t *s = fx_sem(&c.fx, HC_NAME);
  lk_semaphore_t *o = NULL;
  ASSERT_OK(lk_semaphore_new(c.direct, HC_NAME, &o));
  free(rt_cmd_str(c.fx.srv, "SET %s 1", HC_NAME)); /* one permit */
  ASSERT_OK(sem_acquire(&c.fx, s, 1, 0));
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE, "semaphore/release", 1, ":1\r\n");
  ASSERT_OK(lk_semaphore_release(s, 1, sem_cb, &c.s));
  hc_wait(&c);
  printf("release: %s; s counts %lld, the server has %lld\n", lk_err_name(c.s.status),
         (long long)lk_semaphore_held(s), srv_count(c.fx.srv, HC_NAME));
  /* What s still counts is not on the server as well: one permit, one
   * holder (a background resend may take a moment). */
  int64_t end = rt_now_ms() + rt_scaled_ms(2000);
  while (srv_count(c.fx.srv, HC_NAME) + lk_semaphore_held(s) != 1 && rt_now_ms() < end)
    fx_spin(&c.fx, 2);
  if (lk_semaphore_held(s) > 0) {
    sx_t t;
    int st = sem_acquire_in(&c.fx.loop, o, 1, 0, &t);
    if (st == 0)
      FAIL("two holders of a 1-permit semaphore: s still counts its permit and o took it");
    ASSERT_EQ(st, LK_ETIMEDOUT);
  }
  fx_close_sem(&c.fx, s);
  fx_close_sem(&c.fx, o);
  sem_cell_finish(&c);
}

TEST(f2_garbled_semaphore_acquire_loses_no_permit) {
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_semaphore_t *s = fx_sem(&c.fx, HC_NAME);
  free(rt_cmd_str(c.fx.srv, "SET %s 1", HC_NAME));
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE, "semaphore/acquire", 1, NULL);
  sem_start_acquire(s, 1, 0, &c.s);
  hc_wait(&c);
  printf("acquire: %s; s counts %lld, the server has %lld\n", lk_err_name(c.s.status),
         (long long)lk_semaphore_held(s), srv_count(c.fx.srv, HC_NAME));
  if (c.s.status == 0) /* settled by a resend: then it is s's */
    ASSERT_EQ(lk_semaphore_held(s), 1);
  fx_close_sem(&c.fx, s);
  sem_cell_finish(&c);
}

/* ---- F3: the give-back after a garbled acquire reply ----------------------------------- */

/* A lease far longer than the give-back may take: a hold still there after
 * the bound below was left to its lease. */
#define F3_LEASE rt_scaled_ms(30000)
#define F3_BOUND 3000 /* ms, scaled */

/* Waits (bounded, running the loop) until gone() holds; fails with what is
 * left otherwise. */
#define F3_GIVEN_BACK(c, gone, what)                                                    \
  do {                                                                                  \
    uint64_t t0_ = c.s.t_ns;                                                            \
    int64_t end_ = rt_now_ms() + rt_scaled_ms(F3_BOUND);                                \
    while (!(gone) && rt_now_ms() < end_)                                               \
      fx_spin(&c.fx, 2);                                                                \
    if (!(gone))                                                                        \
      FAIL("after %s, %s still on the server %lld ms after the callback (lease %lld)",  \
           lk_err_name(c.s.status), what, (long long)((uv_hrtime() - t0_) / 1000000),   \
           (long long)F3_LEASE);                                                        \
    printf("given back %lld ms after the callback (%s)\n",                              \
           (long long)((uv_hrtime() - t0_) / 1000000), lk_err_name(c.s.status));        \
    hc_check_status(&c, 0, 0);                                                          \
  } while (0)

TEST(f3_garbled_lock_acquire_is_given_back) {
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_lock_t *a = fx_lock(&c.fx, HC_NAME);
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE, "lock/acquire", 1, NULL);
  fu_start_acquire(a, 0, F3_LEASE, 0, &c.s);
  hc_wait(&c);
  if (c.s.status == 0) {
    ASSERT_EQ(hc_hget(&c, HC_NAME, lk_lock_owner(a)), 1);
    ASSERT_OK(sx_run(&c.fx, lk_lock_release, a, NULL));
  }
  F3_GIVEN_BACK(c, hc_exists(&c, HC_NAME) == 0, "the lock");
  fx_close_lock(&c.fx, a);
  hc_finish(&c, NULL, 0);
}

static void f3_rw(lk_rwlock_side_t side) {
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_rwlock_t *a = fx_rwlock(&c.fx, HC_NAME);
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE,
                        side == RW_R ? "rwlock/read_acquire" : "rwlock/write_acquire", 1,
                        side == RW_R ? NULL : "+OK\r\n");
  rw_start(a, side, 0, F3_LEASE, &c.s);
  hc_wait(&c);
  if (c.s.status == 0) {
    ASSERT_EQ(lk_rwlock_hold_count(a, side), 1);
    ASSERT_OK(rw_release(&c.fx, a, side, NULL));
  }
  F3_GIVEN_BACK(c,
                hc_exists(&c, HC_NAME) == 0 &&
                    rt_server_count_keys(c.fx.srv, "{" HC_NAME "}:*:rwlock_timeout:*") == 0,
                side == RW_R ? "the read hold" : "the write hold");
  fx_close_rwlock(&c.fx, a);
  hc_finish(&c, NULL, 0);
}

TEST(f3_garbled_rwlock_read_acquire_is_given_back) { f3_rw(RW_R); }
TEST(f3_garbled_rwlock_write_acquire_is_given_back) { f3_rw(RW_W); }

TEST(f3_garbled_fair_acquire_is_given_back) {
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_fair_t *a = fx_fair(&c.fx, HC_NAME);
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE, "fair/acquire", 1, ":0\r\n");
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = 0;
  o.lease_ms = F3_LEASE;
  ASSERT_OK(lk_fair_acquire(a, &o, fsx_cb, &c.s));
  hc_wait(&c);
  if (c.s.status == 0) {
    ASSERT_EQ(lk_fair_hold_count(a), 1);
    ASSERT_OK(fsx_run(&c.fx, lk_fair_release, a, NULL));
  }
  F3_GIVEN_BACK(c, hc_exists(&c, HC_NAME) == 0, "the fair lock");
  fx_close_fair(&c.fx, a);
  hc_finish(&c, NULL, 0);
}

TEST(f3_garbled_psem_acquire_is_given_back) {
  static const hc_allow_t count[] = {{HC_NAME, 0}};
  hc_t c;
  hc_start(&c, RT_HF_WRONG_TYPE, 30000);
  lk_psem_t *p = fx_psem(&c.fx, HC_NAME);
  free(rt_cmd_str(c.fx.srv, "SET %s 1", HC_NAME));
  rt_hostile_arm_script(c.p, RT_HF_WRONG_TYPE, "semaphore/psem_acquire", 1, NULL);
  psem_start_acquire(p, 1, 0, F3_LEASE, &c.s);
  hc_wait(&c);
  if (c.s.status == 0) {
    ASSERT_EQ(lk_psem_permit_count(p), 1);
    ASSERT_OK(psem_run_id(&c.fx, lk_psem_release, p, NULL, NULL));
  }
  F3_GIVEN_BACK(c,
                srv_count(c.fx.srv, HC_NAME) == 1 &&
                    rt_server_count_keys(c.fx.srv, "{" HC_NAME "}:timeout") == 0,
                "the permit");
  fx_close_psem(&c.fx, p);
  hc_finish(&c, count, 1);
}

/* ---- F6: a budget spent against an unreachable server ------------------------------------ */

/* How the server becomes unreachable: the proxy refusing every connection,
 * or the server killed behind it. */
enum { F6_REFUSE, F6_KILLED };

#define F6_WAIT 1000

/* Connected first (a query answered), then cut off; returns once the
 * client has seen its connection go (nothing of the acquire is in flight
 * then: it is never sent). */
static void f6_cut_off(hc_t *c, int how) {
  int from = c->ev.n;
  if (how == F6_REFUSE) {
    rt_proxy_refuse(c->p, 1);
    rt_proxy_reset_all(c->p);
  } else {
    rt_server_kill(c->fx.srv, SIGKILL);
  }
  HC_EVENTUALLY(c, fu_event_index(&c->ev, LK_EVENT_SUSPENDED, from) >= 0, 3000,
                "the client never saw its connection go");
}

static void f6_reconnect(hc_t *c, int how) {
  if (how == F6_REFUSE)
    rt_proxy_refuse(c->p, 0);
  else
    ASSERT_OK(rt_server_restart(c->fx.srv));
}

static void f6_check(hc_t *c, uint64_t t0) {
  rt_run_until(&c->fx.loop, &c->s.done, F6_WAIT + 5000);
  int64_t took = (int64_t)((c->s.t_ns - t0) / 1000000);
  printf("acquire with wait %d ms: %s after %lld ms\n", F6_WAIT, lk_err_name(c->s.status),
         (long long)took);
  if (c->s.status != LK_ETIMEDOUT)
    FAIL("the budget ran out against an unreachable server: %s, not LK_ETIMEDOUT",
         lk_err_name(c->s.status));
  ASSERT_GE(took, F6_WAIT - 5);
  ASSERT_LE(took, F6_WAIT + rt_stall_bound_since_ns(t0, 1500));
}

/* One kind's calls for f6_budget_spent_unreachable; obj is the kind's
 * object on HC_NAME. */
typedef struct {
  void *(*open)(hc_t *c); /* also sets up what the acquire needs */
  int (*query)(hc_t *c, void *obj); /* answered: connected */
  void (*start_acquire)(void *obj, sx_t *s); /* wait F6_WAIT, lease HC_LEASE */
  void (*close)(hc_t *c, void *obj);
  const hc_allow_t *allow; /* what may stay on the server (hc_finish) */
  size_t n_allow;
} f6_kind_t;

/* Connected, then cut off (how), an acquire with a budget: it ends
 * LK_ETIMEDOUT when the budget is spent (f6_check); then the server is
 * reachable again and nothing is left behind. */
static void f6_budget_spent_unreachable(const f6_kind_t *k, int how) {
  hc_t c;
  hc_start(&c, RT_HF_CUT, 30000);
  void *obj = k->open(&c);
  ASSERT_OK(k->query(&c, obj));
  f6_cut_off(&c, how);
  uint64_t t0 = uv_hrtime();
  k->start_acquire(obj, &c.s);
  f6_check(&c, t0);
  f6_reconnect(&c, how);
  k->close(&c, obj);
  hc_finish(&c, k->allow, k->n_allow);
}

/* The semaphores' one permit, which may stay on the server. */
static const hc_allow_t f6_count[] = {{HC_NAME, 0}};

static void *f6_lock_open(hc_t *c) { return fx_lock(&c->fx, HC_NAME); }
static int f6_lock_query(hc_t *c, void *a) { return sx_run(&c->fx, lk_lock_is_locked, a, NULL); }
static void f6_lock_start(void *a, sx_t *s) { fu_start_acquire(a, F6_WAIT, HC_LEASE, 0, s); }
static void f6_lock_close(hc_t *c, void *a) { fx_close_lock(&c->fx, a); }
static const f6_kind_t f6_lock = {f6_lock_open, f6_lock_query, f6_lock_start, f6_lock_close,
                                  NULL, 0};

static void *f6_fair_open(hc_t *c) { return fx_fair(&c->fx, HC_NAME); }
static int f6_fair_query(hc_t *c, void *a) { return fsx_run(&c->fx, lk_fair_is_locked, a, NULL); }
static void f6_fair_start(void *a, sx_t *s) {
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = F6_WAIT;
  o.lease_ms = HC_LEASE;
  ASSERT_OK(lk_fair_acquire(a, &o, fsx_cb, s));
}
static void f6_fair_close(hc_t *c, void *a) { fx_close_fair(&c->fx, a); }
static const f6_kind_t f6_fair = {f6_fair_open, f6_fair_query, f6_fair_start, f6_fair_close,
                                  NULL, 0};

static void *f6_rwlock_open(hc_t *c) { return fx_rwlock(&c->fx, HC_NAME); }
static int f6_rwlock_query(hc_t *c, void *a) { return rw_run(&c->fx, lk_rwlock_mode, a, NULL); }
static void f6_rwlock_start(void *a, sx_t *s) { rw_start(a, RW_W, F6_WAIT, HC_LEASE, s); }
static void f6_rwlock_close(hc_t *c, void *a) { fx_close_rwlock(&c->fx, a); }
static const f6_kind_t f6_rwlock = {f6_rwlock_open,  f6_rwlock_query, f6_rwlock_start,
                                    f6_rwlock_close, NULL,            0};

static void *f6_sem_open(hc_t *c) {
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  free(rt_cmd_str(c->fx.srv, "SET %s 1", HC_NAME));
  return s;
}
static int f6_sem_query(hc_t *c, void *s) {
  return sem_run(&c->fx, lk_semaphore_available, s, NULL);
}
static void f6_sem_start(void *s, sx_t *x) { sem_start_acquire(s, 1, F6_WAIT, x); }
static void f6_sem_close(hc_t *c, void *s) { fx_close_sem(&c->fx, s); }
static const f6_kind_t f6_sem = {f6_sem_open, f6_sem_query, f6_sem_start, f6_sem_close,
                                 f6_count,    1};

static void *f6_psem_open(hc_t *c) {
  lk_psem_t *p = fx_psem(&c->fx, HC_NAME);
  free(rt_cmd_str(c->fx.srv, "SET %s 1", HC_NAME));
  return p;
}
static int f6_psem_query(hc_t *c, void *p) { return psem_run(&c->fx, lk_psem_available, p, NULL); }
static void f6_psem_start(void *p, sx_t *x) { psem_start_acquire(p, 1, F6_WAIT, HC_LEASE, x); }
static void f6_psem_close(hc_t *c, void *p) { fx_close_psem(&c->fx, p); }
static const f6_kind_t f6_psem = {f6_psem_open, f6_psem_query, f6_psem_start, f6_psem_close,
                                  f6_count,     1};

TEST(f6_lock_budget_against_refused_connections_is_etimedout) {
  f6_budget_spent_unreachable(&f6_lock, F6_REFUSE);
}
TEST(f6_lock_budget_against_a_killed_server_is_etimedout) {
  f6_budget_spent_unreachable(&f6_lock, F6_KILLED);
}
TEST(f6_fair_budget_against_refused_connections_is_etimedout) {
  f6_budget_spent_unreachable(&f6_fair, F6_REFUSE);
}
TEST(f6_rwlock_budget_against_refused_connections_is_etimedout) {
  f6_budget_spent_unreachable(&f6_rwlock, F6_REFUSE);
}
TEST(f6_semaphore_budget_against_refused_connections_is_etimedout) {
  f6_budget_spent_unreachable(&f6_sem, F6_REFUSE);
}
TEST(f6_psem_budget_against_refused_connections_is_etimedout) {
  f6_budget_spent_unreachable(&f6_psem, F6_REFUSE);
}
