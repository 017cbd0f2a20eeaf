/* An emulated Redisson client blocked in a wait on a thread of its own (its
 * wait blocks, the test's loop must go on), for the tests where latchkey's
 * release has to wake it (issue 29: five test files carried a copy). Each
 * test passes the emulator's blocking call for its kind as wait. Header-only. */
#ifndef LK_TEST_HARNESS_EMU_WAITER_H
#define LK_TEST_HARNESS_EMU_WAITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "redisson_emu.h"
#include "test.h"

/* The emulator's blocking acquire on ctx (commands) and sub (its
 * subscription): what it returned (0: acquired). */
typedef int (*rt_emu_wait_fn)(redisContext *ctx, redisContext *sub, const char *name,
                              int64_t timeout_ms);

typedef struct rt_emu_waiter_s {
  rt_emu_wait_fn wait;
  int port;
  const char *name;
  int64_t timeout_ms;
  int result;
  uint64_t t_ns; /* when the wait returned */
  atomic_int done;
} rt_emu_waiter_t;

static inline void *rt_emu_wait_thread(void *arg) {
  rt_emu_waiter_t *w = arg;
  redisContext *ctx = rt_rlock_connect(w->port), *sub = rt_rlock_connect(w->port);
  w->result = w->wait(ctx, sub, w->name, w->timeout_ms);
  w->t_ns = uv_hrtime();
  atomic_store(&w->done, 1);
  redisFree(sub);
  redisFree(ctx);
  return NULL;
}

/* Starts wait(name) against the server on port in thread *th, with a
 * 10 s (scaled) timeout of its own. */
static inline void rt_emu_waiter_start(rt_emu_waiter_t *w, pthread_t *th, rt_emu_wait_fn wait,
                                       int port, const char *name) {
  memset(w, 0, sizeof *w);
  w->wait = wait;
  w->port = port;
  w->name = name;
  w->timeout_ms = rt_scaled_ms(10000);
  atomic_init(&w->done, 0);
  ASSERT_EQ(pthread_create(th, NULL, rt_emu_wait_thread, w), 0);
}

/* Polls (the loop is not run) up to ms, scaled, for the wait to return;
 * whether it did. */
static inline int rt_emu_waiter_returned_within(rt_emu_waiter_t *w, int64_t ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  while (!atomic_load(&w->done) && rt_now_ms() < end)
    rt_sleep_ms(1);
  return atomic_load(&w->done);
}

#endif /* LK_TEST_HARNESS_EMU_WAITER_H */
