/* latchkey test harness: test cases, assertions, timing and loop helpers.
 *
 * A test source file holds any number of cases:
 *
 *     #include "test.h"
 *     TEST(lock_basic) { ASSERT_EQ(1 + 1, 2); }
 *
 * Each executable is run once per case (`prog <case>`), so a case is its own
 * process: a failing assertion prints, kills the servers this process spawned,
 * and exit(1)s. Write `TEST(` at the start of a line: CMake scans for exactly
 * that to register one ctest entry per case, and the runner cross-checks the
 * count so a case CMake missed fails loudly instead of never running.
 *
 * Everything here may be called from any thread unless noted. uv.h needs
 * POSIX declarations: compile with -D_GNU_SOURCE (lk_add_test_file does). */
#ifndef LK_TEST_HARNESS_TEST_H
#define LK_TEST_HARNESS_TEST_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cases ---------------------------------------------------------------- */

typedef void (*rt_test_fn)(void);

/* Called by TEST's constructor; defined in runner.c. */
void rt_register_test(const char *name, rt_test_fn fn);
/* How many TEST( lines CMake found in this executable's source; the runner
 * refuses to run when the registered count differs. */
void rt_expect_case_count(int n);

#define TEST(name)                                                             \
  static void rt_case_##name(void);                                            \
  __attribute__((constructor)) static void rt_case_register_##name(void) {     \
    rt_register_test(#name, rt_case_##name);                                   \
  }                                                                            \
  static void rt_case_##name(void)

#ifdef RT_CASES_SCANNED
__attribute__((constructor)) static void rt_case_count_register(void) {
  rt_expect_case_count(RT_CASES_SCANNED);
}
#endif

/* ---- failing ---------------------------------------------------------------- */

/* Print "file:line: FAIL: <message>", kill recorded children, exit(1). */
__attribute__((noreturn, format(printf, 3, 4))) void rt_fail_at(const char *file, int line,
                                                                 const char *fmt, ...);
__attribute__((noreturn)) void rt_fail_cmp_(const char *file, int line, const char *a_expr,
                                            const char *op, const char *b_expr, int64_t a,
                                            int64_t b);
__attribute__((noreturn)) void rt_fail_ok_(const char *file, int line, const char *expr,
                                           int64_t code);
__attribute__((noreturn)) void rt_fail_streq_(const char *file, int line, const char *a_expr,
                                              const char *b_expr, const char *a, const char *b);

#define FAIL(...) rt_fail_at(__FILE__, __LINE__, __VA_ARGS__)

