/* Assertion failure reporting, child tracking and the exit-path safety net,
 * timing, and libuv loop helpers. main() lives in runner.c so that programs
 * with their own main (bench tools) can still link rt_harness. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "test.h"

#include "stall.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Linked in when the test uses latchkey; NULL otherwise (a weak reference
 * never pulls an archive member in by itself). */
extern const char *lk_err_name(int err) __attribute__((weak));
/* Present when built with a sanitizer: its reports end in _exit(), which skips
 * atexit handlers, so this is the only hook that sees that path. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* ---- child tracking ------------------------------------------------------------ */

/* Read by signal handlers without locking: entries are plain ints written
 * whole, and a stale read at worst kills an already-dead pid. */
#define RT_MAX_CHILDREN 128
static volatile pid_t child_pid[RT_MAX_CHILDREN];
static volatile pid_t child_owner[RT_MAX_CHILDREN];
static pthread_mutex_t child_mu = PTHREAD_MUTEX_INITIALIZER;

void rt_child_track(pid_t pid) {
  if (pid <= 0)
    return;
  pthread_mutex_lock(&child_mu);
  for (int i = 0; i < RT_MAX_CHILDREN; i++) {
    if (child_pid[i] == 0) {
      child_owner[i] = getpid(); /* set before the pid makes the slot live */
      child_pid[i] = pid;
      pthread_mutex_unlock(&child_mu);
      return;
    }
  }
  pthread_mutex_unlock(&child_mu);
  kill(pid, SIGKILL); /* untracked it would outlive us */
  FAIL("rt_child_track: more than %d live children", RT_MAX_CHILDREN);
}

void rt_child_untrack(pid_t pid) {
  pthread_mutex_lock(&child_mu);
  for (int i = 0; i < RT_MAX_CHILDREN; i++)
    if (child_pid[i] == pid)
      child_pid[i] = 0;
  pthread_mutex_unlock(&child_mu);
}

int rt_child_pids(pid_t *out, int max) {
  int n = 0;
  pid_t self = getpid();
  pthread_mutex_lock(&child_mu);
  for (int i = 0; i < RT_MAX_CHILDREN && n < max; i++)
    if (child_pid[i] > 0 && child_owner[i] == self)
      out[n++] = child_pid[i];
  pthread_mutex_unlock(&child_mu);
  return n;
}

/* Async-signal-safe: kill() and getpid() only. */
static void kill_children(void) {
  pid_t self = getpid();
  for (int i = 0; i < RT_MAX_CHILDREN; i++) {
    pid_t pid = child_pid[i];
    if (pid > 0 && child_owner[i] == self)
      kill(pid, SIGKILL);
  }
}

/* Normal exit: kill, then reap briefly so ports and files are released before
 * ctest starts the next case. Bounded to about 1 s in total. */
static void at_exit_kill_children(void) {
  kill_children();
  pid_t self = getpid();
  int64_t deadline = rt_now_ms() + 1000;
  for (int i = 0; i < RT_MAX_CHILDREN; i++) {
    pid_t pid = child_pid[i];
    if (pid <= 0 || child_owner[i] != self)
      continue;
    while (waitpid(pid, NULL, WNOHANG) == 0 && rt_now_ms() < deadline)
      rt_sleep_ms(1);
    child_pid[i] = 0;
  }
}

/* ---- safety net ------------------------------------------------------------------ */

static const int net_signals[] = {SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGSEGV,
                                  SIGBUS,  SIGFPE, SIGILL,  SIGABRT};
#define RT_NET_NSIG ((int)(sizeof net_signals / sizeof net_signals[0]))
static struct sigaction net_old[RT_NET_NSIG];
static unsigned net_timeout_s;

static void write_str(const char *s) {
  ssize_t r = write(STDERR_FILENO, s, strlen(s));
  (void)r;
}

