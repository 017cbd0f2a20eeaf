/* Odd shapes of names against every primitive (issue 25; docs/objects.md,
 * "Names and cluster slots"): each _new either refuses a name with
 * LK_EINVAL and says why in lk_client_error_text, or the object works:
 * one owner acquires and releases, a second owner acquires after it. The
 * same table runs on a standalone server and on a cluster, so a name means
 * the same on both.
 *
 * The verdicts are written out by hand from the key layouts the docs give,
 * not computed by the library's own check: three families of primitives.
 *   KEY: the name itself is a key (lock, fair, rwlock, semaphores, rate
 *        limiter, RedLock): accepted without any brace, or with a hash tag
 *        (a '{', then a '}' after it with at least one byte between).
 *   PRE: every key is prefix:{NAME} or prefix:NAME (leader, barrier): as
 *        KEY, and also a '}' without '{' when the name does not start with
 *        it ("a}b": every key's tag is "a").
 *   LATCH: Redisson's latch channel wraps the whole name in braces: no
 *        brace at all. */
#ifndef LK_TEST_NAMES_NAME_SHAPES_H
#define LK_TEST_NAMES_NAME_SHAPES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_fixture.h"
#include "latch_fixture.h"
#include "lk_fixture.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

enum { NS_KEY = 0, NS_PRE = 1, NS_LATCH = 2 };

typedef struct ns_shape_s {
  const char *name;
  char ok[3]; /* per family: 'y' accepted, 'n' refused with LK_EINVAL */
} ns_shape_t;

static const ns_shape_t ns_shapes[] = {
    {"plain", "yyy"},
    {"with space and\ttab\nnewline", "yyy"},
    {"\x01\x02\x7f\x80\xfe\xff", "yyy"},
    {"caf\xc3\xa9", "yyy"},
    {"{", "nnn"},
    {"}", "nnn"},
    {"{}", "nnn"},
    {"{}a", "nnn"},
    {"a{", "nnn"},
    {"q{z", "nnn"},
    {"}x", "nnn"},
    {"a{}b", "nnn"},
    {"a}b", "nyn"},
    {"a}", "nyn"},
    {"{a}", "yyn"},
    {"x{a}y", "yyn"},
    {"{a}{b}", "yyn"},
    {"{{a}}", "yyn"},
    {"{a}}", "yyn"},
    {"}{a}", "yyn"},
    {"x{\x01}y", "yyn"},
    /* Long and all escapes in the error text: its reason must still fit. */
    {"\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08"
     "\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08"
     "\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08q{z",
     "nnn"},
};
#define NS_N (sizeof ns_shapes / sizeof ns_shapes[0])

/* A client whose name cap admits 64 KiB names. */
static inline void ns_client_opts(lk_client_opts_t *o) { o->max_name_len = 65536; }

/* One primitive's driver: new (rc), a full cycle on an accepted name. */
typedef struct ns_kind_s {
  const char *label;
  int family;
  int (*try_new)(lk_client_t *c, const char *name); /* creates and closes */
  void (*cycle)(fx_t *fx, const char *name);
} ns_kind_t;

/* ---- close helpers ---- */

#define NS_CLOSER(T, close_fn, set_fn, get_fn)                                  \
  static inline void ns_closed_##T(lk_##T##_t *o) { *(int *)get_fn(o) = 1; }    \
  static inline void ns_close_##T(uv_loop_t *loop, lk_##T##_t *o) {             \
    int closed = 0;                                                             \
    set_fn(o, &closed);                                                         \
    ASSERT_OK(close_fn(o, ns_closed_##T));                                      \
    rt_run_until(loop, &closed, 10000);                                         \
  }
NS_CLOSER(leader, lk_leader_close, lk_leader_set_data, lk_leader_get_data)
NS_CLOSER(ratelimiter, lk_ratelimiter_close, lk_ratelimiter_set_data, lk_ratelimiter_get_data)
NS_CLOSER(barrier, lk_barrier_close, lk_barrier_set_data, lk_barrier_get_data)
NS_CLOSER(redlock, lk_redlock_close, lk_redlock_set_data, lk_redlock_get_data)

/* A generic outcome for the callbacks below. */
typedef struct ns_res_s {
  int done, calls, status;
  int64_t result;
} ns_res_t;
#define NS_CB(T, result_fn)                                                     \
  static inline void ns_cb_##T(lk_##T##_t *o, int status, void *arg) {         \
    ns_res_t *r = arg;                                                          \
    ASSERT_EQ(++r->calls, 1);                                                   \
    r->done = 1;                                                                \
    r->status = status;                                                         \
    r->result = result_fn(o);                                                   \
  }
