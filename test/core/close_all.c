/* lk_client_close_all (docs/client.md, "Closing"): every object still open
 * on a client closes as its own close would, MultiLocks and RedLocks before
 * their members, then the client, then one callback; exactly one callback
 * per accepted call throughout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "lk_fixture.h"

/* ---- bookkeeping ----------------------------------------------------------------------- */

/* One accepted call's callback. */
typedef struct {
  int calls;
  int status;
} rec_t;

static struct {
  int done;       /* callbacks of accepted calls that ran */
  int extra;      /* a second callback for one call: never */
  int close_cb;   /* close_all's callback runs */
  int done_at_close; /* g.done when it ran */
  int obj_closed; /* per-object close callbacks */
} g;

static void note(rec_t *r, int status) {
  if (++r->calls > 1)
    g.extra++;
  r->status = status;
  g.done++;
}

#define REC_CB(fn, T)                                                                    \
  static void fn(T *o, int status, void *arg) {                                          \
    (void)o;                                                                             \
    note(arg, status);                                                                   \
  }
REC_CB(lock_cb, lk_lock_t)
REC_CB(fair_cb, lk_fair_t)
REC_CB(rw_cb, lk_rwlock_t)
REC_CB(sem_cb, lk_semaphore_t)
REC_CB(psem_cb, lk_psem_t)
REC_CB(latch_cb, lk_latch_t)
REC_CB(ml_cb, lk_multilock_t)
REC_CB(rl_cb, lk_redlock_t)

static void on_all_closed(lk_client_t *c) {
  (void)c;
  g.close_cb++;
  g.done_at_close = g.done;
}

static void obj_closed_cb(lk_lock_t *l) {
  (void)l;
  g.obj_closed++;
}

static void ml_closed_cb(lk_multilock_t *ml) { *(int *)lk_multilock_get_data(ml) = 1; }

/* Runs the loop until `done` callbacks ran in all (bounded). */
static void run_until_done(fx_t *fx, int want, int64_t ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  while (g.done < want) {
    if (rt_now_ms() > end)
      FAIL("%d of %d callbacks after %lld ms", g.done, want, (long long)rt_scaled_ms(ms));
    uv_run(&fx->loop, UV_RUN_ONCE);
  }
}

/* Closes c with one call and runs the loop until its callback ran (the
 * count of those restarts at 0). */
static void close_all_and_wait(fx_t *fx, lk_client_t *c) {
  g.close_cb = 0;
  ASSERT_OK(lk_client_close_all(c, on_all_closed));
  rt_run_until(&fx->loop, &g.close_cb, 30000);
  ASSERT_EQ(g.close_cb, 1);
}

static void start(fx_t *fx) {
  memset(&g, 0, sizeof g);
  fx_start(fx, NULL);
}

/* The fixture's client is gone already: stop the server, check the loop. */
static void finish_closed(fx_t *fx) {
  fx->c = NULL;
  fx_finish(fx);
  ASSERT_EQ(g.extra, 0);
}

/* ---- every kind, pending and held ------------------------------------------------------ */

#define N 100 /* objects of each kind */
#define H 50  /* of which hold; the others wait */
#define LEASE 60000
#define WAIT 60000

typedef struct {
  lk_lock_t *lock[N];
  lk_fair_t *fair[N];
  lk_rwlock_t *rw[N];
  lk_semaphore_t *sem[N];
  lk_psem_t *psem[N];
  lk_latch_t *latch[N];
  lk_multilock_t *ml[N];
  lk_lock_t *ml_member[N][2];
  lk_redlock_t *rl[N];
  rec_t r[8][N];
} every_t;

static void name(char *buf, size_t cap, const char *kind, int i) {
  snprintf(buf, cap, "ca:%s:%d", kind, i);
}

/* A new lock of c's named for kind and i, its acquire started (opts o,
 * callback into r). */
static lk_lock_t *lock_acquiring(lk_client_t *c, const char *kind, int i,
                                 const lk_lock_opts_t *o, rec_t *r) {
  char nm[64];
  lk_lock_t *l;
  name(nm, sizeof nm, kind, i);
  ASSERT_OK(lk_lock_new(c, nm, &l));
  ASSERT_OK(lk_lock_acquire(l, o, lock_cb, r));
  return l;
}

