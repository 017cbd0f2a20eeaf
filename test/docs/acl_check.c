/* acl_check HOST:PORT USER PASSWORD PREFIX [DB]
 *
 * Proves an ACL recipe (docs/client.md, "ACL") is enough: logged in as USER,
 * it runs every verb of every primitive on names starting with PREFIX (a
 * plain name and one with a hash tag), with waiters woken by pub/sub, fenced
 * grants, watchdog renewals, the pub/sub heartbeat, SELECT DB (default 1)
 * and a script cache flushed behind the client's back (the EVAL fallback),
 * and reads them as `latchkey inspect`, `list` and `ping` do.
 * Any status but the expected one, or any warning or error the library
 * logs, fails it (exit 1). tools/check-docs.sh runs it right after the
 * page's recipe has made the user on a private server; a standalone
 * connection as the default user flushes the script cache.
 *
 * Sequential on purpose: each step starts one operation and runs the loop
 * until its callback (bounded), so the program reads as the list of what a
 * user of the recipe may do. Standalone servers only (the cluster commands
 * the page lists cannot be exercised here). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <latchkey.h>

#include "../harness/common_schedstat.h"

#define STEP_MS 10000 /* the longest one step may take */
#define WAIT_MS 5000  /* a waiter's budget: it is woken long before */
/* The client's default lease, renewed every 500 ms. What is checked here is
 * the recipe's permissions, not timing: the lease leaves 1 s of slack, as a
 * CI box under load needs (a run beside tools/load.sh lost a 600 ms lease
 * after a measured stall of 378 ms, the server slowed on top of it). */
#define LEASE_MS 1500
#define RENEWALS_MS 1100 /* long enough for two renewals */
/* What a renewal leaves of the lease: a machine that stops this process
 * for longer may take a hold (docs/reliability.md, "Tests on a loaded
 * machine"). */
#define SLACK_MS (LEASE_MS - LEASE_MS / 3)

static uv_loop_t loop;
static lk_client_t *client;
static int failures;
static const char *g_host;
static int g_port;
static char g_step[160];

/* ---- what the machine did to this process and its server ---------------------
 * A thread sleeps 5 ms at a time and keeps the longest oversleep (the whole
 * process was starved), and every 20 ms reads the server's run-queue wait
 * from /proc/<pid>/schedstat: consecutive windows in which the server
 * waited at least half the time make one stall. The harness's stall monitor
 * does the same (test/harness/stall.h); this program runs outside the
 * harness, beside a server check-docs.sh started. */

static pthread_mutex_t stall_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t stall_longest_ms;
static int64_t stall_last_wake_ms; /* for a stall still going on */
static int g_server_pid; /* 0: not known (INFO refused): process stalls only */

static void stall_note(int64_t ms) {
  pthread_mutex_lock(&stall_mu);
  if (ms > stall_longest_ms)
    stall_longest_ms = ms;
  pthread_mutex_unlock(&stall_mu);
}

/* The server's run-queue wait so far, in ms (-1: not readable). */
static int64_t server_wait_ms(void) {
  uint64_t waiting;
  if (g_server_pid <= 0 || rt_read_run_delay(g_server_pid, &waiting) != 0)
    return -1;
  return (int64_t)(waiting / 1000000u);
}

static void *stall_probe(void *arg) {
  (void)arg;
  int64_t last_wait = -1, last_at = 0, run = 0;
  for (unsigned wake = 0;; wake++) {
    uint64_t before = uv_hrtime();
    usleep(5000);
    int64_t now = (int64_t)(uv_hrtime() / 1000000u);
    stall_note(now - (int64_t)(before / 1000000u) - 5);
    pthread_mutex_lock(&stall_mu);
    stall_last_wake_ms = now;
    pthread_mutex_unlock(&stall_mu);
    if (wake % 4 != 0)
      continue;
    int64_t wait = server_wait_ms();
    if (wait >= 0 && last_wait >= 0 && wait >= last_wait) {
      int64_t waited = wait - last_wait, window = now - last_at;
      run = window > 0 && waited * 2 >= window ? run + waited : 0;
      stall_note(run);
    }
    last_wait = wait;
    last_at = now;
  }
  return NULL;
}

/* The server's pid, from INFO as the default user (0 when refused). */
static int server_pid(void) {
  struct timeval tv = {2, 0};
  redisContext *rc = redisConnectWithTimeout(g_host, g_port, tv);
  redisReply *r = NULL;
  int pid = 0;
  if (rc != NULL && rc->err == 0 && (r = redisCommand(rc, "INFO server")) != NULL &&
      r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "process_id:");
    if (p != NULL)
      pid = atoi(p + strlen("process_id:"));
  }
  if (r != NULL)
    freeReplyObject(r);
  if (rc != NULL)
    redisFree(rc);
  return pid;
}

/* The longest stall so far, including one still going on: after a stall
 * the loop's thread may report the loss it caused before the probe thread
 * has woken to record it. */
static int64_t stall_longest(void) {
  int64_t now = (int64_t)(uv_hrtime() / 1000000u);
  pthread_mutex_lock(&stall_mu);
  int64_t v = stall_longest_ms;
  if (stall_last_wake_ms > 0 && now - stall_last_wake_ms - 5 > v)
    v = now - stall_last_wake_ms - 5;
  pthread_mutex_unlock(&stall_mu);
  return v;
}

