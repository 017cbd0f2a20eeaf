/* The stall monitor (stall.h): one probe thread, a small log of stalls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "stall.h"

#include "common_schedstat.h"

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PROBE_NS 5000000L       /* the probe thread's sleep */
#define SERVER_EVERY 4          /* read the children's schedstat every 4th wake */
#define MIN_STALL_MS 10         /* shorter ones are noise, not recorded */
#define LOG_SIZE 16384          /* a ring: a minute of a busy machine's 10 ms stalls */
#define MAX_WATCHED 128

enum { KIND_PROCESS, KIND_SERVER, KIND_LOOP };

typedef struct {
  int64_t end_ms, dur_ms;
  pid_t pid;
  int kind;
} stall_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* Held by the probe thread whenever it is awake, and by a fork (fork_prepare):
 * GCC 12's ASan does not lock its allocator at fork, so a worker forked while
 * the probe was inside the allocator (its thread start allocates) found the
 * allocator's lock taken and hung at its exit's leak check. */
static pthread_mutex_t awake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t probe_started_cv = PTHREAD_COND_INITIALIZER;
static int probe_started;
static stall_t log_ring[LOG_SIZE];
static unsigned log_next;
static int64_t probe_last_wake_ms; /* for a process stall still going on */
static int excused;
static pid_t monitor_pid; /* a forked child inherits the log, not the thread */

/* Per child: its run-queue wait at the last read, and the stall run that is
 * being accumulated. Only the probe thread writes them; pid and run_ms,
 * which readers look at, are written under mu. */
typedef struct {
  pid_t pid;
  uint64_t delay_ns;
  int64_t at_ms;
  int64_t run_ms; /* waiting so far in the current run, 0: none */
} watched_t;
static watched_t watched[MAX_WATCHED];

static void record(int kind, pid_t pid, int64_t end_ms, int64_t dur_ms) {
  if (dur_ms < MIN_STALL_MS)
    return;
  pthread_mutex_lock(&mu);
  log_ring[log_next % LOG_SIZE] = (stall_t){end_ms, dur_ms, pid, kind};
  log_next++;
  pthread_mutex_unlock(&mu);
}

void rt_stall_inject(int64_t end_ms, int64_t dur_ms) {
  record(KIND_PROCESS, 0, end_ms, dur_ms);
}

void rt_stall_note_loop(int64_t start_ms, int64_t end_ms) {
  record(KIND_LOOP, 0, end_ms, end_ms - start_ms);
}

static void end_run(watched_t *w) {
  if (w->run_ms > 0)
    record(KIND_SERVER, w->pid, w->at_ms, w->run_ms);
  pthread_mutex_lock(&mu);
  w->run_ms = 0;
  pthread_mutex_unlock(&mu);
}

/* A window in which a child waited at least half the time continues a run;
 * anything else ends it. */
static void read_children(void) {
  pid_t pids[MAX_WATCHED];
  int n = rt_child_pids(pids, MAX_WATCHED);
  int64_t now = rt_now_ms();
  for (int i = 0; i < MAX_WATCHED; i++) { /* forget children no longer tracked */
    int live = 0;
    for (int j = 0; j < n && !live; j++)
      live = watched[i].pid == pids[j];
    if (watched[i].pid != 0 && !live) {
      end_run(&watched[i]);
      pthread_mutex_lock(&mu); /* readers look at pid and run_ms */
      watched[i].pid = 0;
      pthread_mutex_unlock(&mu);
    }
  }
  for (int j = 0; j < n; j++) {
    watched_t *w = NULL, *free_slot = NULL;
    for (int i = 0; i < MAX_WATCHED && w == NULL; i++) {
      if (watched[i].pid == pids[j])
        w = &watched[i];
      else if (watched[i].pid == 0 && free_slot == NULL)
        free_slot = &watched[i];
    }
    uint64_t delay = 0;
    if (rt_read_run_delay(pids[j], &delay) != 0)
      continue;
    if (w == NULL) {
      if (free_slot == NULL)
        continue;
      pthread_mutex_lock(&mu);
      *free_slot = (watched_t){pids[j], delay, now, 0};
      pthread_mutex_unlock(&mu);
      continue;
    }
    int64_t window = now - w->at_ms;
    int64_t waited = (int64_t)((delay - w->delay_ns) / 1000000u);
    if (delay < w->delay_ns) /* a new process under a reused pid */
      waited = 0;
    w->delay_ns = delay;
    w->at_ms = now;
    if (window > 0 && waited * 2 >= window && waited >= 2) {
      pthread_mutex_lock(&mu);
      w->run_ms += waited;
      pthread_mutex_unlock(&mu);
    } else {
      end_run(w);
    }
  }
}

