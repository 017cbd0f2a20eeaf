/* The one blocking handle (docs/blocking.md, "One handle for every kind"):
 * lk_blocking_handle_* on every kind answer as the kind's typed verbs, in
 * the calling thread's view, and LK_EINVAL where the kind has no such
 * verb. */
#include <string.h>

#include "latchkey.h"
#include "redis_server.h"
#include "test.h"
#include "blocking_fixture.h"

typedef struct {
  lk_blocking_handle_t *h;
  int64_t wait_ms;
  int rc, held;
} other_t;

/* Another thread's generic try: another owner. */
static void other_try(void *arg) {
  other_t *a = arg;
  a->rc = lk_blocking_handle_try(a->h, a->wait_ms);
  a->held = lk_blocking_handle_is_held(a->h);
  if (a->rc == 0)
    ASSERT_OK(lk_blocking_handle_release(a->h));
}

static int other_thread_try(lk_blocking_handle_t *h, int64_t wait_ms, int *held) {
  other_t a = {h, wait_ms, 1, -1};
  rt_on_thread(other_try, &a);
  *held = a.held;
  return a.rc;
}

/* One exclusive kind through the generic verbs: this thread takes it,
 * another thread waits out its try and sees nothing held, this thread
 * gives it back, the other takes it at once. */
static void exclusive_cycle(lk_blocking_handle_t *h, int kind, const char *name, int tokens,
                            int fenced) {
  int held = -1;
  ASSERT_EQ(lk_blocking_handle_kind(h), kind);
  ASSERT_STREQ(lk_blocking_handle_name(h), name);
  ASSERT_EQ(lk_blocking_handle_is_held(h), 0);
  ASSERT_EQ(lk_blocking_handle_hold_count(h), 0);
  ASSERT_EQ(lk_blocking_handle_token(h), tokens ? 0 : LK_EINVAL);
  ASSERT_OK(lk_blocking_handle_try(h, 0));
  ASSERT_EQ(lk_blocking_handle_is_held(h), 1);
  ASSERT_EQ(lk_blocking_handle_hold_count(h), 1);
  /* A leader's term always; a lock's token only when fenced (below). */
  ASSERT_EQ(lk_blocking_handle_token(h) > 0, fenced);
  ASSERT_EQ(other_thread_try(h, 100, &held), LK_ETIMEDOUT);
  ASSERT_EQ(held, 0);
  ASSERT_OK(lk_blocking_handle_release(h));
  ASSERT_EQ(lk_blocking_handle_is_held(h), 0);
  ASSERT_EQ(lk_blocking_handle_hold_count(h), 0);
  ASSERT_OK(other_thread_try(h, 0, &held));
  ASSERT_EQ(held, 1);
}

TEST(generic_verbs_exclude_threads_on_every_lock_kind) {
  bx_t x;
  lk_blocking_lock_t *l;
  lk_blocking_fair_t *f;
  lk_blocking_rwlock_t *rw;
  lk_blocking_multilock_t *g;
  lk_blocking_leader_t *ld;
  const char *names[] = {"gh_m1", "gh_m2"};
  lk_lock_opts_t o;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "gh_lock", &l));
  ASSERT_OK(lk_blocking_fair_new(x.b, "gh_fair", &f));
  ASSERT_OK(lk_blocking_rwlock_new(x.b, "gh_rw", &rw));
  ASSERT_OK(lk_blocking_multilock_new(x.b, names, 2, &g));
  ASSERT_OK(lk_blocking_leader_new(x.b, "gh_role", &ld));
  exclusive_cycle(lk_blocking_lock_handle(l), LK_KIND_LOCK, "gh_lock", 1, 0);
  exclusive_cycle(lk_blocking_fair_handle(f), LK_KIND_FAIR, "gh_fair", 1, 0);
  exclusive_cycle(lk_blocking_rwlock_handle(rw), LK_KIND_RWLOCK, "gh_rw", 1, 0);
  exclusive_cycle(lk_blocking_multilock_handle(g), LK_KIND_MULTILOCK, "gh_m1", 0, 0);
  exclusive_cycle(lk_blocking_leader_handle(ld), LK_KIND_LEADER, "gh_role", 1, 1);
  /* A fenced acquire's token is the calling thread's, by the generic verb. */
  lk_lock_opts_init(&o);
  o.fenced = 1;
  ASSERT_OK(lk_blocking_lock_acquire(l, &o));
  ASSERT_GT(lk_blocking_handle_token(lk_blocking_lock_handle(l)), 0);
  ASSERT_OK(lk_blocking_lock_release(l));
  /* The generic verbs are the typed ones: the lock's re-entry counts, the
   * read/write lock's generic side is the write side, the leader's token
   * is its term. */
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  ASSERT_OK(lk_blocking_handle_acquire(lk_blocking_lock_handle(l)));
  ASSERT_EQ(lk_blocking_lock_hold_count(l), 2);
  ASSERT_EQ(lk_blocking_handle_hold_count(lk_blocking_lock_handle(l)), 2);
  ASSERT_OK(lk_blocking_handle_release(lk_blocking_lock_handle(l)));
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_EQ(lk_blocking_handle_release(lk_blocking_lock_handle(l)), LK_ENOTHELD);
  ASSERT_OK(lk_blocking_rwlock_try(rw, LK_RW_READ, 0));
  ASSERT_EQ(lk_blocking_handle_is_held(lk_blocking_rwlock_handle(rw)), 1);
  ASSERT_EQ(lk_blocking_handle_try(lk_blocking_rwlock_handle(rw), 0), LK_EUPGRADE);
  ASSERT_OK(lk_blocking_rwlock_release(rw, LK_RW_READ));
  ASSERT_OK(lk_blocking_handle_try(lk_blocking_rwlock_handle(rw), 0));
  ASSERT_EQ(lk_blocking_rwlock_is_held(rw, LK_RW_WRITE), 1);
  ASSERT_OK(lk_blocking_rwlock_release(rw, LK_RW_WRITE));
  ASSERT_OK(lk_blocking_handle_acquire(lk_blocking_leader_handle(ld)));
  ASSERT_EQ(lk_blocking_handle_token(lk_blocking_leader_handle(ld)), lk_blocking_leader_term(ld));
  ASSERT_EQ(lk_blocking_leader_is_leader(ld), 1);
  ASSERT_OK(lk_blocking_handle_close(lk_blocking_leader_handle(ld)));
  ASSERT_OK(lk_blocking_handle_close(lk_blocking_multilock_handle(g)));
  ASSERT_OK(lk_blocking_rwlock_close(rw));
  ASSERT_OK(lk_blocking_handle_close(lk_blocking_fair_handle(f)));
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