/* A failure that says a hold was lost (a loss the library logged, a call
 * ending LK_ELEASELOST, a hold not renewed) is the machine's doing, not the
 * recipe's, when this process or its server was stalled for longer than
 * SLACK_MS (at any time so far: the probe keeps no history): it is
 * printed as EXCUSED, and so is every later failure of the same object
 * (its steps relied on the hold). A denied command (NOPERM), the thing this
 * program looks for, is never excused. */
static char g_excused_object[160];
static int g_excused;

static int excused(const char *msg) {
  if (strstr(msg, "NOPERM") != NULL)
    return 0;
  const char *sep = strstr(g_step, ": ");
  size_t len = sep != NULL ? (size_t)(sep - g_step) : strlen(g_step);
  if (g_excused_object[0] != '\0' && strlen(g_excused_object) == len &&
      strncmp(g_step, g_excused_object, len) == 0)
    return 1;
  int loss = strstr(msg, "lost") != NULL || strstr(msg, "LEASELOST") != NULL ||
             strstr(msg, "not renewed") != NULL;
  if (!loss || stall_longest() <= SLACK_MS)
    return 0;
  snprintf(g_excused_object, sizeof g_excused_object, "%.*s", (int)len, g_step);
  return 1;
}

static void fail(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (excused(msg)) {
    g_excused++;
    fprintf(stderr,
            "acl_check: EXCUSED (%s): %s (this process or its server was stalled for %lld ms, "
            "longer than the %d ms a renewal leaves of the lease; server pid %d)\n",
            g_step, msg, (long long)stall_longest(), SLACK_MS, g_server_pid);
    return;
  }
  fprintf(stderr, "acl_check: FAIL (%s): %s (longest stall so far %lld ms; server pid %d)\n",
          g_step, msg, (long long)stall_longest(), g_server_pid);
  /* A recipe that misses something fails many steps, each after a wait:
   * stop early, the first failures say what is missing. */
  if (++failures >= 5) {
    fprintf(stderr, "acl_check: stopping after %d failures\n", failures);
    exit(1);
  }
}

/* Every warning or error the library logs means something was denied or
 * went wrong: the recipe must leave the log silent. */
static void on_log(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level >= LK_LOG_WARN)
    fail("library logged: %s", msg);
}

/* ---- one operation's outcome, and running the loop until it is in --------- */

typedef struct {
  int done, calls, status;
  int64_t result;
  char text[256];
} res_t;

static void res_set(res_t *r, int status, int64_t result, const char *text) {
  if (++r->calls > 1)
    fail("a callback ran twice");
  r->done = 1;
  r->status = status;
  r->result = result;
  snprintf(r->text, sizeof r->text, "%s", text != NULL ? text : "");
}

#define RES_CB(T)                                                              \
  static void T##_cb(lk_##T##_t *x, int st, void *a) {                         \
    res_set(a, st, lk_##T##_result(x), lk_##T##_error_text(x));                \
  }
RES_CB(lock)
RES_CB(fair)
RES_CB(rwlock)
RES_CB(semaphore)
RES_CB(psem)
RES_CB(latch)
static void leader_cb(lk_leader_t *x, int st, void *a) {
  res_set(a, st, lk_leader_term(x), lk_leader_error_text(x));
}
RES_CB(ratelimiter)
static void barrier_cb(lk_barrier_t *x, int st, void *a) {
  res_set(a, st, lk_barrier_round(x), lk_barrier_error_text(x));
}
static void multilock_cb(lk_multilock_t *x, int st, void *a) {
  res_set(a, st, lk_multilock_hold_count(x), "");
}
static void redlock_cb(lk_redlock_t *x, int st, void *a) {
  res_set(a, st, lk_redlock_token(x), "");
}

static uv_timer_t ticker; /* bounds every uv_run(UV_RUN_ONCE) below */
static void on_tick(uv_timer_t *t) { (void)t; }

static int64_t now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }

/* Runs the loop until *flag, at most ms. */
static int run_until(const int *flag, int64_t ms) {
  int64_t end = now_ms() + ms;
  while (!*flag && now_ms() < end)
    uv_run(&loop, UV_RUN_ONCE);
  return *flag;
}

/* Runs the loop for ms, so background work (renewals, heartbeats) happens. */
static void spin(int64_t ms) {
  int never = 0;
  run_until(&never, ms);
}

/* Renewals touch the keys their grant made, so the first round (a plain
 * name) proves them; the second (a hash-tagged name) does not wait again. */
static int g_first_round = 1;

/* Holds are kept across watchdog renewals: at least one is confirmed. */
static void spin_renewals(void) {
  lk_client_stats_t before, after;
  if (!g_first_round)
    return;
  lk_client_get_stats(client, &before);
  spin(RENEWALS_MS);
  lk_client_get_stats(client, &after);
  if (after.renewals == before.renewals)
    fail("no renewal in %d ms", RENEWALS_MS);
}

/* Leases of their own (a leader's, a barrier member's) are not watchdog
 * renewals: outliving the lease shows they are renewed (a denied renewal
 * would lose it, and the loss is logged). */
static void spin_past_lease(void) {
  if (g_first_round)
    spin(LEASE_MS + LEASE_MS / 3);
}

