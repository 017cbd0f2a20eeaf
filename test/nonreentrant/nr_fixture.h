/* Shared by the non-reentrant tests: acquires with opts.reentrant = 0, the
 * emulated Redisson owner, and side-channel readers. Header-only. */
#ifndef LK_TEST_NONREENTRANT_NR_FIXTURE_H
#define LK_TEST_NONREENTRANT_NR_FIXTURE_H

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_fixture.h"
#include "emu_waiter.h"
#include "redisson_nr_emu.h"

/* The Redisson side: a made-up client id and Java thread id. */
#define NR_EMU_UUID "5b1d7a90-0000-4000-8000-00000000004e"
#define NR_EMU_TID 11
#define NR_EMU_OWNER NR_EMU_UUID ":11"

/* Starts a non-reentrant lock acquire; returns what lk_lock_acquire did. */
static inline int nr_lock_start(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, int fenced,
                                sx_t *s) {
  lk_lock_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_lock_opts_init(&o);
  ASSERT_EQ(o.reentrant, 1); /* the default */
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.fenced = fenced;
  o.reentrant = 0;
  return lk_lock_acquire(l, &o, sx_cb, s);
}

/* A non-reentrant lock acquire to its end: the code returned at once, or
 * the callback's status. */
static inline int nr_lock(fx_t *fx, lk_lock_t *l, int64_t wait_ms, int64_t lease_ms) {
  sx_t s;
  int rc = nr_lock_start(l, wait_ms, lease_ms, 0, &s);
  if (rc != 0)
    return rc;
  rt_run_until(&fx->loop, &s.done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s.status;
}

static inline int nr_fair_start(lk_fair_t *f, int64_t wait_ms, int64_t lease_ms, fsx_t *s) {
  lk_fair_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_fair_opts_init(&o);
  ASSERT_EQ(o.reentrant, 1);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.reentrant = 0;
  return lk_fair_acquire(f, &o, fsx_cb, s);
}

static inline int nr_fair(fx_t *fx, lk_fair_t *f, int64_t wait_ms, int64_t lease_ms) {
  fsx_t s;
  int rc = nr_fair_start(f, wait_ms, lease_ms, &s);
  if (rc != 0)
    return rc;
  rt_run_until(&fx->loop, &s.done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s.status;
}

/* The thread id part of an owner "UUID:TID". */
static inline uint64_t nr_tid_of(const char *owner) {
  const char *colon = strrchr(owner, ':');
  ASSERT_NOT_NULL(colon);
  return strtoull(colon + 1, NULL, 10);
}

/* HGET name owner as a number; 0 when absent. */
static inline long long nr_hget(rt_server_t *srv, const char *name, const char *owner) {
  char *v = rt_cmd_str(srv, "HGET %s %s", name, owner);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* Scripts the server ran (EVALSHA and EVAL): what "never sent" is read by. */
static inline long long nr_script_calls(rt_server_t *srv) {
  return cmdstat_calls(srv, "evalsha") + cmdstat_calls(srv, "eval");
}

/* The emulated Redisson waiter (emu_waiter.h) takes the emulator's
 * blocking acquire for each kind: nr_emu_lock_wait, nr_emu_fair_wait. */
/* Redisson's lock() for the plain lock, with a 30 s lease. */
static inline int nr_emu_lock_wait(redisContext *ctx, redisContext *sub, const char *name,
                                   int64_t timeout_ms) {
  return rt_nrlock_lock_blocking(ctx, sub, name, NR_EMU_UUID, NR_EMU_TID, 30000, timeout_ms);
}

/* Redisson's fair tryLock, 30 s lease; its waitTime is Redisson's WAIT. */
#define NR_EMU_FAIR_WAIT_MS 5000
static inline int nr_emu_fair_wait(redisContext *ctx, redisContext *sub, const char *name,
                                   int64_t timeout_ms) {
  return rt_nrfair_lock_wait(ctx, sub, name, NR_EMU_UUID, NR_EMU_TID, 30000,
                             NR_EMU_FAIR_WAIT_MS, timeout_ms);
}

#endif /* LK_TEST_NONREENTRANT_NR_FIXTURE_H */
