/* Reader/writer histories: the checker for read/write locks, over the
 * interval files of history.h. A worker records each hold with
 * RT_RW_OWNER(worker, is_write) as the owner, so the side travels in the
 * existing file format. The checker then proves that no write interval
 * overlaps any interval of another worker, and measures how much the read
 * intervals of different workers overlapped (readers must be able to share,
 * or the lock is only a mutex). Not thread-safe. */
#ifndef LK_TEST_HARNESS_RW_HISTORY_H
#define LK_TEST_HARNESS_RW_HISTORY_H

#include <stddef.h>
#include <stdio.h>

#include "history.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_RW_OWNER(worker, is_write) (((uint32_t)(worker) << 1) | ((is_write) ? 1u : 0u))
#define RT_RW_WORKER(owner) ((owner) >> 1)
#define RT_RW_IS_WRITE(owner) (((owner)&1u) != 0)

typedef struct rt_rw_report_s {
  size_t intervals, reads, writes;
  /* Intervals that start while an interval of another worker is open, where
   * either of the two is a write (each counted once). */
  size_t violations;
  /* Read intervals that start while a read of another worker is open. */
  size_t read_overlaps;
  /* The most workers inside for reading at one instant. */
  size_t max_readers;
  size_t malformed; /* end before start */
  /* The first violation (valid when violations > 0): a was open when b
   * started. */
  rt_interval_t first_a, first_b;
} rt_rw_report_t;

/* Sorts h by start and fills rep. */
void rt_rw_history_check(rt_history_t *h, rt_rw_report_t *rep);
void rt_rw_history_print(FILE *out, const rt_rw_report_t *rep);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_RW_HISTORY_H */
