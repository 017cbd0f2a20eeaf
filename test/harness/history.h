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

/* ==== Event histories for every primitive (format "LKHIST02") ===========
 *
 * A record is what one process saw of one operation: which process (proc),
 * what (op), on which object (obj: the test's own numbering of names), when
 * ([start_ns, end_ns] on CLOCK_MONOTONIC, one clock for every process of
 * the machine), and two op-specific numbers. Observed intervals must lie
 * inside the true ones: start after the success was confirmed, end before
 * the give-back was sent (or at the last moment the holder still knew it
 * held), so every checker is sound: a violation it reports really happened.
 *
 *   op              start .. end                       token        extra
 *   RT_OP_HOLD      exclusive section (lock, fair lock, write lock, multilock member)
 *                                                      fencing token (0: none)  enqueue rank (fair)
 *   RT_OP_READ      read section                       -            -
 *   RT_OP_WRITE     write section                      token        -
 *   RT_OP_PERMITS   semaphore holding                  -            permits held
 *   RT_OP_COUNTDOWN count_down invoked .. completed    -            -
 *   RT_OP_AWAIT     await invoked .. returned open     -            1 opened, 0 not
 *   RT_OP_LOST      on_lost callback at start          side         start of the section it ended,
 *                                                                   -1 when none was open
 *   RT_OP_STOPPED   the process was SIGSTOPped          -            -
 *   RT_OP_STALLED   the process's loop did not run       -            -
 *                   (starved of CPU: as if stopped)
 *   RT_OP_FAULT     a fault the nemesis injected       fault kind   -
 *   RT_OP_CALL      an operation invoked .. completed  status       wait budget (ms)
 *   RT_OP_GRANT     a fenced acquire invoked .. its    fencing token  the section's op
 *                   success confirmed (every grant,                 (HOLD, READ, WRITE)
 *                   held or not)
 *   RT_OP_WIPE      the server lost its data and came   1: it came   token 1: the host
 *                   back at once (killed .. answering   back empty,  clock (us) read
 *                   again): holds granted before it are so its       after the kill,
 *                   gone while their holders may still  tokens start before the restart
 *                   count on them, which S1 does not    above every  (0: not known)
 *                   cover (a delayed restart is no wipe) earlier one;
 *                                                       0: tokens
 *                                                       prove nothing
 *
 * File: the 8 bytes "LKHIST02", then 40-byte records in host byte order
 * (rt_rec_t). Appending is not thread-safe; nothing fails the test itself. */

enum {
  RT_OP_HOLD = 1,
  RT_OP_READ,
  RT_OP_WRITE,
  RT_OP_PERMITS,
  RT_OP_COUNTDOWN,
  RT_OP_AWAIT,
  RT_OP_LOST,
  RT_OP_STOPPED,
  RT_OP_FAULT,
  RT_OP_CALL,
  RT_OP_STALLED,
  RT_OP_GRANT,
  RT_OP_WIPE
};

typedef struct rt_rec_s {
  uint32_t proc;
  uint16_t op;
  uint16_t obj;
  uint64_t start_ns;
  uint64_t end_ns;
  int64_t token;
  int64_t extra;
} rt_rec_t;

typedef struct rt_recs_s {
  rt_rec_t *v;
  size_t n, cap;
} rt_recs_t;

FILE *rt_recs_create(const char *path);
int rt_recs_append(FILE *f, const rt_rec_t *r);
/* Flushes, fsyncs, closes: 0 or -1 (errno). */
int rt_recs_finish(FILE *f);

void rt_recs_init(rt_recs_t *h);
void rt_recs_free(rt_recs_t *h);
int rt_recs_add(rt_recs_t *h, const rt_rec_t *r);
/* Into out (initialised here; free it): the records of h that began before
 * its first wipe, and every wipe (so a section under way at the first one
 * is cut where it began); *first is the first wipe's start, 0 when h has
 * none (then out is all of h). For state no wipe bounds (a semaphore's
 * counter: a lost take stays lost), whose checks end there. 0 or -1. */
int rt_recs_until_first_wipe(const rt_recs_t *h, rt_recs_t *out, uint64_t *first);
/* Shorthand for tests building synthetic histories. */
int rt_recs_add5(rt_recs_t *h, uint32_t proc, uint16_t op, uint64_t start_ns, uint64_t end_ns,
                 int64_t token, int64_t extra);
