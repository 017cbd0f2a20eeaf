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
  fx_start_no_repoll(&fx);
  lk_fair_t *f = fx_fair(&fx, "nrf-own");
  ASSERT_OK(nr_fair(&fx, f, 0, 30000));
  nr_own_second_acquire_refused(&nr_fair_kind, &fx, f, "nrf-own");
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nrf-own"), 0);
  ASSERT_OK(nr_fair(&fx, f, 0, 30000));
  ASSERT_OK(fsx_run(&fx, lk_fair_release, f, NULL));
  fx_finish_fairs(&fx, (lk_fair_t *[]){f, NULL});
}

/* A shared owner's acquire that could wait is refused by the server at
 * once, and leaves no entry in the queue or the deadline sets
 * (nr_contract.h). */
TEST(fair_shared_owner_refused_by_the_server_and_not_queued) {
  nr_shared_owner_refused_by_the_server(&nr_fair_kind, "nrf-shared");
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
  nr_start_waiting_behind_redisson(&nr_fair_kind, &fx, f, &s);
  char *channel = fair_channel_of(f);
  fx_wait_subscribers(&fx, channel, 1);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "nrf-r2l") == 1, 3000);
  /* The emulator's own re-acquire is refused and does not queue. */
  ASSERT_EQ(rt_nrfair_attempt(emu, "nrf-r2l", NR_EMU_UUID, NR_EMU_TID, 30000,
                              NR_EMU_FAIR_WAIT_MS, NULL),
            RT_NR_REENTRY);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-r2l"), 1);
  nr_redisson_unlock_wakes(&nr_fair_kind, &fx, emu, f, &s, "nrf-r2l");
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
  rt_emu_waiter_t w;
  lk_fair_t *f = nr_hold_with_redisson_waiting(&nr_fair_kind, &fx, "nrf-l2r", &w, &th);
  FX_EVENTUALLY(&fx, fair_lpos(fx.srv, "nrf-l2r", NR_EMU_OWNER) == 0, 3000);
  nr_release_wakes_redisson(&nr_fair_kind, &fx, f, &w, th, "nrf-l2r");
  /* latchkey acting as that Redisson thread is refused by the server. */
  lk_fair_t *same = fx_fair(&fx, "nrf-l2r");
  ASSERT_OK(lk_fair_set_owner(same, NR_EMU_UUID, NR_EMU_TID));
  ASSERT_EQ(nr_fair(&fx, same, 0, 30000), LK_EREENTRY);
  ASSERT_EQ(nr_hget(fx.srv, "nrf-l2r", NR_EMU_OWNER), 1);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rfair_unlock(emu, "nrf-l2r", NR_EMU_UUID, NR_EMU_TID), 1);
  redisFree(emu);
  ASSERT_EQ(fair_llen(fx.srv, "nrf-l2r"), 0);
  fx_finish_fairs(&fx, (lk_fair_t *[]){same, f, NULL});
}

/* As for the lock (nr_contract.h). */
TEST(fair_lost_reply_resend_is_the_grant_not_a_reentry) {
  nr_lost_reply_resend_is_the_grant(&nr_fair_kind, "nrf-lost");
}
