/* Runs a function on a thread of its own and waits for it: for the
 * blocking API's tests, where another thread is another owner. */
#ifndef LK_TEST_HARNESS_ON_THREAD_H
#define LK_TEST_HARNESS_ON_THREAD_H

#include <uv.h>

#include "test.h"

/* Runs fn(arg) on a new thread and waits for it to end. */
static inline void rt_on_thread(void (*fn)(void *), void *arg) {
  uv_thread_t t;
  ASSERT_OK(uv_thread_create(&t, fn, arg));
  uv_thread_join(&t);
}

#endif /* LK_TEST_HARNESS_ON_THREAD_H */