static inline int64_t ns_no_result(const void *o) {
  (void)o;
  return 0;
}
NS_CB(leader, lk_leader_term)
NS_CB(ratelimiter, lk_ratelimiter_result)
#define ns_barrier_result(o) ns_no_result(o)
#define ns_redlock_result(o) ns_no_result(o)
NS_CB(barrier, ns_barrier_result)
NS_CB(redlock, ns_redlock_result)

#define NS_RUN(loop, r, call)                                                   \
  do {                                                                          \
    memset(&(r), 0, sizeof(r));                                                 \
    ASSERT_OK(call);                                                            \
    rt_run_until((loop), &(r).done, 15000);                                     \
  } while (0)

/* ---- per primitive ---- */

#define NS_LEASE 30000

static inline int ns_new_lock(lk_client_t *c, const char *name) {
  lk_lock_t *l = NULL;
  int rc = lk_lock_new(c, name, &l);
  if (rc == 0) {
    ASSERT_OK(lk_lock_close(l, NULL));
  }
  return rc;
}
static inline void ns_cycle_lock(fx_t *fx, const char *name) {
  lk_lock_t *a = fx_lock(fx, name), *b = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, a, 0, -1)); /* the watchdog's lease, as in the issue */
  ASSERT_OK(sx_run(fx, lk_lock_release, a, NULL));
  ASSERT_OK(sx_acquire(fx, b, 0, NS_LEASE));
  ASSERT_OK(sx_run(fx, lk_lock_release, b, NULL));
  fx_close_lock(fx, a);
  fx_close_lock(fx, b);
}

static inline int ns_new_fair(lk_client_t *c, const char *name) {
  lk_fair_t *f = NULL;
  int rc = lk_fair_new(c, name, &f);
  if (rc == 0) {
    ASSERT_OK(lk_fair_close(f, NULL));
  }
  return rc;
}
static inline void ns_cycle_fair(fx_t *fx, const char *name) {
  lk_fair_t *a = fx_fair(fx, name), *b = fx_fair(fx, name);
  ASSERT_OK(fsx_acquire(fx, a, 0, NS_LEASE));
  ASSERT_OK(fsx_run(fx, lk_fair_release, a, NULL));
  ASSERT_OK(fsx_acquire(fx, b, 0, NS_LEASE));
  ASSERT_OK(fsx_run(fx, lk_fair_release, b, NULL));
  fx_close_fair(fx, a);
  fx_close_fair(fx, b);
}

static inline int ns_new_rwlock(lk_client_t *c, const char *name) {
  lk_rwlock_t *rw = NULL;
  int rc = lk_rwlock_new(c, name, &rw);
  if (rc == 0) {
    ASSERT_OK(lk_rwlock_close(rw, NULL));
  }
  return rc;
}
/* A read hold (its lease key under the owner's prefix), then a writer. */
static inline void ns_cycle_rwlock(fx_t *fx, const char *name) {
  lk_rwlock_t *a = fx_rwlock(fx, name), *b = fx_rwlock(fx, name);
  ASSERT_OK(rw_acquire(fx, a, LK_RW_READ, 0, NS_LEASE));
  ASSERT_OK(rw_release(fx, a, LK_RW_READ, NULL));
  ASSERT_OK(rw_acquire(fx, b, LK_RW_WRITE, 0, NS_LEASE));
  ASSERT_OK(rw_release(fx, b, LK_RW_WRITE, NULL));
  fx_close_rwlock(fx, a);
  fx_close_rwlock(fx, b);
}