#define ASSERT(cond)                                                           \
  do {                                                                         \
    if (!(cond))                                                               \
      rt_fail_at(__FILE__, __LINE__, "ASSERT(%s)", #cond);                     \
  } while (0)

/* Both sides are evaluated once and compared as int64_t. The expressions are
 * stringized here, not in the helper, so macros in them print unexpanded. */
#define RT_ASSERT_CMP_(a, op, b, a_str, b_str)                                 \
  do {                                                                         \
    int64_t rt_lhs_ = (int64_t)(a);                                            \
    int64_t rt_rhs_ = (int64_t)(b);                                            \
    if (!(rt_lhs_ op rt_rhs_))                                                 \
      rt_fail_cmp_(__FILE__, __LINE__, a_str, #op, b_str, rt_lhs_, rt_rhs_);   \
  } while (0)

#define ASSERT_EQ(a, b) RT_ASSERT_CMP_(a, ==, b, #a, #b)
#define ASSERT_NE(a, b) RT_ASSERT_CMP_(a, !=, b, #a, #b)
#define ASSERT_LT(a, b) RT_ASSERT_CMP_(a, <, b, #a, #b)
#define ASSERT_LE(a, b) RT_ASSERT_CMP_(a, <=, b, #a, #b)
#define ASSERT_GT(a, b) RT_ASSERT_CMP_(a, >, b, #a, #b)
#define ASSERT_GE(a, b) RT_ASSERT_CMP_(a, >=, b, #a, #b)

/* Expects 0; on failure prints the code and, where known, its name (latchkey
 * codes through lk_err_name when linked, -errno / libuv codes by strerror). */
#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    int64_t rt_rc_ = (int64_t)(expr);                                          \
    if (rt_rc_ != 0)                                                           \
      rt_fail_ok_(__FILE__, __LINE__, #expr, rt_rc_);                          \
  } while (0)

/* NULL-safe: two NULLs are equal, NULL and a string are not. */
#define ASSERT_STREQ(a, b)                                                     \
  do {                                                                         \
    const char *rt_sa_ = (a);                                                  \
    const char *rt_sb_ = (b);                                                  \
    if (!rt_streq_(rt_sa_, rt_sb_))                                            \
      rt_fail_streq_(__FILE__, __LINE__, #a, #b, rt_sa_, rt_sb_);              \
  } while (0)

#define ASSERT_NULL(p)                                                         \
  do {                                                                         \
    const void *rt_p_ = (const void *)(p);                                     \
    if (rt_p_ != NULL)                                                         \
      rt_fail_at(__FILE__, __LINE__, "ASSERT_NULL(%s): got %p", #p, rt_p_);    \
  } while (0)

#define ASSERT_NOT_NULL(p)                                                     \
  do {                                                                         \
    if ((const void *)(p) == NULL)                                             \
      rt_fail_at(__FILE__, __LINE__, "ASSERT_NOT_NULL(%s): got NULL", #p);     \
  } while (0)

int rt_streq_(const char *a, const char *b);

/* ---- timing ----------------------------------------------------------------- */

/* Multiplier for liveness bounds, from LK_TEST_TIMING (default 1.0). Safety
 * bounds (must not happen before X) are never scaled. */
double rt_timing(void);
int64_t rt_scaled_ms(int64_t ms);
/* Monotonic clock (uv_hrtime). */
int64_t rt_now_ms(void);
uint64_t rt_now_ns(void);
/* Sleep ms milliseconds (unscaled), restarting after signals. */
void rt_sleep_ms(int64_t ms);
/* The same for us microseconds (< 1 s): a worker's short busy section. */
void rt_sleep_us(unsigned us);
/* xorshift64: the next value of a worker's (or a schedule's) own random
 * sequence; never 0, so the state never sticks. */
uint64_t rt_xorshift(uint64_t *state);
/* For forked worker processes: prints "worker INDEX (pid P): FAIL: ..." and
 * _exit(3), which the parent reports. */
__attribute__((noreturn, format(printf, 2, 3))) void rt_worker_die(int index, const char *fmt,
                                                                   ...);

/* ---- libuv helpers (call on the loop's thread) ------------------------------- */

/* Runs uv_run(UV_RUN_ONCE) until *flag != 0; fails the test when
 * rt_scaled_ms(timeout_ms), plus the longest machine stall measured while it
 * waited (stall.h), passes first. A private timer bounds each pass, and
 * is closed before returning so the loop can still be closed. */
void rt_run_until_at(const char *file, int line, const char *flag_expr, uv_loop_t *loop,
                     const int *flag, int64_t timeout_ms);
#define rt_run_until(loop, flag, timeout_ms)                                   \
  rt_run_until_at(__FILE__, __LINE__, #flag, (loop), (flag), (timeout_ms))

/* Lets closing handles finish (bounded NOWAIT passes, a few ms apart, about
 * 2 s scaled), then requires uv_loop_close() == 0. On failure prints every
 * handle still on the loop. */
void rt_loop_close_clean_at(const char *file, int line, uv_loop_t *loop);
#define rt_loop_close_clean(loop) rt_loop_close_clean_at(__FILE__, __LINE__, (loop))

/* ---- ports -------------------------------------------------------------------- */

/* A loopback TCP port that was free a moment ago, chosen at random below the
 * kernel's ephemeral range (ip_local_port_range). Ports there are never handed
 * out as the local port of an outgoing connection, so a server restarted on
 * the same port cannot find it taken by a client socket, and a client that
 * retries a dead port cannot connect to itself. Callers still retry when the
 * bind loses a race with another process. Returns 0 when none was found. */
int rt_pick_port(void);

/* ---- spawned processes -------------------------------------------------------- */

/* Record a child to SIGKILL on any exit path of this process (exit, failed
 * assertion, timeout alarm, fatal signal, sanitizer death). A process forked
 * from the test does not kill its parent's children: each record remembers
 * which process made it. */
void rt_child_track(pid_t pid);
void rt_child_untrack(pid_t pid);
/* Copies up to max pids this process tracks into out; returns how many (the
 * stall monitor reads their run-queue waits). */
int rt_child_pids(pid_t *out, int max);

/* Installed by the runner's main before a case runs: atexit hook, signal
 * handlers, sanitizer death callback, and alarm(timeout_s) if non-zero. */
void rt_safety_net_install(unsigned timeout_s);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_TEST_H */
