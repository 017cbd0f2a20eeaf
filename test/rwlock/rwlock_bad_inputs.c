/* Read/write lock bad inputs (docs/reliability.md, item 19): every rejected
 * call returns its exact code at once, never runs its callback, sends
 * nothing, and leaves the object usable. Wrong thread, forked child,
 * operations on a closing object and a busy object are covered too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "never_cb.h"
#include "rw_fixture.h"

#define BAD_RW ((lk_rwlock_t *)(uintptr_t)0x5a5a5a5a)

static int acquire_rc(lk_rwlock_t *rw, int side, int64_t wait_ms, int64_t lease_ms) {
  lk_rwlock_opts_t o = rw_opts(wait_ms, lease_ms);
  return lk_rwlock_acquire(rw, (lk_rwlock_side_t)side, &o, rt_never_rwlock_cb, NULL);
}

/* After rejected calls the object is idle and works on both sides. */
static void check_still_usable(fx_t *fx, lk_rwlock_t *rw) {
  int64_t r = -1;
  ASSERT_OK(rw_acquire(fx, rw, RW_R, 0, 10000));
  ASSERT_OK(rw_release(fx, rw, RW_R, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(rw_acquire(fx, rw, RW_W, 0, 10000));
  ASSERT_OK(rw_release(fx, rw, RW_W, &r));
  ASSERT_EQ(r, 1);
}

/* How a case ends: the objects closed in the order given, the server left
 * with no key (when empty), and no refused call's callback ever run. */
static void finish(fx_t *fx, lk_rwlock_t *const *rws, int empty) {
  for (; *rws != NULL; rws++)
    fx_close_rwlock(fx, *rws);
  if (empty)
    ASSERT_EQ(rt_server_count_keys(fx->srv, "*"), 0);
  rt_never_finish(fx);
}

TEST(new_rejects_bad_arguments) {
  fx_t fx;
  lk_rwlock_t *rw = BAD_RW;
  lk_client_opts_t o;
  char *big;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_rwlock_new(NULL, "x", &rw), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_new(fx.c, NULL, &rw), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_new(fx.c, "", &rw), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_new(fx.c, "x", NULL), LK_EINVAL);
  big = malloc(4098);
  ASSERT_NOT_NULL(big);
  memset(big, 'n', 4097);
  big[4097] = '\0';
  ASSERT_EQ(lk_rwlock_new(fx.c, big, &rw), LK_ENAMETOOLONG);
  big[4096] = '\0'; /* exactly the cap: fine */
  ASSERT(rw == BAD_RW);
  ASSERT_OK(lk_rwlock_new(fx.c, big, &rw));
  check_still_usable(&fx, rw);
  fx_close_rwlock(&fx, rw);
  free(big);
  /* A custom cap applies too. */
  fx_finish(&fx);
  lk_client_opts_init(&o);
  o.max_name_len = 8;
  fx_start_with(&fx, NULL, &o);
  rw = BAD_RW;
  ASSERT_EQ(lk_rwlock_new(fx.c, "123456789", &rw), LK_ENAMETOOLONG);
  ASSERT(rw == BAD_RW);
  ASSERT_OK(lk_rwlock_new(fx.c, "12345678", &rw));
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 0);
}