static inline int ns_new_semaphore(lk_client_t *c, const char *name) {
  lk_semaphore_t *s = NULL;
  int rc = lk_semaphore_new(c, name, &s);
  if (rc == 0) {
    ASSERT_OK(lk_semaphore_close(s, NULL));
  }
  return rc;
}
/* One permit: the second owner gets it only once the first gave it back. */
static inline void ns_cycle_semaphore(fx_t *fx, const char *name) {
  lk_semaphore_t *a = fx_sem(fx, name), *b = fx_sem(fx, name);
  ASSERT_OK(sem_run_n(fx, lk_semaphore_try_set_permits, a, 1, NULL));
  ASSERT_OK(sem_acquire(fx, a, 1, 0));
  ASSERT_OK(sem_run_n(fx, lk_semaphore_release, a, 1, NULL));
  ASSERT_OK(sem_acquire(fx, b, 1, 0));
  ASSERT_OK(sem_run_n(fx, lk_semaphore_release, b, 1, NULL));
  fx_close_sem(fx, a);
  fx_close_sem(fx, b);
}

static inline int ns_new_psem(lk_client_t *c, const char *name) {
  lk_psem_t *p = NULL;
  int rc = lk_psem_new(c, name, &p);
  if (rc == 0) {
    ASSERT_OK(lk_psem_close(p, NULL));
  }
  return rc;
}
static inline void ns_cycle_psem(fx_t *fx, const char *name) {
  lk_psem_t *a = fx_psem(fx, name), *b = fx_psem(fx, name);
  int64_t res = 0;
  ASSERT_OK(psem_run_n(fx, lk_psem_try_set_permits, a, 1, NULL));
  ASSERT_OK(psem_acquire(fx, a, 1, 0, NS_LEASE));
  ASSERT_OK(psem_run_id(fx, lk_psem_release, a, NULL, &res));
  ASSERT_EQ(res, 1);
  ASSERT_OK(psem_acquire(fx, b, 1, 0, NS_LEASE));
  ASSERT_OK(psem_run_id(fx, lk_psem_release, b, NULL, &res));
  ASSERT_EQ(res, 1);
  fx_close_psem(fx, a);
  fx_close_psem(fx, b);
}

static inline int ns_new_latch(lk_client_t *c, const char *name) {
  lk_latch_t *l = NULL;
  int rc = lk_latch_new(c, name, NULL, &l);
  if (rc == 0) {
    ASSERT_OK(lk_latch_close(l, NULL));
  }
  return rc;
}
/* Set to 1, counted down by one object, found open by another. */
static inline void ns_cycle_latch(fx_t *fx, const char *name) {
  lk_latch_t *a = lx_new(fx, name, 0), *b = lx_new(fx, name, 0);
  ASSERT_OK(lx_set(&fx->loop, a, 1, NULL));
  ASSERT_OK(lx_run(&fx->loop, lk_latch_count_down, a, NULL));
  ASSERT_OK(lx_await(&fx->loop, b, 0));
  ASSERT_OK(lx_run(&fx->loop, lk_latch_delete, b, NULL));
  lx_close(&fx->loop, a);
  lx_close(&fx->loop, b);
}