TEST(generic_verbs_on_permits_latch_and_null) {
  bx_t x;
  lk_blocking_semaphore_t *s;
  lk_blocking_psem_t *p;
  lk_blocking_latch_t *lt;
  lk_blocking_ratelimiter_t *r;
  lk_blocking_handle_t *h;
  lk_ratelimiter_config_t cfg;
  int held = -1;
  bx_start(&x);
  /* Counting semaphore: one permit a try, counted per thread. */
  ASSERT_OK(lk_blocking_semaphore_new(x.b, "gh_sem", &s));
  h = lk_blocking_semaphore_handle(s);
  ASSERT_EQ(lk_blocking_semaphore_try_set_permits(s, 2), 1);
  ASSERT_OK(lk_blocking_handle_try(h, 0));
  ASSERT_OK(lk_blocking_handle_acquire(h));
  ASSERT_EQ(lk_blocking_handle_hold_count(h), 2);
  ASSERT_EQ(lk_blocking_semaphore_held(s), 2);
  ASSERT_EQ(lk_blocking_handle_token(h), LK_EINVAL);
  ASSERT_EQ(other_thread_try(h, 100, &held), LK_ETIMEDOUT);
  ASSERT_EQ(held, 0);
  ASSERT_OK(lk_blocking_handle_release(h));
  ASSERT_EQ(lk_blocking_handle_hold_count(h), 1);
  ASSERT_EQ(lk_blocking_semaphore_available(s), 1);
  ASSERT_OK(lk_blocking_handle_close(h));
  /* Permit semaphore: release gives back every permit of the thread's. */
  ASSERT_OK(lk_blocking_psem_new(x.b, "gh_psem", &p));
  h = lk_blocking_psem_handle(p);
  ASSERT_EQ(lk_blocking_handle_kind(h), LK_KIND_PSEM);
  ASSERT_EQ(lk_blocking_psem_try_set_permits(p, 3), 1);
  ASSERT_OK(lk_blocking_handle_try(h, 0));
  ASSERT_OK(lk_blocking_handle_try(h, 0));
  ASSERT_EQ(lk_blocking_handle_is_held(h), 1);
  ASSERT_EQ(lk_blocking_psem_held(p), 2);
  ASSERT_OK(lk_blocking_handle_release(h));
  ASSERT_EQ(lk_blocking_handle_is_held(h), 0);
  ASSERT_EQ(lk_blocking_psem_available(p), 3);
  ASSERT_OK(lk_blocking_psem_close(p));
  /* Latch: try is await; nothing to hold or release. */
  ASSERT_OK(lk_blocking_latch_new(x.b, "gh_latch", NULL, &lt));
  h = lk_blocking_latch_handle(lt);
  ASSERT_EQ(lk_blocking_latch_try_set_count(lt, 1), 1);
  ASSERT_EQ(lk_blocking_handle_try(h, 0), LK_ETIMEDOUT);
  ASSERT_OK(lk_blocking_latch_count_down(lt, NULL));
  ASSERT_OK(lk_blocking_handle_acquire(h));
  ASSERT_EQ(lk_blocking_handle_release(h), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_is_held(h), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_hold_count(h), LK_EINVAL);
  ASSERT_OK(lk_blocking_handle_close(h));
  /* Rate limiter: try takes one permit; none is given back. */
  ASSERT_OK(lk_blocking_ratelimiter_new(x.b, "gh_rl", &r));
  h = lk_blocking_ratelimiter_handle(r);
  lk_ratelimiter_config_init(&cfg);
  cfg.rate = 1;
  cfg.interval_ms = 60000;
  ASSERT_EQ(lk_blocking_ratelimiter_try_set_rate(r, &cfg), 1);
  ASSERT_OK(lk_blocking_handle_try(h, 0));
  ASSERT_EQ(lk_blocking_handle_try(h, 0), LK_ETIMEDOUT);
  ASSERT_EQ(lk_blocking_handle_release(h), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_is_held(h), LK_EINVAL);
  ASSERT_OK(lk_blocking_handle_close(h));
  /* NULL, as every typed verb's NULL handle. */
  ASSERT_NULL(lk_blocking_lock_handle(NULL));
  ASSERT_EQ(lk_blocking_handle_kind(NULL), LK_EINVAL);
  ASSERT_NULL(lk_blocking_handle_name(NULL));
  ASSERT_EQ(lk_blocking_handle_try(NULL, 0), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_acquire(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_release(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_is_held(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_hold_count(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_token(NULL), LK_EINVAL);
  ASSERT_EQ(lk_blocking_handle_close(NULL), LK_EINVAL);
  bx_finish(&x);
}
