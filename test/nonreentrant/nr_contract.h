/* What the non-reentrant lock and the non-reentrant fair lock must both do,
 * run over a small table of each kind's typed calls (issue 29: the cases
 * were copied per kind). Each kind's test file keeps its own TEST, so
 * ctest names the kind, and passes its nr_kind_t. Header-only. */
#ifndef LK_TEST_NONREENTRANT_NR_CONTRACT_H
#define LK_TEST_NONREENTRANT_NR_CONTRACT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "core/scripts.h"
#include "nr_fixture.h"
#include "proxy.h"

/* One kind's calls; obj is that kind's object (lk_lock_t *, lk_fair_t *).
 * Both kinds' outcomes are sx_t (fsx_t is the same type). */
typedef struct nr_kind_s {
  const char *acquire_script; /* its name in src/core/scripts */
  void *(*open)(fx_t *fx, const char *name);
  /* A non-reentrant acquire, started: what the call returned. */
  int (*start)(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s);
  /* The same, fenced; NULL where the contract leaves the fenced refusal out
   * (the fair lock's is not covered yet). */
  int (*start_fenced)(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s);
  int (*is_locked)(fx_t *fx, void *obj);
  int (*release)(fx_t *fx, void *obj);
  uint32_t (*hold_count)(void *obj);
  const char *(*owner)(void *obj);
  int (*set_owner)(void *obj, const char *client_id, uint64_t thread_id);
  const char *(*error_text)(void *obj);
  void (*close)(fx_t *fx, void *obj);
  /* The emulated Redisson unlock of this kind (redisson_emu.h), its
   * blocking wait (emu_waiter.h) and the channel that wait listens on. */
  int (*emu_unlock)(redisContext *ctx, const char *name, const char *uuid, long long tid);
  rt_emu_wait_fn emu_wait;
  char *(*emu_channel)(const char *name);
  /* A refused acquire left nothing of its own on the server beside the
   * hash: the lock's fencing counter, the fair lock's queue and timeouts. */
  void (*check_left_nothing)(fx_t *fx, const char *name);
} nr_kind_t;

/* Each kind's typed calls behind the untyped nr_kind_t slots, written once
 * for both: k is the kind's word in the API (lock, fair), run its sx_run. */
#define NR_KIND_CALLS(k, run)                                                                     \
  static inline void *nr_open_##k(fx_t *fx, const char *name) { return fx_##k(fx, name); }       \
  static inline int nr_is_locked_##k(fx_t *fx, void *obj) {                                      \
    return run(fx, lk_##k##_is_locked, obj, NULL);                                               \
  }                                                                                              \
  static inline int nr_release_##k(fx_t *fx, void *obj) {                                        \
    return run(fx, lk_##k##_release, obj, NULL);                                                 \
  }                                                                                              \
  static inline uint32_t nr_hold_count_##k(void *obj) { return lk_##k##_hold_count(obj); }       \
  static inline const char *nr_owner_##k(void *obj) { return lk_##k##_owner(obj); }              \
  static inline int nr_set_owner_##k(void *obj, const char *id, uint64_t tid) {                  \
    return lk_##k##_set_owner(obj, id, tid);                                                     \
  }                                                                                              \
  static inline const char *nr_error_text_##k(void *obj) { return lk_##k##_error_text(obj); }    \
  static inline void nr_close_##k(fx_t *fx, void *obj) { fx_close_##k(fx, obj); }

NR_KIND_CALLS(lock, sx_run)
NR_KIND_CALLS(fair, fsx_run)

static inline int nr_start_lock_kind(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  return nr_lock_start(obj, wait_ms, lease_ms, 0, s);
}
static inline int nr_start_fenced_lock(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  return nr_lock_start(obj, wait_ms, lease_ms, 1, s);
}
static inline int nr_start_fair_kind(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  return nr_fair_start(obj, wait_ms, lease_ms, s);
}
static inline char *nr_emu_fair_channel(const char *name) {
  return rt_rfair_channel(name, NR_EMU_UUID, NR_EMU_TID);
}
static inline void nr_lock_left_nothing(fx_t *fx, const char *name) {
  ASSERT_EQ(fx_token_counter(fx, name), 0);
}
static inline void nr_fair_left_nothing(fx_t *fx, const char *name) {
  ASSERT_EQ(fair_llen(fx->srv, name), 0);
  ASSERT_EQ(fair_zcard(fx->srv, name), 0);
}

