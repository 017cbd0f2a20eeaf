/* Contention on the other waiting kinds (docs/objects.md, "Waiting"): the
 * read/write lock's write side, the counting semaphore and the permit
 * semaphore, one holder at a time, bounded by the scripts the server ran
 * (INFO commandstats), in one process (50 objects of one client) and across
 * processes (one object per client, 10 clients), with the plain lock
 * measured in the same harness as the yardstick. Under the rule before
 * wake-one every local waiter retried on every release: about one script
 * per waiting object per handoff, ~50 among 50 objects; without thinning
 * about one per client per acquisition. Every kind is bounded as the lock
 * is. Each run also checks that no two objects ever held at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "server_faults.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

static long long scripts(rt_server_t *srv) {
  return rt_server_cmd_calls(srv, "evalsha") + rt_server_cmd_calls(srv, "eval");
}

/* ---- one name, one holder at a time, of one kind ---- */

/* K_LOCK is the yardstick: the plain lock in this same harness. */
typedef enum { K_LOCK, K_RW_WRITE, K_SEM, K_PSEM } kind_t;

static const char *const kind_names[] = {"lock", "rwlock write", "semaphore", "permit semaphore"};

#define MAXW 64

struct run_s;

typedef struct {
  struct run_s *r;
  void *obj; /* lk_rwlock_t, lk_semaphore_t or lk_psem_t */
  uv_timer_t hold;
} waiter_t;

typedef struct run_s {
  kind_t kind;
  waiter_t w[MAXW];
  int n;
  int target;   /* acquisitions to make in all */
  int acquired; /* so far */
  int holders;  /* at once: never above 1 */
  int max_holders;
  int active; /* waiters with an operation pending */
  int failures;
  int all_done;
  int closed; /* hold timers closed */
} run_t;

static void start_acquire(waiter_t *w);

static void ended(run_t *r) {
  if (--r->active == 0)
    r->all_done = 1;
}

static void released(waiter_t *w, int status) {
  run_t *r = w->r;
  if (status != 0)
    r->failures++;
  /* Re-wait while acquisitions are left to make, else stop. */
  if (r->acquired < r->target)
    start_acquire(w);
  else
    ended(r);
}

static void on_lock_released(lk_lock_t *l, int status, void *arg) {
  (void)l;
  released(arg, status);
}
static void on_rw_released(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw;
  released(arg, status);
}
static void on_sem_released(lk_semaphore_t *s, int status, void *arg) {
  (void)s;
  released(arg, status);
}
static void on_psem_released(lk_psem_t *p, int status, void *arg) {
  (void)p;
  released(arg, status);
}

/* The hold ends one loop pass after the grant: any other grant the server
 * made meanwhile would be seen here, between the two. The count drops
 * before the release goes out, so a grant that follows the release is
 * never counted as an overlap. */
static void on_hold_over(uv_timer_t *t) {
  waiter_t *w = t->data;
  run_t *r = w->r;
  r->holders--;
  switch (r->kind) {
  case K_LOCK:
    ASSERT_OK(lk_lock_release(w->obj, on_lock_released, w));
    break;
  case K_RW_WRITE:
    ASSERT_OK(lk_rwlock_release(w->obj, LK_RW_WRITE, on_rw_released, w));
    break;
  case K_SEM:
    ASSERT_OK(lk_semaphore_release(w->obj, 1, on_sem_released, w));
    break;
  case K_PSEM:
    ASSERT_OK(lk_psem_release(w->obj, NULL, on_psem_released, w));
    break;
  }
}

static void acquired(waiter_t *w, int status) {
  run_t *r = w->r;
  if (status != 0) {
    r->failures++;
    ended(r);
    return;
  }
  r->acquired++;
  if (++r->holders > r->max_holders)
    r->max_holders = r->holders;
  ASSERT_OK(uv_timer_start(&w->hold, on_hold_over, 0, 0));
}

static void on_lock_acquired(lk_lock_t *l, int status, void *arg) {
  (void)l;
  acquired(arg, status);
}
static void on_rw_acquired(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw;
  acquired(arg, status);
}
static void on_sem_acquired(lk_semaphore_t *s, int status, void *arg) {
  (void)s;
  acquired(arg, status);
}
static void on_psem_acquired(lk_psem_t *p, int status, void *arg) {
  (void)p;
  acquired(arg, status);
}

static void start_acquire(waiter_t *w) {
  switch (w->r->kind) {
  case K_LOCK: {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = 60000;
    o.lease_ms = 30000;
    ASSERT_OK(lk_lock_acquire(w->obj, &o, on_lock_acquired, w));
    break;
  }
  case K_RW_WRITE: {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.wait_ms = 60000;
    o.lease_ms = 30000;
    ASSERT_OK(lk_rwlock_acquire(w->obj, LK_RW_WRITE, &o, on_rw_acquired, w));
    break;
  }
  case K_SEM: {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.wait_ms = 60000;
    ASSERT_OK(lk_semaphore_acquire(w->obj, &o, on_sem_acquired, w));
    break;
  }
  case K_PSEM: {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    o.wait_ms = 60000;
    o.lease_ms = 30000;
    ASSERT_OK(lk_psem_acquire(w->obj, &o, on_psem_acquired, w));
    break;
  }
  }
}

