/* The blocking RedLock (docs/blocking.md, docs/multilock.md "RedLock"):
 * three masters started here, one client each made by the handle on the
 * blocking client's loop. Threads exclude each other, re-entry counts per
 * thread, tries are bounded, a quorum lost is told by is_held and the
 * thread's descriptor, cancel and close end blocked threads with
 * LK_ECANCELED and give every hold back; a forked child is refused. */
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "latchkey.h"
#include "on_thread.h"
#include "overlap_probe.h"
#include "redis_server.h"
#include "server_faults.h"
#include "test.h"

#define MASTERS 3

typedef struct {
  rt_server_t *srv[MASTERS];
  lk_client_opts_t mo[MASTERS];
  lk_blocking_t *b;
} rx_t;

/* Three masters; the blocking client's own client talks to the first (the
 * RedLock does not use it). lease_ms > 0: the masters' default lease. */
static void rx_start(rx_t *x, int64_t lease_ms) {
  lk_client_opts_t o;
  for (int i = 0; i < MASTERS; i++) {
    x->srv[i] = rt_server_start(NULL);
    ASSERT_NOT_NULL(x->srv[i]);
    lk_client_opts_init(&x->mo[i]);
    x->mo[i].port = rt_server_port(x->srv[i]);
    if (lease_ms > 0)
      x->mo[i].default_lease_ms = lease_ms;
  }
  lk_client_opts_init(&o);
  o.port = rt_server_port(x->srv[0]);
  ASSERT_OK(lk_blocking_new(&o, &x->b));
}

static void rx_stop_servers(rx_t *x) {
  for (int i = 0; i < MASTERS; i++)
    rt_server_stop(x->srv[i]);
}

/* Closes the RedLock (NULL: none), the blocking client, the masters. */
static void rx_finish(rx_t *x, lk_blocking_redlock_t *r) {
  if (r != NULL)
    ASSERT_OK(lk_blocking_redlock_close(r));
  ASSERT_OK(lk_blocking_close(x->b));
  rx_stop_servers(x);
}

/* Masters where the lock's key exists. */
static int keys_on(rx_t *x, const char *name) {
  int n = 0;
  for (int i = 0; i < MASTERS; i++)
    n += (int)rt_cmd_int(x->srv[i], "EXISTS %s", name);
  return n;
}

/* Waits (bounded) until want masters have the key: what the loop settles
 * after the thread was told (the give-back after a loss or of a late
 * grant, or the last master's grant after an acquire that ended at a
 * quorum, which is kept when it comes). */
static int keys_reach(rx_t *x, const char *name, int want) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (keys_on(x, name) != want && rt_now_ms() < deadline)
    rt_sleep_ms(5);
  return keys_on(x, name) == want;
}

static int keys_gone(rx_t *x, const char *name) { return keys_reach(x, name, 0); }

static int keys_on_every_master(rx_t *x, const char *name) {
  return keys_reach(x, name, MASTERS);
}

static long long scripts_run(rx_t *x) {
  long long n = 0;
  for (int i = 0; i < MASTERS; i++)
    n += rt_server_cmd_calls(x->srv[i], "evalsha") + rt_server_cmd_calls(x->srv[i], "eval");
  return n;
}

/* ---- threads exclude each other ------------------------------------------------- */

#define EX_THREADS 3
#define EX_ROUNDS 8

static int brl_acquire(void *r) { return lk_blocking_redlock_acquire(r, NULL); }
static int brl_release(void *r) { return lk_blocking_redlock_release(r); }
static int brl_is_held(void *r) { return lk_blocking_redlock_is_held(r); }
static const overlap_kind_t brl_overlap = {brl_acquire, brl_release, brl_is_held};

TEST(redlock_threads_exclude) {
  rx_t x;
  lk_blocking_redlock_t *r;
  rx_start(&x, 0);
  ASSERT_OK(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "brl_ex", NULL, &r));
  overlap_run(&brl_overlap, r, EX_THREADS, EX_ROUNDS);
  ASSERT(keys_gone(&x, "brl_ex")); /* a last straggler's grant is given back */
  rx_finish(&x, r);
}

/* ---- re-entry, bounded tries, bad arguments ------------------------------------------ */

