/* Double barrier tests: run-to-callback helpers over lk_barrier_t. */
#ifndef LK_TEST_BARRIER_FIXTURE_H
#define LK_TEST_BARRIER_FIXTURE_H

#include <stdio.h>

#include "lk_fixture.h"

#define BR_STATE(name) "latchkey_barrier:{" name "}"
#define BR_MEMBERS(name) "latchkey_barrier_members:{" name "}"
#define BR_CHANNEL(name) "latchkey_barrier__channel:{" name "}"

/* One operation's outcome (exactly once), with what the callback could
 * read: the round and the dropped members, joined by ','. */
typedef struct br_op_s {
  int done, calls, status;
  int64_t round;
  size_t ndropped;
  char dropped[256];
  uint64_t t_ns;
} br_op_t;

static inline void br_op_cb(lk_barrier_t *b, int status, void *arg) {
  br_op_t *s = arg;
  size_t n = lk_barrier_dropped_count(b), off = 0;
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
  s->round = lk_barrier_round(b);
  s->ndropped = n;
  s->dropped[0] = '\0';
  for (size_t i = 0; i < n && off < sizeof(s->dropped); i++) {
    int w = snprintf(s->dropped + off, sizeof(s->dropped) - off, "%s%s", i ? "," : "",
                     lk_barrier_dropped(b, i));
    off += w > 0 ? (size_t)w : 0;
  }
  ASSERT_NULL(lk_barrier_dropped(b, n));
  s->t_ns = uv_hrtime();
}

static inline lk_barrier_t *br_new(lk_client_t *c, const char *name, int n) {
  lk_barrier_t *b = NULL;
  ASSERT_OK(lk_barrier_new(c, name, n, &b));
  return b;
}

/* Starts an enter (member NULL: the owner id). */
static inline void br_enter(lk_barrier_t *b, int64_t wait_ms, int64_t lease_ms,
                            const char *member, br_op_t *s) {
  lk_barrier_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_barrier_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.member = member;
  ASSERT_OK(lk_barrier_enter(b, &o, br_op_cb, s));
}

static inline void br_leave(lk_barrier_t *b, int64_t wait_ms, br_op_t *s) {
  lk_barrier_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_barrier_opts_init(&o);
  o.wait_ms = wait_ms;
  ASSERT_OK(lk_barrier_leave(b, &o, br_op_cb, s));
}

/* Runs the loop until s's callback (at most 5 s), which must have said 0. */
static inline void br_wait_ok(uv_loop_t *loop, br_op_t *s) {
  rt_run_until(loop, &s->done, 5000);
  ASSERT_OK(s->status);
}

static inline void br_closed_cb(lk_barrier_t *b) {
  int *flag = lk_barrier_get_data(b);
  (*flag)++;
}

static inline void br_close(uv_loop_t *loop, lk_barrier_t *b) {
  int closed = 0;
  lk_barrier_set_data(b, &closed);
  ASSERT_OK(lk_barrier_close(b, br_closed_cb));
  rt_run_until(loop, &closed, 10000);
  ASSERT_EQ(closed, 1);
}

/* Runs the loop until the members key holds n (a take-out is sent before
 * the callback, and nobody waits for its reply); fails after 5 s (scaled). */
#define BR_WAIT_MEMBERS(fx, name, n)                                           \
  FX_EVENTUALLY((fx), rt_cmd_int((fx)->srv, "ZCARD " BR_MEMBERS(name)) == (n), 5000)

#endif /* LK_TEST_BARRIER_FIXTURE_H */