/* Under ThreadSanitizer the servers are not probed: each read opens and
 * closes a /proc file from this thread, and TSan reports the descriptor's
 * number, reused by the test's own thread (a uv loop's epoll fd), as a data
 * race. The TSan lane checks threads, not timing; the process probe, which
 * only sleeps, still runs there. */
#if defined(__SANITIZE_THREAD__)
#define PROBE_SERVERS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROBE_SERVERS 0
#endif
#endif
#ifndef PROBE_SERVERS
#define PROBE_SERVERS 1
#endif

static void *probe_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&awake_mu); /* the sanitizer's thread start is behind us */
  pthread_mutex_lock(&mu);
  probe_started = 1;
  pthread_cond_signal(&probe_started_cv);
  pthread_mutex_unlock(&mu);
  for (unsigned wake = 0;; wake++) {
    int64_t before_ns = (int64_t)rt_now_ns();
    struct timespec ts = {0, PROBE_NS};
    pthread_mutex_unlock(&awake_mu);
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
    pthread_mutex_lock(&awake_mu);
    int64_t after_ns = (int64_t)rt_now_ns();
    int64_t over_ms = (after_ns - before_ns - PROBE_NS) / 1000000;
    record(KIND_PROCESS, 0, after_ns / 1000000, over_ms);
    pthread_mutex_lock(&mu);
    probe_last_wake_ms = after_ns / 1000000;
    pthread_mutex_unlock(&mu);
    if (PROBE_SERVERS && wake % SERVER_EVERY == 0)
      read_children();
  }
  return NULL;
}

/* Workers are forked while the probe thread runs: a fork taken while it
 * held mu would leave the child's copy locked for good, and the child's
 * first rt_run_until would hang; one taken while it was awake could find it
 * inside the allocator (awake_mu above). Holding both across the fork rules
 * that out. */
static void fork_prepare(void) {
  pthread_mutex_lock(&awake_mu);
  pthread_mutex_lock(&mu);
}
static void fork_done(void) {
  pthread_mutex_unlock(&mu);
  pthread_mutex_unlock(&awake_mu);
}