/* B (another client) holds what A's waiters wait for. */
typedef struct {
  lk_lock_t *lock[N - H], *ml[N - H], *rl[N - H];
  lk_fair_t *fair[N - H];
  lk_rwlock_t *rw[N - H];
  rec_t r[5][N - H];
} blocker_t;

static void b_hold(fx_t *fx, lk_client_t *b, blocker_t *bk) {
  char nm[64];
  int i, want = g.done;
  lk_lock_opts_t lo;
  lk_fair_opts_t fo;
  lk_rwlock_opts_t ro;
  lk_lock_opts_init(&lo);
  lo.lease_ms = LEASE;
  lk_fair_opts_init(&fo);
  fo.lease_ms = LEASE;
  lk_rwlock_opts_init(&ro);
  ro.lease_ms = LEASE;
  for (i = 0; i < N - H; i++) {
    bk->lock[i] = lock_acquiring(b, "lock", H + i, &lo, &bk->r[0][i]);
    bk->ml[i] = lock_acquiring(b, "ml-a", H + i, &lo, &bk->r[1][i]);
    bk->rl[i] = lock_acquiring(b, "rl", H + i, &lo, &bk->r[2][i]);
    name(nm, sizeof nm, "fair", H + i);
    ASSERT_OK(lk_fair_new(b, nm, &bk->fair[i]));
    ASSERT_OK(lk_fair_acquire(bk->fair[i], &fo, fair_cb, &bk->r[3][i]));
    name(nm, sizeof nm, "rw", H + i);
    ASSERT_OK(lk_rwlock_new(b, nm, &bk->rw[i]));
    ASSERT_OK(lk_rwlock_acquire(bk->rw[i], LK_RW_WRITE, &ro, rw_cb, &bk->r[4][i]));
    want += 5;
  }
  run_until_done(fx, want, 20000);
  for (i = 0; i < N - H; i++) {
    int k;
    for (k = 0; k < 5; k++)
      ASSERT_OK(bk->r[k][i].status);
  }
}

/* Makes A's objects and starts their calls: the first H of each kind hold
 * (the semaphores: H permits out of H), the others wait. Returns how many
 * callbacks the holding calls owe. */
static int a_start(lk_client_t *a, every_t *e) {
  char nm[64];
  int i, calls = 0;
  lk_lock_opts_t lo;
  lk_fair_opts_t fo;
  lk_rwlock_opts_t ro;
  lk_semaphore_opts_t so;
  lk_psem_opts_t po;
  lk_multilock_opts_t mo;
  lk_redlock_opts_t rlo;
  for (i = 0; i < N; i++) {
    int64_t wait = i < H ? 0 : WAIT;
    lk_lock_opts_init(&lo);
    lo.lease_ms = LEASE;
    lo.wait_ms = wait;
    e->lock[i] = lock_acquiring(a, "lock", i, &lo, &e->r[0][i]);

    lk_fair_opts_init(&fo);
    fo.lease_ms = LEASE;
    fo.wait_ms = wait;
    name(nm, sizeof nm, "fair", i);
    ASSERT_OK(lk_fair_new(a, nm, &e->fair[i]));
    ASSERT_OK(lk_fair_acquire(e->fair[i], &fo, fair_cb, &e->r[1][i]));

    lk_rwlock_opts_init(&ro);
    ro.lease_ms = LEASE;
    ro.wait_ms = wait;
    name(nm, sizeof nm, "rw", i);
    ASSERT_OK(lk_rwlock_new(a, nm, &e->rw[i]));
    ASSERT_OK(lk_rwlock_acquire(e->rw[i], LK_RW_WRITE, &ro, rw_cb, &e->r[2][i]));

    /* One semaphore of H permits: the first H objects take one each. */
    lk_semaphore_opts_init(&so);
    so.wait_ms = wait;
    ASSERT_OK(lk_semaphore_new(a, "ca:sem", &e->sem[i]));
    lk_psem_opts_init(&po);
    po.wait_ms = wait;
    po.lease_ms = LEASE;
    ASSERT_OK(lk_psem_new(a, "ca:psem", &e->psem[i]));
    if (i < H) {
      ASSERT_OK(lk_semaphore_acquire(e->sem[i], &so, sem_cb, &e->r[3][i]));
      ASSERT_OK(lk_psem_acquire(e->psem[i], &po, psem_cb, &e->r[4][i]));
    }

    ASSERT_OK(lk_latch_new(a, "ca:latch", NULL, &e->latch[i]));

    name(nm, sizeof nm, "ml-a", i);
    ASSERT_OK(lk_lock_new(a, nm, &e->ml_member[i][0]));
    name(nm, sizeof nm, "ml-b", i);
    ASSERT_OK(lk_lock_new(a, nm, &e->ml_member[i][1]));
    ASSERT_OK(lk_multilock_new(e->ml_member[i], 2, &e->ml[i]));
    lk_multilock_opts_init(&mo);
    mo.lease_ms = LEASE;
    mo.wait_ms = wait;
    ASSERT_OK(lk_multilock_acquire(e->ml[i], &mo, ml_cb, &e->r[6][i]));

    name(nm, sizeof nm, "rl", i);
    ASSERT_OK(lk_redlock_new(&a, 1, nm, NULL, &e->rl[i]));
    lk_redlock_opts_init(&rlo);
    rlo.lease_ms = LEASE;
    rlo.wait_ms = wait;
    rlo.node_timeout_ms = 5000;
    ASSERT_OK(lk_redlock_acquire(e->rl[i], &rlo, rl_cb, &e->r[7][i]));
    calls += i < H ? 7 : 0;
  }
  return calls;
}