static void write_uint(unsigned v) {
  char buf[16];
  int i = (int)sizeof buf;
  buf[--i] = '\0';
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  write_str(buf + i);
}

static void net_handler(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  int saved_errno = errno;
  kill_children();
  if (sig == SIGALRM) {
    write_str("\nFAIL: test timed out after ");
    write_uint(net_timeout_s);
    write_str(" s (LK_TEST_TIMEOUT_S); spawned servers killed\n");
  } else {
    write_str("\nFAIL: fatal signal ");
    write_uint((unsigned)sig);
    write_str("; spawned servers killed\n");
  }
  /* Hand the signal to whoever had it before (the default action, or a
   * sanitizer's handler that prints a report). */
  for (int i = 0; i < RT_NET_NSIG; i++)
    if (net_signals[i] == sig)
      sigaction(sig, &net_old[i], NULL);
  errno = saved_errno;
  int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
  if (fault && info != NULL && info->si_code > 0)
    return; /* a real fault re-executes and re-raises with the old handler */
  raise(sig); /* blocked until we return, then delivered to the old action */
}

static void death_callback(void) { kill_children(); }

void rt_safety_net_install(unsigned timeout_s) {
  static int installed;
  if (!installed) {
    installed = 1;
    atexit(at_exit_kill_children);
    if (__sanitizer_set_death_callback != NULL)
      __sanitizer_set_death_callback(death_callback);
    for (int i = 0; i < RT_NET_NSIG; i++) {
      int sig = net_signals[i];
      sigaction(sig, NULL, &net_old[i]);
      /* A shell that started us with SIGINT ignored (background job) wants it
       * ignored; keep that. */
      if (net_old[i].sa_handler == SIG_IGN && (sig == SIGINT || sig == SIGHUP))
        continue;
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = net_handler;
      sa.sa_flags = SA_SIGINFO;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, NULL);
    }
  }
  net_timeout_s = timeout_s;
  alarm(timeout_s);
}

/* ---- failing ------------------------------------------------------------------------ */

__attribute__((noreturn)) static void fail_exit(void) {
  fflush(stdout);
  fflush(stderr);
  kill_children();
  exit(1); /* atexit hooks then stop servers and remove their directories */
}

void rt_fail_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: FAIL: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fail_exit();
}

void rt_fail_cmp_(const char *file, int line, const char *a_expr, const char *op,
                  const char *b_expr, int64_t a, int64_t b) {
  rt_fail_at(file, line, "expected %s %s %s\n    %s = %" PRId64 "\n    %s = %" PRId64, a_expr,
             op, b_expr, a_expr, a, b_expr, b);
}

void rt_fail_ok_(const char *file, int line, const char *expr, int64_t code) {
  const char *name = NULL;
  char buf[128];
  if (code <= -30000 && code > -31000 && lk_err_name != NULL) {
    name = lk_err_name((int)code); /* latchkey's private band */
  } else if (code < 0 && code > -4096) {
    snprintf(buf, sizeof buf, "%s", strerror((int)-code)); /* -errno, libuv codes */
    name = buf;
  }
  rt_fail_at(file, line, "expected %s == 0\n    got %" PRId64 " (%s)", expr, code,
             name ? name : "no name known");
}

int rt_streq_(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp(a, b) == 0;
}

