/* Synthetic histories for the tests that show a checker can fail: a table
 * of intervals, loaded as the workers' files would be, then checked
 * (issue 29: lock_stress.c and rwlock_stress.c each loaded the table with
 * a copy of their own). Header-only. */
#ifndef LK_TEST_HARNESS_HISTORY_SYNTHETIC_H
#define LK_TEST_HARNESS_HISTORY_SYNTHETIC_H

#include <stddef.h>

#include "history.h"
#include "test.h"

/* Initialises h and adds the n intervals iv (each add must succeed); the
 * caller checks it and frees it with rt_history_free. */
static inline void rt_history_of(rt_history_t *h, const rt_interval_t *iv, size_t n) {
  rt_history_init(h);
  for (size_t i = 0; i < n; i++)
    ASSERT_OK(rt_history_add(h, iv[i].owner, iv[i].start_ns, iv[i].end_ns));
}

/* The mutual-exclusion checker's report on the n intervals iv. */
static inline void rt_history_check_of(const rt_interval_t *iv, size_t n,
                                       rt_history_report_t *rep) {
  rt_history_t h;
  rt_history_of(&h, iv, n);
  rt_history_check(&h, rep);
  rt_history_free(&h);
}

#endif /* LK_TEST_HARNESS_HISTORY_SYNTHETIC_H */