TEST(acquire_rejects_bad_arguments) {
  fx_t fx;
  lk_rwlock_t *rw = fx_start_rwlock(&fx, "bad");
  lk_rwlock_opts_t o;
  long long before;
  /* Let the connection and script cache settle, then count. */
  check_still_usable(&fx, rw);
  before = fx_script_calls(&fx);
  lk_rwlock_opts_init(&o);
  ASSERT_EQ(lk_rwlock_acquire(NULL, RW_R, &o, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_acquire(rw, RW_R, &o, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_acquire(rw, (lk_rwlock_side_t)0, &o, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_acquire(rw, (lk_rwlock_side_t)3, &o, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_acquire(rw, (lk_rwlock_side_t)-1, &o, rt_never_rwlock_cb, NULL), LK_EINVAL);
  for (int side = RW_R; side <= RW_W; side++) {
    ASSERT_EQ(acquire_rc(rw, side, -2, 1000), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, LK_MAX_TIME_MS + 1, 1000), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, INT64_MAX, 1000), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, INT64_MIN, 1000), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, 0, 0), LK_EINVAL); /* never PX 0 */
    ASSERT_EQ(acquire_rc(rw, side, 0, -2), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, 0, LK_MAX_TIME_MS + 1), LK_EINVAL);
    ASSERT_EQ(acquire_rc(rw, side, 0, INT64_MAX), LK_EINVAL);
  }
  fx_spin(&fx, 20);
  ASSERT_EQ(fx_script_calls(&fx), before);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS bad"), 0);
  /* The edges are valid. */
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, LK_MAX_TIME_MS, LK_MAX_TIME_MS));
  ASSERT_OK(rw_release(&fx, rw, RW_R, NULL));
  check_still_usable(&fx, rw);
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 0);
}