static void step(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_step, sizeof g_step, fmt, ap);
  va_end(ap);
}

/* Starts an operation (rc is what its call returned) into *r, which the
 * caller cleared, and checks it ends with want. */
static int expect(int rc, res_t *r, int want) {
  if (rc < 0) {
    fail("the call returned %s", lk_err_name(rc));
    return 0;
  }
  if (!run_until(&r->done, STEP_MS)) {
    fail("no callback within %d ms", STEP_MS);
    return 0;
  }
  if (r->status != want) {
    fail("ended %s (%s), want %s", lk_err_name(r->status), r->text, lk_err_name(want));
    return 0;
  }
  return 1;
}

#define RUN(call_expr, r, want) (memset((r), 0, sizeof *(r)), expect((call_expr), (r), (want)))

static void check_result(const res_t *r, int64_t want) {
  if (r->result != want)
    fail("result %lld, want %lld", (long long)r->result, (long long)want);
}

/* A waiter started earlier (its rc checked) must still be waiting. */
static void still_waiting(const res_t *r) {
  if (r->done)
    fail("the waiter ended early: %s (%s)", lk_err_name(r->status), r->text);
}

/* ---- inspection: lk_inspect, lk_list, lk_ping (include/latchkey/inspect.h) ---- */

static void on_inspect(lk_client_t *c, int status, const lk_inspect_t *info, void *arg) {
  (void)c;
  (void)info;
  res_set(arg, status, 0, "");
}

/* Reads NAME as `latchkey inspect` does, while it is held or queued. */
static void inspect_now(const char *name) {
  res_t r;
  char was[sizeof g_step];
  snprintf(was, sizeof was, "%s", g_step);
  step("inspect %s", name);
  RUN(lk_inspect(client, name, on_inspect, &r), &r, 0);
  snprintf(g_step, sizeof g_step, "%s", was);
}

typedef struct {
  res_t r;
  char cursor[64];
  size_t entries;
} list_t;

static void on_list(lk_client_t *c, int status, const lk_list_entry_t *e, size_t n,
                    const char *next, void *arg) {
  list_t *l = arg;
  (void)c;
  (void)e;
  l->entries += n;
  snprintf(l->cursor, sizeof l->cursor, "%s", next != NULL ? next : "0");
  res_set(&l->r, status, 0, "");
}

static void on_ping(lk_client_t *c, int status, const lk_ping_t *info, void *arg) {
  (void)c;
  (void)info;
  res_set(arg, status, 0, "");
}

/* Lists every name under prefix (a whole SCAN, bounded) and pings. */
static void list_and_ping(const char *prefix) {
  char pattern[300];
  list_t l;
  res_t r;
  int steps = 0;
  snprintf(pattern, sizeof pattern, "%s*", prefix);
  step("list %s, ping", pattern);
  memset(&l, 0, sizeof l);
  snprintf(l.cursor, sizeof l.cursor, "0");
  do {
    memset(&l.r, 0, sizeof l.r);
    if (!expect(lk_list(client, pattern, l.cursor, 100, on_list, &l), &l.r, 0))
      return;
  } while (strcmp(l.cursor, "0") != 0 && ++steps < 1000);
  RUN(lk_ping(client, on_ping, &r), &r, 0);
}

/* ---- closing ------------------------------------------------------------------ */

static int open_objects, all_closed;
static void closed_one(void) { all_closed = --open_objects == 0; }
#define CLOSED_CB(T)                                                           \
  static void T##_closed(lk_##T##_t *x) {                                      \
    (void)x;                                                                   \
    closed_one();                                                              \
  }
CLOSED_CB(lock)
CLOSED_CB(fair)
CLOSED_CB(rwlock)
CLOSED_CB(semaphore)
CLOSED_CB(psem)
CLOSED_CB(latch)
CLOSED_CB(multilock)
CLOSED_CB(redlock)
CLOSED_CB(leader)
CLOSED_CB(ratelimiter)
CLOSED_CB(barrier)

static void close_checked(int rc) {
  if (rc < 0)
    fail("close returned %s", lk_err_name(rc));
  else
    open_objects++;
}

static void wait_closed(void) {
  if (open_objects > 0 && !run_until(&all_closed, STEP_MS))
    fail("%d objects did not close", open_objects);
  open_objects = 0;
  all_closed = 0;
}

/* ---- the verbs, primitive by primitive ------------------------------------------ */