/* The waits that need the semaphores empty start once the holders are in,
 * with an await on the armed latch for every object. Returns how many
 * callbacks the waiting calls owe, those a_start began included. */
static int a_start_waiters(lk_client_t *a, every_t *e) {
  lk_semaphore_opts_t so;
  lk_psem_opts_t po;
  int i;
  (void)a;
  lk_semaphore_opts_init(&so);
  so.wait_ms = WAIT;
  lk_psem_opts_init(&po);
  po.wait_ms = WAIT;
  po.lease_ms = LEASE;
  for (i = H; i < N; i++) {
    ASSERT_OK(lk_semaphore_acquire(e->sem[i], &so, sem_cb, &e->r[3][i]));
    ASSERT_OK(lk_psem_acquire(e->psem[i], &po, psem_cb, &e->r[4][i]));
  }
  for (i = 0; i < N; i++)
    ASSERT_OK(lk_latch_await(e->latch[i], WAIT, latch_cb, &e->r[5][i]));
  /* lock, fair, rw, MultiLock and RedLock from a_start; both semaphores;
   * N awaits. */
  return (N - H) * 7 + N;
}

static void set_value(fx_t *fx, int (*run)(void *, int64_t, void *), void *obj, int64_t v) {
  rec_t r = {0, 0};
  int want = g.done + 1;
  ASSERT_OK(run(obj, v, &r));
  run_until_done(fx, want, 10000);
  ASSERT_OK(r.status);
}

static int sem_set(void *o, int64_t v, void *r) {
  return lk_semaphore_try_set_permits(o, v, sem_cb, r);
}
static int psem_set(void *o, int64_t v, void *r) { return lk_psem_try_set_permits(o, v, psem_cb, r); }
static int latch_set(void *o, int64_t v, void *r) {
  return lk_latch_try_set_count(o, v, latch_cb, r);
}

static int64_t query(fx_t *fx, int (*run)(void *, void *), void *obj,
                     int64_t (*result)(const void *)) {
  rec_t r = {0, 0};
  int want = g.done + 1;
  ASSERT_OK(run(obj, &r));
  run_until_done(fx, want, 10000);
  ASSERT_OK(r.status);
  return result(obj);
}
static int sem_avail(void *o, void *r) { return lk_semaphore_available(o, sem_cb, r); }
static int64_t sem_result(const void *o) { return lk_semaphore_result(o); }
static int psem_avail(void *o, void *r) { return lk_psem_available(o, psem_cb, r); }
static int64_t psem_result(const void *o) { return lk_psem_result(o); }

