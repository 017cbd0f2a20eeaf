/* The blocking forms of the fair lock, latch, leader election and rate
 * limiter (docs/blocking.md): per-thread owners and waits, each against its
 * asynchronous twin's codes. */
#include <stdatomic.h>
#include <string.h>

#include "latchkey.h"
#include "redis_server.h"
#include "test.h"
#include "blocking_fixture.h"


/* ---- fair lock --------------------------------------------------------------- */

typedef struct {
  lk_blocking_fair_t *f;
  int64_t wait_ms;
  int rc, rel;
} fair_arg_t;

static void fair_try(void *arg) {
  fair_arg_t *a = arg;
  a->rc = lk_blocking_fair_try(a->f, a->wait_ms);
  a->rel = a->rc == 0 ? lk_blocking_fair_release(a->f) : 1;
}

TEST(fair_threads_exclude_and_reenter) {
  bx_t x;
  lk_blocking_fair_t *f;
  fair_arg_t a;
  bx_start(&x);
  ASSERT_OK(lk_blocking_fair_new(x.b, "blk_fair", &f));
  ASSERT_OK(lk_blocking_fair_try(f, 0));
  ASSERT_OK(lk_blocking_fair_try(f, 0));
  ASSERT_EQ(lk_blocking_fair_hold_count(f), 2);
  ASSERT_EQ(lk_blocking_fair_is_held(f), 1);
  a = (fair_arg_t){f, 150, 1, 1};
  rt_on_thread(fair_try, &a);
  ASSERT_EQ(a.rc, LK_ETIMEDOUT);
  ASSERT_OK(lk_blocking_fair_release(f));
  ASSERT_EQ(lk_blocking_fair_is_locked(f), 1);
  ASSERT_OK(lk_blocking_fair_release(f));
  ASSERT_EQ(lk_blocking_fair_is_held(f), 0);
  a = (fair_arg_t){f, 0, 1, 1};
  rt_on_thread(fair_try, &a);
  ASSERT_OK(a.rc);
  ASSERT_OK(a.rel);
  ASSERT_EQ(lk_blocking_fair_is_locked(f), 0);
  ASSERT_OK(lk_blocking_fair_close(f));
  bx_finish(&x);
}

/* ---- latch --------------------------------------------------------------------- */

#define LATCH_WAITERS 3

typedef struct {
  lk_blocking_latch_t *l;
  _Atomic int started;
  int rc[LATCH_WAITERS];
  _Atomic int next;
} latch_arg_t;

static void latch_wait(void *arg) {
  latch_arg_t *a = arg;
  int i = atomic_fetch_add(&a->next, 1);
  atomic_fetch_add(&a->started, 1);
  a->rc[i] = lk_blocking_latch_await(a->l, rt_scaled_ms(10000));
}

TEST(latch_threads_await_count_down) {
  bx_t x;
  latch_arg_t a;
  uv_thread_t t[LATCH_WAITERS];
  int64_t left = 99;
  memset(&a, 0, sizeof(a));
  bx_start(&x);
  ASSERT_OK(lk_blocking_latch_new(x.b, "blk_latch", NULL, &a.l));
  ASSERT_EQ(lk_blocking_latch_try_set_count(a.l, 2), 1);
  ASSERT_EQ(lk_blocking_latch_try_set_count(a.l, 5), 0);
  ASSERT_EQ(lk_blocking_latch_await(a.l, 0), LK_ETIMEDOUT);
  for (int i = 0; i < LATCH_WAITERS; i++)
    ASSERT_OK(uv_thread_create(&t[i], latch_wait, &a));
  ASSERT_OK(lk_blocking_latch_count_down(a.l, &left));
  ASSERT_EQ(left, 1);
  ASSERT_OK(lk_blocking_latch_get_count(a.l, &left));
  ASSERT_EQ(left, 1);
  ASSERT_OK(lk_blocking_latch_count_down(a.l, &left));
  ASSERT_EQ(left, 0);
  for (int i = 0; i < LATCH_WAITERS; i++)
    uv_thread_join(&t[i]);
  for (int i = 0; i < LATCH_WAITERS; i++)
    ASSERT_OK(a.rc[i]);
  ASSERT_OK(lk_blocking_latch_count_down(a.l, &left));
  ASSERT_EQ(left, -1); /* open already */
  ASSERT_OK(lk_blocking_latch_close(a.l));
  bx_finish(&x);
}