typedef struct {
  lk_blocking_redlock_t *r;
  int64_t wait_ms;
  int rc, rel;
  int64_t took_ms;
  _Atomic uint64_t tid;
} try_arg_t;

static void try_worker(void *arg) {
  try_arg_t *a = arg;
  int64_t t0 = rt_now_ms();
  atomic_store(&a->tid, lk_blocking_thread_id());
  a->rc = lk_blocking_redlock_try(a->r, a->wait_ms);
  a->took_ms = rt_now_ms() - t0;
  a->rel = a->rc == 0 ? lk_blocking_redlock_release(a->r) : 0;
}

TEST(redlock_reentry_and_bounded_try) {
  rx_t x;
  lk_blocking_redlock_t *r;
  lk_client_opts_t twice[2];
  try_arg_t a;
  rx_start(&x, 0);
  /* The checks of lk_redlock_new come from new. */
  twice[0] = twice[1] = x.mo[0];
  ASSERT_EQ(lk_blocking_redlock_new(x.b, twice, 2, "brl_re", NULL, &r), LK_EINVAL);
  ASSERT_EQ(lk_blocking_redlock_new(x.b, x.mo, 0, "brl_re", NULL, &r), LK_EINVAL);
  ASSERT_EQ(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "", NULL, &r), LK_EINVAL);
  ASSERT_OK(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "brl_re", NULL, &r));
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  ASSERT_EQ(lk_blocking_redlock_hold_count(r), 2);
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 1);
  ASSERT_EQ(keys_on(&x, "brl_re"), MASTERS);
  /* Another thread waits its budget out, no longer. */
  memset(&a, 0, sizeof(a));
  a.r = r;
  a.wait_ms = 300;
  rt_on_thread(try_worker, &a);
  ASSERT_EQ(a.rc, LK_ETIMEDOUT);
  ASSERT_GE(a.took_ms, 290);
  ASSERT_LE(a.took_ms, rt_scaled_ms(3000));
  ASSERT_OK(lk_blocking_redlock_release(r));
  ASSERT_EQ(lk_blocking_redlock_hold_count(r), 1);
  ASSERT_EQ(keys_on(&x, "brl_re"), MASTERS);
  ASSERT_OK(lk_blocking_redlock_release(r));
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 0);
  ASSERT_EQ(lk_blocking_redlock_release(r), LK_ENOTHELD);
  ASSERT(keys_gone(&x, "brl_re")); /* the release answered at its quorum */
  /* Free again: the other thread takes it at once. */
  memset(&a, 0, sizeof(a));
  a.r = r;
  rt_on_thread(try_worker, &a);
  ASSERT_OK(a.rc);
  ASSERT_OK(a.rel);
  rx_finish(&x, r);
}

/* Given clients: the blocking client's own, as a RedLock of one master;
 * the handle borrows it and leaves it open. */
TEST(redlock_on_given_clients) {
  rx_t x;
  lk_blocking_redlock_t *r;
  lk_client_t *own;
  rx_start(&x, 0);
  own = lk_blocking_client(x.b);
  ASSERT_EQ(lk_blocking_redlock_new_on(x.b, NULL, 1, "brl_on", NULL, &r), LK_EINVAL);
  ASSERT_OK(lk_blocking_redlock_new_on(x.b, &own, 1, "brl_on", NULL, &r));
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  ASSERT_EQ(rt_cmd_int(x.srv[0], "EXISTS brl_on"), 1);
  ASSERT_OK(lk_blocking_redlock_release(r));
  ASSERT_OK(lk_blocking_redlock_close(r));
  /* Still open: a lock on it works. */
  {
    lk_blocking_lock_t *l;
    ASSERT_OK(lk_blocking_lock_new(x.b, "brl_on_after", &l));
    ASSERT_OK(lk_blocking_lock_try(l, 0));
    ASSERT_OK(lk_blocking_lock_release(l));
    ASSERT_OK(lk_blocking_lock_close(l));
  }
  rx_finish(&x, NULL);
}

/* ---- a quorum lost ---------------------------------------------------------------------- */

typedef struct {
  _Atomic int calls;
  _Atomic uint64_t tid;
  _Atomic int named;
} lost_seen_t;

