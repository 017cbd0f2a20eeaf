/* What a wait returns when the server cannot be reached: every budgeted
 * wait (lock, fair lock, read/write lock, semaphore, expirable semaphore,
 * latch await, MultiLock) rides out the refused connects and ends with
 * LK_ETIMEDOUT when its budget is spent, the reason readable through the
 * object's error getter; a single try reports LK_ECONN (nothing was sent);
 * a RedLock that hears from no master ends LK_ENOQUORUM. docs/errors.md
 * ("Outcomes of waiting", "Connection outcomes") and the headers say so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>
#include <string.h>

#include "lk_fixture.h"

#define BUDGET_MS 500

/* One object of each kind, all on one client, each with its outcome. */
typedef struct {
  int done, calls, status;
  uint64_t t_ns;
  char text[128];
} out_t;

enum { K_LOCK, K_FAIR, K_RW, K_SEM, K_PSEM, K_LATCH, K_ML, K_RL, K_N };
static const char *const kind_name[K_N] = {"lock",      "fair lock", "rwlock",
                                           "semaphore", "psem",      "latch",
                                           "multilock", "redlock"};

typedef struct {
  uv_loop_t loop;
  lk_client_t *c;
  lk_lock_t *lock, *member;
  lk_fair_t *fair;
  lk_rwlock_t *rw;
  lk_semaphore_t *sem;
  lk_psem_t *psem;
  lk_latch_t *latch;
  lk_multilock_t *ml;
  lk_redlock_t *rl;
  out_t out[K_N];
  int closed, all_closed, client_closed;
} ux_t;

#define ALL_OBJECTS 9

static void record(out_t *o, int status, const char *text) {
  o->calls++;
  ASSERT_EQ(o->calls, 1);
  o->done = 1;
  o->status = status;
  o->t_ns = uv_hrtime();
  snprintf(o->text, sizeof o->text, "%s", text != NULL ? text : "");
}

static void lock_cb(lk_lock_t *x, int st, void *a) { record(a, st, lk_lock_error_text(x)); }
static void fair_cb(lk_fair_t *x, int st, void *a) { record(a, st, lk_fair_error_text(x)); }
static void rw_cb(lk_rwlock_t *x, int st, void *a) { record(a, st, lk_rwlock_error_text(x)); }
static void sem_cb(lk_semaphore_t *x, int st, void *a) {
  record(a, st, lk_semaphore_error_text(x));
}
static void psem_cb(lk_psem_t *x, int st, void *a) { record(a, st, lk_psem_error_text(x)); }
static void latch_cb(lk_latch_t *x, int st, void *a) { record(a, st, lk_latch_error_text(x)); }
/* A MultiLock's reason is its member's. */
static void ml_cb(lk_multilock_t *x, int st, void *a) {
  (void)x;
  record(a, st, "");
}
static void rl_cb(lk_redlock_t *x, int st, void *a) {
  (void)x;
  record(a, st, "");
}

static void closed_one(ux_t *u) { u->all_closed = ++u->closed == ALL_OBJECTS; }
static void lock_closed(lk_lock_t *x) { closed_one(lk_lock_get_data(x)); }
static void fair_closed(lk_fair_t *x) { closed_one(lk_fair_get_data(x)); }
static void rw_closed(lk_rwlock_t *x) { closed_one(lk_rwlock_get_data(x)); }
static void sem_closed(lk_semaphore_t *x) { closed_one(lk_semaphore_get_data(x)); }
static void psem_closed(lk_psem_t *x) { closed_one(lk_psem_get_data(x)); }
static void latch_closed(lk_latch_t *x) { closed_one(lk_latch_get_data(x)); }
static ux_t *g_ux; /* the MultiLock and RedLock have no user pointer */
static void ml_closed(lk_multilock_t *x) {
  (void)x;
  ASSERT_OK(lk_lock_close(g_ux->member, lock_closed));
  closed_one(g_ux);
}
static void rl_closed(lk_redlock_t *x) {
  (void)x;
  closed_one(g_ux);
}
static void client_closed(lk_client_t *c) { ((ux_t *)lk_client_get_data(c))->client_closed = 1; }

/* A client aimed at the port of a server that was just stopped: every
 * connect is refused. */
static void ux_start(ux_t *u) {
  lk_client_opts_t o;
  rt_server_t *gone;
  memset(u, 0, sizeof *u);
  g_ux = u;
  ASSERT_OK(uv_loop_init(&u->loop));
  gone = rt_server_start(NULL);
  ASSERT_NOT_NULL(gone);
  lk_client_opts_init(&o);
  o.port = rt_server_port(gone);
  rt_server_stop(gone);
  ASSERT_OK(lk_client_new(&u->loop, &o, &u->c));
  lk_client_set_data(u->c, u);
  ASSERT_OK(lk_lock_new(u->c, "ux:lock", &u->lock));
  ASSERT_OK(lk_fair_new(u->c, "ux:fair", &u->fair));
  ASSERT_OK(lk_rwlock_new(u->c, "ux:rw", &u->rw));
  ASSERT_OK(lk_semaphore_new(u->c, "ux:sem", &u->sem));
  ASSERT_OK(lk_psem_new(u->c, "ux:psem", &u->psem));
  ASSERT_OK(lk_latch_new(u->c, "ux:latch", NULL, &u->latch));
  ASSERT_OK(lk_lock_new(u->c, "ux:member", &u->member));
  ASSERT_OK(lk_multilock_new(&u->member, 1, &u->ml));
  ASSERT_OK(lk_redlock_new(&u->c, 1, "ux:rl", NULL, &u->rl));
  lk_lock_set_data(u->lock, u);
  lk_lock_set_data(u->member, u);
  lk_fair_set_data(u->fair, u);
  lk_rwlock_set_data(u->rw, u);
  lk_semaphore_set_data(u->sem, u);
  lk_psem_set_data(u->psem, u);
  lk_latch_set_data(u->latch, u);
}