/* ---- leader ------------------------------------------------------------------------ */

typedef struct {
  lk_blocking_leader_t *l;
  int64_t wait_ms;
  int rc, resign_rc;
  int64_t term;
  int led;
} leader_arg_t;

static void leader_campaign(void *arg) {
  leader_arg_t *a = arg;
  lk_leader_opts_t o;
  lk_leader_opts_init(&o);
  o.wait_ms = a->wait_ms;
  a->rc = lk_blocking_leader_campaign(a->l, &o, &a->term);
  a->led = lk_blocking_leader_is_leader(a->l);
  a->resign_rc = a->rc == 0 ? lk_blocking_leader_resign(a->l) : 1;
}

TEST(leader_one_thread_leads_at_a_time) {
  bx_t x;
  lk_blocking_leader_t *l;
  leader_arg_t a;
  int64_t term = 0;
  bx_start(&x);
  ASSERT_OK(lk_blocking_leader_new(x.b, "blk_role", &l));
  ASSERT_EQ(lk_blocking_leader_is_leader(l), 0);
  ASSERT_OK(lk_blocking_leader_campaign(l, NULL, &term));
  ASSERT_GT(term, 0);
  ASSERT_EQ(lk_blocking_leader_term(l), term);
  ASSERT_EQ(lk_blocking_leader_is_leader(l), 1);
  /* Another thread is another candidate: it cannot lead meanwhile. */
  a = (leader_arg_t){l, 150, 1, 1, 0, 0};
  rt_on_thread(leader_campaign, &a);
  ASSERT_EQ(a.rc, LK_ETIMEDOUT);
  ASSERT_EQ(a.led, 0);
  ASSERT_OK(lk_blocking_leader_resign(l));
  ASSERT_EQ(lk_blocking_leader_is_leader(l), 0);
  a = (leader_arg_t){l, 0, 1, 1, 0, 0};
  rt_on_thread(leader_campaign, &a);
  ASSERT_OK(a.rc);
  ASSERT_EQ(a.led, 1);
  ASSERT_GT(a.term, term);
  ASSERT_OK(a.resign_rc);
  ASSERT_EQ(lk_blocking_leader_resign(l), LK_ENOTHELD);
  ASSERT_OK(lk_blocking_leader_close(l));
  bx_finish(&x);
}

/* ---- rate limiter -------------------------------------------------------------------- */

typedef struct {
  lk_blocking_ratelimiter_t *r;
  int rc;
} rl_arg_t;

static void rl_take(void *arg) {
  rl_arg_t *a = arg;
  a->rc = lk_blocking_ratelimiter_try(a->r, 1, 0);
}

TEST(ratelimiter_threads_share_the_rate) {
  bx_t x;
  lk_blocking_ratelimiter_t *r;
  lk_ratelimiter_config_t cfg;
  rl_arg_t a;
  int64_t left = -1;
  bx_start(&x);
  ASSERT_OK(lk_blocking_ratelimiter_new(x.b, "blk_rl", &r));
  lk_ratelimiter_config_init(&cfg);
  cfg.rate = 2;
  cfg.interval_ms = 60000;
  ASSERT_EQ(lk_blocking_ratelimiter_try_set_rate(r, &cfg), 1);
  ASSERT_EQ(lk_blocking_ratelimiter_try_set_rate(r, &cfg), 0);
  for (int i = 0; i < 2; i++) {
    a = (rl_arg_t){r, 1};
    rt_on_thread(rl_take, &a);
    ASSERT_OK(a.rc);
  }
  ASSERT_OK(lk_blocking_ratelimiter_available(r, &left));
  ASSERT_EQ(left, 0);
  ASSERT_EQ(lk_blocking_ratelimiter_try(r, 1, 100), LK_ETIMEDOUT);
  ASSERT_EQ(lk_blocking_ratelimiter_set_rate(r, NULL), LK_EINVAL);
  ASSERT_OK(lk_blocking_ratelimiter_close(r));
  bx_finish(&x);
}

