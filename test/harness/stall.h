/* Stall monitor: what the machine did to a test while it ran.
 *
 * On a shared, overloaded machine a test's process or its servers can sit on
 * a run queue for hundreds of milliseconds. A lease renewed every third of its
 * lease then expires for no fault of the library, and a liveness bound that
 * assumed a responsive machine runs out. The monitor measures those stalls so
 * that tests can tell "the library broke" from "the machine stopped us"
 * (docs/reliability.md, "Tests on a loaded machine", has the rule):
 *
 *  - process: a thread sleeping 5 ms with clock_nanosleep records how much
 *    longer than asked it slept (the whole process was starved);
 *  - server: every ~20 ms the same thread reads the run-queue wait of each
 *    child the harness tracks (rt_child_track: redis-servers, cluster nodes,
 *    sentinels, workers) from /proc/<pid>/schedstat; consecutive windows that
 *    spent at least half their time waiting make one stall. A server stopped
 *    on purpose (SIGSTOP, DEBUG SLEEP, a busy script) is not waiting on a run
 *    queue, so deliberate faults are not counted;
 *  - loop: while rt_run_until runs a loop, a 10 ms repeating timer records its
 *    own lateness. That also counts slow callbacks of the library itself, so
 *    it is printed for diagnosis but never excuses anything.
 *
 * The runner starts the monitor before every case. Stalls shorter than
 * 10 ms are not recorded. All functions are thread-safe. */
#ifndef LK_TEST_HARNESS_STALL_H
#define LK_TEST_HARNESS_STALL_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_stalls_s {
  int64_t process_ms; /* longest oversleep of the probe thread */
  int64_t server_ms;  /* longest run-queue stall of a tracked child */
  pid_t server_pid;   /* whose (0: none) */
  int64_t loop_ms;    /* longest lateness of a loop timer (diagnostic only) */
} rt_stalls_t;

/* Starts the probe thread once per process (the runner calls it). */
void rt_stall_monitor_start(void);

/* A mark: the monotonic time in ms (rt_now_ms). Stalls that end at or after
 * it count as "since the mark", including one still going on. */
int64_t rt_stall_mark(void);

/* The longest stalls of each kind since mark. */
void rt_stall_since(int64_t mark, rt_stalls_t *out);

/* The longest machine stall since mark: max(process, server). Loop lag is
 * left out: the library's own slowness must never excuse it. */
int64_t rt_stall_longest_ms(int64_t mark);

/* The longest machine stall that overlapped [from_ms, to_ms] (checkers of
 * a recorded history, after the fact; forked workers are tracked children,
 * so their run-queue stalls count). */
int64_t rt_stall_longest_between(int64_t from_ms, int64_t to_ms);

/* A liveness bound that survives a starved machine: rt_scaled_ms(ms) plus
 * the longest machine stall since mark. Never use it for a safety bound. */
int64_t rt_stall_bound_ms(int64_t mark, int64_t ms);

/* rt_stall_bound_ms with the mark at t0_ns, a uv_hrtime() reading (the
 * start a test measures a duration from). */
static inline int64_t rt_stall_bound_since_ns(uint64_t t0_ns, int64_t ms) {
  return rt_stall_bound_ms((int64_t)(t0_ns / 1000000u), ms);
}

/* For bounded polling loops: 1 once rt_stall_bound_ms(mark, ms) has passed
 * since mark (the stalls are re-read on every call). */
int rt_stall_expired(int64_t mark, int64_t ms);

/* Prints "stalls since mark: process N ms, server N ms (pid P), loop N ms"
 * to stderr, prefixed by what. */
void rt_stall_print(const char *what, int64_t mark);

/* Loop-lag probe records (called by rt_run_until). */
void rt_stall_note_loop(int64_t start_ms, int64_t end_ms);

/* A "the hold must survive" expectation that failed. Excused (prints
 * "EXCUSED: ..." with the measured stalls and returns 1) when the longest
 * machine stall since mark exceeds slack_ms, the slack the test's lease and
 * renewal period leave (e.g. lease - renewal period); otherwise the test
 * fails here. Never for a safety expectation (no overlap, no lost permit, one
 * callback, on_lost before the deadline). */
int rt_hold_excused_at(const char *file, int line, const char *expr, int64_t mark,
                       int64_t slack_ms);

/* 1 when cond holds; 0 when it does not and the machine stalls excuse it (the
 * test must then stop relying on the hold); fails the test otherwise. */
#define EXPECT_HOLD(cond, mark, slack_ms)                                      \
  rt_hold_expect_at(__FILE__, __LINE__, #cond, (cond) != 0, (mark), (slack_ms))
int rt_hold_expect_at(const char *file, int line, const char *expr, int holds, int64_t mark,
                      int64_t slack_ms);

/* Records a process stall of dur_ms ending at end_ms, as if measured (for
 * the harness's own tests). */
void rt_stall_inject(int64_t end_ms, int64_t dur_ms);

/* How many expectations this process excused (the runner reports them). */
int rt_stall_excused_count(void);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_STALL_H */
