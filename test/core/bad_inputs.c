/* Bad inputs (docs/reliability.md, items 1-23; docs/objects.md): every rejected call
 * returns its exact code at once, never runs its callback, sends nothing and
 * leaks nothing (the ASan build checks the last part). Names that look odd but
 * are valid (braces, spaces, CR/LF, printf directives) really are ordinary,
 * independent keys. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "lk_fixture.h"
#include "never_cb.h"

/* ---- helpers ------------------------------------------------------------------ */

/* A client whose out pointer must stay untouched on failure. */
#define BAD_CLIENT ((lk_client_t *)(uintptr_t)0x5a5a5a5a)
#define BAD_LOCK ((lk_lock_t *)(uintptr_t)0x5a5a5a5a)

/* lk_client_new on a fresh loop with opts; returns the code and checks that a
 * rejected call left *out alone and the loop has nothing on it. */
static int client_new_rc(const lk_client_opts_t *o) {
  uv_loop_t loop;
  lk_client_t *c = BAD_CLIENT;
  int rc;
  ASSERT_OK(uv_loop_init(&loop));
  rc = lk_client_new(&loop, o, &c);
  if (rc == 0) {
    /* Not expected by the callers, but leave nothing behind if it happens. */
    ASSERT_OK(lk_client_close(c, NULL));
    uv_run(&loop, UV_RUN_DEFAULT);
  } else {
    ASSERT(c == BAD_CLIENT); /* *out is set only on success */
  }
  rt_loop_close_clean(&loop);
  return rc;
}

static void base_opts(lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->port = 1; /* never connected: these clients are all rejected */
}

/* One refused client option set: the base options with one change. */
typedef struct {
  const char *what;
  void (*set)(lk_client_opts_t *o);
} client_opt_case_t;

/* Each case starts from base_opts, makes its change, and lk_client_new must
 * refuse the result with LK_EINVAL (client_new_rc checks the rest). */
static void refused_client_opts(const client_opt_case_t *bad, int n) {
  for (int i = 0; i < n; i++) {
    lk_client_opts_t o;
    int rc;
    base_opts(&o);
    bad[i].set(&o);
    rc = client_new_rc(&o);
    if (rc != LK_EINVAL)
      FAIL("lk_client_new with %s returned %s, not LK_EINVAL", bad[i].what, lk_err_name(rc));
  }
}

/* The changes, one a line, named by what they set. */
static void set_host_null(lk_client_opts_t *o) { o->host = NULL; }
static void set_port_0(lk_client_opts_t *o) { o->port = 0; }
static void set_port_minus_1(lk_client_opts_t *o) { o->port = -1; }
static void set_port_70000(lk_client_opts_t *o) { o->port = 70000; }
static void set_port_65536(lk_client_opts_t *o) { o->port = 65536; }
static void set_connect_timeout_minus_1(lk_client_opts_t *o) { o->connect_timeout_ms = -1; }
static void set_connect_timeout_0(lk_client_opts_t *o) { o->connect_timeout_ms = 0; }
static void set_reply_timeout_minus_1(lk_client_opts_t *o) { o->reply_timeout_ms = -1; }
static void set_reply_timeout_int64_min(lk_client_opts_t *o) { o->reply_timeout_ms = INT64_MIN; }
static void set_reply_timeout_over_cap(lk_client_opts_t *o) {
  o->reply_timeout_ms = LK_MAX_TIME_MS + 1;
}
static void set_reconnect_min_minus_5(lk_client_opts_t *o) { o->reconnect_min_ms = -5; }
static void set_reconnect_max_minus_1(lk_client_opts_t *o) { o->reconnect_max_ms = -1; }
static void set_reconnect_max_below_min(lk_client_opts_t *o) {
  o->reconnect_min_ms = 500;
  o->reconnect_max_ms = 499;
}
static void set_max_repoll_minus_1(lk_client_opts_t *o) { o->max_repoll_ms = -1; }
static void set_heartbeat_minus_1(lk_client_opts_t *o) { o->heartbeat_ms = -1; }
static void set_default_lease_minus_1(lk_client_opts_t *o) { o->default_lease_ms = -1; }
static void set_default_lease_int64_max(lk_client_opts_t *o) { o->default_lease_ms = INT64_MAX; }
static void set_username_without_password(lk_client_opts_t *o) {
  o->username = "alice";
  o->password = NULL;
}
static void set_client_id_colon_inside(lk_client_opts_t *o) { o->client_id = "abc:def"; }
static void set_client_id_colon_only(lk_client_opts_t *o) { o->client_id = ":"; }
static void set_client_id_space_inside(lk_client_opts_t *o) { o->client_id = "abc def"; }
static void set_client_id_space_only(lk_client_opts_t *o) { o->client_id = " "; }
static void set_client_id_crlf(lk_client_opts_t *o) { o->client_id = "abc\r\n"; }
static void set_client_id_empty(lk_client_opts_t *o) { o->client_id = ""; }
static void set_max_name_len_0(lk_client_opts_t *o) { o->max_name_len = 0; }
static void set_max_name_len_over_cap(lk_client_opts_t *o) {
  o->max_name_len = ((size_t)64 << 20) + 1;
}
static void set_max_inflight_0(lk_client_opts_t *o) { o->max_inflight = 0; }
static void set_db_minus_1(lk_client_opts_t *o) { o->db = -1; }

/* Starts an acquire with the given wait/lease and returns the code. */
static int acquire_rc(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  return lk_lock_acquire(l, &o, rt_never_lock_cb, NULL);
}

