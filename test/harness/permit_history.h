/* Permit histories for semaphore checkers: the interval files of history.h,
 * with the record's reserved field carrying how many permits the hold had,
 * and a sweep line that finds the most permits held at any instant.
 *
 * An interval [start_ns, end_ns] is taken inside the hold (start after the
 * acquire was confirmed, end before the release was sent), so if the
 * semaphore is right, the permits of the intervals open at any instant never
 * pass the semaphore's total. Touching intervals (one ends where another
 * starts) do not overlap. Not thread-safe; nothing here fails the test. */
#ifndef LK_TEST_HARNESS_PERMIT_HISTORY_H
#define LK_TEST_HARNESS_PERMIT_HISTORY_H

#include <stdint.h>
#include <stdio.h>

#include "history.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends one hold of `permits` permits (1..UINT32_MAX); 0 or -1 (errno). */
int rt_permit_history_append(FILE *f, uint32_t owner, uint32_t permits, uint64_t start_ns,
                             uint64_t end_ns);
/* rt_history_add with a permit count. */
int rt_permit_history_add(rt_history_t *h, uint32_t owner, uint32_t permits,
                          uint64_t start_ns, uint64_t end_ns);

typedef struct rt_permit_report_s {
  size_t intervals;
  size_t malformed;        /* end before start */
  uint64_t max_permits;    /* most permits held at one instant */
  uint64_t max_holders;    /* most intervals open at one instant */
  uint64_t over_ns;        /* total time with more than `limit` permits held */
  size_t over_events;      /* starts that pushed the total above `limit` */
  uint64_t first_over_ns;  /* when that first happened (0: never) */
  uint64_t busy_ns;        /* time with at least one permit held */
  uint64_t span_ns;        /* first start to last end */
} rt_permit_report_t;

/* Sweeps h (records with reserved = 0 count as one permit) against limit.
 * Sorts a copy; h is left as it is. 0, or -1 when out of memory. */
int rt_permit_sweep(const rt_history_t *h, uint64_t limit, rt_permit_report_t *rep);
void rt_permit_print(FILE *out, uint64_t limit, const rt_permit_report_t *rep);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_PERMIT_HISTORY_H */