static void lock_verbs(const char *base) {
  char name[256];
  lk_lock_t *a, *b;
  lk_lock_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%slock", base);
  step("lock %s: new", name);
  if (lk_lock_new(client, name, &a) < 0 || lk_lock_new(client, name, &b) < 0) {
    fail("lk_lock_new");
    return;
  }
  step("lock %s: fenced acquire (token counter seeded from TIME)", name);
  lk_lock_opts_init(&o);
  o.fenced = 1;
  if (RUN(lk_lock_acquire(a, &o, lock_cb, &r), &r, 0) && lk_lock_token(a) <= 0)
    fail("token %lld", (long long)lk_lock_token(a));
  step("lock %s: a second owner waits (subscribes)", name);
  lk_lock_opts_init(&o);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_lock_acquire(b, &o, lock_cb, &w) < 0)
    fail("waiter's acquire refused");
  step("lock %s: queries while held", name);
  if (RUN(lk_lock_is_locked(a, lock_cb, &r), &r, 0))
    check_result(&r, 1);
  if (RUN(lk_lock_remaining_ttl(a, lock_cb, &r), &r, 0) && r.result <= 0)
    fail("remaining ttl %lld", (long long)r.result);
  if (RUN(lk_lock_server_hold_count(a, lock_cb, &r), &r, 0))
    check_result(&r, 1);
  inspect_now(name);
  step("lock %s: held across renewals", name);
  spin_renewals();
  if (!lk_lock_is_held(a))
    fail("the hold was not renewed");
  still_waiting(&w);
  step("lock %s: release wakes the waiter", name);
  if (RUN(lk_lock_release(a, lock_cb, &r), &r, 0))
    check_result(&r, 1);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the waiter ended %s (%s)", lk_err_name(w.status), w.text);
  step("lock %s: release, then force release of a free lock", name);
  RUN(lk_lock_release(b, lock_cb, &r), &r, 0);
  if (RUN(lk_lock_force_release(a, lock_cb, &r), &r, 0))
    check_result(&r, 0);
  step("lock %s: fixed lease", name);
  lk_lock_opts_init(&o);
  o.lease_ms = 5000;
  RUN(lk_lock_acquire(a, &o, lock_cb, &r), &r, 0);
  RUN(lk_lock_release(a, lock_cb, &r), &r, 0);
  close_checked(lk_lock_close(a, lock_closed));
  close_checked(lk_lock_close(b, lock_closed));
  wait_closed();
}

static void on_queued(lk_fair_t *f, int status, void *arg) {
  (void)f;
  (void)status;
  *(int *)arg = 1;
}