/* The calls that start an operation on l, other than an acquire with
 * options and a release (each case says which of those it checks): an
 * acquire with default options, a force release and the three queries are
 * each refused with code, at once, running no callback. */
static void each_start_refused(lk_lock_t *l, int code) {
  ASSERT_EQ(lk_lock_acquire(l, NULL, rt_never_lock_cb, NULL), code);
  ASSERT_EQ(lk_lock_force_release(l, rt_never_lock_cb, NULL), code);
  ASSERT_EQ(lk_lock_is_locked(l, rt_never_lock_cb, NULL), code);
  ASSERT_EQ(lk_lock_remaining_ttl(l, rt_never_lock_cb, NULL), code);
  ASSERT_EQ(lk_lock_server_hold_count(l, rt_never_lock_cb, NULL), code);
}

/* After a rejected acquire the object must be idle and usable: a valid
 * acquire and release go through (so the rejection left no state behind). */
static void check_still_usable(fx_t *fx, lk_lock_t *l) {
  int64_t r = -1;
  ASSERT_OK(sx_acquire(fx, l, 0, 10000));
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_OK(sx_run(fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
}

/* How a case ends whose refusals must have left the lock as it was: it
 * still works (check_still_usable), and closing it and the client runs no
 * callback that must never run. */
static void finish_still_usable(fx_t *fx, lk_lock_t *l) {
  check_still_usable(fx, l);
  fx_close_lock(fx, l);
  rt_never_finish(fx);
}

/* A wait/lease pair that lk_lock_acquire must refuse with LK_EINVAL. */
typedef struct {
  int64_t wait_ms;
  int64_t lease_ms;
} wait_lease_t;

/* Each of the n bad pairs is refused at once on one lock, nothing reaches
 * the server, and the lock still works afterwards. */
static void refused_acquires_leave_no_trace(const wait_lease_t *bad, int n) {
  fx_t fx;
  lk_lock_t *l;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "w");
  for (int i = 0; i < n; i++) {
    int rc = acquire_rc(l, bad[i].wait_ms, bad[i].lease_ms);
    if (rc != LK_EINVAL)
      FAIL("acquire with wait %lld, lease %lld returned %s, not LK_EINVAL",
           (long long)bad[i].wait_ms, (long long)bad[i].lease_ms, lk_err_name(rc));
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS w"), 0);
  finish_still_usable(&fx, l);
}

/* ---- lk_client_new ---------------------------------------------------------------- */

TEST(client_new_null_loop) {
  lk_client_opts_t o;
  lk_client_t *c = BAD_CLIENT;
  base_opts(&o);
  ASSERT_EQ(lk_client_new(NULL, &o, &c), LK_EINVAL);
  ASSERT(c == BAD_CLIENT);
  ASSERT_EQ(lk_client_new(NULL, NULL, &c), LK_EINVAL);
  ASSERT(c == BAD_CLIENT);
}

TEST(client_new_null_out) {
  uv_loop_t loop;
  lk_client_opts_t o;
  base_opts(&o);
  ASSERT_OK(uv_loop_init(&loop));
  ASSERT_EQ(lk_client_new(&loop, &o, NULL), LK_EINVAL);
  ASSERT_EQ(lk_client_new(&loop, NULL, NULL), LK_EINVAL);
  rt_loop_close_clean(&loop); /* nothing was put on the loop */
}

TEST(client_new_null_host_without_unix_path) {
  static const client_opt_case_t bad[] = {{"host = NULL", set_host_null}};
  refused_client_opts(bad, 1);
}

TEST(client_new_port_zero) {
  static const client_opt_case_t bad[] = {{"port = 0", set_port_0}, {"port = -1", set_port_minus_1}};
  refused_client_opts(bad, 2);
}

TEST(client_new_port_70000) {
  static const client_opt_case_t bad[] = {{"port = 70000", set_port_70000},
                                          {"port = 65536", set_port_65536}};
  refused_client_opts(bad, 2);
}

TEST(client_new_negative_timeouts) {
  static const client_opt_case_t bad[] = {
      {"connect_timeout_ms = -1", set_connect_timeout_minus_1},
      {"connect_timeout_ms = 0", set_connect_timeout_0},
      {"reply_timeout_ms = -1", set_reply_timeout_minus_1},
      {"reply_timeout_ms = INT64_MIN", set_reply_timeout_int64_min},
      {"reconnect_min_ms = -5", set_reconnect_min_minus_5},
      {"reconnect_max_ms = -1", set_reconnect_max_minus_1},
      {"max_repoll_ms = -1", set_max_repoll_minus_1},
      {"heartbeat_ms = -1", set_heartbeat_minus_1},
      {"default_lease_ms = -1", set_default_lease_minus_1},
      /* Over the cap is as wrong as negative. */
      {"reply_timeout_ms = LK_MAX_TIME_MS + 1", set_reply_timeout_over_cap},
      {"default_lease_ms = INT64_MAX", set_default_lease_int64_max},
  };
  refused_client_opts(bad, (int)(sizeof bad / sizeof bad[0]));
}

TEST(client_new_reconnect_max_below_min) {
  static const client_opt_case_t bad[] = {
      {"reconnect_min_ms = 500, reconnect_max_ms = 499", set_reconnect_max_below_min}};
  refused_client_opts(bad, 1);
}

TEST(client_new_username_without_password) {
  static const client_opt_case_t bad[] = {
      {"username = alice, password = NULL", set_username_without_password}};
  refused_client_opts(bad, 1);
}

TEST(client_new_client_id_with_colon) {
  static const client_opt_case_t bad[] = {{"client_id = abc:def", set_client_id_colon_inside},
                                          {"client_id = :", set_client_id_colon_only}};
  refused_client_opts(bad, 2);
}

TEST(client_new_client_id_with_spaces) {
  static const client_opt_case_t bad[] = {
      {"client_id = abc def", set_client_id_space_inside},
      {"client_id = ' '", set_client_id_space_only},
      {"client_id = abc CR LF", set_client_id_crlf},
      {"client_id = empty", set_client_id_empty},
  };
  refused_client_opts(bad, 4);
}

TEST(client_new_max_name_len_zero) {
  static const client_opt_case_t bad[] = {{"max_name_len = 0", set_max_name_len_0}};
  refused_client_opts(bad, 1);
}

TEST(client_new_other_ranges) {
  static const client_opt_case_t bad[] = {
      {"max_inflight = 0", set_max_inflight_0},
      {"db = -1", set_db_minus_1},
      {"max_name_len = 64 MiB + 1", set_max_name_len_over_cap}, /* documented: 1..64 MiB */
  };
  refused_client_opts(bad, 3);
}

/* ---- lk_lock_new -------------------------------------------------------------------- */

TEST(lock_new_null_client) {
  lk_lock_t *l = BAD_LOCK;
  ASSERT_EQ(lk_lock_new(NULL, "x", &l), LK_EINVAL);
  ASSERT(l == BAD_LOCK);
}

TEST(lock_new_null_and_empty_name) {
  fx_t fx;
  lk_lock_t *l = BAD_LOCK;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_lock_new(fx.c, NULL, &l), LK_EINVAL);
  ASSERT(l == BAD_LOCK);
  ASSERT_EQ(lk_lock_new(fx.c, "", &l), LK_EINVAL);
  ASSERT(l == BAD_LOCK);
  /* No object was born: the client closes at once (no LK_EBUSY). */
  rt_never_finish(&fx);
}

TEST(lock_new_null_out) {
  fx_t fx;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_lock_new(fx.c, "x", NULL), LK_EINVAL);
  rt_never_finish(&fx);
}