void rt_fail_streq_(const char *file, int line, const char *a_expr, const char *b_expr,
                    const char *a, const char *b) {
  rt_fail_at(file, line, "expected %s equal to %s\n    %s = %s%s%s\n    %s = %s%s%s", a_expr,
             b_expr, a_expr, a ? "\"" : "", a ? a : "NULL", a ? "\"" : "", b_expr,
             b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
}

/* ---- timing ------------------------------------------------------------------------- */

static double timing_value = 1.0;
static pthread_once_t timing_once = PTHREAD_ONCE_INIT;

static void timing_read_env(void) {
  const char *env = getenv("LK_TEST_TIMING");
  if (env == NULL || *env == '\0')
    return;
  char *end = NULL;
  double v = strtod(env, &end);
  if (end != env && *end == '\0' && v > 0 && v <= 100)
    timing_value = v;
  else
    fprintf(stderr, "warning: ignoring LK_TEST_TIMING=\"%s\" (want a number in (0, 100])\n", env);
}

double rt_timing(void) {
  pthread_once(&timing_once, timing_read_env); /* tests call this from several threads */
  return timing_value;
}

int64_t rt_scaled_ms(int64_t ms) { return (int64_t)((double)ms * rt_timing() + 0.5); }

uint64_t rt_now_ns(void) { return uv_hrtime(); }

int64_t rt_now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }

void rt_sleep_ms(int64_t ms) {
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  /* Bounded: nanosleep leaves the remainder in ts, which only shrinks. */
  for (int i = 0; i < 1000 && nanosleep(&ts, &ts) != 0 && errno == EINTR; i++) {
  }
}

void rt_sleep_us(unsigned us) {
  struct timespec ts = {0, (long)(us % 1000000u) * 1000L};
  for (int i = 0; i < 1000 && nanosleep(&ts, &ts) != 0 && errno == EINTR; i++) {
  }
}

uint64_t rt_xorshift(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x ? x : 0x9e3779b97f4a7c15u;
}

void rt_worker_die(int index, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "worker %d (pid %d): FAIL: ", index, (int)getpid());
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  _exit(3);
}

/* ---- ports ----------------------------------------------------------------------------- */

static pthread_mutex_t port_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t port_rng;

static int ephemeral_low(void) {
  int low = 32768; /* Linux default */
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != NULL) {
    int lo = 0, hi = 0;
    if (fscanf(f, "%d %d", &lo, &hi) == 2 && lo > 0)
      low = lo;
    fclose(f);
  }
  return low;
}

static int port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

/* Fallback when the ephemeral range starts too low to leave room below it. */
static int kernel_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

int rt_pick_port(void) {
  const int base = 10000;
  int low = ephemeral_low();
  if (low - base < 1000)
    return kernel_port();
  pthread_mutex_lock(&port_mu);
  if (port_rng == 0) /* differs between parallel ctest processes */
    port_rng = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15u;
  int port = 0;
  for (int i = 0; i < 64 && port == 0; i++) {
    port_rng ^= port_rng << 13; /* xorshift64 */
    port_rng ^= port_rng >> 7;
    port_rng ^= port_rng << 17;
    int candidate = base + (int)(port_rng % (uint64_t)(low - base));
    if (port_is_free(candidate))
      port = candidate;
  }
  pthread_mutex_unlock(&port_mu);
  return port;
}

/* ---- libuv helpers -------------------------------------------------------------------- */

static void run_until_timer_cb(uv_timer_t *t) { *(int *)t->data = 1; }
static void run_until_close_cb(uv_handle_t *h) { *(int *)h->data = 1; }

/* The loop-lag probe: a repeating timer that records how late it fired. */
#define LAG_PERIOD_MS 10
typedef struct {
  uv_timer_t timer;
  int64_t due_ms;
} lag_probe_t;

static void lag_probe_cb(uv_timer_t *t) {
  lag_probe_t *p = (lag_probe_t *)t;
  int64_t now = rt_now_ms();
  if (now > p->due_ms)
    rt_stall_note_loop(p->due_ms, now);
  p->due_ms = now + LAG_PERIOD_MS;
}

