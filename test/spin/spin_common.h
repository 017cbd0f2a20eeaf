/* Shared by the spin-mode tests (docs/objects.md, "Waiting", spin mode):
 * counting the server's script calls and subscriptions, and a hold taken
 * the way Redisson's RSpinLock takes it. Header-only. */
#ifndef LK_TEST_SPIN_COMMON_H
#define LK_TEST_SPIN_COMMON_H

#include "lk_fixture.h"
#include "redisson_emu.h"

/* A Redisson-side owner: a made-up client id and Java thread id. */
#define SPIN_EMU_UUID "5b1d0c3e-0000-4000-8000-00000000005a"
#define SPIN_EMU_TID 11

/* Script calls the server ran so far (every try is one). */
static inline long long spin_script_calls(rt_server_t *srv) {
  return rt_server_cmd_calls(srv, "evalsha") + rt_server_cmd_calls(srv, "eval");
}

/* SUBSCRIBE-like commands the server ran so far. */
static inline long long spin_subscribes(rt_server_t *srv) {
  return rt_server_cmd_calls(srv, "subscribe") + rt_server_cmd_calls(srv, "ssubscribe") +
         rt_server_cmd_calls(srv, "psubscribe");
}

/* RSpinLock's unlock as we read it (docs/lock.md, "Spin mode"): RLock's
 * count decrement and delete, publishing nothing. 1 released, 0 still
 * held, -1 not the owner. */
static inline int spin_rspin_unlock(redisContext *ctx, const char *name, const char *uuid,
                                    long long tid) {
  static const char script[] =
      "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
      "if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then "
      "redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end "
      "redis.call('del', KEYS[1]) return 1";
  char *field = rt_emu_asprintf("%s:%lld", uuid, tid);
  const char *argv[] = {"EVAL", script, "1", name, field, "30000"};
  redisReply *r = rt_emu_command(ctx, 6, argv, "RSpinLock unlock");
  int v = (int)r->integer;
  freeReplyObject(r);
  free(field);
  return v;
}

/* Runs the loop until the server ran more script calls than `since`:
 * the wait's first try was answered busy and it now sleeps. */
static inline void spin_wait_for_try(fx_t *fx, long long since) {
  FX_EVENTUALLY(fx, spin_script_calls(fx->srv) > since, 5000);
}

/* x's spinning acquire, started when the server had run `since` script
 * calls, made its first try, was answered busy and now sleeps: its
 * callback has not run. */
static inline void spin_asleep(fx_t *fx, const sx_t *x, long long since) {
  spin_wait_for_try(fx, since);
  fx_spin(fx, 50); /* its busy answer read: it sleeps */
  ASSERT_EQ(x->calls, 0);
}

/* x's sleeping wait was cancelled or its object closed: once *flag is set
 * (x->done, or the close callback's flag) its callback has run once, with
 * LK_ECANCELED, and it tries no more: 300 ms on, still one call and not
 * one script call. */
static inline void spin_ended_canceled(fx_t *fx, const sx_t *x, const int *flag) {
  long long calls;
  rt_run_until(&fx->loop, flag, 5000);
  ASSERT_EQ(x->calls, 1);
  ASSERT_EQ(x->status, LK_ECANCELED);
  calls = spin_script_calls(fx->srv);
  fx_spin(fx, 300);
  ASSERT_EQ(x->calls, 1);
  ASSERT_EQ(spin_script_calls(fx->srv), calls);
}

#endif /* LK_TEST_SPIN_COMMON_H */