void rt_stall_monitor_start(void) {
  static int started;
  pthread_mutex_lock(&mu);
  int first = !started;
  started = 1;
  probe_last_wake_ms = rt_now_ms();
  monitor_pid = getpid();
  pthread_mutex_unlock(&mu);
  if (!first)
    return;
  pthread_atfork(fork_prepare, fork_done, fork_done);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  if (pthread_create(&t, &attr, probe_main, NULL) != 0) {
    fprintf(stderr, "warning: stall monitor thread not started; stalls read as 0\n");
  } else {
    /* Wait (bounded) until the thread runs our code: until then it may be
     * inside the allocator, and the test's first act may be a fork. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 1000 && !probe_started; i++)
      if (pthread_cond_timedwait(&probe_started_cv, &mu, &until) == ETIMEDOUT)
        break;
    pthread_mutex_unlock(&mu);
  }
  pthread_attr_destroy(&attr);
}

int64_t rt_stall_mark(void) { return rt_now_ms(); }

void rt_stall_since(int64_t mark, rt_stalls_t *out) {
  *out = (rt_stalls_t){0, 0, 0, 0};
  int64_t now = rt_now_ms();
  pthread_mutex_lock(&mu);
  unsigned n = log_next < LOG_SIZE ? log_next : LOG_SIZE;
  for (unsigned i = 0; i < n; i++) {
    const stall_t *s = &log_ring[(log_next - 1 - i) % LOG_SIZE];
    if (s->end_ms < mark)
      continue;
    if (s->kind == KIND_PROCESS && s->dur_ms > out->process_ms)
      out->process_ms = s->dur_ms;
    if (s->kind == KIND_LOOP && s->dur_ms > out->loop_ms)
      out->loop_ms = s->dur_ms;
    if (s->kind == KIND_SERVER && s->dur_ms > out->server_ms) {
      out->server_ms = s->dur_ms;
      out->server_pid = s->pid;
    }
  }
  /* Stalls still going on: the probe has not woken for a while, or a child
   * is in the middle of a run. */
  int64_t ongoing = now - probe_last_wake_ms - PROBE_NS / 1000000;
  if (monitor_pid != getpid()) /* no probe runs here: nothing is going on */
    ongoing = 0;
  if (probe_last_wake_ms > 0 && ongoing >= MIN_STALL_MS && ongoing > out->process_ms)
    out->process_ms = ongoing;
  for (int i = 0; i < MAX_WATCHED; i++) {
    if (watched[i].pid != 0 && watched[i].run_ms >= MIN_STALL_MS &&
        watched[i].run_ms > out->server_ms) {
      out->server_ms = watched[i].run_ms;
      out->server_pid = watched[i].pid;
    }
  }
  pthread_mutex_unlock(&mu);
}

int64_t rt_stall_longest_between(int64_t from_ms, int64_t to_ms) {
  int64_t longest = 0;
  pthread_mutex_lock(&mu);
  /* A process stall the probe has not woken from yet: when the machine
   * lets the process run again, the test's thread may read this before the
   * probe thread records it (seen beside tools/load.sh: a call ended 500 ms
   * late at the end of a 540 ms stall read as 25 ms). */
  int64_t ongoing = rt_now_ms() - probe_last_wake_ms - PROBE_NS / 1000000;
  if (monitor_pid == getpid() && probe_last_wake_ms > 0 && ongoing >= MIN_STALL_MS &&
      probe_last_wake_ms <= to_ms)
    longest = ongoing;
  unsigned n = log_next < LOG_SIZE ? log_next : LOG_SIZE;
  for (unsigned i = 0; i < n; i++) {
    const stall_t *s = &log_ring[(log_next - 1 - i) % LOG_SIZE];
    if (s->kind != KIND_LOOP && s->end_ms >= from_ms && s->end_ms - s->dur_ms <= to_ms &&
        s->dur_ms > longest)
      longest = s->dur_ms;
  }
  pthread_mutex_unlock(&mu);
  return longest;
}

int64_t rt_stall_longest_ms(int64_t mark) {
  rt_stalls_t s;
  rt_stall_since(mark, &s);
  return s.process_ms > s.server_ms ? s.process_ms : s.server_ms;
}

int64_t rt_stall_bound_ms(int64_t mark, int64_t ms) {
  return rt_scaled_ms(ms) + rt_stall_longest_ms(mark);
}

int rt_stall_expired(int64_t mark, int64_t ms) {
  int64_t now = rt_now_ms();
  if (now <= mark + rt_scaled_ms(ms))
    return 0; /* the common case reads no stalls */
  return now > mark + rt_stall_bound_ms(mark, ms);
}

void rt_stall_print(const char *what, int64_t mark) {
  rt_stalls_t s;
  rt_stall_since(mark, &s);
  fprintf(stderr,
          "%s: stalls in the last %" PRId64 " ms: process %" PRId64 " ms, server %" PRId64
          " ms (pid %d), loop %" PRId64 " ms\n",
          what, rt_now_ms() - mark, s.process_ms, s.server_ms, (int)s.server_pid, s.loop_ms);
}

int rt_hold_excused_at(const char *file, int line, const char *expr, int64_t mark,
                       int64_t slack_ms) {
  rt_stalls_t s;
  rt_stall_since(mark, &s);
  /* A renewal's round trip crosses both: the test process sends it late
   * and a stalled server answers it late, so the two longest stalls may
   * add up on one renewal (seen beside tools/load.sh: process 544 ms and
   * server 480 ms took a hold with a 600 ms slack). */
  int64_t longest = s.process_ms + s.server_ms;
  if (longest <= slack_ms)
    rt_fail_at(file, line,
               "hold expectation %s failed; machine stalls %" PRId64
               " ms (process %" PRId64 ", server %" PRId64 ", loop %" PRId64
               ") is within the slack of %" PRId64 " ms",
               expr, longest, s.process_ms, s.server_ms, s.loop_ms, slack_ms);
  pthread_mutex_lock(&mu);
  excused++;
  pthread_mutex_unlock(&mu);
  fprintf(stderr,
          "%s:%d: EXCUSED: %s failed while the machine stalled the test process and "
          "its server for %" PRId64 " ms in all (slack %" PRId64 " ms; process %" PRId64
          " ms, server %" PRId64 " ms pid %d, loop %" PRId64 " ms)\n",
          file, line, expr, longest, slack_ms, s.process_ms, s.server_ms, (int)s.server_pid,
          s.loop_ms);
  return 1;
}

int rt_hold_expect_at(const char *file, int line, const char *expr, int holds, int64_t mark,
                      int64_t slack_ms) {
  if (holds)
    return 1;
  rt_hold_excused_at(file, line, expr, mark, slack_ms);
  return 0;
}

int rt_stall_excused_count(void) {
  pthread_mutex_lock(&mu);
  int n = excused;
  pthread_mutex_unlock(&mu);
  return n;
}