/* 100 objects of every kind on one client, half holding, half waiting
 * (MultiLocks over two locks of the same client, RedLocks over it), closed
 * with one call: every waiting call ends LK_ECANCELED before the one
 * callback, which runs once; nothing A held is left on the server, while
 * what B holds is untouched. */
TEST(close_all_every_kind_pending_and_held) {
  fx_t fx;
  lk_client_t *b;
  every_t *e = calloc(1, sizeof *e);
  blocker_t *bk = calloc(1, sizeof *bk);
  lk_semaphore_t *bsem;
  lk_psem_t *bpsem;
  lk_latch_t *blatch;
  lk_lock_t *late = NULL;
  char nm[64];
  int i, k, want, pending;
  ASSERT_NOT_NULL(e);
  ASSERT_NOT_NULL(bk);
  start(&fx);
  b = fx_direct_client(&fx);
  ASSERT_OK(lk_semaphore_new(b, "ca:sem", &bsem));
  ASSERT_OK(lk_psem_new(b, "ca:psem", &bpsem));
  ASSERT_OK(lk_latch_new(b, "ca:latch", NULL, &blatch));
  set_value(&fx, sem_set, bsem, H);
  set_value(&fx, psem_set, bpsem, H);
  set_value(&fx, latch_set, blatch, 1);
  b_hold(&fx, b, bk);

  want = g.done + a_start(fx.c, e);
  run_until_done(&fx, want, 30000);
  for (i = 0; i < H; i++)
    for (k = 0; k < 8; k++)
      if (k != 5)
        ASSERT_OK(e->r[k][i].status);
  pending = a_start_waiters(fx.c, e);
  /* The waiters are under way (their first tries answered "busy"). */
  fx_spin(&fx, 300);
  ASSERT_EQ(g.done, want);

  ASSERT_OK(lk_client_close_all(fx.c, on_all_closed));
  /* From here every call on the client answers LK_ECLOSED; no callback ran
   * inside the call. */
  ASSERT_EQ(g.done, want);
  ASSERT_EQ(lk_lock_acquire(e->lock[0], NULL, lock_cb, &e->r[0][0]), LK_ECLOSED);
  ASSERT_EQ(lk_lock_close(e->lock[0], NULL), LK_ECLOSED);
  ASSERT_EQ(lk_lock_new(fx.c, "ca:late", &late), LK_ECLOSED);
  ASSERT_NULL(late);
  ASSERT_EQ(lk_multilock_new(e->ml_member[0], 2, &e->ml[0]), LK_ECLOSED);
  ASSERT_EQ(lk_redlock_new(&fx.c, 1, "ca:late", NULL, &e->rl[0]), LK_ECLOSED);
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_ECLOSED);
  ASSERT_EQ(lk_client_close_all(fx.c, NULL), LK_ECLOSED);

  rt_run_until(&fx.loop, &g.close_cb, 30000);
  fx.c = NULL;
  ASSERT_EQ(g.close_cb, 1);
  ASSERT_EQ(g.done_at_close, want + pending); /* every callback came first */
  ASSERT_EQ(g.extra, 0);
  for (i = 0; i < N; i++)
    for (k = 0; k < 8; k++) {
      ASSERT_EQ(e->r[k][i].calls, 1);
      if (i >= H || k == 5)
        ASSERT_EQ(e->r[k][i].status, LK_ECANCELED);
    }

  /* Nothing A held is left; B's holds are intact. */
  for (i = 0; i < N; i++) {
    const char *kinds[] = {"lock", "fair", "rw", "ml-a", "ml-b", "rl"};
    for (k = 0; k < 6; k++) {
      name(nm, sizeof nm, kinds[k], i);
      if (i < H || k == 4)
        ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", nm), 0);
      else
        ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", nm), 1);
    }
  }
  ASSERT_EQ(query(&fx, sem_avail, bsem, sem_result), H);
  ASSERT_EQ(query(&fx, psem_avail, bpsem, psem_result), H);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS redisson_lock_queue:{ca:fair:%d}", N - 1), 0);

  /* B closes the same way. */
  close_all_and_wait(&fx, b);
  for (i = 0; i < N; i++) {
    name(nm, sizeof nm, "lock", i);
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", nm), 0);
  }
  free(e);
  free(bk);
  finish_closed(&fx);
}

