/* The fair lock's non-reentrant acquire (opts.reentrant = 0; docs/fair.md,
 * "Non-reentrant acquire"): a holder's second acquire is refused with
 * LK_EREENTRY, never queued and never counted; and the queue is shared both
 * ways with the emulated Redisson 4.4 non-reentrant fair lock
 * (test/harness/redisson_nr_emu.h), each side woken on its own channel. */
#include <pthread.h>
#include <stdatomic.h>

#include "nr_contract.h"

/* The object's own second acquire: LK_EREENTRY at once, no script sent,
 * nothing queued or counted. */
TEST(fair_second_acquire_refused_at_once_and_never_sent) {
  fx_t fx;
  fsx_t s;
  fx_start_no_repoll(&fx);
  lk_fair_t *f = fx_fair(&fx, "nrf-own");
  ASSERT_OK(nr_fair(&fx, f, 0, 30000));
  long long scripts = nr_script_calls(fx.srv);
  ASSERT_EQ(nr_fair_start(f, 0, 30000, &s), LK_EREENTRY);
  ASSERT_EQ(nr_fair_start(f, rt_scaled_ms(5000), LK_LEASE_DEFAULT, &s), LK_EREENTRY);
  fx_spin(&fx, 50);
  ASSERT_EQ(s.calls, 0);
  ASSERT_EQ(nr_script_calls(fx.srv), scripts);
  ASSERT_EQ(nr_hget(fx.srv, "nrf-own", lk_fair_owner(f)), 1);
  ASSERT_EQ(lk_fair_hold_count(f), 1);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-own"), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nrf-own"), 0);
  ASSERT_OK(nr_fair(&fx, f, 0, 30000));
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  fx_close_fair(&fx, f);
  fx_finish(&fx);
}

/* A shared owner's acquire that could wait is refused by the server at
 * once, and leaves no entry in the queue or the deadline sets. */
TEST(fair_shared_owner_refused_by_the_server_and_not_queued) {
  fx_t fx;
  fsx_t s;
  fx_start_no_repoll(&fx);
  lk_fair_t *a = fx_fair(&fx, "nrf-shared"), *b = fx_fair(&fx, "nrf-shared");
  ASSERT_OK(nr_fair(&fx, a, 0, 30000));
  ASSERT_OK(lk_fair_set_owner(b, NULL, nr_tid_of(lk_fair_owner(a))));
  int64_t budget = rt_scaled_ms(10000);
  ASSERT_OK(nr_fair_start(b, budget, 30000, &s));
  uint64_t t0 = uv_hrtime();
  rt_run_until(&fx.loop, &s.done, budget + 5000);
  ASSERT_EQ(s.status, LK_EREENTRY);
  ASSERT_LT(ms_between(t0, s.t_ns), budget / 2);
  ASSERT_NOT_NULL(strstr(lk_fair_error_text(b), RT_NR_ERROR_WORD));
  ASSERT_EQ(lk_fair_hold_count(b), 0);
  ASSERT_EQ(nr_hget(fx.srv, "nrf-shared", lk_fair_owner(a)), 1);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-shared"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "nrf-shared"), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, a, NULL));
  ASSERT_OK(nr_fair(&fx, b, 0, 30000));
  ASSERT_OK(fsx_run(&fx, lk_fair_release, b, NULL));
  fx_close_fair(&fx, a);
  fx_close_fair(&fx, b);
  fx_finish(&fx);
}

/* A Redisson non-reentrant fair holder keeps latchkey queued; its unlock
 * tells latchkey's waiter on its own channel and lets it in at once. */