TEST(lock_new_name_over_custom_cap) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *l = BAD_LOCK;
  const char *n16 = "0123456789abcdef";
  const char *n17 = "0123456789abcdefg";
  lk_client_opts_init(&o);
  o.max_name_len = 16;
  fx_start_with(&fx, NULL, &o);
  ASSERT_EQ(strlen(n16), 16);
  ASSERT_EQ(strlen(n17), 17);
  ASSERT_EQ(lk_lock_new(fx.c, n17, &l), LK_ENAMETOOLONG);
  ASSERT(l == BAD_LOCK);
  /* Exactly at the cap is fine, and works. */
  ASSERT_OK(lk_lock_new(fx.c, n16, &l));
  ASSERT_STREQ(lk_lock_name(l), n16);
  finish_still_usable(&fx, l);
}

/* A name over the cap is refused after reading at most cap + 1 bytes: the
 * buffer here has no NUL at all, so a full strlen would overrun it (ASan). */
TEST(lock_new_name_cap_scan_is_bounded) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *l = BAD_LOCK;
  char *buf = malloc(17);
  ASSERT_NOT_NULL(buf);
  memset(buf, 'n', 17); /* 17 bytes, no terminator */
  lk_client_opts_init(&o);
  o.max_name_len = 16;
  fx_start_with(&fx, NULL, &o);
  ASSERT_EQ(lk_lock_new(fx.c, buf, &l), LK_ENAMETOOLONG);
  ASSERT(l == BAD_LOCK);
  free(buf);
  rt_never_finish(&fx);
}

TEST(lock_new_name_over_default_cap) {
  fx_t fx;
  lk_lock_t *l = BAD_LOCK;
  char *name = malloc(4098);
  ASSERT_NOT_NULL(name);
  memset(name, 'k', 4097);
  name[4097] = '\0';
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_lock_new(fx.c, name, &l), LK_ENAMETOOLONG);
  ASSERT(l == BAD_LOCK);
  name[4096] = '\0'; /* 4096 bytes: exactly the default cap */
  ASSERT_OK(lk_lock_new(fx.c, name, &l));
  ASSERT_EQ(strlen(lk_lock_name(l)), 4096);
  finish_still_usable(&fx, l);
  free(name);
}

/* ---- lk_lock_acquire ------------------------------------------------------------------ */