static void on_lost(lk_blocking_t *b, const char *name, uint64_t tid, void *arg) {
  lost_seen_t *s = arg;
  (void)b;
  atomic_store(&s->named, strcmp(name, "brl_lost") == 0);
  atomic_store(&s->tid, tid);
  atomic_fetch_add(&s->calls, 1);
}

TEST(redlock_quorum_lost_seen_by_is_held_and_fd) {
  rx_t x;
  lk_blocking_redlock_t *r;
  lost_seen_t seen;
  struct pollfd p;
  int fd;
  memset(&seen, 0, sizeof(seen));
  rx_start(&x, 900); /* renewed every 300 ms */
  ASSERT_OK(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "brl_lost", NULL, &r));
  ASSERT_OK(lk_blocking_set_lost_cb(x.b, on_lost, &seen));
  fd = lk_blocking_lost_fd(x.b);
  ASSERT_GE(fd, 0);
  ASSERT_OK(lk_blocking_redlock_acquire(r, NULL));
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 1);
  p.fd = fd;
  p.events = POLLIN;
  ASSERT_EQ(poll(&p, 1, 0), 0);
  ASSERT(keys_on_every_master(&x, "brl_lost"));
  /* One master losing it leaves a quorum: still held. */
  ASSERT_EQ(rt_cmd_int(x.srv[0], "DEL brl_lost"), 1);
  ASSERT_EQ(poll(&p, 1, (int)rt_scaled_ms(700)), 0);
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 1);
  /* A second one: the quorum is gone at the next renewal. */
  ASSERT_EQ(rt_cmd_int(x.srv[1], "DEL brl_lost"), 1);
  ASSERT_EQ(poll(&p, 1, (int)rt_scaled_ms(5000)), 1);
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 0);
  ASSERT_EQ(lk_blocking_redlock_hold_count(r), 0);
  ASSERT_EQ(atomic_load(&seen.calls), 1);
  ASSERT_EQ(atomic_load(&seen.named), 1);
  ASSERT_EQ(atomic_load(&seen.tid), lk_blocking_thread_id());
  ASSERT_EQ(lk_blocking_lost_clear(x.b), 1);
  ASSERT_EQ(lk_blocking_redlock_release(r), LK_ELEASELOST);
  /* The remaining hold was given back. */
  ASSERT(keys_gone(&x, "brl_lost"));
  /* Afresh. */
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 1);
  ASSERT_OK(lk_blocking_redlock_release(r));
  rx_finish(&x, r);
}

/* A majority stopped: the renewals go unanswered until the masters' local
 * deadlines pass. */
TEST(redlock_majority_stopped_is_lost) {
  rx_t x;
  lk_blocking_redlock_t *r;
  struct pollfd p;
  int64_t t0;
  rx_start(&x, 900);
  ASSERT_OK(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "brl_stop", NULL, &r));
  p.fd = lk_blocking_lost_fd(x.b);
  p.events = POLLIN;
  ASSERT_GE(p.fd, 0);
  ASSERT_OK(lk_blocking_redlock_acquire(r, NULL));
  t0 = rt_now_ms();
  rt_server_pause(x.srv[1]);
  rt_server_pause(x.srv[2]);
  ASSERT_EQ(poll(&p, 1, (int)rt_scaled_ms(6000)), 1);
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 0);
  /* Not before a lease's worth: the masters' deadlines are the lease. */
  ASSERT_GE(rt_now_ms() - t0, 300);
  /* Without a quorum a try fails within its budget. */
  {
    int64_t t1 = rt_now_ms();
    int rc = lk_blocking_redlock_try(r, 200);
    ASSERT(rc == LK_ENOQUORUM || rc == LK_ETIMEDOUT);
    ASSERT_LE(rt_now_ms() - t1, rt_scaled_ms(3000));
  }
  rt_server_resume(x.srv[1]);
  rt_server_resume(x.srv[2]);
  rx_finish(&x, r);
}

/* ---- cancel and close with a thread blocked ----------------------------------------------- */

static void block_worker(void *arg) {
  try_arg_t *a = arg;
  atomic_store(&a->tid, lk_blocking_thread_id());
  a->rc = lk_blocking_redlock_acquire(a->r, NULL);
}