static void *new_obj(kind_t kind, lk_client_t *c) {
  void *obj = NULL;
  switch (kind) {
  case K_LOCK:
    ASSERT_OK(lk_lock_new(c, "contended", (lk_lock_t **)&obj));
    break;
  case K_RW_WRITE:
    ASSERT_OK(lk_rwlock_new(c, "contended", (lk_rwlock_t **)&obj));
    break;
  case K_SEM:
    ASSERT_OK(lk_semaphore_new(c, "contended", (lk_semaphore_t **)&obj));
    break;
  case K_PSEM:
    ASSERT_OK(lk_psem_new(c, "contended", (lk_psem_t **)&obj));
    break;
  }
  return obj;
}

static void close_obj(fx_t *fx, kind_t kind, void *obj) {
  switch (kind) {
  case K_LOCK:
    fx_close_lock(fx, obj);
    break;
  case K_RW_WRITE:
    fx_close_rwlock(fx, obj);
    break;
  case K_SEM:
    fx_close_sem(fx, obj);
    break;
  case K_PSEM:
    fx_close_psem(fx, obj);
    break;
  }
}

/* One permit on the name (the semaphores), set before the stats are
 * reset. */
static void one_permit(fx_t *fx, kind_t kind) {
  if (kind == K_SEM) {
    lk_semaphore_t *s = fx_sem(fx, "contended");
    ASSERT_OK(sem_run_n(fx, lk_semaphore_try_set_permits, s, 1, NULL));
    fx_close_sem(fx, s);
  } else if (kind == K_PSEM) {
    lk_psem_t *p = fx_psem(fx, "contended");
    ASSERT_OK(psem_run_n(fx, lk_psem_try_set_permits, p, 1, NULL));
    fx_close_psem(fx, p);
  }
}

static void on_timer_closed(uv_handle_t *h) {
  waiter_t *w = h->data;
  w->r->closed++;
}

/* n objects of `kind` on one name, object i on clients[i % nclients], until
 * target acquisitions were made; the scripts the server ran meanwhile. */
static long long run_handoffs(fx_t *fx, run_t *r, kind_t kind, int n, int target,
                              lk_client_t **clients, int nclients) {
  long long before;
  int i;
  ASSERT(n <= MAXW);
  memset(r, 0, sizeof(*r));
  r->kind = kind;
  r->n = n;
  r->target = target;
  for (i = 0; i < n; i++) {
    r->w[i].r = r;
    r->w[i].obj = new_obj(kind, clients[i % nclients]);
    ASSERT_OK(uv_timer_init(&fx->loop, &r->w[i].hold));
    r->w[i].hold.data = &r->w[i];
  }
  /* The scripts are loaded (a try that finds the name free). */
  start_acquire(&r->w[0]);
  r->active = 1;
  r->target = 1;
  rt_run_until(&fx->loop, &r->all_done, 10000);
  ASSERT_EQ(r->failures, 0);
  r->all_done = 0;
  r->acquired = 0;
  r->max_holders = 0;
  r->target = target;
  rt_server_reset_stats(fx->srv);
  before = scripts(fx->srv);
  for (i = 0; i < n; i++) {
    r->active++;
    start_acquire(&r->w[i]);
  }
  rt_run_until(&fx->loop, &r->all_done, 90000);
  before = scripts(fx->srv) - before;
  ASSERT_EQ(r->failures, 0);
  ASSERT(r->acquired >= target);
  ASSERT_EQ(r->max_holders, 1);
  for (i = 0; i < n; i++)
    uv_close((uv_handle_t *)&r->w[i].hold, on_timer_closed);
  while (r->closed < n)
    uv_run(&fx->loop, UV_RUN_ONCE);
  for (i = 0; i < n; i++)
    close_obj(fx, kind, r->w[i].obj);
  return before;
}

/* A long re-poll, so that what is counted is what releases cause. */
static void quiet_opts(fx_t *fx, lk_client_opts_t *o) {
  fx_client_opts(fx, o);
  o->max_repoll_ms = 20000;
}

static void start_quiet(fx_t *fx) {
  lk_client_opts_t o;
  fx_start_server(fx, NULL);
  quiet_opts(fx, &o);
  fx_start_client(fx, &o);
}

/* ---- many objects of one process ---- */

#define OBJS 50
#define HANDOFFS 200

/* 200 handoffs among 50 objects of one client; the scripts must stay within
 * per_acq per acquisition plus per_obj per object (its first tries). */
static void one_process(kind_t kind, long long per_acq, long long per_obj) {
  fx_t fx;
  run_t r;
  long long used, subs;
  start_quiet(&fx);
  one_permit(&fx, kind);
  used = run_handoffs(&fx, &r, kind, OBJS, HANDOFFS, &fx.c, 1);
  subs = rt_server_cmd_calls(fx.srv, "subscribe") + rt_server_cmd_calls(fx.srv, "unsubscribe");
  fprintf(stderr,
          "%s: %d handoffs among %d objects of one client: %lld scripts (%.2f per handoff), "
          "%lld (un)subscribes; bound %lld\n",
          kind_names[kind], r.acquired, OBJS, used, (double)used / r.acquired, subs,
          per_acq * r.acquired + per_obj * OBJS);
  ASSERT(used <= per_acq * r.acquired + per_obj * OBJS);
  fx_finish(&fx);
}