/* The two kinds. */
static const nr_kind_t nr_lock_kind = {
    "lock/acquire",      nr_open_lock,      nr_start_lock_kind, nr_start_fenced_lock,
    nr_is_locked_lock,   nr_release_lock,   nr_hold_count_lock, nr_owner_lock,
    nr_set_owner_lock,   nr_error_text_lock, nr_close_lock,     rt_rlock_unlock,
    nr_emu_lock_wait,    rt_rlock_channel,  nr_lock_left_nothing};
static const nr_kind_t nr_fair_kind = {
    "fair/acquire",      nr_open_fair,      nr_start_fair_kind, NULL,
    nr_is_locked_fair,   nr_release_fair,   nr_hold_count_fair, nr_owner_fair,
    nr_set_owner_fair,   nr_error_text_fair, nr_close_fair,     rt_rfair_unlock,
    nr_emu_fair_wait,    nr_emu_fair_channel, nr_fair_left_nothing};

/* A non-reentrant acquire of this kind to its end: the code returned at
 * once, or the callback's status. */
static inline int nr_acquire(const nr_kind_t *k, fx_t *fx, void *obj, int64_t wait_ms,
                             int64_t lease_ms) {
  sx_t s;
  int rc = k->start(obj, wait_ms, lease_ms, &s);
  if (rc != 0)
    return rc;
  rt_run_until(&fx->loop, &s.done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s.status;
}

/* obj holds name once, non-reentrantly: its own second acquire returns
 * LK_EREENTRY at once, waiting or not (and fenced, for a kind that has
 * tokens): no callback, no script on the server, nothing counted, queued
 * or fenced. */
static inline void nr_own_second_acquire_refused(const nr_kind_t *k, fx_t *fx, void *obj,
                                                 const char *name) {
  sx_t s;
  ASSERT_EQ(k->hold_count(obj), 1);
  long long scripts = nr_script_calls(fx->srv);
  ASSERT_EQ(k->start(obj, 0, 30000, &s), LK_EREENTRY);
  ASSERT_EQ(k->start(obj, rt_scaled_ms(5000), LK_LEASE_DEFAULT, &s), LK_EREENTRY);
  if (k->start_fenced)
    ASSERT_EQ(k->start_fenced(obj, 0, 30000, &s), LK_EREENTRY);
  fx_spin(fx, 50);
  ASSERT_EQ(s.calls, 0);
  ASSERT_EQ(nr_script_calls(fx->srv), scripts);
  ASSERT_EQ(nr_hget(fx->srv, name, k->owner(obj)), 1);
  ASSERT_EQ(k->hold_count(obj), 1);
  k->check_left_nothing(fx, name);
}

/* Another object acting as the holder's owner (set_owner) cannot know the
 * server's count: the script refuses it, with Redisson's error word, at
 * once although the acquire could wait (and as a fenced single try, for a
 * kind with tokens), and queues, counts or fences nothing. Once the holder
 * released, the shared owner's non-reentrant acquire is granted. */
static inline void nr_shared_owner_refused_by_the_server(const nr_kind_t *k, const char *name) {
  fx_t fx;
  sx_t s;
  fx_start_no_repoll(&fx);
  void *a = k->open(&fx, name), *b = k->open(&fx, name);
  ASSERT_OK(nr_acquire(k, &fx, a, 0, 30000));
  ASSERT_OK(k->set_owner(b, NULL, nr_tid_of(k->owner(a))));
  ASSERT_STREQ(k->owner(b), k->owner(a));
  int64_t budget = rt_scaled_ms(10000);
  ASSERT_OK(k->start(b, budget, 30000, &s));
  uint64_t t0 = uv_hrtime();
  rt_run_until(&fx.loop, &s.done, budget + 5000);
  ASSERT_EQ(s.status, LK_EREENTRY);
  ASSERT_LT(ms_between(t0, s.t_ns), budget / 2);
  ASSERT_NOT_NULL(strstr(k->error_text(b), RT_NR_ERROR_WORD));
  ASSERT_EQ(k->hold_count(b), 0);
  ASSERT_EQ(nr_hget(fx.srv, name, k->owner(a)), 1);
  k->check_left_nothing(&fx, name);
  if (k->start_fenced) {
    ASSERT_OK(k->start_fenced(b, 0, 30000, &s));
    rt_run_until(&fx.loop, &s.done, 5000);
    ASSERT_EQ(s.status, LK_EREENTRY);
    k->check_left_nothing(&fx, name);
    ASSERT_EQ(nr_hget(fx.srv, name, k->owner(a)), 1);
  }
  ASSERT_OK(k->release(&fx, a));
  ASSERT_OK(nr_acquire(k, &fx, b, 0, 30000));
  ASSERT_EQ(nr_hget(fx.srv, name, k->owner(b)), 1);
  ASSERT_OK(k->release(&fx, b));
  k->close(&fx, a);
  k->close(&fx, b);
  fx_finish(&fx);
}

/* obj is shut out of name by an emulated Redisson holder: a single try
 * times out, and a waiting acquire (s) is started. */
static inline void nr_start_waiting_behind_redisson(const nr_kind_t *k, fx_t *fx, void *obj,
                                                    sx_t *s) {
  ASSERT_EQ(nr_acquire(k, fx, obj, 0, 30000), LK_ETIMEDOUT);
  ASSERT_OK(k->start(obj, rt_scaled_ms(10000), LK_LEASE_DEFAULT, s));
}

/* The Redisson holder's unlock lets obj's waiting acquire (s) in, long
 * before any re-poll: a grant within a second of the unlock, counted once
 * for obj's owner. */
static inline void nr_redisson_unlock_wakes(const nr_kind_t *k, fx_t *fx, redisContext *emu,
                                            void *obj, sx_t *s, const char *name) {
  fx_spin(fx, 50);
  ASSERT_EQ(s->done, 0);
  uint64_t t_unlock = uv_hrtime();
  ASSERT_EQ(k->emu_unlock(emu, name, NR_EMU_UUID, NR_EMU_TID), 1);
  rt_run_until(&fx->loop, &s->done, 10000);
  ASSERT_OK(s->status);
  ASSERT_LT(ms_between(t_unlock, s->t_ns), rt_scaled_ms(1000));
  ASSERT_EQ(nr_hget(fx->srv, name, k->owner(obj)), 1);
}

/* A new object of this kind holds name non-reentrantly (watchdog lease)
 * and the emulated Redisson waiter w (thread *th) waits for it, subscribed
 * to its channel. Returns the holder. */
static inline void *nr_hold_with_redisson_waiting(const nr_kind_t *k, fx_t *fx, const char *name,
                                                  rt_emu_waiter_t *w, pthread_t *th) {
  void *obj = k->open(fx, name);
  char *channel = k->emu_channel(name);
  ASSERT_OK(nr_acquire(k, fx, obj, 0, LK_LEASE_DEFAULT));
  rt_emu_waiter_start(w, th, k->emu_wait, rt_server_port(fx->srv), name);
  fx_wait_subscribers(fx, channel, 1);
  free(channel);
  return obj;
}

/* obj holds name and the emulated Redisson waiter w (thread th) waits for
 * it: w is still waiting after a while, and obj's release lets it in
 * within a second (its own wait is the holder's 30 s lease). */
static inline void nr_release_wakes_redisson(const nr_kind_t *k, fx_t *fx, void *obj,
                                             rt_emu_waiter_t *w, pthread_t th,
                                             const char *name) {
  fx_spin(fx, 100);
  ASSERT_EQ(atomic_load(&w->done), 0);
  uint64_t t_release = uv_hrtime();
  ASSERT_OK(k->release(fx, obj));
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_EQ(w->result, 0);
  ASSERT_LT(ms_between(t_release, w->t_ns), rt_scaled_ms(1000));
  ASSERT_EQ(nr_hget(fx->srv, name, NR_EMU_OWNER), 1);
}

/* The reply of a non-reentrant acquire that took the lock is lost: the
 * resend finds this owner's hold, which is its own first attempt's, not a
 * second holder's. It is reported as the grant and counted once; refusing
 * it would leave the lock held with nobody counting it. */
static inline void nr_lost_reply_resend_is_the_grant(const nr_kind_t *k, const char *name) {
  fx_t fx;
  sx_t s;
  char match[64];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  rt_proxy_t *p = fx_start_proxied(&fx, &o);
  void *obj = k->open(&fx, name);
  ASSERT_OK(k->is_locked(&fx, obj)); /* connected first */
  snprintf(match, sizeof match, "EVALSHA %s", lk__script_find(k->acquire_script)->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(k->start(obj, rt_scaled_ms(3000), 30000, &s));
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_OK(s.status);
  ASSERT_EQ(k->hold_count(obj), 1);
  ASSERT_EQ(nr_hget(fx.srv, name, k->owner(obj)), 1);
  ASSERT_OK(k->release(&fx, obj));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", name), 0);
  k->close(&fx, obj);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

#endif /* LK_TEST_NONREENTRANT_NR_CONTRACT_H */