/* ---- the edges ------------------------------------------------------------------------------ */

/* No objects: the client closes as lk_client_close would; a second call,
 * and lk_client_close, are LK_ECLOSED; the callback runs once. */
TEST(close_all_with_no_objects_and_twice) {
  fx_t fx;
  start(&fx);
  ASSERT_EQ(lk_client_close_all(NULL, NULL), LK_EINVAL);
  ASSERT_OK(lk_client_close_all(fx.c, on_all_closed));
  ASSERT_EQ(lk_client_close_all(fx.c, on_all_closed), LK_ECLOSED);
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_ECLOSED);
  ASSERT_EQ(g.close_cb, 0); /* never inside the call */
  rt_run_until(&fx.loop, &g.close_cb, 10000);
  finish_closed(&fx);
  ASSERT_EQ(g.close_cb, 1);
}

/* Acquires l with the cases' lease (no wait), as the case's first
 * callback, and runs the loop until it is held. */
static void hold_first(fx_t *fx, lk_lock_t *l, rec_t *r) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.lease_ms = LEASE;
  ASSERT_OK(lk_lock_acquire(l, &o, lock_cb, r));
  run_until_done(fx, 1, 10000);
  ASSERT_OK(r->status);
}

/* An object already closing keeps its own close callback, which comes
 * before close_all's; the ones close_all closes get none. A second call
 * while objects are closing is LK_ECLOSED. */