/* ---- one object per client (a process each, to the server) ---- */

#define PROCS 10
#define PROC_ACQ 400

static void across_clients(kind_t kind, long long per_acq, long long per_client) {
  fx_t fx;
  run_t r;
  lk_client_t *clients[PROCS];
  lk_client_opts_t o;
  long long used;
  int i;
  start_quiet(&fx);
  clients[0] = fx.c;
  quiet_opts(&fx, &o);
  for (i = 1; i < PROCS; i++)
    ASSERT_OK(lk_client_new(&fx.loop, &o, &clients[i]));
  one_permit(&fx, kind);
  used = run_handoffs(&fx, &r, kind, PROCS, PROC_ACQ, clients, PROCS);
  fprintf(stderr, "%s: %d acquisitions among %d clients: %lld scripts (%.2f per acquisition); bound %lld\n",
          kind_names[kind], r.acquired, PROCS, used, (double)used / r.acquired,
          per_acq * r.acquired + per_client * PROCS);
  ASSERT(used <= per_acq * r.acquired + per_client * PROCS);
  for (i = 1; i < PROCS; i++)
    fx_close_direct_client(&fx, clients[i]);
  fx_finish(&fx);
}

/* The plain lock in this harness, as core/contention_wake.c bounds it
 * (2.4 per handoff in one process, 4.1-4.3 per acquisition among 10
 * clients): the yardstick the kinds below are measured against. */
TEST(lock_one_process) { one_process(K_LOCK, 3, 1); }
TEST(lock_across_clients) { across_clients(K_LOCK, 6, 4); }

/* The semaphores, one permit: a release of fewer permits than twice what a
 * waiter needs wakes one local waiter (more would only lose), and the
 * releaser's own next acquire: 2.4-2.5 per handoff measured. Waking the
 * first n + 1 cost 4.2-4.4, the old rule (every local waiter on every
 * release) ~50. */
TEST(semaphore_one_process) { one_process(K_SEM, 3, 2); }
TEST(psem_one_process) { one_process(K_PSEM, 3, 2); }

/* The read/write lock's writers. A write release publishes "1": readers may
 * all enter, but it wakes one local writer, as a read release does: 2.4-2.5
 * per handoff measured; waking every writer on it cost 45-46 among 50. */
TEST(rwlock_writers_one_process) { one_process(K_RW_WRITE, 3, 2); }

/* Across processes these kinds' woken waiters are thinned as the lock's
 * (a wake-one), but by the heat of their own lost tries only (their
 * releases do not report how many listened): 2.5-4.5 per acquisition
 * measured among 10 clients, every client's waiter trying on every release
 * 9.6-10.9, and once 8.0 for the semaphore on Valkey under CI load, when
 * the heat did not build. So these bounds only catch worse than one try
 * per client per release; the lock's (6) is for when they learn the
 * listener count too. */
TEST(rwlock_writers_across_clients) { across_clients(K_RW_WRITE, 12, 4); }
TEST(semaphore_across_clients) { across_clients(K_SEM, 12, 4); }
TEST(psem_across_clients) { across_clients(K_PSEM, 12, 4); }

/* A release a small waiter may share with a larger one wakes both: 3
 * permits, one waiter needing 1 (first in line, woken under the count) and
 * one needing 2 (woken alone). Counting the first under the wake meant for
 * one left the second asleep until its re-poll (20 s here) with 3 permits
 * free. */
TEST(semaphore_release_wakes_a_small_and_a_large_waiter) {
  fx_t fx;
  lk_client_t *other;
  lk_semaphore_t *small, *large, *adder;
  sx_t a, b;
  int64_t t0;
  start_quiet(&fx);
  other = fx_direct_client(&fx);
  small = fx_sem(&fx, "fits");
  large = fx_sem(&fx, "fits");
  ASSERT_OK(lk_semaphore_new(other, "fits", &adder));
  rt_server_reset_stats(fx.srv);
  sem_start_acquire(small, 1, 60000, &a);
  sem_start_acquire(large, 2, 60000, &b);
  /* Both tried (and the first once more on its subscription): waiting. */
  FX_EVENTUALLY(&fx, scripts(fx.srv) >= 3, 5000);
  t0 = rt_now_ms();
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_add_permits, adder, 3, NULL), 0);
  rt_run_until(&fx.loop, &a.done, 15000);
  rt_run_until(&fx.loop, &b.done, 15000);
  ASSERT_EQ(a.status, 0);
  ASSERT_EQ(b.status, 0);
  ASSERT(rt_now_ms() - t0 < 10000); /* woken, not re-polled */
  fx_close_sem(&fx, small);
  fx_close_sem(&fx, large);
  fx_close_sem_in(&fx.loop, adder);
  fx_close_direct_client(&fx, other);
  fx_finish(&fx);
}