TEST(acquire_null_lock) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  ASSERT_EQ(lk_lock_acquire(NULL, &o, rt_never_lock_cb, NULL), LK_EINVAL);
  each_start_refused(NULL, LK_EINVAL);
  ASSERT_EQ(lk_lock_release(NULL, rt_never_lock_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_set_owner(NULL, NULL, 1), LK_EINVAL);
  ASSERT_EQ(lk_client_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(rt_never_calls, 0);
}

TEST(acquire_null_cb) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "nullcb");
  lk_lock_opts_init(&o);
  ASSERT_EQ(lk_lock_acquire(l, &o, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_acquire(l, NULL, NULL, NULL), LK_EINVAL);
  /* Every operation needs its callback. */
  ASSERT_EQ(lk_lock_is_locked(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_remaining_ttl(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_server_hold_count(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_force_release(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_release(l, NULL, NULL), LK_EINVAL);
  /* Nothing reached the server. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nullcb"), 0);
  finish_still_usable(&fx, l);
}

TEST(acquire_wait_minus_two) {
  static const wait_lease_t bad[] = {{-2, 10000}, {INT64_MIN, 10000}};
  refused_acquires_leave_no_trace(bad, 2);
}

TEST(acquire_wait_over_max) {
  fx_t fx;
  lk_lock_t *l;
  sx_t s;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "w");
  ASSERT_EQ(acquire_rc(l, LK_MAX_TIME_MS + 1, 10000), LK_EINVAL);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS w"), 0);
  /* The cap itself is accepted (the lock is free, so it returns at once). */
  ASSERT_OK(sx_acquire_in(&fx.loop, l, LK_MAX_TIME_MS, 10000, &s));
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  fx_close_lock(&fx, l); /* releases the hold */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS w"), 0);
  rt_never_finish(&fx);
}

TEST(acquire_wait_int64_max) {
  static const wait_lease_t bad[] = {{INT64_MAX, 10000}, {INT64_MAX, LK_LEASE_DEFAULT}};
  refused_acquires_leave_no_trace(bad, 2);
}

TEST(acquire_lease_zero) {
  static const wait_lease_t bad[] = {{0, 0} /* never PX 0 */, {-1, 0}};
  refused_acquires_leave_no_trace(bad, 2);
}

TEST(acquire_lease_minus_two) {
  static const wait_lease_t bad[] = {{0, -2}, {0, INT64_MIN}};
  refused_acquires_leave_no_trace(bad, 2);
}

TEST(acquire_lease_int64_max) {
  static const wait_lease_t bad[] = {{0, INT64_MAX}, {0, LK_MAX_TIME_MS + 1}};
  refused_acquires_leave_no_trace(bad, 2);
}

TEST(acquire_second_while_pending_is_busy) {
  fx_t fx;
  lk_lock_t *holder, *l;
  sx_t s;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "busy", 30000, &holder, &l);
  /* l waits for holder: its acquire stays pending. */
  sx_start(l, 20000, 10000, &s);
  ASSERT_EQ(acquire_rc(l, 20000, 10000), LK_EBUSY);
  each_start_refused(l, LK_EBUSY);
  /* Still pending after a few loop passes, and still busy. */
  for (int i = 0; i < 5; i++)
    uv_run(&fx.loop, UV_RUN_NOWAIT);
  ASSERT_EQ(s.calls, 0);
  ASSERT_EQ(acquire_rc(l, 20000, 10000), LK_EBUSY);
  /* The pending acquire is intact: it completes once the holder leaves. */
  ASSERT_OK(sx_run(&fx, lk_lock_release, holder, NULL));
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  fx_close_lock(&fx, l);
  fx_close_lock(&fx, holder);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS busy"), 0);
  rt_never_finish(&fx);
}

/* ---- release / cancel ------------------------------------------------------------------ */

TEST(release_nothing_held) {
  fx_t fx;
  lk_lock_t *l;
  long long evalsha_before;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "rel");
  check_still_usable(&fx, l); /* both scripts loaded: no NOSCRIPT below */
  evalsha_before = fx_script_calls(&fx);
  ASSERT_EQ(lk_lock_release(l, rt_never_lock_cb, NULL), LK_ENOTHELD);
  /* After a full acquire/release cycle, a second release is refused too. */
  check_still_usable(&fx, l);
  ASSERT_EQ(lk_lock_release(l, rt_never_lock_cb, NULL), LK_ENOTHELD);
  /* Exactly the two scripts of the cycle reached the server (the
   * round trip of a query makes sure nothing else is still on its way). */
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, l, NULL));
  ASSERT_EQ(fx_script_calls(&fx) - evalsha_before, 2);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(cancel_nothing_pending) {
  fx_t fx;
  lk_lock_t *l;
  int64_t r = -1;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "cancel");
  ASSERT_EQ(lk_lock_cancel(l), LK_EINVAL);
  /* Nor after an acquire has completed, nor while a non-acquire is pending. */
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000));
  ASSERT_EQ(lk_lock_cancel(l), LK_EINVAL);
  {
    sx_t s;
    memset(&s, 0, sizeof s);
    ASSERT_OK(lk_lock_is_locked(l, sx_cb, &s));
    ASSERT_EQ(lk_lock_cancel(l), LK_EINVAL);
    rt_run_until(&fx.loop, &s.done, 10000);
    ASSERT_OK(s.status);
    ASSERT_EQ(s.result, 1);
  }
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- closing ------------------------------------------------------------------------------ */

static int g_close_calls;
static void count_close_cb(lk_lock_t *l) {
  int *flag = lk_lock_get_data(l);
  g_close_calls++;
  *flag = 1;
}

TEST(lock_double_close) {
  fx_t fx;
  lk_lock_t *l;
  int closed = 0;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "dc");
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, count_close_cb));
  ASSERT_EQ(lk_lock_close(l, count_close_cb), LK_ECLOSED);
  ASSERT_EQ(lk_lock_close(l, NULL), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 10000);
  ASSERT_EQ(g_close_calls, 1);
  rt_never_finish(&fx);
  ASSERT_EQ(g_close_calls, 1);
}