TEST(close_all_while_an_object_is_closing) {
  fx_t fx;
  lk_lock_t *a, *b;
  rec_t ra = {0, 0};
  start(&fx);
  a = fx_lock(&fx, "ca:closing-a");
  b = fx_lock(&fx, "ca:closing-b");
  hold_first(&fx, a, &ra);
  ASSERT_OK(lk_lock_close(a, obj_closed_cb));
  ASSERT_OK(lk_client_close_all(fx.c, on_all_closed));
  ASSERT_EQ(lk_client_close_all(fx.c, on_all_closed), LK_ECLOSED);
  ASSERT_EQ(lk_lock_close(b, obj_closed_cb), LK_ECLOSED);
  rt_run_until(&fx.loop, &g.close_cb, 10000);
  ASSERT_EQ(g.obj_closed, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ca:closing-a"), 0);
  finish_closed(&fx);
  ASSERT_EQ(g.close_cb, 1);
}

typedef struct {
  lk_client_t *c;
  int rc;
  rec_t r;
  int seq_cb;
} inside_t;

static void close_all_inside(lk_lock_t *l, int status, void *arg) {
  inside_t *t = arg;
  note(&t->r, status);
  t->rc = lk_client_close_all(t->c, on_all_closed);
  /* The object whose callback this is closes too. */
  t->seq_cb = lk_lock_acquire(l, NULL, lock_cb, &t->r);
}

/* Called from inside an acquire's callback: that object (holding) and a
 * waiter close, the hold is released, the waiter's callback runs with
 * LK_ECANCELED before the one callback. */
TEST(close_all_inside_an_acquire_callback) {
  fx_t fx;
  lk_lock_t *holder, *waiter;
  inside_t t;
  rec_t rw = {0, 0};
  lk_lock_opts_t o;
  start(&fx);
  memset(&t, 0, sizeof t);
  t.c = fx.c;
  t.rc = 1;
  holder = fx_lock(&fx, "ca:inside");
  waiter = fx_lock(&fx, "ca:inside");
  hold_first(&fx, holder, &rw);
  /* holder re-enters; its callback closes everything while waiter waits. */
  memset(&rw, 0, sizeof rw);
  lk_lock_opts_init(&o);
  o.lease_ms = LEASE;
  o.wait_ms = WAIT;
  ASSERT_OK(lk_lock_acquire(waiter, &o, lock_cb, &rw));
  fx_spin(&fx, 100);
  o.wait_ms = 0;
  ASSERT_OK(lk_lock_acquire(holder, &o, close_all_inside, &t));
  rt_run_until(&fx.loop, &g.close_cb, 10000);
  ASSERT_OK(t.rc);
  ASSERT_OK(t.r.status);
  ASSERT_EQ(t.seq_cb, LK_ECLOSED);
  ASSERT_EQ(rw.calls, 1);
  ASSERT_EQ(rw.status, LK_ECANCELED);
  ASSERT_EQ(g.done_at_close, 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ca:inside"), 0);
  finish_closed(&fx);
  ASSERT_EQ(g.close_cb, 1);
}

/* A member of a MultiLock made from another client: LK_EBUSY, nothing
 * done, until that MultiLock is closing; then close_all waits for it and
 * closes the member. */
TEST(close_all_member_of_another_clients_multilock) {
  fx_t fx;
  lk_client_t *b;
  lk_lock_t *locks[2];
  lk_multilock_t *ml;
  rec_t r = {0, 0};
  lk_multilock_opts_t o;
  int ml_closed = 0;
  start(&fx);
  b = fx_direct_client(&fx);
  ASSERT_OK(lk_lock_new(b, "ca:foreign-b", &locks[0]));
  ASSERT_OK(lk_lock_new(fx.c, "ca:foreign-a", &locks[1]));
  ASSERT_OK(lk_multilock_new(locks, 2, &ml)); /* an object of b's */
  lk_multilock_opts_init(&o);
  o.lease_ms = LEASE;
  ASSERT_OK(lk_multilock_acquire(ml, &o, ml_cb, &r));
  run_until_done(&fx, 1, 10000);
  ASSERT_OK(r.status);
  ASSERT_EQ(lk_client_close_all(fx.c, on_all_closed), LK_EBUSY);
  /* Nothing was done: the group still works. */
  ASSERT_EQ(lk_multilock_is_held(ml), 1);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_multilock_release(ml, ml_cb, &r));
  run_until_done(&fx, 2, 10000);
  ASSERT_OK(r.status);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_multilock_acquire(ml, &o, ml_cb, &r));
  run_until_done(&fx, 3, 10000);
  lk_multilock_set_data(ml, &ml_closed);
  ASSERT_OK(lk_multilock_close(ml, ml_closed_cb));
  ASSERT_OK(lk_client_close_all(fx.c, on_all_closed));
  rt_run_until(&fx.loop, &g.close_cb, 10000);
  ASSERT_EQ(ml_closed, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ca:foreign-a"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ca:foreign-b"), 0);
  close_all_and_wait(&fx, b); /* b's own lock is left */
  finish_closed(&fx);
}

/* In a forked child: memory only (groups first, RedLock masters with
 * them), LK_EFORKED, nothing sent: the parent's hold stays. Under ASan a
 * use after free in the child fails its exit status. */
TEST(close_all_in_a_forked_child_frees_memory_only) {
  fx_t fx;
  lk_lock_t *held, *m[2];
  lk_multilock_t *ml;
  lk_redlock_t *rl;
  rec_t r = {0, 0};
  pid_t pid;
  start(&fx);
  held = fx_lock(&fx, "ca:fork-held");
  m[0] = fx_lock(&fx, "ca:fork-m0");
  m[1] = fx_lock(&fx, "ca:fork-m1");
  ASSERT_OK(lk_multilock_new(m, 2, &ml));
  ASSERT_OK(lk_redlock_new(&fx.c, 1, "ca:fork-rl", NULL, &rl));
  hold_first(&fx, held, &r);
  pid = rt_fork_flushed();
  if (pid == 0) {
    int rc = lk_client_close_all(fx.c, on_all_closed);
    _exit(rc == LK_EFORKED && g.close_cb == 0 ? 0 : 1);
  }
  rt_wait_child_exit_0(pid);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN ca:fork-held"), 1);
  /* The parent's client and objects are as they were. */
  ASSERT_EQ(lk_lock_is_held(held), 1);
  close_all_and_wait(&fx, fx.c);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ca:fork-held"), 0);
  finish_closed(&fx);
}