static void fair_verbs(const char *base) {
  char name[256];
  lk_fair_t *a, *b;
  lk_fair_opts_t o;
  res_t r, w;
  int queued = 0;
  snprintf(name, sizeof name, "%sfair", base);
  step("fair %s: new", name);
  if (lk_fair_new(client, name, &a) < 0 || lk_fair_new(client, name, &b) < 0) {
    fail("lk_fair_new");
    return;
  }
  step("fair %s: fenced acquire", name);
  lk_fair_opts_init(&o);
  o.fenced = 1;
  RUN(lk_fair_acquire(a, &o, fair_cb, &r), &r, 0);
  step("fair %s: a waiter queues and refreshes its place", name);
  lk_fair_opts_init(&o);
  o.wait_ms = WAIT_MS;
  o.waiter_timeout_ms = LEASE_MS; /* refreshed every 500 ms */
  lk_fair_set_queue_cb(b, on_queued, &queued);
  memset(&w, 0, sizeof w);
  if (lk_fair_acquire(b, &o, fair_cb, &w) < 0)
    fail("waiter's acquire refused");
  if (!run_until(&queued, STEP_MS))
    fail("the waiter never queued");
  step("fair %s: queries while held", name);
  if (RUN(lk_fair_queue_length(a, fair_cb, &r), &r, 0))
    check_result(&r, 1);
  if (RUN(lk_fair_is_locked(a, fair_cb, &r), &r, 0))
    check_result(&r, 1);
  RUN(lk_fair_remaining_ttl(a, fair_cb, &r), &r, 0);
  if (RUN(lk_fair_server_hold_count(a, fair_cb, &r), &r, 0))
    check_result(&r, 1);
  inspect_now(name);
  step("fair %s: held and queued across renewals", name);
  spin_renewals();
  still_waiting(&w);
  step("fair %s: release hands the lock to the waiter", name);
  RUN(lk_fair_release(a, fair_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the waiter ended %s (%s)", lk_err_name(w.status), w.text);
  step("fair %s: a canceled waiter leaves the queue", name);
  lk_fair_set_queue_cb(b, NULL, NULL);
  lk_fair_opts_init(&o);
  o.wait_ms = WAIT_MS;
  memset(&r, 0, sizeof r);
  if (lk_fair_acquire(a, &o, fair_cb, &r) < 0)
    fail("second waiter's acquire refused");
  spin(100);
  if (lk_fair_cancel(a) < 0)
    fail("cancel refused");
  if (!run_until(&r.done, STEP_MS) || r.status != LK_ECANCELED)
    fail("the canceled waiter ended %s", lk_err_name(r.status));
  step("fair %s: release, force release", name);
  RUN(lk_fair_release(b, fair_cb, &r), &r, 0);
  RUN(lk_fair_force_release(a, fair_cb, &r), &r, 0);
  close_checked(lk_fair_close(a, fair_closed));
  close_checked(lk_fair_close(b, fair_closed));
  wait_closed();
}

static void rwlock_verbs(const char *base) {
  char name[256];
  lk_rwlock_t *a, *b;
  lk_rwlock_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%srw", base);
  step("rwlock %s: new", name);
  if (lk_rwlock_new(client, name, &a) < 0 || lk_rwlock_new(client, name, &b) < 0) {
    fail("lk_rwlock_new");
    return;
  }
  step("rwlock %s: fenced write, then read under it", name);
  lk_rwlock_opts_init(&o);
  o.fenced = 1;
  RUN(lk_rwlock_acquire(a, LK_RW_WRITE, &o, rwlock_cb, &r), &r, 0);
  RUN(lk_rwlock_acquire(a, LK_RW_READ, &o, rwlock_cb, &r), &r, 0);
  step("rwlock %s: a writer waits", name);
  lk_rwlock_opts_init(&o);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_rwlock_acquire(b, LK_RW_WRITE, &o, rwlock_cb, &w) < 0)
    fail("waiter's acquire refused");
  step("rwlock %s: queries", name);
  if (RUN(lk_rwlock_mode(a, rwlock_cb, &r), &r, 0))
    check_result(&r, LK_RW_WRITE);
  RUN(lk_rwlock_remaining_ttl(a, rwlock_cb, &r), &r, 0);
  if (RUN(lk_rwlock_server_hold_count(a, LK_RW_READ, rwlock_cb, &r), &r, 0))
    check_result(&r, 1);
  inspect_now(name);
  step("rwlock %s: both sides held across renewals", name);
  spin_renewals();
  if (!lk_rwlock_is_held(a, LK_RW_WRITE) || !lk_rwlock_is_held(a, LK_RW_READ))
    fail("the holds were not renewed");
  step("rwlock %s: downgrade, then the last read release wakes the writer", name);
  RUN(lk_rwlock_release(a, LK_RW_WRITE, rwlock_cb, &r), &r, 0);
  still_waiting(&w);
  RUN(lk_rwlock_release(a, LK_RW_READ, rwlock_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the waiter ended %s (%s)", lk_err_name(w.status), w.text);
  RUN(lk_rwlock_release(b, LK_RW_WRITE, rwlock_cb, &r), &r, 0);
  step("rwlock %s: the last live reader leaves beside a dead one (the scan)", name);
  lk_rwlock_opts_init(&o);
  RUN(lk_rwlock_acquire(a, LK_RW_READ, &o, rwlock_cb, &r), &r, 0);
  o.lease_ms = 100; /* b's read hold expires on the server: a dead reader */
  RUN(lk_rwlock_acquire(b, LK_RW_READ, &o, rwlock_cb, &r), &r, 0);
  spin(300);
  RUN(lk_rwlock_release(a, LK_RW_READ, rwlock_cb, &r), &r, 0);
  if (RUN(lk_rwlock_mode(a, rwlock_cb, &r), &r, 0))
    check_result(&r, 0);
  step("rwlock %s: force release", name);
  RUN(lk_rwlock_force_release(a, rwlock_cb, &r), &r, 0);
  close_checked(lk_rwlock_close(a, rwlock_closed));
  close_checked(lk_rwlock_close(b, rwlock_closed));
  wait_closed();
}

static void semaphore_verbs(const char *base) {
  char name[256];
  lk_semaphore_t *a, *b;
  lk_semaphore_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%ssem", base);
  step("semaphore %s: new, set 1 permit, acquire it", name);
  if (lk_semaphore_new(client, name, &a) < 0 || lk_semaphore_new(client, name, &b) < 0) {
    fail("lk_semaphore_new");
    return;
  }
  if (RUN(lk_semaphore_try_set_permits(a, 1, semaphore_cb, &r), &r, 0))
    check_result(&r, 1);
  RUN(lk_semaphore_try_acquire(a, 1, semaphore_cb, &r), &r, 0);
  inspect_now(name);
  step("semaphore %s: a waiter, the count, a release that wakes it", name);
  lk_semaphore_opts_init(&o);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_semaphore_acquire(b, &o, semaphore_cb, &w) < 0)
    fail("waiter's acquire refused");
  spin(100);
  if (RUN(lk_semaphore_available(a, semaphore_cb, &r), &r, 0))
    check_result(&r, 0);
  RUN(lk_semaphore_release(a, 1, semaphore_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the waiter ended %s (%s)", lk_err_name(w.status), w.text);
  step("semaphore %s: add, drain, release, release unheld", name);
  if (RUN(lk_semaphore_add_permits(a, 2, semaphore_cb, &r), &r, 0))
    check_result(&r, 2);
  if (RUN(lk_semaphore_drain(a, semaphore_cb, &r), &r, 0))
    check_result(&r, 2);
  RUN(lk_semaphore_release(a, 2, semaphore_cb, &r), &r, 0);
  RUN(lk_semaphore_release(b, 1, semaphore_cb, &r), &r, 0);
  RUN(lk_semaphore_release_unheld(a, 1, semaphore_cb, &r), &r, 0);
  close_checked(lk_semaphore_close(a, semaphore_closed));
  close_checked(lk_semaphore_close(b, semaphore_closed));
  wait_closed();
}

static void psem_verbs(const char *base) {
  char name[256], id[LK_PSEM_ID_LEN + 1];
  lk_psem_t *a, *b;
  lk_psem_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%spsem", base);
  step("psem %s: new, set 1 permit, acquire it", name);
  if (lk_psem_new(client, name, &a) < 0 || lk_psem_new(client, name, &b) < 0) {
    fail("lk_psem_new");
    return;
  }
  if (RUN(lk_psem_try_set_permits(a, 1, psem_cb, &r), &r, 0))
    check_result(&r, 1);
  lk_psem_opts_init(&o);
  if (!RUN(lk_psem_acquire(a, &o, psem_cb, &r), &r, 0) || lk_psem_permit_count(a) != 1) {
    fail("no permit");
    return;
  }
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(a, 0));
  step("psem %s: a waiter; the permit held across renewals", name);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_psem_acquire(b, &o, psem_cb, &w) < 0)
    fail("waiter's acquire refused");
  spin_renewals();
  if (!lk_psem_is_held(a))
    fail("the permit was not renewed");
  inspect_now(name);
  step("psem %s: counts, a new lease, a release that wakes the waiter", name);
  if (RUN(lk_psem_available(a, psem_cb, &r), &r, 0))
    check_result(&r, 0);
  if (RUN(lk_psem_acquired(a, psem_cb, &r), &r, 0))
    check_result(&r, 1);
  RUN(lk_psem_update_lease(a, id, 5000, psem_cb, &r), &r, 0);
  RUN(lk_psem_release(a, id, psem_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the waiter ended %s (%s)", lk_err_name(w.status), w.text);
  step("psem %s: release by id, add", name);
  if (lk_psem_permit_count(b) == 1) {
    snprintf(id, sizeof id, "%s", lk_psem_permit_id(b, 0));
    RUN(lk_psem_update_lease(b, id, 5000, psem_cb, &r), &r, 0); /* not renewed */
    RUN(lk_psem_release_id(a, id, psem_cb, &r), &r, 0);
  }
  if (RUN(lk_psem_add_permits(a, 1, psem_cb, &r), &r, 0))
    check_result(&r, 2);
  close_checked(lk_psem_close(a, psem_closed));
  close_checked(lk_psem_close(b, psem_closed));
  wait_closed();
}

static void latch_verbs(const char *base, int strict) {
  char name[256];
  lk_latch_t *a, *b;
  lk_latch_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%slatch%s", base, strict ? "-strict" : "");
  lk_latch_opts_init(&o);
  o.strict = strict;
  if (strchr(base, '{') != NULL) {
    /* Redisson's latch channel wraps the whole name in braces: a name with
     * a brace is refused at once (docs/latch.md, "Data layout"). */
    step("latch %s: refused by lk_latch_new", name);
    if (lk_latch_new(client, name, &o, &a) != LK_EINVAL)
      fail("lk_latch_new accepted a braced name");
    return;
  }
  step("latch %s: new, arm with 2", name);
  if (lk_latch_new(client, name, &o, &a) < 0 || lk_latch_new(client, name, &o, &b) < 0) {
    fail("lk_latch_new");
    return;
  }
  if (RUN(lk_latch_try_set_count(a, 2, latch_cb, &r), &r, 0))
    check_result(&r, 1);
  step("latch %s: an awaiter, count down twice, it opens", name);
  memset(&w, 0, sizeof w);
  if (lk_latch_await(b, WAIT_MS, latch_cb, &w) < 0)
    fail("await refused");
  if (RUN(lk_latch_count_down(a, latch_cb, &r), &r, 0))
    check_result(&r, 1);
  if (RUN(lk_latch_get_count(a, latch_cb, &r), &r, 0))
    check_result(&r, 1);
  inspect_now(name);
  spin(100);
  still_waiting(&w);
  if (RUN(lk_latch_count_down(a, latch_cb, &r), &r, 0))
    check_result(&r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the awaiter ended %s (%s)", lk_err_name(w.status), w.text);
  step("latch %s: re-arm and delete", name);
  RUN(lk_latch_try_set_count(a, 1, latch_cb, &r), &r, 0);
  if (RUN(lk_latch_delete(a, latch_cb, &r), &r, 0))
    check_result(&r, 1);
  close_checked(lk_latch_close(a, latch_closed));
  close_checked(lk_latch_close(b, latch_closed));
  wait_closed();
}

static void group_verbs(const char *base) {
  char n1[256], n2[256], n3[256];
  lk_lock_t *m[2];
  lk_multilock_t *ml;
  lk_redlock_t *rl;
  lk_multilock_opts_t mo;
  lk_redlock_opts_t ro;
  res_t r;
  snprintf(n1, sizeof n1, "%sml-1", base);
  snprintf(n2, sizeof n2, "%sml-2", base);
  snprintf(n3, sizeof n3, "%sredlock", base);
  step("multilock %s + %s: fenced acquire and release", n1, n2);
  if (lk_lock_new(client, n1, &m[0]) < 0 || lk_lock_new(client, n2, &m[1]) < 0 ||
      lk_multilock_new(m, 2, &ml) < 0) {
    fail("lk_multilock_new");
    return;
  }
  lk_multilock_opts_init(&mo);
  mo.wait_ms = WAIT_MS;
  mo.fenced = 1;
  RUN(lk_multilock_acquire(ml, &mo, multilock_cb, &r), &r, 0);
  RUN(lk_multilock_release(ml, multilock_cb, &r), &r, 0);
  close_checked(lk_multilock_close(ml, multilock_closed));
  wait_closed();
  close_checked(lk_lock_close(m[0], lock_closed));
  close_checked(lk_lock_close(m[1], lock_closed));
  wait_closed();
  step("redlock %s: fenced acquire (quorum token) and release", n3);
  if (lk_redlock_new(&client, 1, n3, NULL, &rl) < 0) {
    fail("lk_redlock_new");
    return;
  }
  lk_redlock_opts_init(&ro);
  ro.wait_ms = WAIT_MS;
  ro.fenced = 1;
  if (RUN(lk_redlock_acquire(rl, &ro, redlock_cb, &r), &r, 0) && r.result <= 0)
    fail("token %lld", (long long)r.result);
  RUN(lk_redlock_release(rl, redlock_cb, &r), &r, 0);
  close_checked(lk_redlock_close(rl, redlock_closed));
  wait_closed();
  snprintf(n3, sizeof n3, "%sredlock-lean", base);
  step("redlock %s: lean layout, fenced acquire and release", n3);
  {
    lk_redlock_config_t rc;
    lk_redlock_config_init(&rc);
    rc.layout = LK_REDLOCK_LAYOUT_LEAN;
    if (lk_redlock_new(&client, 1, n3, &rc, &rl) < 0) {
      fail("lk_redlock_new (lean)");
      return;
    }
  }
  if (RUN(lk_redlock_acquire(rl, &ro, redlock_cb, &r), &r, 0) && r.result <= 0)
    fail("token %lld", (long long)r.result);
  RUN(lk_redlock_release(rl, redlock_cb, &r), &r, 0);
  close_checked(lk_redlock_close(rl, redlock_closed));
  wait_closed();
}

/* Observer callback: counts the changes it was told of (a new term, the
 * leadership ending); its last call is LK_ECANCELED. */
static int observed_changes;
static void on_observed(lk_leader_t *x, int st, void *a) {
  (void)x;
  (void)a;
  if (st == 0)
    observed_changes++;
}

static void leader_verbs(const char *base) {
  char role[256];
  lk_leader_t *a, *b;
  lk_leader_opts_t o;
  res_t r, w;
  snprintf(role, sizeof role, "%sleader", base);
  step("leader %s: new, observe, campaign", role);
  if (lk_leader_new(client, role, &a) < 0 || lk_leader_new(client, role, &b) < 0) {
    fail("lk_leader_new");
    return;
  }
  observed_changes = 0;
  if (lk_leader_observe(b, on_observed, NULL) < 0)
    fail("observe refused");
  lk_leader_opts_init(&o);
  o.value = "10.0.0.5:8080";
  if (RUN(lk_leader_campaign(a, &o, leader_cb, &r), &r, 0) && r.result <= 0)
    fail("term %lld", (long long)r.result);
  step("leader %s: a second candidate waits; the leader renews", role);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_leader_campaign(b, &o, leader_cb, &w) < 0)
    fail("second campaign refused");
  spin_past_lease();
  if (!lk_leader_is_leader(a))
    fail("the leadership was not renewed");
  still_waiting(&w);
  step("leader %s: resign wakes the other candidate", role);
  RUN(lk_leader_resign(a, leader_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the second candidate ended %s (%s)", lk_err_name(w.status), w.text);
  RUN(lk_leader_resign(b, leader_cb, &r), &r, 0);
  if (observed_changes == 0)
    fail("the observer saw no change");
  close_checked(lk_leader_close(a, leader_closed));
  close_checked(lk_leader_close(b, leader_closed));
  wait_closed();
}

static void ratelimiter_verbs(const char *base) {
  char name[256];
  lk_ratelimiter_t *a;
  lk_ratelimiter_config_t cfg;
  lk_ratelimiter_opts_t o;
  res_t r;
  snprintf(name, sizeof name, "%srate", base);
  step("ratelimiter %s: set a rate, take it all, wait for the window", name);
  if (lk_ratelimiter_new(client, name, &a) < 0) {
    fail("lk_ratelimiter_new");
    return;
  }
  lk_ratelimiter_config_init(&cfg);
  cfg.rate = 2;
  cfg.interval_ms = 300;
  if (RUN(lk_ratelimiter_try_set_rate(a, &cfg, ratelimiter_cb, &r), &r, 0))
    check_result(&r, 1);
  RUN(lk_ratelimiter_try_acquire(a, 2, ratelimiter_cb, &r), &r, 0);
  if (RUN(lk_ratelimiter_available(a, ratelimiter_cb, &r), &r, 0))
    check_result(&r, 0);
  lk_ratelimiter_opts_init(&o);
  o.wait_ms = WAIT_MS; /* the window frees a permit within 300 ms */
  RUN(lk_ratelimiter_acquire(a, &o, ratelimiter_cb, &r), &r, 0);
  if (RUN(lk_ratelimiter_get_config(a, ratelimiter_cb, &r), &r, 0))
    check_result(&r, 1);
  RUN(lk_ratelimiter_set_rate(a, &cfg, ratelimiter_cb, &r), &r, 0);
  close_checked(lk_ratelimiter_close(a, ratelimiter_closed));
  wait_closed();
}

static void barrier_verbs(const char *base) {
  char name[256];
  lk_barrier_t *a, *b;
  lk_barrier_opts_t o;
  res_t r, w;
  snprintf(name, sizeof name, "%sbarrier", base);
  step("barrier %s: two members enter (one waits, renewing)", name);
  if (lk_barrier_new(client, name, 2, &a) < 0 || lk_barrier_new(client, name, 2, &b) < 0) {
    fail("lk_barrier_new");
    return;
  }
  lk_barrier_opts_init(&o);
  o.wait_ms = WAIT_MS;
  memset(&w, 0, sizeof w);
  if (lk_barrier_enter(a, &o, barrier_cb, &w) < 0)
    fail("first enter refused");
  spin_past_lease();
  still_waiting(&w);
  RUN(lk_barrier_enter(b, &o, barrier_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the first member ended %s (%s)", lk_err_name(w.status), w.text);
  step("barrier %s: both leave (one waits for the other)", name);
  memset(&w, 0, sizeof w);
  if (lk_barrier_leave(a, &o, barrier_cb, &w) < 0)
    fail("first leave refused");
  RUN(lk_barrier_leave(b, &o, barrier_cb, &r), &r, 0);
  if (!run_until(&w.done, STEP_MS) || w.status != 0)
    fail("the first member's leave ended %s (%s)", lk_err_name(w.status), w.text);
  close_checked(lk_barrier_close(a, barrier_closed));
  close_checked(lk_barrier_close(b, barrier_closed));
  wait_closed();
}

/* The script cache emptied behind the client's back: the next call of each
 * script meets NOSCRIPT and is resent with EVAL. Done as the default user,
 * over a connection of its own (the recipe's user need not flush scripts). */
static void flush_scripts(void) {
  struct timeval tv = {2, 0};
  redisContext *rc = redisConnectWithTimeout(g_host, g_port, tv);
  redisReply *r = NULL;
  step("SCRIPT FLUSH as the default user");
  if (rc == NULL || rc->err) {
    fail("cannot connect: %s", rc ? rc->errstr : "no memory");
  } else if ((r = redisCommand(rc, "SCRIPT FLUSH")) == NULL || r->type == REDIS_REPLY_ERROR) {
    fail("SCRIPT FLUSH: %s", r ? r->str : rc->errstr);
  }
  if (r != NULL)
    freeReplyObject(r);
  if (rc != NULL)
    redisFree(rc);
}

static void all_verbs(const char *base) {
  lock_verbs(base);
  fair_verbs(base);
  rwlock_verbs(base);
  semaphore_verbs(base);
  psem_verbs(base);
  latch_verbs(base, 0);
  latch_verbs(base, 1);
  group_verbs(base);
  leader_verbs(base);
  ratelimiter_verbs(base);
  barrier_verbs(base);
  list_and_ping(base); /* what the rounds left: counts, tokens, permits */
}

static int client_closed;
static void on_client_closed(lk_client_t *c) {
  (void)c;
  client_closed = 1;
}

int main(int argc, char **argv) {
  static char host[256];
  lk_client_opts_t o;
  char plain[300], tagged[300];
  const char *colon;
  int rc;
  if (argc < 5 || argc > 6 || (colon = strrchr(argv[1], ':')) == NULL ||
      (size_t)(colon - argv[1]) >= sizeof host) {
    fprintf(stderr, "usage: %s HOST:PORT USER PASSWORD PREFIX [DB]\n", argv[0]);
    return 2;
  }
  snprintf(host, sizeof host, "%.*s", (int)(colon - argv[1]), argv[1]);
  g_host = host;
  g_port = atoi(colon + 1);
  /* A plain name, and one with a hash tag (its keys are named differently). */
  snprintf(plain, sizeof plain, "%sacl-", argv[4]);
  snprintf(tagged, sizeof tagged, "%s{acl}-", argv[4]);

  alarm(120); /* a bound on the whole run, whatever hangs */
  g_server_pid = server_pid();
  pthread_t probe;
  if (pthread_create(&probe, NULL, stall_probe, NULL) == 0)
    pthread_detach(probe);
  uv_loop_init(&loop);
  uv_timer_init(&loop, &ticker);
  uv_timer_start(&ticker, on_tick, 50, 50);
  lk_client_opts_init(&o);
  o.host = host;
  o.port = g_port;
  o.username = argv[2];
  o.password = argv[3];
  o.db = argc > 5 ? atoi(argv[5]) : 1;
  o.log = on_log;
  o.default_lease_ms = LEASE_MS;
  o.heartbeat_ms = 50; /* the pub/sub health check: PING and PUBLISH */
  o.max_repoll_ms = 200;
  step("lk_client_new");
  if ((rc = lk_client_new(&loop, &o, &client)) < 0) {
    fail("%s", lk_err_name(rc));
    return 1;
  }
  all_verbs(plain);
  g_first_round = 0;
  flush_scripts();
  all_verbs(tagged);
  step("heartbeat");
  spin(200);
  step("lk_client_close");
  if ((rc = lk_client_close(client, on_client_closed)) < 0)
    fail("%s", lk_err_name(rc));
  else if (!run_until(&client_closed, STEP_MS))
    fail("the client did not close");
  uv_close((uv_handle_t *)&ticker, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0)
    fail("handles left on the loop");
  if (failures == 0 && g_excused == 0)
    printf("acl_check: every verb of every primitive ran as %s on %s* names\n", argv[2],
           argv[4]);
  else if (failures == 0)
    printf("acl_check: every verb of every primitive ran as %s on %s* names (%d steps "
           "excused: holds lost while the machine stalled this process or its server)\n",
           argv[2], argv[4], g_excused);
  return failures == 0 ? 0 : 1;
}