TEST(ops_on_closing_lock) {
  fx_t fx;
  lk_lock_t *l;
  int closed = 0;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "closing");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000)); /* closing also has a release to do */
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, count_close_cb));
  ASSERT_EQ(acquire_rc(l, 0, 10000), LK_ECLOSED);
  each_start_refused(l, LK_ECLOSED);
  ASSERT_EQ(lk_lock_release(l, rt_never_lock_cb, NULL), LK_ECLOSED);
  ASSERT_EQ(lk_lock_cancel(l), LK_ECLOSED);
  ASSERT_EQ(lk_lock_set_owner(l, NULL, 7), LK_ECLOSED);
  ASSERT_EQ(lk_lock_close(l, count_close_cb), LK_ECLOSED);
  /* Still closing after a loop pass (the release is in flight): same. */
  uv_run(&fx.loop, UV_RUN_NOWAIT);
  if (!closed)
    ASSERT_EQ(lk_lock_acquire(l, NULL, rt_never_lock_cb, NULL), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 10000);
  ASSERT_EQ(g_close_calls, 1);
  /* The close released the hold it had. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS closing"), 0);
  rt_never_finish(&fx);
}

TEST(client_close_with_open_lock) {
  fx_t fx;
  lk_lock_t *l;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "open");
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_EBUSY);
  /* The refused close changed nothing: the client still works. */
  check_still_usable(&fx, l);
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_EBUSY);
  fx_close_lock(&fx, l);
  rt_never_finish(&fx); /* closes the client: now 0 */
}

static int g_client_close_calls;
static void count_client_closed(lk_client_t *c) {
  int *flag = lk_client_get_data(c);
  g_client_close_calls++;
  *flag = 1;
}

TEST(client_double_close) {
  fx_t fx;
  int closed = 0;
  fx_start(&fx, NULL);
  lk_client_set_data(fx.c, &closed);
  ASSERT_OK(lk_client_close(fx.c, count_client_closed));
  ASSERT_EQ(lk_client_close(fx.c, count_client_closed), LK_ECLOSED);
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 10000);
  ASSERT_EQ(g_client_close_calls, 1);
  fx.c = NULL; /* freed after its close callback */
  rt_never_finish(&fx);
}

TEST(use_after_client_close) {
  fx_t fx;
  int closed = 0;
  lk_lock_t *l = BAD_LOCK;
  fx_start(&fx, NULL);
  lk_client_set_data(fx.c, &closed);
  ASSERT_OK(lk_client_close(fx.c, count_client_closed));
  /* Closing, close_cb not yet run: the client still exists, but refuses. */
  ASSERT_EQ(closed, 0);
  ASSERT_EQ(lk_lock_new(fx.c, "late", &l), LK_ECLOSED);
  ASSERT(l == BAD_LOCK);
  uv_run(&fx.loop, UV_RUN_NOWAIT);
  if (!closed) {
    ASSERT_EQ(lk_lock_new(fx.c, "late", &l), LK_ECLOSED);
    ASSERT(l == BAD_LOCK);
    ASSERT_EQ(lk_client_close(fx.c, NULL), LK_ECLOSED);
  }
  rt_run_until(&fx.loop, &closed, 10000);
  ASSERT_EQ(g_client_close_calls, 1);
  fx.c = NULL;
  rt_never_finish(&fx);
}

/* ---- set_owner ------------------------------------------------------------------------------ */

TEST(set_owner_while_holding_or_pending) {
  fx_t fx;
  lk_lock_t *l, *other;
  char owner_before[128];
  sx_t s;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "own", 30000, &l, &other);
  snprintf(owner_before, sizeof owner_before, "%s", lk_lock_owner(l));
  ASSERT_EQ(lk_lock_set_owner(l, NULL, 42), LK_EBUSY);
  ASSERT_EQ(lk_lock_set_owner(l, "some-client", 42), LK_EBUSY);
  ASSERT_STREQ(lk_lock_owner(l), owner_before);
  /* Pending (other waits on l): busy too. */
  sx_start(other, 20000, 10000, &s);
  ASSERT_EQ(lk_lock_set_owner(other, NULL, 42), LK_EBUSY);
  ASSERT_OK(lk_lock_cancel(other));
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  /* The hold is untouched on the server, under the original owner. */
  {
    char *v = rt_cmd_str(fx.srv, "HGET own %s", owner_before);
    ASSERT_STREQ(v, "1");
    free(v);
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN own"), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  /* Idle and holding nothing: now allowed. */
  ASSERT_OK(lk_lock_set_owner(l, NULL, 42));
  rt_never_finish_locks(&fx, (lk_lock_t *[]){other, l, NULL});
}

TEST(set_owner_invalid_client_id) {
  fx_t fx;
  lk_lock_t *l;
  char owner_before[128];
  char long_id[80];
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "own");
  snprintf(owner_before, sizeof owner_before, "%s", lk_lock_owner(l));
  ASSERT_EQ(lk_lock_set_owner(l, "a:b", 1), LK_EINVAL);
  ASSERT_EQ(lk_lock_set_owner(l, "a b", 1), LK_EINVAL);
  ASSERT_EQ(lk_lock_set_owner(l, "", 1), LK_EINVAL);
  ASSERT_EQ(lk_lock_set_owner(l, "a\nb", 1), LK_EINVAL);
  memset(long_id, 'x', 65);
  long_id[65] = '\0'; /* documented: 1..64 characters */
  ASSERT_EQ(lk_lock_set_owner(l, long_id, 1), LK_EINVAL);
  ASSERT_STREQ(lk_lock_owner(l), owner_before);
  /* A valid one is taken as given. */
  ASSERT_OK(lk_lock_set_owner(l, "6f9619ff-8b86-d011-b42d-00cf4fc964ff", 9));
  ASSERT_STREQ(lk_lock_owner(l), "6f9619ff-8b86-d011-b42d-00cf4fc964ff:9");
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- wrong thread ----------------------------------------------------------------------------- */

enum { WT_ACQUIRE, WT_LOCK_NEW, WT_CLIENT_CLOSE };

typedef struct {
  lk_client_t *c;
  lk_lock_t *l;
  int which;
  int rc;
  lk_lock_t *out;
} thread_call_t;