/* ---- permit-expirable semaphore ---------------------------------------------------------- */

typedef struct {
  lk_blocking_psem_t *p;
  int rc, rel;
  int64_t held;
} psem_arg_t;

static void psem_take(void *arg) {
  psem_arg_t *a = arg;
  char id[LK_PSEM_ID_LEN + 1];
  a->rc = lk_blocking_psem_try(a->p, 0, id);
  a->held = lk_blocking_psem_held(a->p);
  a->rel = a->rc == 0 ? lk_blocking_psem_release(a->p, id) : 1;
}

TEST(psem_permits_have_ids_per_thread) {
  bx_t x;
  lk_blocking_psem_t *p;
  lk_psem_opts_t o;
  char ids[2][LK_PSEM_ID_LEN + 1];
  psem_arg_t a;
  bx_start(&x);
  ASSERT_OK(lk_blocking_psem_new(x.b, "blk_psem", &p));
  ASSERT_EQ(lk_blocking_psem_try_set_permits(p, 3), 1);
  lk_psem_opts_init(&o);
  o.permits = 2;
  memset(ids, 0, sizeof(ids));
  ASSERT_OK(lk_blocking_psem_acquire(p, &o, ids));
  ASSERT_EQ(strlen(ids[0]), LK_PSEM_ID_LEN);
  ASSERT_EQ(strlen(ids[1]), LK_PSEM_ID_LEN);
  ASSERT(strcmp(ids[0], ids[1]) != 0);
  ASSERT_EQ(lk_blocking_psem_held(p), 2);
  ASSERT_EQ(lk_blocking_psem_available(p), 1);
  /* Another thread takes the last one, and holds only its own. */
  a = (psem_arg_t){p, 1, 1, -1};
  rt_on_thread(psem_take, &a);
  ASSERT_OK(a.rc);
  ASSERT_EQ(a.held, 1);
  ASSERT_OK(a.rel);
  ASSERT_OK(lk_blocking_psem_release(p, ids[0]));
  ASSERT_EQ(lk_blocking_psem_held(p), 1);
  ASSERT_EQ(lk_blocking_psem_release(p, ids[0]), LK_ENOTHELD);
  ASSERT_OK(lk_blocking_psem_release(p, NULL));
  ASSERT_EQ(lk_blocking_psem_available(p), 3);
  ASSERT_OK(lk_blocking_psem_close(p));
  bx_finish(&x);
}

/* ---- MultiLock -------------------------------------------------------------------------------- */

typedef struct {
  lk_blocking_multilock_t *g;
  lk_blocking_lock_t *l;
  int rc, lock_rc;
} ml_arg_t;

static void ml_try(void *arg) {
  ml_arg_t *a = arg;
  a->rc = lk_blocking_multilock_try(a->g, 100);
  /* This thread's lock on a member's name is another owner than the group
   * of the main thread. */
  a->lock_rc = lk_blocking_lock_try(a->l, 0);
  if (a->lock_rc == 0)
    a->lock_rc = lk_blocking_lock_release(a->l);
}