/* Appends every record of path (0, or -1 after printing why). A file cut
 * short by a crash mid-write keeps its whole records: pass allow_partial 1
 * for workers that may be SIGKILLed. */
int rt_recs_load(rt_recs_t *h, const char *path, int allow_partial);

/* What a checker found. Every checker fills it from scratch. */
typedef struct rt_check_s {
  const char *name;
  size_t checked;    /* records (or pairs) looked at */
  size_t violations;
  rt_rec_t first_a, first_b; /* the first violation: the two records involved
                                (first_b alone when one record is enough) */
  int64_t max_seen;  /* checker-specific: most holders / readers / permits */
  char detail[160];
} rt_check_t;

/* Wipes (RT_OP_WIPE: the server came back empty, or a cluster master that
 * was replaced woke up stale and granted beside its successor): the
 * checkers of exclusion (rt_check_exclusive, rt_check_rw, rt_check_permits,
 * rt_check_lost_first) end every section a wipe interrupts
 * where the wipe began (what the holder believed afterwards, the server no
 * longer knew), and skip sections that begin during a wipe (granted by the
 * server that went, or by the one that came back: not told apart) and
 * sections whose acquire (their RT_OP_GRANT) was still unanswered while a
 * wipe ran (its answer may be the gone server's, delivered after the one
 * that came back granted another) unless its token proves it the new
 * server's (a wipe with token 1, and a token above the clock the wipe
 * recorded or no lower than one granted to an acquire asked for after
 * the wipe). Without wipes in h nothing changes.
 * Tokens must increase across empty restarts' wipes: rt_check_grant_tokens
 * ignores those (not a split brain's, token 0),
 * and rt_check_tokens skips only the sections the exclusion checkers skip
 * (their grants overlap in time one made after the wipe, so the order the
 * sections began in is not the order the server issued the tokens in). */

/* No two processes' sections of op (RT_OP_HOLD, or RT_OP_WRITE) on obj
 * overlap. max_seen: 1 when there were sections. */
void rt_check_exclusive(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out);
/* Sweep line over RT_OP_PERMITS of obj: held permits never exceed max_permits
 * at any instant (an end and a start at the same instant do not overlap).
 * max_seen: the most held at once. */
void rt_check_permits(const rt_recs_t *h, uint16_t obj, int64_t max_permits, rt_check_t *out);
/* Sweep line over RT_OP_READ / RT_OP_WRITE of obj: a writer is never
 * alongside another writer or a reader. max_seen: the most readers at once. */
void rt_check_rw(const rt_recs_t *h, uint16_t obj, rt_check_t *out);
/* Records of op on obj with token > 0, in order of start: tokens strictly
 * increase (sections skipped for a wipe aside, see above). */
void rt_check_tokens(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out);
/* Every RT_OP_GRANT of obj with token > 0, of every process and side: no
 * token is handed out twice, and a grant invoked after another one was
 * confirmed (a.end_ns < b.start_ns, so the server ran a's INCR before b's)
 * carries a larger token. Grants whose calls overlap are not ordered.
 * Grants whose calls overlap a wipe marked token 0 (a split brain: two
 * masters INCR copies of one counter) are not judged; those of an empty
 * restart's wipe are. max_seen: the highest token. */
void rt_check_grant_tokens(const rt_recs_t *h, uint16_t obj, rt_check_t *out);
/* Records of op on obj, in order of start (acquisition): their enqueue
 * ranks (extra) strictly increase: first come, first served. */
void rt_check_fifo(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out);
/* Latch of initial count n on obj: every RT_OP_AWAIT that saw it open
 * (extra 1) returned no earlier than the invocation of the n-th
 * RT_OP_COUNTDOWN; with fewer than n count-downs no await may see it open. */
void rt_check_latch(const rt_recs_t *h, uint16_t obj, int64_t n, rt_check_t *out);
/* 1 when process proc was stopped (RT_OP_STOPPED) or its loop stalled
 * (RT_OP_STALLED) at some time within (from, to): it could not act then. */
int rt_proc_paused(const rt_recs_t *h, uint32_t proc, uint64_t from, uint64_t to);
/* Every RT_OP_LOST of obj that ended an open section (extra >= 0) comes
 * before any section (op) of another process that started after that
 * section began, unless the losing process was paused (rt_proc_paused) in
 * between: a holder hears of the loss before someone else can hold it. */
void rt_check_lost_first(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out);
/* One line per checker for humans. */
void rt_check_print(FILE *out, const rt_check_t *c);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_HISTORY_H */