TEST(release_and_queries_reject_bad_arguments) {
  fx_t fx;
  lk_rwlock_t *rw = fx_start_rwlock(&fx, "bad");
  ASSERT_EQ(lk_rwlock_release(NULL, RW_R, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_release(rw, RW_R, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_release(rw, (lk_rwlock_side_t)7, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_release(rw, RW_R, rt_never_rwlock_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(lk_rwlock_release(rw, RW_W, rt_never_rwlock_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(lk_rwlock_force_release(NULL, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_force_release(rw, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_mode(rw, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_remaining_ttl(NULL, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_server_hold_count(rw, (lk_rwlock_side_t)0, rt_never_rwlock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_server_hold_count(rw, RW_R, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_cancel(rw), LK_EINVAL); /* nothing pending */
  ASSERT_EQ(lk_rwlock_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_set_lost_cb(NULL, rt_never_rwlock_cb, NULL), LK_EINVAL);
  /* Getters on NULL or a bad side answer neutrally. */
  ASSERT_EQ(lk_rwlock_is_held(NULL, RW_R), 0);
  ASSERT_EQ(lk_rwlock_is_held(rw, (lk_rwlock_side_t)9), 0);
  ASSERT_EQ(lk_rwlock_hold_count(NULL, RW_W), 0);
  ASSERT_EQ(lk_rwlock_hold_count(rw, (lk_rwlock_side_t)9), 0);
  ASSERT_EQ(lk_rwlock_token(NULL), 0);
  ASSERT_EQ(lk_rwlock_result(NULL), 0);
  ASSERT_STREQ(lk_rwlock_error_text(NULL), "");
  ASSERT_NULL(lk_rwlock_name(NULL));
  ASSERT_NULL(lk_rwlock_owner(NULL));
  ASSERT_NULL(lk_rwlock_client(NULL));
  ASSERT_NULL(lk_rwlock_get_data(NULL));
  lk_rwlock_set_data(NULL, NULL);
  lk_rwlock_opts_init(NULL);
  ASSERT_STREQ(lk_rwlock_name(rw), "bad");
  ASSERT(lk_rwlock_client(rw) == fx.c);
  check_still_usable(&fx, rw);
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 0);
}

/* The calls a refused object is tried with, one table for the busy,
 * closing, wrong-thread and forked-child cases: each says which it tries
 * and the one code all of them must return. */
typedef enum {
  RW_CALL_ACQUIRE_READ,
  RW_CALL_ACQUIRE_WRITE,
  RW_CALL_ACQUIRE_READ_NULL_OPTS,
  RW_CALL_ACQUIRE_WRITE_NULL_OPTS,
  RW_CALL_RELEASE_READ,
  RW_CALL_RELEASE_WRITE,
  RW_CALL_FORCE_RELEASE,
  RW_CALL_MODE,
  RW_CALL_CANCEL,
  RW_CALL_SET_OWNER,
  RW_CALL_SET_LOST_CB,
  RW_CALL_CLOSE,
  RW_CALL_NEW, /* lk_rwlock_new on c; also fails if it wrote its out */
  RW_CALL_END
} rw_call_t;

/* Not a code: an lk_rwlock_new refused that wrote *out anyway, or no such
 * call. */
#define RW_CALL_NOT_A_CODE (-100000)

static int rw_call(lk_client_t *c, lk_rwlock_t *rw, rw_call_t call) {
  lk_rwlock_t *out = BAD_RW;
  int rc;
  switch (call) {
  case RW_CALL_ACQUIRE_READ:
    return acquire_rc(rw, RW_R, 0, 1000);
  case RW_CALL_ACQUIRE_WRITE:
    return acquire_rc(rw, RW_W, 0, 1000);
  case RW_CALL_ACQUIRE_READ_NULL_OPTS:
    return lk_rwlock_acquire(rw, RW_R, NULL, rt_never_rwlock_cb, NULL);
  case RW_CALL_ACQUIRE_WRITE_NULL_OPTS:
    return lk_rwlock_acquire(rw, RW_W, NULL, rt_never_rwlock_cb, NULL);
  case RW_CALL_RELEASE_READ:
    return lk_rwlock_release(rw, RW_R, rt_never_rwlock_cb, NULL);
  case RW_CALL_RELEASE_WRITE:
    return lk_rwlock_release(rw, RW_W, rt_never_rwlock_cb, NULL);
  case RW_CALL_FORCE_RELEASE:
    return lk_rwlock_force_release(rw, rt_never_rwlock_cb, NULL);
  case RW_CALL_MODE:
    return lk_rwlock_mode(rw, rt_never_rwlock_cb, NULL);
  case RW_CALL_CANCEL:
    return lk_rwlock_cancel(rw);
  case RW_CALL_SET_OWNER:
    return lk_rwlock_set_owner(rw, NULL, 5);
  case RW_CALL_SET_LOST_CB:
    return lk_rwlock_set_lost_cb(rw, rt_never_rwlock_cb, NULL);
  case RW_CALL_CLOSE:
    return lk_rwlock_close(rw, NULL);
  case RW_CALL_NEW:
    rc = lk_rwlock_new(c, "refused", &out);
    return out == BAD_RW ? rc : RW_CALL_NOT_A_CODE;
  default:
    return RW_CALL_NOT_A_CODE;
  }
}

/* The calls in calls (RW_CALL_END-terminated, at most 8) on rw that did
 * not return code at once, one bit each by position: 0 when all were
 * refused as they should be. Asserts nothing (a forked child reports the
 * mask through its exit status). */
static int refused_mask(lk_client_t *c, lk_rwlock_t *rw, const rw_call_t *calls, int code) {
  int bad = 0;
  for (int i = 0; calls[i] != RW_CALL_END; i++)
    if (rw_call(c, rw, calls[i]) != code)
      bad |= 1 << i;
  return bad;
}

/* One operation at a time; a second one is LK_EBUSY and changes nothing. */
TEST(second_operation_while_pending_is_busy) {
  fx_t fx;
  lk_rwlock_t *w, *rw;
  sx_t s;
  fx_start_rwlock_holder_and_waiter(&fx, "busy", RW_W, RW_R, 5000, &w, &rw, &s);
  ASSERT_EQ(refused_mask(fx.c, rw,
                         (rw_call_t[]){RW_CALL_ACQUIRE_READ, RW_CALL_ACQUIRE_WRITE,
                                       RW_CALL_FORCE_RELEASE, RW_CALL_MODE, RW_CALL_SET_OWNER,
                                       RW_CALL_END},
                         LK_EBUSY),
            0);
  ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_rwlock_hold_count(rw, RW_R), 1);
  /* Holding: the owner cannot change either. */
  ASSERT_EQ(lk_rwlock_set_owner(rw, NULL, 5), LK_EBUSY);
  finish(&fx, (lk_rwlock_t *[]){rw, w, NULL}, 1);
}

TEST(set_owner_checks_and_acts_as_given_owner) {
  fx_t fx;
  lk_rwlock_t *rw = fx_start_rwlock(&fx, "owner");
  char field[160];
  ASSERT_EQ(lk_rwlock_set_owner(NULL, NULL, 1), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_set_owner(rw, "", 1), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_set_owner(rw, "with space", 1), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_set_owner(rw, "8d0c3c5e-0000-4000-8000-00000000000:", 1), LK_EINVAL);
  ASSERT_OK(lk_rwlock_set_owner(rw, "8d0c3c5e-0000-4000-8000-000000000001", 18446744073709551615ULL));
  ASSERT_STREQ(lk_rwlock_owner(rw), "8d0c3c5e-0000-4000-8000-000000000001:18446744073709551615");
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {owner}:%s:rwlock_timeout:1", lk_rwlock_owner(rw)), 1);
  ASSERT_OK(rw_release(&fx, rw, RW_R, NULL));
  ASSERT_OK(rw_acquire(&fx, rw, RW_W, 0, LK_LEASE_DEFAULT));
  snprintf(field, sizeof(field), "%s:write", lk_rwlock_owner(rw));
  ASSERT_EQ(rw_hget(&fx, "owner", field), 1);
  ASSERT_OK(rw_release(&fx, rw, RW_W, NULL));
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 1);
}

TEST(operations_on_a_closing_object) {
  fx_t fx;
  lk_rwlock_t *rw = fx_start_rwlock(&fx, "closing");
  int closed = 0;
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT));
  lk_rwlock_set_data(rw, &closed);
  ASSERT_OK(lk_rwlock_close(rw, fx_rwlock_closed_cb));
  ASSERT_EQ(refused_mask(fx.c, rw,
                         (rw_call_t[]){RW_CALL_ACQUIRE_WRITE, RW_CALL_RELEASE_READ, RW_CALL_MODE,
                                       RW_CALL_CANCEL, RW_CALL_SET_OWNER, RW_CALL_SET_LOST_CB,
                                       RW_CALL_CLOSE, RW_CALL_END},
                         LK_ECLOSED),
            0);
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  /* A client with an open object refuses to close. */
  rw = fx_rwlock(&fx, "closing");
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_EBUSY);
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 0);
}

typedef struct {
  lk_client_t *c;
  lk_rwlock_t *rw;
  int bad; /* refused_mask's */
} thread_call_t;

static void thread_call(void *arg) {
  thread_call_t *t = arg;
  t->bad = refused_mask(t->c, t->rw,
                        (rw_call_t[]){RW_CALL_ACQUIRE_WRITE_NULL_OPTS, RW_CALL_NEW,
                                      RW_CALL_RELEASE_READ, RW_CALL_CLOSE, RW_CALL_END},
                        LK_EWRONGTHREAD);
}

TEST(wrong_thread) {
  fx_t fx;
  thread_call_t t;
  uv_thread_t th;
  t.rw = fx_start_rwlock(&fx, "wt");
  t.c = fx.c;
  t.bad = -1;
  ASSERT_OK(rw_acquire(&fx, t.rw, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(uv_thread_create(&th, thread_call, &t));
  ASSERT_OK(uv_thread_join(&th));
  ASSERT_EQ(t.bad, 0);
  ASSERT_EQ(lk_rwlock_hold_count(t.rw, RW_R), 1);
  ASSERT_OK(rw_release(&fx, t.rw, RW_R, NULL));
  check_still_usable(&fx, t.rw);
  finish(&fx, (lk_rwlock_t *[]){t.rw, NULL}, 0);
}

/* In a forked child every call answers LK_EFORKED and nothing reaches the
 * server: closing the inherited object frees memory only and must not
 * release the parent's holds. */
TEST(forked_child_gets_eforked_and_sends_nothing) {
  fx_t fx;
  lk_rwlock_t *held, *idle;
  long long before;
  pid_t pid;
  fx_start(&fx, NULL);
  held = fx_rwlock(&fx, "forked");
  idle = fx_rwlock(&fx, "forked-idle");
  ASSERT_OK(rw_acquire(&fx, held, RW_W, 0, 60000));
  ASSERT_OK(rw_acquire(&fx, held, RW_R, 0, 60000));
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, idle, NULL));
  before = fx_script_calls(&fx);
  pid = rt_fork_flushed();
  if (pid == 0) {
    /* Exits with the bits of the calls not refused. */
    int bad = refused_mask(fx.c, idle,
                           (rw_call_t[]){RW_CALL_ACQUIRE_READ_NULL_OPTS, RW_CALL_NEW,
                                         RW_CALL_FORCE_RELEASE, RW_CALL_END},
                           LK_EFORKED);
    bad |= refused_mask(fx.c, held, (rw_call_t[]){RW_CALL_RELEASE_WRITE, RW_CALL_CLOSE, RW_CALL_END},
                        LK_EFORKED)
           << 3;
    bad |= refused_mask(fx.c, idle, (rw_call_t[]){RW_CALL_CLOSE, RW_CALL_END}, LK_EFORKED) << 5;
    if (lk_client_close(fx.c, NULL) != LK_EFORKED)
      bad |= 1 << 6;
    _exit(bad);
  }
  rt_wait_child_exit_0(pid);
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, idle, NULL));
  ASSERT_EQ(fx_script_calls(&fx), before);
  ASSERT_EQ(rw_server_holds(&fx, held, RW_W), 1);
  ASSERT_EQ(rw_server_holds(&fx, held, RW_R), 1);
  finish(&fx, (lk_rwlock_t *[]){idle, held, NULL}, 1);
}

/* Absurd state on the server (a corrupt hold count, garbage in the mode
 * field) is answered sanely: while the object's own holds live, the re-entry
 * restarts the count from the object's; once they are gone it reports the
 * loss and every hold of this owner is given back (the scripts' loops are
 * bounded either way); a lock in an unknown mode is never taken over, the
 * query says it cannot read it. */
TEST(absurd_counts_on_the_server_are_survived) {
  fx_t fx;
  lk_rwlock_t *rw = fx_start_rwlock(&fx, "absurd");
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT));
  freeReplyObject(rt_cmd(fx.srv, "HSET absurd %s 99999999999", lk_rwlock_owner(rw)));
  /* Holds the object does not count, its own alive: the count restarts. */
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_rwlock_hold_count(rw, RW_R), 2);
  ASSERT_EQ(rw_server_holds(&fx, rw, RW_R), 2);
  /* The object's holds gone too: the re-entry sees a count that is not one
   * above its own: lost. */
  freeReplyObject(rt_cmd(fx.srv, "HSET absurd %s 99999999999", lk_rwlock_owner(rw)));
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL {absurd}:%s:rwlock_timeout:1 {absurd}:%s:rwlock_timeout:2",
                       lk_rwlock_owner(rw), lk_rwlock_owner(rw)),
            2);
  ASSERT_EQ(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT), LK_ELEASELOST);
  ASSERT_EQ(lk_rwlock_hold_count(rw, RW_R), 0);
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, rw, NULL)); /* the give-back is through */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS absurd"), 0);
  /* Garbage in the mode field: busy, never taken over. */
  freeReplyObject(rt_cmd(fx.srv, "DEL absurd"));
  freeReplyObject(rt_cmd(fx.srv, "HSET absurd mode banana"));
  ASSERT_EQ(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rw_acquire(&fx, rw, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rw_run(&fx, lk_rwlock_mode, rw, NULL), LK_EPROTOCOL);
  freeReplyObject(rt_cmd(fx.srv, "DEL absurd"));
  finish(&fx, (lk_rwlock_t *[]){rw, NULL}, 0);
}