static void thread_call(void *arg) {
  thread_call_t *t = arg;
  switch (t->which) {
  case WT_ACQUIRE:
    t->rc = lk_lock_acquire(t->l, NULL, rt_never_lock_cb, NULL);
    break;
  case WT_LOCK_NEW:
    t->out = BAD_LOCK;
    t->rc = lk_lock_new(t->c, "from-thread", &t->out);
    break;
  case WT_CLIENT_CLOSE:
    t->rc = lk_client_close(t->c, NULL);
    break;
  default:
    t->rc = 12345;
  }
}

/* Makes call `which` on c (or l) from another thread: what it returned. */
static int call_from_thread(thread_call_t *t, int which, lk_client_t *c, lk_lock_t *l) {
  uv_thread_t th;
  memset(t, 0, sizeof *t);
  t->c = c;
  t->l = l;
  t->which = which;
  t->rc = 1;
  ASSERT_OK(uv_thread_create(&th, thread_call, t));
  ASSERT_OK(uv_thread_join(&th));
  return t->rc;
}

TEST(wrong_thread_acquire) {
  fx_t fx;
  thread_call_t t;
  lk_lock_t *l;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "wt");
  ASSERT_EQ(call_from_thread(&t, WT_ACQUIRE, fx.c, l), LK_EWRONGTHREAD);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS wt"), 0);
  /* On its own thread the object is unaffected. */
  finish_still_usable(&fx, l);
}

TEST(wrong_thread_lock_new) {
  fx_t fx;
  thread_call_t t;
  fx_start(&fx, NULL);
  ASSERT_EQ(call_from_thread(&t, WT_LOCK_NEW, fx.c, NULL), LK_EWRONGTHREAD);
  ASSERT(t.out == BAD_LOCK);
  rt_never_finish(&fx); /* no object was born: the client closes */
}

TEST(wrong_thread_client_close) {
  fx_t fx;
  thread_call_t t;
  lk_lock_t *l;
  fx_start(&fx, NULL);
  ASSERT_EQ(call_from_thread(&t, WT_CLIENT_CLOSE, fx.c, NULL), LK_EWRONGTHREAD);
  /* Not closing: the client still makes objects that work. */
  l = fx_lock(&fx, "wt");
  finish_still_usable(&fx, l);
}

/* ---- fork --------------------------------------------------------------------------------------- */

/* In the child every call on the inherited client answers LK_EFORKED, and
 * nothing goes to the server: not from acquire, not from releasing the
 * parent's hold on close. The child reports through its exit status. */
