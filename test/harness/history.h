/* Critical-section histories for mutual-exclusion checkers.
 *
 * Each worker process records, for every hold it had, an interval
 * [start_ns, end_ns] on CLOCK_MONOTONIC (uv_hrtime: one clock for every
 * process on the machine) taken *inside* the hold: start after the acquire
 * was confirmed, end before the release was sent. Intervals of different
 * owners must then never overlap. Workers append to their own binary file;
 * the checker loads all files, sorts by start and sweeps.
 *
 * File format: the 8 bytes "LKHIST01", then 24-byte records in host byte
 * order {uint32 owner, uint32 reserved (0), uint64 start_ns, uint64 end_ns}.
 * Not thread-safe; no function fails the test by itself (return codes). */
#ifndef LK_TEST_HARNESS_HISTORY_H
#define LK_TEST_HARNESS_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_interval_s {
  uint32_t owner;
  uint32_t reserved;
  uint64_t start_ns;
  uint64_t end_ns;
} rt_interval_t;

typedef struct rt_history_s {
  rt_interval_t *v;
  size_t n, cap;
} rt_history_t;

typedef struct rt_history_report_s {
  size_t intervals;
  /* Intervals that start before an earlier-starting interval of another
   * owner has ended (each counted once, however many it overlaps). */
  size_t overlaps;
  /* Intervals overlapping an earlier one of the same owner (a worker that
   * recorded two holds at once: a bug in the worker, not in the lock). */
  size_t self_overlaps;
  size_t malformed; /* end_ns < start_ns */
  /* The first cross-owner overlap found (valid when overlaps > 0): a is the
   * earlier interval still open when b started. */
  rt_interval_t first_a, first_b;
  /* Handoff gaps between consecutive intervals (in start order) of
   * different owners, when there was no overlap; 0 when none. */
  uint64_t gap_min_ns, gap_max_ns, gap_sum_ns;
  size_t gaps;
} rt_history_report_t;

/* ---- writing (one file per process) ---- */

/* Creates (truncates) path and writes the header; NULL with errno set. */
FILE *rt_history_create(const char *path);
/* 0, or -1 with errno set. */
int rt_history_append(FILE *f, uint32_t owner, uint64_t start_ns, uint64_t end_ns);
/* Flushes, fsyncs and closes (also on error): 0, or -1 with errno set. */
int rt_history_finish(FILE *f);

/* ---- checking ---- */

void rt_history_init(rt_history_t *h);
void rt_history_free(rt_history_t *h);
/* 0, or -1 when out of memory. */
int rt_history_add(rt_history_t *h, uint32_t owner, uint64_t start_ns, uint64_t end_ns);
/* Appends every record of path to h. 0, or -1 after printing why (cannot
 * open or read, bad header, size not header + n records). */
int rt_history_load(rt_history_t *h, const char *path);
/* Sorts h by start (then end, then owner) and fills rep. */
void rt_history_check(rt_history_t *h, rt_history_report_t *rep);
/* One line per finding for humans: the report and, if any, the first overlap. */
void rt_history_print(FILE *out, const rt_history_report_t *rep);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_HISTORY_H */