/* Starts every kind's wait with wait_ms, all at once. */
static void ux_wait_all(ux_t *u, int64_t wait_ms) {
  lk_lock_opts_t lo;
  lk_fair_opts_t fo;
  lk_rwlock_opts_t wo;
  lk_semaphore_opts_t so;
  lk_psem_opts_t po;
  lk_multilock_opts_t mo;
  lk_redlock_opts_t ro;
  memset(u->out, 0, sizeof u->out);
  lk_lock_opts_init(&lo), lo.wait_ms = wait_ms;
  lk_fair_opts_init(&fo), fo.wait_ms = wait_ms;
  lk_rwlock_opts_init(&wo), wo.wait_ms = wait_ms;
  lk_semaphore_opts_init(&so), so.wait_ms = wait_ms;
  lk_psem_opts_init(&po), po.wait_ms = wait_ms;
  lk_multilock_opts_init(&mo), mo.wait_ms = wait_ms;
  lk_redlock_opts_init(&ro), ro.wait_ms = wait_ms;
  ASSERT_OK(lk_lock_acquire(u->lock, &lo, lock_cb, &u->out[K_LOCK]));
  ASSERT_OK(lk_fair_acquire(u->fair, &fo, fair_cb, &u->out[K_FAIR]));
  ASSERT_OK(lk_rwlock_acquire(u->rw, LK_RW_WRITE, &wo, rw_cb, &u->out[K_RW]));
  ASSERT_OK(lk_semaphore_acquire(u->sem, &so, sem_cb, &u->out[K_SEM]));
  ASSERT_OK(lk_psem_acquire(u->psem, &po, psem_cb, &u->out[K_PSEM]));
  ASSERT_OK(lk_latch_await(u->latch, wait_ms, latch_cb, &u->out[K_LATCH]));
  ASSERT_OK(lk_multilock_acquire(u->ml, &mo, ml_cb, &u->out[K_ML]));
  ASSERT_OK(lk_redlock_acquire(u->rl, &ro, rl_cb, &u->out[K_RL]));
}

static void ux_run_all(ux_t *u, int64_t timeout_ms) {
  for (int k = 0; k < K_N; k++)
    rt_run_until(&u->loop, &u->out[k].done, timeout_ms);
}

/* Closes every object (the MultiLock's member from the MultiLock's close
 * callback: nine close callbacks), then the client. */
static void ux_finish(ux_t *u) {
  ASSERT_OK(lk_lock_close(u->lock, lock_closed));
  ASSERT_OK(lk_fair_close(u->fair, fair_closed));
  ASSERT_OK(lk_rwlock_close(u->rw, rw_closed));
  ASSERT_OK(lk_semaphore_close(u->sem, sem_closed));
  ASSERT_OK(lk_psem_close(u->psem, psem_closed));
  ASSERT_OK(lk_latch_close(u->latch, latch_closed));
  ASSERT_OK(lk_multilock_close(u->ml, ml_closed));
  ASSERT_OK(lk_redlock_close(u->rl, rl_closed));
  rt_run_until(&u->loop, &u->all_closed, 10000);
  ASSERT_EQ(u->closed, ALL_OBJECTS);
  ASSERT_OK(lk_client_close(u->c, client_closed));
  rt_run_until(&u->loop, &u->client_closed, 10000);
  rt_loop_close_clean(&u->loop);
}

TEST(budgeted_wait_on_unreachable_server_ends_etimedout_with_the_reason) {
  ux_t u;
  uint64_t t0;
  ux_start(&u);
  t0 = uv_hrtime();
  ux_wait_all(&u, BUDGET_MS);
  ux_run_all(&u, 15000);
  for (int k = 0; k < K_N; k++) {
    int64_t ms = (int64_t)((u.out[k].t_ns - t0) / 1000000u);
    int want = k == K_RL ? LK_ENOQUORUM : LK_ETIMEDOUT;
    if (u.out[k].status != want)
      FAIL("%s: a %d ms wait on an unreachable server ended %s, want %s", kind_name[k],
           BUDGET_MS, lk_err_name(u.out[k].status), lk_err_name(want));
    /* The budget is ridden out, never cut short (safety bound, unscaled)... */
    if (ms < BUDGET_MS - 5)
      FAIL("%s: gave up after %lld ms, before its %d ms budget", kind_name[k], (long long)ms,
           BUDGET_MS);
    /* ...and the end is bounded: the budget, then the last try's grace of at
     * most a reconnect (backoff cap 2 s) or the reply timeout (3 s). */
    if (ms > rt_scaled_ms(BUDGET_MS + 3000 + 1000))
      FAIL("%s: a %d ms wait took %lld ms", kind_name[k], BUDGET_MS, (long long)ms);
    /* Why it ended stays readable: the connection was not there. */
    if (k != K_ML && k != K_RL && strstr(u.out[k].text, "not connected") == NULL)
      FAIL("%s: error text \"%s\", want the reason (not connected)", kind_name[k],
           u.out[k].text);
  }
  ux_finish(&u);
}

TEST(single_try_on_unreachable_server_ends_econn) {
  ux_t u;
  ux_start(&u);
  ux_wait_all(&u, 0);
  ux_run_all(&u, 10000);
  for (int k = 0; k < K_N; k++) {
    int want = k == K_RL ? LK_ENOQUORUM : LK_ECONN;
    if (u.out[k].status != want)
      FAIL("%s: a single try on an unreachable server ended %s, want %s", kind_name[k],
           lk_err_name(u.out[k].status), lk_err_name(want));
  }
  ux_finish(&u);
}