void rt_run_until_at(const char *file, int line, const char *flag_expr, uv_loop_t *loop,
                     const int *flag, int64_t timeout_ms) {
  if (*flag)
    return;
  int64_t mark = rt_stall_mark();
  int64_t limit = rt_scaled_ms(timeout_ms);
  int fired = 0;
  uv_timer_t timer;
  if (uv_timer_init(loop, &timer) != 0)
    rt_fail_at(file, line, "rt_run_until: uv_timer_init failed");
  timer.data = &fired;
  uv_timer_start(&timer, run_until_timer_cb, (uint64_t)(limit > 0 ? limit : 0), 0);
  lag_probe_t lag;
  int lag_closed = 1;
  if (uv_timer_init(loop, &lag.timer) == 0) {
    lag_closed = 0;
    lag.due_ms = rt_now_ms() + LAG_PERIOD_MS;
    uv_timer_start(&lag.timer, lag_probe_cb, LAG_PERIOD_MS, LAG_PERIOD_MS);
    uv_unref((uv_handle_t *)&lag.timer);
  }
  /* The timer keeps the loop alive, so every UV_RUN_ONCE returns by the
   * deadline at the latest; the count bound only guards against a loop that
   * keeps returning without running (it would be a libuv misuse). When the
   * deadline comes while the machine stalled this process or a server, the
   * wait is extended by the longest such stall (a liveness bound, stall.h). */
  int64_t extended = 0;
  int64_t wall_deadline = rt_now_ms() + limit + 1000;
  for (long i = 0; !*flag && i < 100000000L; i++) {
    if (fired) {
      int64_t stall = rt_stall_longest_ms(mark);
      int64_t left = mark + limit + stall - rt_now_ms();
      if (stall <= extended || left <= 0)
        break;
      extended = stall;
      fired = 0;
      uv_timer_start(&timer, run_until_timer_cb, (uint64_t)left, 0);
      wall_deadline = rt_now_ms() + left + 1000;
    }
    uv_run(loop, UV_RUN_ONCE);
    if (rt_now_ms() > wall_deadline)
      break;
  }
  int done = *flag;
  int closed = 0;
  timer.data = &closed;
  uv_close((uv_handle_t *)&timer, run_until_close_cb);
  if (!lag_closed) {
    lag.timer.data = &lag_closed;
    uv_close((uv_handle_t *)&lag.timer, run_until_close_cb);
  }
  /* One pass runs the close callbacks; the bound is for safety. */
  for (int i = 0; (!closed || !lag_closed) && i < 1000; i++)
    uv_run(loop, UV_RUN_NOWAIT);
  if (!closed || !lag_closed)
    rt_fail_at(file, line, "rt_run_until: private timer did not close");
  if (!done) {
    rt_stall_print("rt_run_until", mark);
    rt_fail_at(file, line, "rt_run_until: %s still 0 after %" PRId64 " ms (%" PRId64
               " ms x timing %.2f, + %" PRId64 " ms of measured stalls)", flag_expr,
               rt_now_ms() - mark, timeout_ms, rt_timing(), extended);
  }
  if (extended > 0)
    fprintf(stderr, "%s:%d: note: wait for %s extended by %" PRId64
            " ms of measured stalls\n", file, line, flag_expr, extended);
}

static void walk_print_cb(uv_handle_t *h, void *arg) {
  (void)arg;
  fprintf(stderr, "    handle %p type=%s active=%d ref=%d closing=%d\n", (void *)h,
          uv_handle_type_name(uv_handle_get_type(h)), uv_is_active(h), uv_has_ref(h),
          uv_is_closing(h));
}

void rt_loop_close_clean_at(const char *file, int line, uv_loop_t *loop) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(2000);
  for (int i = 0; i < 10000; i++) {
    uv_run(loop, UV_RUN_NOWAIT);
    if (uv_loop_close(loop) == 0)
      return; /* EBUSY has no side effects, so trying every pass is fine */
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(2);
  }
  fprintf(stderr, "%s:%d: loop still has handles or requests (active reqs %u):\n", file, line,
          loop->active_reqs.count);
  uv_walk(loop, walk_print_cb, NULL);
  rt_fail_at(file, line, "rt_loop_close_clean: uv_loop_close() == UV_EBUSY");
}
