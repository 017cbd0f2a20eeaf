/* The blocking API (docs/blocking.md): threads exclude each other on one
 * name, re-entry counts per thread, bounded tries, cancel from another
 * thread, close with threads blocked, the three ways a lost lease is told,
 * calls refused on the loop thread, fork, and a Redisson thread sharing the
 * name. */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "latchkey.h"
#include "on_thread.h"
#include "overlap_probe.h"
#include "redis_server.h"
#include "redisson_emu.h"
#include "server_faults.h"
#include "test.h"

#define CLIENT_ID "8f4a3c2e-1b6d-4e5f-9a0b-7c8d9e0f1a2b"

typedef struct {
  rt_server_t *srv;
  lk_blocking_t *b;
} bx_t;

static void bx_start_opts(bx_t *x, lk_client_opts_t *o) {
  x->srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(x->srv);
  o->port = rt_server_port(x->srv);
  o->client_id = CLIENT_ID;
  ASSERT_OK(lk_blocking_new(o, &x->b));
}

static void bx_start(bx_t *x) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  bx_start_opts(x, &o);
}

static void bx_finish(bx_t *x) {
  ASSERT_OK(lk_blocking_close(x->b));
  rt_server_stop(x->srv);
}

/* The server's hold count of thread tid on lock name. */
static long long server_holds(bx_t *x, const char *name, uint64_t tid) {
  char *v = rt_cmd_str(x->srv, "HGET %s %s:%llu", name, CLIENT_ID, (unsigned long long)tid);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* ---- threads exclude each other ---------------------------------------------- */

#define EX_THREADS 4
#define EX_ROUNDS 15

static int bl_acquire(void *l) { return lk_blocking_lock_acquire(l, NULL); }
static int bl_release(void *l) { return lk_blocking_lock_release(l); }
static const overlap_kind_t bl_overlap = {bl_acquire, bl_release, NULL};

TEST(threads_exclude_on_one_name) {
  bx_t x;
  lk_blocking_lock_t *l;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_ex", &l));
  overlap_run(&bl_overlap, l, EX_THREADS, EX_ROUNDS);
  ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS bl_ex"), 0);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* ---- re-entry counts per thread ------------------------------------------------ */

typedef struct {
  lk_blocking_lock_t *l;
  int64_t wait_ms;
  int rc;
  int64_t took_ms;
  _Atomic uint64_t tid;
} try_arg_t;

static void try_worker(void *arg) {
  try_arg_t *a = arg;
  int64_t t0 = rt_now_ms();
  atomic_store(&a->tid, lk_blocking_thread_id());
  a->rc = lk_blocking_lock_try(a->l, a->wait_ms);
  a->took_ms = rt_now_ms() - t0;
  if (a->rc == 0)
    a->rc = lk_blocking_lock_release(a->l) == 0 ? 0 : -1;
}

static int try_on_thread(lk_blocking_lock_t *l, int64_t wait_ms, int64_t *took_ms) {
  try_arg_t a;
  memset(&a, 0, sizeof(a));
  a.l = l;
  a.wait_ms = wait_ms;
  rt_on_thread(try_worker, &a);
  if (took_ms != NULL)
    *took_ms = a.took_ms;
  return a.rc;
}

TEST(reentry_counts_per_thread) {
  bx_t x;
  lk_blocking_lock_t *l;
  uint64_t me = lk_blocking_thread_id();
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_re", &l));
  ASSERT_EQ(lk_blocking_lock_is_held(l), 0);
  for (int i = 1; i <= 3; i++) {
    ASSERT_OK(lk_blocking_lock_try(l, 0));
    ASSERT_EQ(lk_blocking_lock_hold_count(l), (uint32_t)i);
    ASSERT_EQ(server_holds(&x, "bl_re", me), i);
  }
  ASSERT_EQ(lk_blocking_lock_is_held(l), 1);
  ASSERT_EQ(lk_blocking_lock_is_locked(l), 1);
  /* Another thread of this process is another owner. */
  ASSERT_EQ(try_on_thread(l, 0, NULL), LK_ETIMEDOUT);
  for (int i = 2; i >= 0; i--) {
    ASSERT_OK(lk_blocking_lock_release(l));
    ASSERT_EQ(lk_blocking_lock_hold_count(l), (uint32_t)i);
    ASSERT_EQ(server_holds(&x, "bl_re", me), i);
  }
  ASSERT_EQ(lk_blocking_lock_release(l), LK_ENOTHELD);
  ASSERT_EQ(lk_blocking_lock_is_locked(l), 0);
  ASSERT_EQ(try_on_thread(l, 0, NULL), 0);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

TEST(try_with_timeout_is_bounded) {
  bx_t x;
  lk_blocking_lock_t *l;
  int64_t took = 0;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_try", &l));
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  ASSERT_EQ(try_on_thread(l, 300, &took), LK_ETIMEDOUT);
  ASSERT_GE(took, 290);
  ASSERT_LE(took, rt_scaled_ms(3000));
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* ---- cancel and close with threads blocked --------------------------------------- */

static void block_worker(void *arg) {
  try_arg_t *a = arg;
  atomic_store(&a->tid, lk_blocking_thread_id());
  a->rc = lk_blocking_lock_acquire(a->l, NULL);
}

TEST(cancel_from_another_thread) {
  bx_t x;
  lk_blocking_lock_t *l;
  try_arg_t a;
  uv_thread_t t;
  int rc = LK_EINVAL;
  int64_t deadline;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_cancel", &l));
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  memset(&a, 0, sizeof(a));
  a.l = l;
  a.rc = 1;
  ASSERT_OK(uv_thread_create(&t, block_worker, &a));
  /* LK_EINVAL until the worker's acquire is in flight; then it is canceled. */
  deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (rc == LK_EINVAL && rt_now_ms() < deadline) {
    uint64_t tid = atomic_load(&a.tid);
    if (tid != 0)
      rc = lk_blocking_cancel(x.b, tid);
    if (rc == LK_EINVAL)
      rt_sleep_ms(2);
  }
  ASSERT_OK(rc);
  uv_thread_join(&t);
  ASSERT_EQ(a.rc, LK_ECANCELED);
  /* Nothing left to cancel; the lock stayed ours. */
  ASSERT_EQ(lk_blocking_cancel(x.b, atomic_load(&a.tid)), LK_EINVAL);
  ASSERT_EQ(lk_blocking_lock_hold_count(l), 1);
  ASSERT_EQ(rt_cmd_int(x.srv, "HLEN bl_cancel"), 1);
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

#define CLOSE_WAITERS 3

/* Reads mon (a MONITOR connection opened before the threads started) until
 * a script naming each thread of a[0..n) as its owner reached the server
 * (bounded): that thread's acquire is then in flight, and since the lock is
 * held, it waits. The count of scripts alone cannot tell whose they are: a
 * waiter tries again once its subscription is confirmed, and a waiter
 * behind another of its process sends nothing until its re-poll, so two
 * threads could make up the count while the third had not yet called (it
 * then meets the close: LK_ECLOSED, or its handle freed under it). */
static void wait_each_thread_tried(redisContext *mon, try_arg_t *a, int n) {
  int seen[CLOSE_WAITERS] = {0}, left = n;
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  ASSERT_LE(n, CLOSE_WAITERS);
  while (left > 0) {
    int64_t ms = deadline - rt_now_ms();
    redisReply *r = ms > 0 ? rt_sub_next(mon, ms) : NULL;
    if (r == NULL)
      FAIL("%d of %d blocked threads never tried on the server", left, n);
    for (int i = 0; i < n && r->type == REDIS_REPLY_STATUS; i++) {
      uint64_t tid = atomic_load(&a[i].tid);
      char owner[96];
      snprintf(owner, sizeof owner, "\"%s:%llu\"", CLIENT_ID, (unsigned long long)tid);
      if (!seen[i] && tid != 0 && strstr(r->str, "\"EVAL") != NULL &&
          strstr(r->str, owner) != NULL) {
        seen[i] = 1;
        left--;
      }
    }
    freeReplyObject(r);
  }
}

TEST(close_with_threads_blocked) {
  bx_t x;
  lk_blocking_lock_t *l;
  try_arg_t a[CLOSE_WAITERS];
  uv_thread_t t[CLOSE_WAITERS];
  long long tries0;
  redisContext *mon;
  redisReply *ok;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_close", &l));
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  tries0 = rt_server_cmd_calls(x.srv, "evalsha") + rt_server_cmd_calls(x.srv, "eval");
  mon = rt_rlock_connect(rt_server_port(x.srv));
  ok = redisCommand(mon, "MONITOR");
  ASSERT_NOT_NULL(ok);
  ASSERT_EQ(ok->type, REDIS_REPLY_STATUS);
  freeReplyObject(ok);
  for (int i = 0; i < CLOSE_WAITERS; i++) {
    memset(&a[i], 0, sizeof(a[i]));
    a[i].l = l;
    a[i].rc = 1;
    ASSERT_OK(uv_thread_create(&t[i], block_worker, &a[i]));
  }
  /* Each waiter's own try reaches the server before it waits. */
  wait_each_thread_tried(mon, a, CLOSE_WAITERS);
  redisFree(mon);
  ASSERT_GE(rt_server_cmd_calls(x.srv, "evalsha") + rt_server_cmd_calls(x.srv, "eval"),
            tries0 + CLOSE_WAITERS);
  ASSERT_OK(lk_blocking_close(x.b));
  for (int i = 0; i < CLOSE_WAITERS; i++) {
    uv_thread_join(&t[i]);
    ASSERT_EQ(a[i].rc, LK_ECANCELED);
  }
  /* The close gave the hold back. */
  ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS bl_close"), 0);
  rt_server_stop(x.srv);
}

/* ---- a lost lease, told three ways ---------------------------------------------------- */

typedef struct {
  _Atomic int calls;
  _Atomic uint64_t tid;
  _Atomic int verb_rc;
  lk_blocking_lock_t *l;
} lost_seen_t;

static void on_lost(lk_blocking_t *b, const char *name, uint64_t tid, void *arg) {
  lost_seen_t *s = arg;
  (void)b;
  if (strcmp(name, "bl_lost") == 0)
    atomic_store(&s->tid, tid);
  /* On the loop thread a verb would wait for itself: refused. */
  atomic_store(&s->verb_rc, lk_blocking_lock_try(s->l, 0));
  atomic_fetch_add(&s->calls, 1);
}

TEST(lost_lease_seen_three_ways) {
  bx_t x;
  lk_client_opts_t o;
  lost_seen_t seen;
  struct pollfd p;
  int fd, n;
  memset(&seen, 0, sizeof(seen));
  lk_client_opts_init(&o);
  o.default_lease_ms = 900; /* renewed every 300 ms */
  bx_start_opts(&x, &o);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_lost", &seen.l));
  ASSERT_OK(lk_blocking_set_lost_cb(x.b, on_lost, &seen));
  fd = lk_blocking_lost_fd(x.b);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(lk_blocking_lost_fd(x.b), fd); /* one per thread */
  ASSERT_OK(lk_blocking_lock_acquire(seen.l, NULL));
  ASSERT_EQ(lk_blocking_lock_is_held(seen.l), 1);
  p.fd = fd;
  p.events = POLLIN;
  ASSERT_EQ(poll(&p, 1, 0), 0);
  ASSERT_EQ(rt_cmd_int(x.srv, "DEL bl_lost"), 1);
  /* The next renewal finds the key gone. */
  ASSERT_EQ(poll(&p, 1, (int)rt_scaled_ms(5000)), 1);
  ASSERT_EQ(lk_blocking_lock_is_held(seen.l), 0);
  ASSERT_EQ(lk_blocking_lock_hold_count(seen.l), 0);
  ASSERT_EQ(atomic_load(&seen.calls), 1);
  ASSERT_EQ(atomic_load(&seen.tid), lk_blocking_thread_id());
  ASSERT_EQ(atomic_load(&seen.verb_rc), LK_EWRONGTHREAD);
  n = lk_blocking_lost_clear(x.b);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(poll(&p, 1, 0), 0);
  ASSERT_EQ(lk_blocking_lock_release(seen.l), LK_ELEASELOST);
  /* Afresh: the thread can take it again. */
  ASSERT_OK(lk_blocking_lock_try(seen.l, 0));
  ASSERT_EQ(lk_blocking_lock_is_held(seen.l), 1);
  ASSERT_OK(lk_blocking_lock_release(seen.l));
  ASSERT_OK(lk_blocking_lock_close(seen.l));
  bx_finish(&x);
}

/* ---- an attached client: the caller's loop thread serves, and is refused ---------------- */

typedef struct {
  lk_blocking_t *b;
  int rc;
  uv_async_t *stop; /* sent when done: the loop thread stops its uv_run */
} attached_arg_t;

static void attached_worker(void *arg) {
  attached_arg_t *a = arg;
  lk_blocking_lock_t *l = NULL;
  a->rc = lk_blocking_lock_new(a->b, "bl_attached", &l);
  if (a->rc == 0)
    a->rc = lk_blocking_lock_try(l, 1000);
  if (a->rc == 0)
    a->rc = lk_blocking_lock_release(l);
  if (l != NULL && a->rc == 0)
    a->rc = lk_blocking_lock_close(l);
  uv_async_send(a->stop);
}

static void stop_loop(uv_async_t *h) { uv_stop(h->loop); }

static void closer_thread(void *arg) {
  attached_arg_t *a = arg;
  a->rc = lk_blocking_close(a->b);
  uv_async_send(a->stop);
}

static void on_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

TEST(attached_loop_thread_refused) {
  rt_server_t *srv = rt_server_start(NULL);
  uv_loop_t loop;
  lk_client_t *c;
  lk_client_opts_t o;
  lk_blocking_lock_t *l;
  attached_arg_t a;
  uv_async_t stop;
  uv_thread_t t;
  int closed = 0;
  ASSERT_NOT_NULL(srv);
  ASSERT_OK(uv_loop_init(&loop));
  lk_client_opts_init(&o);
  o.port = rt_server_port(srv);
  ASSERT_OK(lk_client_new(&loop, &o, &c));
  memset(&a, 0, sizeof(a));
  ASSERT_OK(lk_blocking_attach(c, &a.b));
  /* This is the loop thread: every verb would wait for itself. */
  ASSERT_EQ(lk_blocking_lock_new(a.b, "bl_attached", &l), LK_EWRONGTHREAD);
  ASSERT_EQ(lk_blocking_close(a.b), LK_EWRONGTHREAD);
  ASSERT_OK(uv_async_init(&loop, &stop, stop_loop));
  a.stop = &stop;
  a.rc = 1;
  ASSERT_OK(uv_thread_create(&t, attached_worker, &a));
  /* The worker's calls are served by this loop until it says done. */
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_thread_join(&t);
  ASSERT_OK(a.rc);
  /* Closed from another thread while this one keeps the loop running; the
   * client stays ours. */
  a.rc = 1;
  ASSERT_OK(uv_thread_create(&t, closer_thread, &a));
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_thread_join(&t);
  ASSERT_OK(a.rc);
  uv_close((uv_handle_t *)&stop, NULL);
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, on_closed));
  uv_run(&loop, UV_RUN_DEFAULT);
  ASSERT_EQ(closed, 1);
  ASSERT_OK(uv_loop_close(&loop));
  rt_server_stop(srv);
}

/* ---- fork ---------------------------------------------------------------------------------- */

TEST(fork_child_is_refused) {
  bx_t x;
  lk_blocking_lock_t *l;
  pid_t pid;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_fork", &l));
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  pid = rt_fork_flushed();
  if (pid == 0) {
    int bad = 0;
    bad |= lk_blocking_lock_try(l, 0) != LK_EFORKED;
    bad |= lk_blocking_lock_release(l) != LK_EFORKED;
    bad |= lk_blocking_cancel(x.b, 1) != LK_EFORKED;
    bad |= lk_blocking_lost_fd(x.b) != LK_EFORKED;
    bad |= lk_blocking_close(x.b) != LK_EFORKED; /* frees the memory only */
    _exit(bad ? 3 : 0);
  }
  rt_wait_child_exit_0(pid);
  /* The child sent nothing: the parent still holds, and can release. */
  ASSERT_EQ(server_holds(&x, "bl_fork", lk_blocking_thread_id()), 1);
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS bl_fork"), 0);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* A fork while the loop thread is busy: the child must see the loop's memory
 * between two callbacks (the fork waits for the loop thread to park), never
 * halfway through one, or the child's close walks half-changed lists. */
#define FB_WORKERS 2
#define FB_FORKS 400

typedef struct {
  lk_blocking_lock_t *l;
  _Atomic int *stop;
  int errors;
} fb_worker_t;

static void fork_busy_worker(void *arg) {
  fb_worker_t *w = arg;
  for (int i = 0; i < 100000 && !atomic_load(w->stop); i++) {
    if (lk_blocking_lock_acquire(w->l, NULL) != 0)
      w->errors++;
    else if (lk_blocking_lock_release(w->l) != 0)
      w->errors++;
  }
}

TEST(fork_while_loop_thread_is_busy) {
  bx_t x;
  lk_blocking_lock_t *l[FB_WORKERS];
  fb_worker_t w[FB_WORKERS];
  uv_thread_t t[FB_WORKERS];
  _Atomic int stop = 0;
  int crashed = 0, refused = 0;
  bx_start(&x);
  for (int i = 0; i < FB_WORKERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "bl_fork_busy_%d", i);
    ASSERT_OK(lk_blocking_lock_new(x.b, name, &l[i]));
    w[i] = (fb_worker_t){.l = l[i], .stop = &stop};
    ASSERT_OK(uv_thread_create(&t[i], fork_busy_worker, &w[i]));
  }
  for (int f = 0; f < FB_FORKS; f++) {
    int status = 0;
    pid_t pid;
    rt_sleep_us(200); /* spreads the forks over the workers' rounds */
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      _exit(lk_blocking_close(x.b) == LK_EFORKED ? 0 : 3);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    crashed += !WIFEXITED(status);
    refused += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < FB_WORKERS; i++) {
    uv_thread_join(&t[i]);
    ASSERT_EQ(w[i].errors, 0);
    ASSERT_OK(lk_blocking_lock_close(l[i]));
  }
  ASSERT_EQ(crashed, 0);
  ASSERT_EQ(refused, FB_FORKS);
  bx_finish(&x);
}

/* ---- a Redisson thread shares the name --------------------------------------------------------- */

TEST(redisson_thread_and_latchkey_thread_exclude) {
  bx_t x;
  lk_blocking_lock_t *l;
  redisContext *java;
  uint64_t me = lk_blocking_thread_id();
  bx_start(&x);
  java = rt_rlock_connect(rt_server_port(x.srv));
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_java", &l));
  /* Java thread 1 of another JVM holds: the latchkey thread waits it out. */
  ASSERT_EQ(rt_rlock_try(java, "bl_java", "java-uuid", 1, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(lk_blocking_lock_try(l, 200), LK_ETIMEDOUT);
  ASSERT_EQ(rt_rlock_unlock(java, "bl_java", "java-uuid", 1), 1);
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  ASSERT_OK(lk_blocking_lock_try(l, 0));
  /* Held by this thread: the Java thread is told the ttl, not admitted. */
  ASSERT_GE(rt_rlock_try(java, "bl_java", "java-uuid", 1, 30000), 0);
  /* A Java thread acting as this very thread (same UUID:threadId) re-enters,
   * as Redisson's owner id says it is the same owner. */
  ASSERT_EQ(rt_rlock_try(java, "bl_java", CLIENT_ID, (long long)me, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(server_holds(&x, "bl_java", me), 3);
  ASSERT_EQ(rt_rlock_unlock(java, "bl_java", CLIENT_ID, (long long)me), 0);
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_OK(lk_blocking_lock_release(l));
  ASSERT_EQ(rt_rlock_try(java, "bl_java", "java-uuid", 1, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rlock_unlock(java, "bl_java", "java-uuid", 1), 1);
  redisFree(java);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* ---- read/write lock and semaphore -------------------------------------------------------------- */

typedef struct {
  lk_blocking_rwlock_t *rw;
  lk_rwlock_side_t side;
  int64_t wait_ms;
  int rc;
} rw_arg_t;

static void rw_try_worker(void *arg) {
  rw_arg_t *a = arg;
  a->rc = lk_blocking_rwlock_try(a->rw, a->side, a->wait_ms);
  if (a->rc == 0 && lk_blocking_rwlock_hold_count(a->rw, a->side) != 1)
    a->rc = -1;
  if (a->rc == 0)
    a->rc = lk_blocking_rwlock_release(a->rw, a->side);
}

static int rw_on_thread(lk_blocking_rwlock_t *rw, lk_rwlock_side_t side, int64_t wait_ms) {
  rw_arg_t a = {rw, side, wait_ms, 1};
  rt_on_thread(rw_try_worker, &a);
  return a.rc;
}

TEST(rwlock_readers_share_writer_excluded) {
  bx_t x;
  lk_blocking_rwlock_t *rw;
  bx_start(&x);
  ASSERT_OK(lk_blocking_rwlock_new(x.b, "bl_rw", &rw));
  ASSERT_OK(lk_blocking_rwlock_try(rw, LK_RW_READ, 0));
  ASSERT_EQ(lk_blocking_rwlock_is_held(rw, LK_RW_READ), 1);
  ASSERT_EQ(lk_blocking_rwlock_is_held(rw, LK_RW_WRITE), 0);
  /* Another thread reads beside this one, and cannot write. */
  ASSERT_OK(rw_on_thread(rw, LK_RW_READ, 0));
  ASSERT_EQ(rw_on_thread(rw, LK_RW_WRITE, 100), LK_ETIMEDOUT);
  ASSERT_OK(lk_blocking_rwlock_release(rw, LK_RW_READ));
  ASSERT_EQ(lk_blocking_rwlock_hold_count(rw, LK_RW_READ), 0);
  ASSERT_OK(rw_on_thread(rw, LK_RW_WRITE, 0));
  /* A writer thread excludes readers of other threads; it may read too. */
  ASSERT_OK(lk_blocking_rwlock_try(rw, LK_RW_WRITE, 0));
  ASSERT_EQ(rw_on_thread(rw, LK_RW_READ, 0), LK_ETIMEDOUT);
  ASSERT_OK(lk_blocking_rwlock_try(rw, LK_RW_READ, 0));
  ASSERT_OK(lk_blocking_rwlock_release(rw, LK_RW_READ));
  ASSERT_OK(lk_blocking_rwlock_release(rw, LK_RW_WRITE));
  ASSERT_EQ(lk_blocking_rwlock_release(rw, LK_RW_WRITE), LK_ENOTHELD);
  ASSERT_EQ(lk_blocking_rwlock_try(rw, (lk_rwlock_side_t)7, 0), LK_EINVAL);
  ASSERT_OK(lk_blocking_rwlock_close(rw));
  bx_finish(&x);
}

typedef struct {
  lk_blocking_semaphore_t *s;
  int64_t permits, wait_ms;
  int rc;
  int64_t held;
} sem_arg_t;

static void sem_worker(void *arg) {
  sem_arg_t *a = arg;
  a->rc = lk_blocking_semaphore_try(a->s, a->permits, a->wait_ms);
  a->held = lk_blocking_semaphore_held(a->s);
  if (a->rc == 0)
    a->rc = lk_blocking_semaphore_release(a->s, a->permits);
}

static int sem_on_thread(lk_blocking_semaphore_t *s, int64_t permits, int64_t wait_ms,
                         int64_t *held) {
  sem_arg_t a = {s, permits, wait_ms, 1, -1};
  rt_on_thread(sem_worker, &a);
  *held = a.held;
  return a.rc;
}

TEST(semaphore_permits_per_thread) {
  bx_t x;
  lk_blocking_semaphore_t *s;
  int64_t held = -1;
  bx_start(&x);
  ASSERT_OK(lk_blocking_semaphore_new(x.b, "bl_sem", &s));
  ASSERT_EQ(lk_blocking_semaphore_try_set_permits(s, 3), 1);
  ASSERT_EQ(lk_blocking_semaphore_try_set_permits(s, 5), 0);
  ASSERT_OK(lk_blocking_semaphore_try(s, 2, 0));
  ASSERT_EQ(lk_blocking_semaphore_held(s), 2);
  ASSERT_EQ(lk_blocking_semaphore_available(s), 1);
  ASSERT_EQ(sem_on_thread(s, 2, 100, &held), LK_ETIMEDOUT);
  ASSERT_EQ(held, 0);
  ASSERT_OK(sem_on_thread(s, 1, 0, &held));
  ASSERT_EQ(held, 1);
  /* Permits are the thread's own: the others hold none to release. */
  ASSERT_OK(lk_blocking_semaphore_release(s, 2));
  ASSERT_EQ(lk_blocking_semaphore_release(s, 1), LK_ENOTHELD);
  ASSERT_EQ(lk_blocking_semaphore_available(s), 3);
  ASSERT_OK(lk_blocking_semaphore_close(s));
  bx_finish(&x);
}

/* ---- a handle closed under a blocked thread; a fixed lease's end ------------------------------ */

TEST(handle_close_with_thread_blocked) {
  bx_t x;
  lk_blocking_lock_t *mine, *l;
  try_arg_t a;
  uv_thread_t t;
  long long tries0;
  int64_t deadline;
  bx_start(&x);
  /* Held through another handle of the same name: only l is closed. */
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_hclose", &mine));
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_hclose", &l));
  ASSERT_OK(lk_blocking_lock_try(mine, 0));
  tries0 = rt_server_cmd_calls(x.srv, "evalsha") + rt_server_cmd_calls(x.srv, "eval");
  memset(&a, 0, sizeof(a));
  a.l = l;
  a.rc = 1;
  ASSERT_OK(uv_thread_create(&t, block_worker, &a));
  deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (rt_server_cmd_calls(x.srv, "evalsha") + rt_server_cmd_calls(x.srv, "eval") < tries0 + 1 &&
         rt_now_ms() < deadline)
    rt_sleep_ms(5);
  ASSERT_OK(lk_blocking_lock_close(l));
  uv_thread_join(&t);
  ASSERT_EQ(a.rc, LK_ECANCELED);
  /* The other handle is untouched: still held, by this thread. */
  ASSERT_EQ(lk_blocking_lock_hold_count(mine), 1);
  ASSERT_EQ(server_holds(&x, "bl_hclose", lk_blocking_thread_id()), 1);
  ASSERT_OK(lk_blocking_lock_release(mine));
  ASSERT_OK(lk_blocking_lock_close(mine));
  bx_finish(&x);
}

TEST(fixed_lease_ends_is_held_without_round_trip) {
  bx_t x;
  lk_blocking_lock_t *l;
  lk_lock_opts_t o;
  int64_t t0, deadline;
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_fixed", &l));
  lk_lock_opts_init(&o);
  o.lease_ms = 300; /* fixed: not renewed, no loss callback */
  t0 = rt_now_ms();
  ASSERT_OK(lk_blocking_lock_acquire(l, &o));
  ASSERT_EQ(lk_blocking_lock_is_held(l), 1);
  deadline = t0 + rt_scaled_ms(5000);
  while (lk_blocking_lock_is_held(l) && rt_now_ms() < deadline)
    rt_sleep_ms(5);
  ASSERT_EQ(lk_blocking_lock_is_held(l), 0);
  /* Never reported over before its lease: the time is from before the
   * request left. */
  ASSERT_GE(rt_now_ms() - t0, 300);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}

/* ---- a thread done with the client ---------------------------------------------------------------- */

typedef struct {
  bx_t *x;
  lk_blocking_lock_t *l;
  lk_blocking_semaphore_t *s;
  int ok;
} done_arg_t;

static void done_worker(void *arg) {
  done_arg_t *a = arg;
  int fd;
  ASSERT_OK(lk_blocking_lock_try(a->l, 0));
  ASSERT_OK(lk_blocking_lock_try(a->l, 0));
  ASSERT_OK(lk_blocking_semaphore_try(a->s, 1, 0));
  fd = lk_blocking_lost_fd(a->x->b);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(server_holds(a->x, "bl_done", lk_blocking_thread_id()), 2);
  ASSERT_OK(lk_blocking_thread_done(a->x->b));
  /* Its holds and permits were given back, its state is gone. */
  ASSERT_EQ(rt_cmd_int(a->x->srv, "EXISTS bl_done"), 0);
  ASSERT_EQ(lk_blocking_lock_hold_count(a->l), 0);
  ASSERT_EQ(lk_blocking_semaphore_held(a->s), 0);
  /* And it may come back, afresh. */
  ASSERT_OK(lk_blocking_lock_try(a->l, 0));
  ASSERT_EQ(lk_blocking_lock_hold_count(a->l), 1);
  ASSERT_OK(lk_blocking_lock_release(a->l));
  ASSERT_OK(lk_blocking_thread_done(a->x->b));
  a->ok = 1;
}

TEST(thread_done_gives_back_and_frees) {
  bx_t x;
  done_arg_t a;
  uv_thread_t t;
  bx_start(&x);
  memset(&a, 0, sizeof(a));
  a.x = &x;
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_done", &a.l));
  ASSERT_OK(lk_blocking_semaphore_new(x.b, "bl_done_sem", &a.s));
  ASSERT_EQ(lk_blocking_semaphore_try_set_permits(a.s, 1), 1);
  ASSERT_OK(uv_thread_create(&t, done_worker, &a));
  uv_thread_join(&t);
  ASSERT_EQ(a.ok, 1);
  ASSERT_EQ(lk_blocking_semaphore_available(a.s), 1);
  /* A thread that used nothing is done at once. */
  ASSERT_OK(lk_blocking_thread_done(x.b));
  bx_finish(&x);
}

/* ---- two Java threads and two latchkey threads on one name --------------------------------------- */

#define MIX_ROUNDS 8

/* A Java thread of the emulated Redisson client: its own connections. */
typedef struct {
  redisContext *ctx, *sub;
  long long tid;
} java_thread_t;

static int java_acquire(void *obj) {
  java_thread_t *j = obj;
  return rt_rlock_lock_blocking(j->ctx, j->sub, "bl_mix", "java-uuid", j->tid, 30000,
                                rt_scaled_ms(20000));
}

static int java_release(void *obj) {
  java_thread_t *j = obj;
  return rt_rlock_unlock(j->ctx, "bl_mix", "java-uuid", j->tid) == 1 ? 0 : -1;
}

static const overlap_kind_t java_overlap = {java_acquire, java_release, NULL};

TEST(two_java_threads_and_two_latchkey_threads_share_a_name) {
  bx_t x;
  lk_blocking_lock_t *l;
  java_thread_t j[2];
  overlap_thread_t th[4];
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_mix", &l));
  for (int i = 0; i < 2; i++) {
    j[i] = (java_thread_t){rt_rlock_connect(rt_server_port(x.srv)),
                           rt_rlock_connect(rt_server_port(x.srv)), i + 1};
    th[i] = (overlap_thread_t){&java_overlap, &j[i], MIX_ROUNDS, NULL};
    th[2 + i] = (overlap_thread_t){&bl_overlap, l, MIX_ROUNDS, NULL};
  }
  overlap_run_threads(th, 4);
  for (int i = 0; i < 2; i++) {
    redisFree(j[i].sub);
    redisFree(j[i].ctx);
  }
  ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS bl_mix"), 0);
  ASSERT_OK(lk_blocking_lock_close(l));
  bx_finish(&x);
}