TEST(forked_child_gets_eforked_and_sends_nothing) {
  fx_t fx;
  lk_lock_t *held, *idle;
  long long scripts_before, pttl_before, pttl_after;
  char owner[128];
  pid_t pid;
  fx_start(&fx, NULL);
  held = fx_lock(&fx, "forked");
  idle = fx_lock(&fx, "forked-idle");
  ASSERT_OK(sx_acquire(&fx, held, 0, 60000));
  snprintf(owner, sizeof owner, "%s", lk_lock_owner(held));
  /* Settle: nothing of ours is in flight now. */
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, idle, NULL));
  scripts_before = fx_script_calls(&fx);
  pttl_before = rt_cmd_int(fx.srv, "PTTL forked");
  ASSERT_GT(pttl_before, 0);

  pid = rt_fork_flushed();
  if (pid == 0) {
    /* Child: no ASSERT (its exit path belongs to the parent's harness);
     * each failed check sets one bit of the exit status. */
    int bad = 0;
    lk_lock_t *nl = BAD_LOCK;
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.lease_ms = 10000;
    if (lk_lock_acquire(idle, &o, rt_never_lock_cb, NULL) != LK_EFORKED)
      bad |= 1;
    if (lk_lock_acquire(held, &o, rt_never_lock_cb, NULL) != LK_EFORKED)
      bad |= 2;
    if (lk_lock_new(fx.c, "child", &nl) != LK_EFORKED || nl != BAD_LOCK)
      bad |= 4;
    if (lk_lock_release(held, rt_never_lock_cb, NULL) != LK_EFORKED)
      bad |= 8;
    if (lk_lock_is_locked(idle, rt_never_lock_cb, NULL) != LK_EFORKED)
      bad |= 16;
    /* Close frees memory only: it must not release the parent's hold. */
    if (lk_lock_close(held, NULL) != LK_EFORKED)
      bad |= 32;
    if (lk_client_close(fx.c, NULL) != LK_EFORKED)
      bad |= 64;
    _exit(bad);
  }
  rt_wait_child_exit_0(pid);

  /* Anything the child wrote on the shared socket would be ahead of this
   * query; once its reply is here, the server has seen all of it. */
  {
    int64_t r = -1;
    ASSERT_OK(sx_run(&fx, lk_lock_is_locked, idle, &r));
    ASSERT_EQ(r, 0);
  }
  ASSERT_EQ(fx_script_calls(&fx), scripts_before);
  {
    char *v = rt_cmd_str(fx.srv, "HGET forked %s", owner);
    ASSERT_STREQ(v, "1");
    free(v);
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN forked"), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS forked-idle"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS child"), 0);
  pttl_after = rt_cmd_int(fx.srv, "PTTL forked");
  ASSERT_GT(pttl_after, 0);
  ASSERT_LE(pttl_after, pttl_before); /* not refreshed by anyone */
  /* The parent's objects work as before. */
  ASSERT_OK(sx_run(&fx, lk_lock_release, held, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS forked"), 0);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){idle, held, NULL});
}

/* ---- error table -------------------------------------------------------------------------------- */

typedef struct {
  int code;
  const char *name;
  const char *msg;
} err_row_t;

static const err_row_t err_rows[] = {
#define ROW(name, off, msg) {LK_##name, "LK_" #name, msg},
    LK_ERRNO_MAP(ROW)
#undef ROW
};
#define N_ERR_ROWS ((int)(sizeof err_rows / sizeof err_rows[0]))

TEST(strerror_and_names) {
  ASSERT_GE(N_ERR_ROWS, 28);
  for (int i = 0; i < N_ERR_ROWS; i++) {
    const char *n = lk_err_name(err_rows[i].code);
    const char *m = lk_strerror(err_rows[i].code);
    ASSERT_NOT_NULL(n);
    ASSERT_NOT_NULL(m);
    ASSERT_GT(strlen(n), 3);
    ASSERT_GT(strlen(m), 0);
    ASSERT_STREQ(n, err_rows[i].name);
    ASSERT_STREQ(m, err_rows[i].msg);
    /* Codes sit in the private band, far below any -errno. */
    ASSERT_LT(err_rows[i].code, -4096);
    for (int j = 0; j < i; j++) {
      ASSERT_NE(err_rows[i].code, err_rows[j].code);
      if (strcmp(n, lk_err_name(err_rows[j].code)) == 0)
        FAIL("codes %d and %d share the name %s", err_rows[i].code, err_rows[j].code, n);
      if (strcmp(m, lk_strerror(err_rows[j].code)) == 0)
        FAIL("codes %d and %d share the message \"%s\"", err_rows[i].code,
             err_rows[j].code, m);
    }
  }
  /* Success. */
  ASSERT_GT(strlen(lk_err_name(0)), 0);
  ASSERT_GT(strlen(lk_strerror(0)), 0);
  /* Unknown codes: one fixed string each, whatever the code. */
  {
    const int unknown[] = {1, 12345, INT32_MAX, INT32_MIN, LK__ERRNO_BASE,
                           LK__ERRNO_BASE - 999, LK__ERRNO_BASE - N_ERR_ROWS - 1,
                           LK__ERRNO_END, -5000};
    const char *n0 = lk_err_name(unknown[0]);
    const char *m0 = lk_strerror(unknown[0]);
    char n0_copy[128], m0_copy[256];
    ASSERT_NOT_NULL(n0);
    ASSERT_NOT_NULL(m0);
    ASSERT_GT(strlen(n0), 0);
    ASSERT_GT(strlen(m0), 0);
    snprintf(n0_copy, sizeof n0_copy, "%s", n0);
    snprintf(m0_copy, sizeof m0_copy, "%s", m0);
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
      ASSERT_STREQ(lk_err_name(unknown[i]), n0_copy);
      ASSERT_STREQ(lk_strerror(unknown[i]), m0_copy);
      for (int j = 0; j < N_ERR_ROWS; j++)
        ASSERT(strcmp(lk_err_name(unknown[i]), err_rows[j].name) != 0);
    }
  }
  /* -errno passes through with the OS's name and message. */
  ASSERT_STREQ(lk_err_name(UV_ECONNREFUSED), "ECONNREFUSED");
  ASSERT_GT(strlen(lk_strerror(UV_ECONNREFUSED)), 0);
}

/* ---- allocator ---------------------------------------------------------------------------------- */

static void *plain_malloc(size_t n) { return malloc(n); }
static void *plain_realloc(void *p, size_t n) { return realloc(p, n); }
static void *plain_calloc(size_t a, size_t b) { return calloc(a, b); }
static void plain_free(void *p) { free(p); }

TEST(replace_allocator_null) {
  ASSERT_EQ(lk_replace_allocator(NULL, plain_realloc, plain_calloc, plain_free), LK_EINVAL);
  ASSERT_EQ(lk_replace_allocator(plain_malloc, NULL, plain_calloc, plain_free), LK_EINVAL);
  ASSERT_EQ(lk_replace_allocator(plain_malloc, plain_realloc, NULL, plain_free), LK_EINVAL);
  ASSERT_EQ(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, NULL), LK_EINVAL);
  ASSERT_EQ(lk_replace_allocator(NULL, NULL, NULL, NULL), LK_EINVAL);
  /* All four given, no client: accepted (the same functions as before). */
  ASSERT_OK(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free));
}

TEST(replace_allocator_while_client_exists) {
  fx_t fx;
  lk_lock_t *l;
  int closed = 0;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free),
            LK_EBUSY);
  l = fx_lock(&fx, "alloc");
  ASSERT_EQ(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free),
            LK_EBUSY);
  fx_close_lock(&fx, l);
  /* Closing but not yet closed still counts as existing. */
  lk_client_set_data(fx.c, &closed);
  ASSERT_OK(lk_client_close(fx.c, count_client_closed));
  ASSERT_EQ(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free),
            LK_EBUSY);
  rt_run_until(&fx.loop, &closed, 10000);
  fx.c = NULL;
  /* Once it is gone, replacing is allowed again. */
  ASSERT_OK(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free));
  rt_never_finish(&fx);
}

/* A counting allocator with a header, so that a block freed here that did not
 * come from here (or a double free) is caught, and what is live at the end is
 * a leak of latchkey's own memory. Single-threaded: latchkey allocates on the
 * loop's thread only. */
#define CA_MAGIC 0x6c6b616c6c6f63ULL
typedef struct {
  uint64_t magic;
  uint64_t size;
} ca_hdr_t;
static long long ca_live, ca_total, ca_frees, ca_bad;