TEST(fair_redisson_holder_blocks_latchkey_and_its_unlock_wakes_it) {
  fx_t fx;
  fsx_t s;
  fx_start_no_repoll(&fx);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_nrfair_attempt(emu, "nrf-r2l", NR_EMU_UUID, NR_EMU_TID, 30000,
                              NR_EMU_FAIR_WAIT_MS, NULL),
            1);
  lk_fair_t *f = fx_fair(&fx, "nrf-r2l");
  ASSERT_EQ(nr_fair(&fx, f, 0, 30000), LK_ETIMEDOUT);
  ASSERT_OK(nr_fair_start(f, rt_scaled_ms(10000), LK_LEASE_DEFAULT, &s));
  char *channel = fair_channel_of(f);
  fx_wait_subscribers(&fx, channel, 1);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "nrf-r2l") == 1, 3000);
  fx_spin(&fx, 50);
  ASSERT_EQ(s.done, 0);
  /* The emulator's own re-acquire is refused and does not queue. */
  ASSERT_EQ(rt_nrfair_attempt(emu, "nrf-r2l", NR_EMU_UUID, NR_EMU_TID, 30000,
                              NR_EMU_FAIR_WAIT_MS, NULL),
            RT_NR_REENTRY);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-r2l"), 1);
  uint64_t t_unlock = uv_hrtime();
  ASSERT_EQ(rt_rfair_unlock(emu, "nrf-r2l", NR_EMU_UUID, NR_EMU_TID), 1);
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  ASSERT_LT(ms_between(t_unlock, s.t_ns), rt_scaled_ms(1000));
  ASSERT_EQ(nr_hget(fx.srv, "nrf-r2l", lk_fair_owner(f)), 1);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-r2l"), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  fx_close_fair(&fx, f);
  free(channel);
  redisFree(emu);
  fx_finish(&fx);
}

/* A latchkey non-reentrant fair holder keeps a queued Redisson waiter out;
 * latchkey's release tells it on its own channel and it takes the lock at
 * once (its own wait is the holder's 30 s lease). */
TEST(fair_latchkey_holder_blocks_redisson_and_its_release_wakes_it) {
  fx_t fx;
  pthread_t th;
  fx_start_no_repoll(&fx);
  lk_fair_t *f = fx_fair(&fx, "nrf-l2r");
  ASSERT_OK(nr_fair(&fx, f, 0, LK_LEASE_DEFAULT));
  char *channel = rt_rfair_channel("nrf-l2r", NR_EMU_UUID, NR_EMU_TID);
  rt_emu_waiter_t w;
  rt_emu_waiter_start(&w, &th, nr_emu_fair_wait, rt_server_port(fx.srv), "nrf-l2r");
  fx_wait_subscribers(&fx, channel, 1);
  FX_EVENTUALLY(&fx, fair_lpos(fx.srv, "nrf-l2r", NR_EMU_OWNER) == 0, 3000);
  fx_spin(&fx, 100);
  ASSERT_EQ(atomic_load(&w.done), 0);
  uint64_t t_release = uv_hrtime();
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_EQ(w.result, 0);
  ASSERT_LT(ms_between(t_release, w.t_ns), rt_scaled_ms(1000));
  ASSERT_EQ(nr_hget(fx.srv, "nrf-l2r", NR_EMU_OWNER), 1);
  /* latchkey acting as that Redisson thread is refused by the server. */
  lk_fair_t *same = fx_fair(&fx, "nrf-l2r");
  ASSERT_OK(lk_fair_set_owner(same, NR_EMU_UUID, NR_EMU_TID));
  ASSERT_EQ(nr_fair(&fx, same, 0, 30000), LK_EREENTRY);
  ASSERT_EQ(nr_hget(fx.srv, "nrf-l2r", NR_EMU_OWNER), 1);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rfair_unlock(emu, "nrf-l2r", NR_EMU_UUID, NR_EMU_TID), 1);
  redisFree(emu);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-l2r"), 0);
  fx_close_fair(&fx, same);
  fx_close_fair(&fx, f);
  free(channel);
  fx_finish(&fx);
}

static void *nr_open_fair(fx_t *fx, const char *name) { return fx_fair(fx, name); }
static int nr_start_fair(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  return nr_fair_start(obj, wait_ms, lease_ms, s);
}
static int nr_fair_is_locked(fx_t *fx, void *obj) {
  return fsx_run(fx, lk_fair_is_locked, obj, NULL);
}
static int nr_fair_release(fx_t *fx, void *obj) { return fsx_run(fx, lk_fair_release, obj, NULL); }
static uint32_t nr_fair_hold_count(void *obj) { return lk_fair_hold_count(obj); }
static const char *nr_fair_owner(void *obj) { return lk_fair_owner(obj); }
static void nr_close_fair(fx_t *fx, void *obj) { fx_close_fair(fx, obj); }

static const nr_kind_t nr_fair_kind = {"fair/acquire",      nr_open_fair,       nr_start_fair,
                                       nr_fair_is_locked,   nr_fair_release,    nr_fair_hold_count,
                                       nr_fair_owner,       nr_close_fair};

/* As for the lock (nr_contract.h). */
TEST(fair_lost_reply_resend_is_the_grant_not_a_reentry) {
  nr_lost_reply_resend_is_the_grant(&nr_fair_kind, "nrf-lost");
}