TEST(multilock_group_per_thread) {
  bx_t x;
  const char *names[] = {"blk_ml_a", "blk_ml_b", "blk_ml_c"};
  lk_blocking_multilock_t *g;
  lk_blocking_lock_t *l;
  ml_arg_t a;
  bx_start(&x);
  ASSERT_OK(lk_blocking_multilock_new(x.b, names, 3, &g));
  ASSERT_OK(lk_blocking_lock_new(x.b, "blk_ml_b", &l));
  ASSERT_OK(lk_blocking_multilock_try(g, 0));
  ASSERT_EQ(lk_blocking_multilock_is_held(g), 1);
  ASSERT_EQ(lk_blocking_multilock_hold_count(g), 1);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS %s", names[i]), 1);
  /* The same thread re-enters one member by itself: same owner. */
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  ASSERT_EQ(lk_blocking_lock_hold_count(l), 1);
  ASSERT_OK(lk_blocking_lock_release(l));
  a = (ml_arg_t){g, l, 1, 1};
  rt_on_thread(ml_try, &a);
  ASSERT_EQ(a.rc, LK_ETIMEDOUT);
  ASSERT_EQ(a.lock_rc, LK_ETIMEDOUT);
  ASSERT_OK(lk_blocking_multilock_release(g));
  ASSERT_EQ(lk_blocking_multilock_is_held(g), 0);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS %s", names[i]), 0);
  a = (ml_arg_t){g, l, 1, 1};
  rt_on_thread(ml_try, &a);
  ASSERT_OK(a.rc); /* held by that thread's group until close gives it back */
  ASSERT_OK(a.lock_rc);
  ASSERT_OK(lk_blocking_multilock_close(g));
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS %s", names[i]), 0);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* ---- entry codes ------------------------------------------------------------------------------ */

TEST(entry_codes_and_bad_options) {
  bx_t x;
  lk_client_opts_t o;
  lk_blocking_t *b = NULL;
  lk_blocking_lock_t *l = NULL;
  /* An option the client refuses: nothing is left running. */
  lk_client_opts_init(&o);
  o.connect_timeout_ms = -5;
  ASSERT_EQ(lk_blocking_new(&o, &b), LK_EINVAL);
  ASSERT_NULL(b);
  ASSERT_EQ(lk_blocking_new(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_attach(NULL, &b), LK_EINVAL);
  ASSERT_EQ(lk_blocking_close(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_cancel(NULL, 1), LK_EINVAL);
  ASSERT_EQ(lk_blocking_lock_try(NULL, 0), LK_EINVAL);
  ASSERT_EQ(lk_blocking_lock_is_held(NULL), 0);
  bx_start(&x);
  ASSERT_EQ(lk_blocking_lock_new(x.b, "", &l), LK_EINVAL);
  ASSERT_EQ(lk_blocking_lock_new(x.b, NULL, &l), LK_EINVAL);
  ASSERT_NULL(l);
  /* A name the client refuses is told by the first call. */
  {
    char name[5000];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ASSERT_OK(lk_blocking_lock_new(x.b, name, &l));
    ASSERT_EQ(lk_blocking_lock_try(l, 0), LK_ENAMETOOLONG);
    ASSERT_OK(lk_blocking_lock_close(l));
  }
  ASSERT_OK(lk_blocking_lock_new(x.b, "blk_entry", &l));
  ASSERT_EQ(lk_blocking_lock_close(l), 0);
  ASSERT_EQ(lk_blocking_cancel(x.b, lk_blocking_thread_id()), LK_EINVAL);
  ASSERT_OK(lk_blocking_close(x.b));
  rt_server_stop(x.srv);
}

/* ---- a non-reentrant acquire, per thread ------------------------------------------------------- */

TEST(nonreentrant_acquire_refuses_the_same_thread) {
  bx_t x;
  lk_blocking_lock_t *l;
  lk_lock_opts_t o;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "blk_nr", &l));
  lk_lock_opts_init(&o);
  o.reentrant = 0;
  ASSERT_OK(lk_blocking_lock_acquire(l, &o));
  /* The owner is the thread: its second non-reentrant acquire is refused. */
  ASSERT_EQ(lk_blocking_lock_acquire(l, &o), LK_EREENTRY);
  ASSERT_EQ(lk_blocking_lock_hold_count(l), 1);
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}