static void *ca_malloc(size_t n) {
  ca_hdr_t *h = malloc(sizeof(ca_hdr_t) + n);
  if (h == NULL)
    return NULL;
  h->magic = CA_MAGIC;
  h->size = n;
  ca_live++;
  ca_total++;
  return h + 1;
}
static void *ca_calloc(size_t a, size_t b) {
  size_t n = a * b;
  void *p;
  if (b != 0 && n / b != a)
    return NULL;
  p = ca_malloc(n);
  if (p != NULL)
    memset(p, 0, n);
  return p;
}
static void ca_free(void *p) {
  ca_hdr_t *h;
  if (p == NULL)
    return;
  h = (ca_hdr_t *)p - 1;
  if (h->magic != CA_MAGIC) {
    ca_bad++;
    return; /* not ours: leave it (and fail the case below) */
  }
  h->magic = 0;
  ca_live--;
  ca_frees++;
  free(h);
}
static void *ca_realloc(void *p, size_t n) {
  ca_hdr_t *h, *nh;
  if (p == NULL)
    return ca_malloc(n);
  h = (ca_hdr_t *)p - 1;
  if (h->magic != CA_MAGIC) {
    ca_bad++;
    return NULL;
  }
  nh = realloc(h, sizeof(ca_hdr_t) + n);
  if (nh == NULL)
    return NULL;
  nh->size = n;
  return nh + 1;
}

TEST(counting_allocator_frees_everything) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t sb;
  int64_t r = -1;
  /* Before any client in this process. */
  ASSERT_OK(lk_replace_allocator(ca_malloc, ca_realloc, ca_calloc, ca_free));
  fx_start(&fx, NULL);
  ASSERT_GT(ca_total, 0); /* the client itself came from here */
  /* A full tour: acquire, re-enter, a waiter (pub/sub, timers), hand-off,
   * queries, NOSCRIPT reloads, a waiter closed while waiting, close. */
  fx_lock_holder_and_other(&fx, "counted", 30000, &a, &b);
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  sx_start(b, 20000, 30000, &sb);
  ASSERT_OK(sx_run(&fx, lk_lock_remaining_ttl, a, &r));
  ASSERT_GT(r, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, &r));
  ASSERT_EQ(r, 1);
  rt_run_until(&fx.loop, &sb.done, 10000);
  ASSERT_OK(sb.status);
  ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, b, &r));
  ASSERT_EQ(r, 1);
  /* a now waits on b, and is closed while waiting. */
  {
    sx_t sa;
    sx_start(a, 20000, 30000, &sa);
    fx_close_lock(&fx, a);
    ASSERT_EQ(sa.status, LK_ECANCELED);
  }
  fx_close_lock(&fx, b); /* releases b's hold */
  rt_never_finish(&fx);
  ASSERT_EQ(ca_bad, 0);
  ASSERT_GT(ca_frees, 0);
  if (ca_live != 0)
    FAIL("%lld of %lld blocks from the replaced allocator still live after the client "
         "closed", ca_live, ca_total);
  ASSERT_OK(lk_replace_allocator(plain_malloc, plain_realloc, plain_calloc, plain_free));
}

/* ---- valid odd names ------------------------------------------------------------------------------- */

TEST(odd_names_are_valid_independent_keys) {
  static const struct {
    const char *name;
    size_t len;
  } names[] = {
      {"a{b}c", 5}, {"a b", 3}, {"a\r\nb", 4}, {"%s%n", 4}, {"a", 1}, {"{a}", 3},
  };
  enum { N = sizeof names / sizeof names[0] };
  fx_t fx;
  lk_lock_t *l[N];
  sx_t s[N];
  fx_start(&fx, NULL);
  for (int i = 0; i < N; i++) {
    l[i] = fx_lock(&fx, names[i].name);
    ASSERT_STREQ(lk_lock_name(l[i]), names[i].name);
  }
  /* All at once: every acquire is pending together. Wait 0: each must be
   * free (independent keys). */
  for (int i = 0; i < N; i++)
    sx_start(l[i], 0, 30000, &s[i]);
  for (int i = 0; i < N; i++) {
    rt_run_until(&fx.loop, &s[i].done, 10000);
    if (s[i].status != 0)
      FAIL("acquire of name #%d failed: %s", i, lk_err_name(s[i].status));
    ASSERT_EQ(lk_lock_hold_count(l[i]), 1);
  }
  /* The raw keys exist with the exact bytes, each held by its own owner. */
  for (int i = 0; i < N; i++) {
    const char *argv[3] = {"HGET", names[i].name, lk_lock_owner(l[i])};
    size_t lens[3] = {4, names[i].len, strlen(lk_lock_owner(l[i]))};
    const char *ev[2] = {"EXISTS", names[i].name};
    size_t el[2] = {6, names[i].len};
    redisReply *r = rt_cmd_argv(fx.srv, 2, ev, el);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    if (r->integer != 1)
      FAIL("raw key of name #%d does not exist", i);
    freeReplyObject(r);
    r = rt_cmd_argv(fx.srv, 3, argv, lens);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    ASSERT_STREQ(r->str, "1");
    freeReplyObject(r);
  }
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), N); /* nothing else was written */
  /* Releasing "a" leaves "{a}" (and the rest) alone. */
  ASSERT_OK(sx_run(&fx, lk_lock_release, l[4], NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS a"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {a}"), 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), N - 1);
  for (int i = 0; i < N; i++)
    fx_close_lock(&fx, l[i]);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0); /* closes released the rest */
  rt_never_finish(&fx);
}
