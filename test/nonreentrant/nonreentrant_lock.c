/* The lock's non-reentrant acquire (opts.reentrant = 0; docs/lock.md,
 * "Non-reentrant acquire"): a holder's second acquire is refused with
 * LK_EREENTRY and never counted, the object's own at once and without a
 * command, a shared owner's by the server; and the same name is shared both
 * ways with the emulated Redisson 4.4 non-reentrant lock
 * (test/harness/redisson_nr_emu.h). */
#include <pthread.h>
#include <stdatomic.h>

#include "nr_contract.h"

/* The object's own second acquire returns LK_EREENTRY at once, waiting or
 * not, fenced or not: no callback, no script on the server, the count and
 * the fencing counter untouched. A reentrant acquire of the same object
 * still re-enters (the option is the acquire's). */
TEST(second_acquire_refused_at_once_and_never_sent) {
  fx_t fx;
  sx_t s;
  fx_start_no_repoll(&fx);
  lk_lock_t *l = fx_lock(&fx, "nr-own");
  ASSERT_OK(nr_lock(&fx, l, 0, 30000));
  nr_own_second_acquire_refused(&nr_lock_kind, &fx, l, "nr-own");
  /* The object is not busy: a reentrant acquire re-enters. */
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(nr_hget(fx.srv, "nr-own", lk_lock_owner(l)), 2);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nr-own"), 0);
  /* Released: the next non-reentrant acquire, fenced, is a fresh grant. */
  ASSERT_OK(nr_lock_start(l, 0, 30000, 1, &s));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  int64_t token = lk_lock_token(l);
  ASSERT_GT(token, 0);
  ASSERT_EQ(nr_lock_start(l, 0, 30000, 1, &s), LK_EREENTRY);
  ASSERT_EQ(fx_token_counter(&fx, "nr-own"), token);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* Another object acting as the holder's owner (lk_lock_set_owner):
 * nr_contract.h. */
TEST(shared_owner_refused_by_the_server) {
  nr_shared_owner_refused_by_the_server(&nr_lock_kind, "nr-shared");
}

/* A Redisson non-reentrant holder keeps latchkey out; its unlock's message
 * lets the sleeping latchkey waiter in, long before any re-poll. */
TEST(redisson_holder_blocks_latchkey_and_its_unlock_wakes_it) {
  fx_t fx;
  sx_t s;
  fx_start_no_repoll(&fx);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  char *channel = rt_rlock_channel("nr-r2l");
  ASSERT_EQ(rt_nrlock_try(emu, "nr-r2l", NR_EMU_UUID, NR_EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  lk_lock_t *l = fx_lock(&fx, "nr-r2l");
  nr_start_waiting_behind_redisson(&nr_lock_kind, &fx, l, &s);
  fx_wait_subscribers(&fx, channel, 1);
  nr_redisson_unlock_wakes(&nr_lock_kind, &fx, emu, l, &s, "nr-r2l");
  /* Redisson sees latchkey's hold as busy, with its lease. */
  long long ttl = rt_nrlock_try(emu, "nr-r2l", NR_EMU_UUID, NR_EMU_TID, 30000);
  ASSERT_GT(ttl, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  fx_close_lock(&fx, l);
  free(channel);
  redisFree(emu);
  fx_finish(&fx);
}

/* A latchkey non-reentrant holder (watchdog lease) keeps a Redisson waiter
 * out; latchkey's release message lets it in at once (its own wait is the
 * holder's 30 s lease). */
TEST(latchkey_holder_blocks_redisson_and_its_release_wakes_it) {
  fx_t fx;
  pthread_t th;
  fx_start_no_repoll(&fx);
  rt_emu_waiter_t w;
  lk_lock_t *l = nr_hold_with_redisson_waiting(&nr_lock_kind, &fx, "nr-l2r", &w, &th);
  nr_release_wakes_redisson(&nr_lock_kind, &fx, l, &w, th, "nr-l2r");
  /* Now latchkey waits in turn. */
  ASSERT_EQ(nr_lock(&fx, l, 0, 30000), LK_ETIMEDOUT);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rlock_unlock(emu, "nr-l2r", NR_EMU_UUID, NR_EMU_TID), 1);
  redisFree(emu);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* One owner on both sides (latchkey acting as the Redisson thread): each
 * side's non-reentrant acquire refuses the other's hold, and neither counts
 * a second hold. */
TEST(one_owner_on_both_sides_refused_both_ways) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  lk_lock_t *l = fx_lock(&fx, "nr-both");
  ASSERT_OK(lk_lock_set_owner(l, NR_EMU_UUID, NR_EMU_TID));
  ASSERT_OK(nr_lock(&fx, l, 0, 30000));
  ASSERT_EQ(rt_nrlock_try(emu, "nr-both", NR_EMU_UUID, NR_EMU_TID, 30000), RT_NR_REENTRY);
  ASSERT_EQ(nr_hget(fx.srv, "nr-both", NR_EMU_OWNER), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_nrlock_try(emu, "nr-both", NR_EMU_UUID, NR_EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(nr_lock(&fx, l, 0, 30000), LK_EREENTRY);
  ASSERT_EQ(nr_hget(fx.srv, "nr-both", NR_EMU_OWNER), 1);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(rt_rlock_unlock(emu, "nr-both", NR_EMU_UUID, NR_EMU_TID), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nr-both"), 0);
  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

static void on_lost(lk_lock_t *l, int status, void *arg) {
  sx_t *s = arg;
  (void)l;
  s->calls++;
  s->done = 1;
  s->status = status;
}

/* A non-reentrant hold is renewed by the watchdog like any other, a loss
 * is told, and force release ends it: after either, the object is not a
 * holder any more and its next non-reentrant acquire is a fresh grant. */
TEST(watchdog_lost_lease_and_force_release) {
  fx_t fx;
  sx_t lost;
  int64_t deleted = 0;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  lk_client_stats_t st;
  o.default_lease_ms = 1500; /* renewed every 500 ms */
  fx_start_with(&fx, NULL, &o);
  lk_lock_t *l = fx_lock(&fx, "nr-wd");
  memset(&lost, 0, sizeof(lost));
  ASSERT_OK(lk_lock_set_lost_cb(l, on_lost, &lost));
  ASSERT_OK(nr_lock(&fx, l, 0, LK_LEASE_DEFAULT));
  /* Four renewals: more than a lease has passed, alive only if renewed. */
  FX_EVENTUALLY(&fx, (lk_client_get_stats(fx.c, &st), st.renewals >= 4), 10000);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL nr-wd"), 0);
  ASSERT_EQ(lk_lock_is_held(l), 1);
  ASSERT_EQ(lost.calls, 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL nr-wd"), 1);
  rt_run_until(&fx.loop, &lost.done, 5000);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_EQ(lk_lock_is_held(l), 0);
  ASSERT_OK(nr_lock(&fx, l, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_force_release, l, &deleted));
  ASSERT_EQ(deleted, 1);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_OK(nr_lock(&fx, l, 0, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(lost.calls, 1);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(lost_reply_resend_is_the_grant_not_a_reentry) {
  nr_lost_reply_resend_is_the_grant(&nr_lock_kind, "nr-lost");
}