static inline int ns_new_leader(lk_client_t *c, const char *name) {
  lk_leader_t *l = NULL;
  int rc = lk_leader_new(c, name, &l);
  if (rc == 0) {
    ASSERT_OK(lk_leader_close(l, NULL));
  }
  return rc;
}
static inline void ns_cycle_leader(fx_t *fx, const char *name) {
  lk_leader_t *a = NULL, *b = NULL;
  lk_leader_opts_t o;
  ns_res_t r;
  ASSERT_OK(lk_leader_new(fx->c, name, &a));
  ASSERT_OK(lk_leader_new(fx->c, name, &b));
  lk_leader_opts_init(&o);
  o.wait_ms = 0;
  o.lease_ms = NS_LEASE;
  NS_RUN(&fx->loop, r, lk_leader_campaign(a, &o, ns_cb_leader, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_leader_resign(a, ns_cb_leader, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_leader_campaign(b, &o, ns_cb_leader, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_leader_resign(b, ns_cb_leader, &r));
  ASSERT_OK(r.status);
  ns_close_leader(&fx->loop, a);
  ns_close_leader(&fx->loop, b);
}

static inline int ns_new_ratelimiter(lk_client_t *c, const char *name) {
  lk_ratelimiter_t *rl = NULL;
  int rc = lk_ratelimiter_new(c, name, &rl);
  if (rc == 0) {
    ASSERT_OK(lk_ratelimiter_close(rl, NULL));
  }
  return rc;
}
/* One permit a minute: the first object's take is seen by the second. */
static inline void ns_cycle_ratelimiter(fx_t *fx, const char *name) {
  lk_ratelimiter_t *a = NULL, *b = NULL;
  lk_ratelimiter_config_t cfg;
  ns_res_t r;
  ASSERT_OK(lk_ratelimiter_new(fx->c, name, &a));
  ASSERT_OK(lk_ratelimiter_new(fx->c, name, &b));
  lk_ratelimiter_config_init(&cfg);
  cfg.rate = 1;
  cfg.interval_ms = 60000;
  NS_RUN(&fx->loop, r, lk_ratelimiter_try_set_rate(a, &cfg, ns_cb_ratelimiter, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_ratelimiter_available(b, ns_cb_ratelimiter, &r));
  ASSERT_OK(r.status);
  ASSERT_EQ(r.result, 1);
  NS_RUN(&fx->loop, r, lk_ratelimiter_try_acquire(a, 1, ns_cb_ratelimiter, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_ratelimiter_available(b, ns_cb_ratelimiter, &r));
  ASSERT_OK(r.status);
  ASSERT_EQ(r.result, 0);
  ns_close_ratelimiter(&fx->loop, a);
  ns_close_ratelimiter(&fx->loop, b);
}

static inline int ns_new_barrier(lk_client_t *c, const char *name) {
  lk_barrier_t *b = NULL;
  int rc = lk_barrier_new(c, name, 2, &b);
  if (rc == 0) {
    ASSERT_OK(lk_barrier_close(b, NULL));
  }
  return rc;
}
/* Two members meet and leave. */
static inline void ns_cycle_barrier(fx_t *fx, const char *name) {
  lk_barrier_t *a = NULL, *b = NULL;
  lk_barrier_opts_t o;
  ns_res_t ra, rb;
  ASSERT_OK(lk_barrier_new(fx->c, name, 2, &a));
  ASSERT_OK(lk_barrier_new(fx->c, name, 2, &b));
  lk_barrier_opts_init(&o);
  o.wait_ms = 10000;
  memset(&ra, 0, sizeof ra);
  ASSERT_OK(lk_barrier_enter(a, &o, ns_cb_barrier, &ra));
  NS_RUN(&fx->loop, rb, lk_barrier_enter(b, &o, ns_cb_barrier, &rb));
  rt_run_until(&fx->loop, &ra.done, 15000);
  ASSERT_OK(ra.status);
  ASSERT_OK(rb.status);
  memset(&ra, 0, sizeof ra);
  ASSERT_OK(lk_barrier_leave(a, &o, ns_cb_barrier, &ra));
  NS_RUN(&fx->loop, rb, lk_barrier_leave(b, &o, ns_cb_barrier, &rb));
  rt_run_until(&fx->loop, &ra.done, 15000);
  ASSERT_OK(ra.status);
  ASSERT_OK(rb.status);
  ns_close_barrier(&fx->loop, a);
  ns_close_barrier(&fx->loop, b);
}

/* A one-node RedLock (its members are locks; its own channel and token
 * key are checked too). */
static inline int ns_new_redlock(lk_client_t *c, const char *name) {
  lk_redlock_t *rl = NULL;
  int rc = lk_redlock_new(&c, 1, name, NULL, &rl);
  if (rc == 0) {
    ASSERT_OK(lk_redlock_close(rl, NULL));
  }
  return rc;
}
static inline void ns_cycle_redlock(fx_t *fx, const char *name) {
  lk_redlock_t *a = NULL, *b = NULL;
  lk_redlock_opts_t o;
  ns_res_t r;
  ASSERT_OK(lk_redlock_new(&fx->c, 1, name, NULL, &a));
  ASSERT_OK(lk_redlock_new(&fx->c, 1, name, NULL, &b));
  lk_redlock_opts_init(&o);
  o.lease_ms = NS_LEASE;
  NS_RUN(&fx->loop, r, lk_redlock_acquire(a, &o, ns_cb_redlock, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_redlock_release(a, ns_cb_redlock, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_redlock_acquire(b, &o, ns_cb_redlock, &r));
  ASSERT_OK(r.status);
  NS_RUN(&fx->loop, r, lk_redlock_release(b, ns_cb_redlock, &r));
  ASSERT_OK(r.status);
  ns_close_redlock(&fx->loop, a);
  ns_close_redlock(&fx->loop, b);
}

#define NS_KIND(k, fam) {#k, fam, ns_new_##k, ns_cycle_##k}

/* The table against one primitive on the fixture's server (standalone or a
 * cluster): every verdict as written, every refusal explained, every
 * accepted name working; then the long names. */
static inline void ns_run(fx_t *fx, const ns_kind_t *k) {
  char *longname = malloc(65537 + 1);
  ASSERT_NOT_NULL(longname);
  for (size_t i = 0; i < NS_N; i++) {
    const char *name = ns_shapes[i].name;
    int want = ns_shapes[i].ok[k->family] == 'y';
    int rc = k->try_new(fx->c, name);
    if (want && rc != 0)
      FAIL("%s: name #%zu refused (%s): %s", k->label, i, lk_err_name(rc),
           lk_client_error_text(fx->c));
    if (!want && rc != LK_EINVAL)
      FAIL("%s: name #%zu gave %s, not LK_EINVAL", k->label, i, lk_err_name(rc));
    if (want) {
      k->cycle(fx, name);
    } else {
      /* The reason names the refused name's primitive and points at docs. */
      const char *why = lk_client_error_text(fx->c);
      if (strstr(why, "refused") == NULL || strstr(why, "Names and cluster slots") == NULL)
        FAIL("%s: name #%zu refused without a reason: \"%s\"", k->label, i, why);
    }
  }
  /* The empty name: refused before any key is made. */
  ASSERT_EQ(k->try_new(fx->c, ""), LK_EINVAL);
  /* 64 KiB: the client's cap here. All 'x', then with a tag in the middle
   * (the latch refuses that one). One byte more is too long. */
  memset(longname, 'x', 65536);
  longname[65536] = '\0';
  ASSERT_OK(k->try_new(fx->c, longname));
  k->cycle(fx, longname);
  memcpy(longname + 30000, "{tag}", 5);
  if (k->family == NS_LATCH) {
    ASSERT_EQ(k->try_new(fx->c, longname), LK_EINVAL);
  } else {
    ASSERT_OK(k->try_new(fx->c, longname));
    k->cycle(fx, longname);
  }
  memset(longname, 'x', 65537);
  longname[65537] = '\0';
  ASSERT_EQ(k->try_new(fx->c, longname), LK_ENAMETOOLONG);
  free(longname);
}

#endif /* LK_TEST_NAMES_NAME_SHAPES_H */
