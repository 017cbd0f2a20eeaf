/* Test-side conveniences for the semaphores, in the style of lk_fixture.h:
 * run one operation to its callback, open and close objects. Header-only. */
#ifndef LK_TEST_HARNESS_SEM_FIXTURE_H
#define LK_TEST_HARNESS_SEM_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "server_faults.h"

static inline void sem_cb(lk_semaphore_t *s, int status, void *arg) {
  sx_record(arg, status, lk_semaphore_result(s));
}

static inline void psem_cb(lk_psem_t *p, int status, void *arg) {
  sx_record(arg, status, lk_psem_result(p));
}

static inline lk_semaphore_t *fx_sem(fx_t *fx, const char *name) {
  lk_semaphore_t *s = NULL;
  ASSERT_OK(lk_semaphore_new(fx->c, name, &s));
  return s;
}

static inline lk_psem_t *fx_psem(fx_t *fx, const char *name) {
  lk_psem_t *p = NULL;
  ASSERT_OK(lk_psem_new(fx->c, name, &p));
  return p;
}

/* Starts the fixture (a server and a client) and opens one object on
 * name: how the single-object cases open. */
static inline lk_semaphore_t *fx_start_sem(fx_t *fx, const char *name) {
  fx_start(fx, NULL);
  return fx_sem(fx, name);
}

static inline lk_psem_t *fx_start_psem(fx_t *fx, const char *name) {
  fx_start(fx, NULL);
  return fx_psem(fx, name);
}

static inline void fx_sem_closed_cb(lk_semaphore_t *s) { *(int *)lk_semaphore_get_data(s) = 1; }
static inline void fx_psem_closed_cb(lk_psem_t *p) { *(int *)lk_psem_get_data(p) = 1; }

static inline void fx_close_sem_in(uv_loop_t *loop, lk_semaphore_t *s) {
  int closed = 0;
  lk_semaphore_set_data(s, &closed);
  ASSERT_OK(lk_semaphore_close(s, fx_sem_closed_cb));
  rt_run_until(loop, &closed, 10000);
}

static inline void fx_close_psem_in(uv_loop_t *loop, lk_psem_t *p) {
  int closed = 0;
  lk_psem_set_data(p, &closed);
  ASSERT_OK(lk_psem_close(p, fx_psem_closed_cb));
  rt_run_until(loop, &closed, 10000);
}

#define fx_close_sem(fx, s) fx_close_sem_in(&(fx)->loop, (s))
#define fx_close_psem(fx, p) fx_close_psem_in(&(fx)->loop, (p))

/* How most semaphore cases end: the objects are closed in the order given,
 * then the fixture ends. NULL-terminated, e.g. (lk_semaphore_t *[]){a, b, NULL}. */
static inline void fx_finish_sems(fx_t *fx, lk_semaphore_t *const *sems) {
  for (; *sems != NULL; sems++)
    fx_close_sem(fx, *sems);
  fx_finish(fx);
}

static inline void fx_finish_psems(fx_t *fx, lk_psem_t *const *psems) {
  for (; *psems != NULL; psems++)
    fx_close_psem(fx, *psems);
  fx_finish(fx);
}

/* The server's count under NAME (nil = 0). */
static inline long long srv_count(rt_server_t *srv, const char *name) {
  char *v = rt_cmd_str(srv, "GET %s", name);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* How the cases that check the count end: the objects are closed in the
 * order given, the server's count under name must then be want (nothing
 * created, nothing lost), and the fixture ends. */
static inline void fx_finish_sems_count(fx_t *fx, const char *name, long long want,
                                        lk_semaphore_t *const *sems) {
  for (; *sems != NULL; sems++)
    fx_close_sem(fx, *sems);
  ASSERT_EQ(srv_count(fx->srv, name), want);
  fx_finish(fx);
}

/* The same for one permit-expirable semaphore p. */
static inline void fx_finish_psem_count(fx_t *fx, const char *name, long long want, lk_psem_t *p) {
  fx_close_psem(fx, p);
  ASSERT_EQ(srv_count(fx->srv, name), want);
  fx_finish(fx);
}

/* The options of an acquire of n permits that waits up to wait_ms. */
static inline lk_semaphore_opts_t sem_opts(int64_t n, int64_t wait_ms) {
  lk_semaphore_opts_t o;
  lk_semaphore_opts_init(&o);
  o.permits = n;
  o.wait_ms = wait_ms;
  return o;
}

/* Starts an acquire of n permits (no waiting for it). */
static inline void sem_start_acquire(lk_semaphore_t *s, int64_t n, int64_t wait_ms, sx_t *x) {
  lk_semaphore_opts_t o = sem_opts(n, wait_ms);
  memset(x, 0, sizeof *x);
  ASSERT_OK(lk_semaphore_acquire(s, &o, sem_cb, x));
}