/* Waits until n more scripts than before reached the masters: the worker's
 * first attempt was sent, and it waits. */
static void wait_scripts(rx_t *x, long long before, long long n) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (scripts_run(x) < before + n && rt_now_ms() < deadline)
    rt_sleep_ms(5);
  ASSERT_GE(scripts_run(x), before + n);
}

/* A RedLock named name, held by this thread, and another thread (*t,
 * block_worker on a) blocked trying it: every master has seen its try. */
static lk_blocking_redlock_t *held_with_a_blocked_thread(rx_t *x, const char *name, try_arg_t *a,
                                                         uv_thread_t *t) {
  lk_blocking_redlock_t *r;
  long long before;
  ASSERT_OK(lk_blocking_redlock_new(x->b, x->mo, MASTERS, name, NULL, &r));
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  memset(a, 0, sizeof(*a));
  a->r = r;
  a->rc = 1;
  before = scripts_run(x);
  ASSERT_OK(uv_thread_create(t, block_worker, a));
  wait_scripts(x, before, MASTERS);
  return r;
}

TEST(redlock_cancel_from_another_thread) {
  rx_t x;
  lk_blocking_redlock_t *r;
  try_arg_t a;
  uv_thread_t t;
  int rc = LK_EINVAL;
  int64_t deadline;
  rx_start(&x, 0);
  r = held_with_a_blocked_thread(&x, "brl_cancel", &a, &t);
  deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (rc == LK_EINVAL && rt_now_ms() < deadline) {
    rc = lk_blocking_cancel(x.b, atomic_load(&a.tid));
    if (rc == LK_EINVAL)
      rt_sleep_ms(2);
  }
  ASSERT_OK(rc);
  uv_thread_join(&t);
  ASSERT_EQ(a.rc, LK_ECANCELED);
  /* Still ours, on every master. */
  ASSERT_EQ(lk_blocking_redlock_hold_count(r), 1);
  ASSERT(keys_on_every_master(&x, "brl_cancel"));
  ASSERT_OK(lk_blocking_redlock_release(r));
  rx_finish(&x, r);
}

TEST(redlock_close_with_thread_blocked) {
  rx_t x;
  try_arg_t a;
  uv_thread_t t;
  rx_start(&x, 0);
  held_with_a_blocked_thread(&x, "brl_close", &a, &t); /* closed with the client */
  /* The client's close closes the handle, its RedLocks, then its clients
   * (else its loop would not end: the close would not return 0). */
  ASSERT_OK(lk_blocking_close(x.b));
  uv_thread_join(&t);
  ASSERT_EQ(a.rc, LK_ECANCELED);
  ASSERT_EQ(keys_on(&x, "brl_close"), 0);
  rx_stop_servers(&x);
}

/* ---- fork: the child frees the handle's clients, sends nothing ------------------------------- */

TEST(redlock_fork_child_is_refused) {
  rx_t x;
  lk_blocking_redlock_t *r;
  pid_t pid;
  rx_start(&x, 0);
  ASSERT_OK(lk_blocking_redlock_new(x.b, x.mo, MASTERS, "brl_fork", NULL, &r));
  ASSERT_OK(lk_blocking_redlock_try(r, 0));
  pid = rt_fork_flushed();
  if (pid == 0) {
    int bad = 0;
    bad |= lk_blocking_redlock_try(r, 0) != LK_EFORKED;
    bad |= lk_blocking_redlock_release(r) != LK_EFORKED;
    /* Frees the memory only: the handle, each thread's RedLock and the
     * handle's three clients. */
    bad |= lk_blocking_close(x.b) != LK_EFORKED;
    _exit(bad ? 3 : 0);
  }
  rt_wait_child_exit_0(pid);
  /* The child sent nothing: the parent still holds, and can release. */
  ASSERT(keys_on_every_master(&x, "brl_fork"));
  ASSERT_EQ(lk_blocking_redlock_is_held(r), 1);
  ASSERT_OK(lk_blocking_redlock_release(r));
  ASSERT(keys_gone(&x, "brl_fork"));
  rx_finish(&x, r);
}
