/* Threads exclude each other: the probe the blocking lock and the blocking
 * RedLock both run (issue 29: each file had a copy). Each thread takes the
 * kind's lock rounds times, counts who is inside, and leaves; any failed
 * call, a second thread inside, or a missing entry fails the case. Threads
 * of different kinds (latchkey and the emulated Redisson client) may share
 * one count.
 * Header-only. */
#ifndef LK_TEST_BLOCKING_OVERLAP_PROBE_H
#define LK_TEST_BLOCKING_OVERLAP_PROBE_H

#include <stdatomic.h>
#include <string.h>

#include "test.h"

/* One kind's calls on obj, made from any thread. */
typedef struct {
  int (*acquire)(void *obj); /* wait forever: 0 or a code */
  int (*release)(void *obj);
  int (*is_held)(void *obj); /* NULL: not checked inside */
} overlap_kind_t;

/* What the threads share: who is inside, and what went wrong. */
typedef struct {
  _Atomic int inside, max_inside, entries, errors;
} overlap_count_t;

/* One thread: rounds takes of obj through k, counted in c. */
typedef struct {
  const overlap_kind_t *k;
  void *obj;
  int rounds;
  overlap_count_t *c;
} overlap_thread_t;

static inline void overlap_worker(void *arg) {
  overlap_thread_t *t = arg;
  overlap_count_t *c = t->c;
  for (int i = 0; i < t->rounds; i++) {
    int now;
    if (t->k->acquire(t->obj) != 0) {
      atomic_fetch_add(&c->errors, 1);
      continue;
    }
    now = atomic_fetch_add(&c->inside, 1) + 1;
    if (now > atomic_load(&c->max_inside))
      atomic_store(&c->max_inside, now);
    atomic_fetch_add(&c->entries, 1);
    if (t->k->is_held != NULL && t->k->is_held(t->obj) != 1)
      atomic_fetch_add(&c->errors, 1);
    rt_sleep_us(500); /* widen the window an overlap would show in */
    atomic_fetch_sub(&c->inside, 1);
    if (t->k->release(t->obj) != 0)
      atomic_fetch_add(&c->errors, 1);
  }
}

#define OVERLAP_MAX_THREADS 8

/* Runs the n threads (at most OVERLAP_MAX_THREADS, sharing one count) to
 * their end: never two inside at once, every round entered, no call
 * failed. */
static inline void overlap_run_threads(overlap_thread_t *th, int n) {
  overlap_count_t c;
  uv_thread_t t[OVERLAP_MAX_THREADS];
  int want = 0;
  ASSERT_LE(n, OVERLAP_MAX_THREADS);
  memset(&c, 0, sizeof(c));
  for (int i = 0; i < n; i++) {
    th[i].c = &c;
    want += th[i].rounds;
    ASSERT_OK(uv_thread_create(&t[i], overlap_worker, &th[i]));
  }
  for (int i = 0; i < n; i++)
    uv_thread_join(&t[i]);
  ASSERT_EQ(atomic_load(&c.errors), 0);
  ASSERT_EQ(atomic_load(&c.max_inside), 1);
  ASSERT_EQ(atomic_load(&c.entries), want);
}

/* threads threads of one kind on one object, rounds takes each. */
static inline void overlap_run(const overlap_kind_t *k, void *obj, int threads, int rounds) {
  overlap_thread_t th[OVERLAP_MAX_THREADS];
  ASSERT_LE(threads, OVERLAP_MAX_THREADS);
  for (int i = 0; i < threads; i++)
    th[i] = (overlap_thread_t){k, obj, rounds, NULL};
  overlap_run_threads(th, threads);
}

#endif /* LK_TEST_BLOCKING_OVERLAP_PROBE_H */