static inline int sem_acquire_in(uv_loop_t *loop, lk_semaphore_t *s, int64_t n,
                                 int64_t wait_ms, sx_t *x) {
  sem_start_acquire(s, n, wait_ms, x);
  return sx_await_acquire(loop, x, wait_ms);
}

static inline int sem_acquire(fx_t *fx, lk_semaphore_t *s, int64_t n, int64_t wait_ms) {
  sx_t x;
  return sem_acquire_in(&fx->loop, s, n, wait_ms, &x);
}

typedef int (*sem_n_fn)(lk_semaphore_t *, int64_t, lk_semaphore_cb, void *);
typedef int (*sem_fn)(lk_semaphore_t *, lk_semaphore_cb, void *);

/* Runs release / release_unheld / try_set / add with n; *result when not
 * NULL. */
static inline int sem_run_n(fx_t *fx, sem_n_fn fn, lk_semaphore_t *s, int64_t n,
                            int64_t *result) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(fn(s, n, sem_cb, &x));
  return sx_wait(fx, &x, result);
}

static inline int sem_run(fx_t *fx, sem_fn fn, lk_semaphore_t *s, int64_t *result) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(fn(s, sem_cb, &x));
  return sx_wait(fx, &x, result);
}

/* The same for a permit-expirable semaphore, whose permits get lease_ms. */
static inline lk_psem_opts_t psem_opts(int64_t n, int64_t wait_ms, int64_t lease_ms) {
  lk_psem_opts_t o;
  lk_psem_opts_init(&o);
  o.permits = n;
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  return o;
}

static inline void psem_start_acquire(lk_psem_t *p, int64_t n, int64_t wait_ms,
                                      int64_t lease_ms, sx_t *x) {
  lk_psem_opts_t o = psem_opts(n, wait_ms, lease_ms);
  memset(x, 0, sizeof *x);
  ASSERT_OK(lk_psem_acquire(p, &o, psem_cb, x));
}

static inline int psem_acquire_in(uv_loop_t *loop, lk_psem_t *p, int64_t n, int64_t wait_ms,
                                  int64_t lease_ms, sx_t *x) {
  psem_start_acquire(p, n, wait_ms, lease_ms, x);
  return sx_await_acquire(loop, x, wait_ms);
}

static inline int psem_acquire(fx_t *fx, lk_psem_t *p, int64_t n, int64_t wait_ms,
                               int64_t lease_ms) {
  sx_t x;
  return psem_acquire_in(&fx->loop, p, n, wait_ms, lease_ms, &x);
}

typedef int (*psem_id_fn)(lk_psem_t *, const char *, lk_psem_cb, void *);
typedef int (*psem_n_fn)(lk_psem_t *, int64_t, lk_psem_cb, void *);
typedef int (*psem_fn)(lk_psem_t *, lk_psem_cb, void *);

static inline int psem_run_id(fx_t *fx, psem_id_fn fn, lk_psem_t *p, const char *id,
                              int64_t *result) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(fn(p, id, psem_cb, &x));
  return sx_wait(fx, &x, result);
}

static inline int psem_run_n(fx_t *fx, psem_n_fn fn, lk_psem_t *p, int64_t n,
                             int64_t *result) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(fn(p, n, psem_cb, &x));
  return sx_wait(fx, &x, result);
}

static inline int psem_run(fx_t *fx, psem_fn fn, lk_psem_t *p, int64_t *result) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(fn(p, psem_cb, &x));
  return sx_wait(fx, &x, result);
}

static inline int psem_update(fx_t *fx, lk_psem_t *p, const char *id, int64_t lease_ms) {
  sx_t x;
  memset(&x, 0, sizeof x);
  ASSERT_OK(lk_psem_update_lease(p, id, lease_ms, psem_cb, &x));
  return sx_wait(fx, &x, NULL);
}

/* Spins the loop until the server's count under name is want (bounded):
 * for background work with no callback to await. */
static inline int fx_wait_count(fx_t *fx, const char *name, long long want, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  for (;;) {
    if (srv_count(fx->srv, name) == want)
      return 1;
    if (rt_now_ms() >= end)
      return 0;
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
}

/* Keys left on the server whose name contains part (for "nothing left
 * behind" checks). */
static inline size_t srv_keys_matching(rt_server_t *srv, const char *part) {
  char pattern[512];
  ASSERT_LT(snprintf(pattern, sizeof pattern, "*%s*", part), (int)sizeof pattern);
  return (size_t)rt_server_count_keys(srv, pattern);
}

#endif /* LK_TEST_HARNESS_SEM_FIXTURE_H */
