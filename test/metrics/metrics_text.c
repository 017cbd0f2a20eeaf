/* lk_client_write_metrics and lk_metrics_write (docs/metrics.md): the
 * exposition after known work has the right values and a valid histogram;
 * a short buffer gets nothing past its length and the size it needs; labels
 * for several clients; each reason a lease is lost is counted as that
 * reason. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lk_fixture.h"
#include "metrics_check.h"

static void on_lost(lk_lock_t *l, int status, void *arg) {
  (void)l;
  ASSERT_EQ(status, LK_ELEASELOST);
  (*(int *)arg)++;
}

/* Each reason's counter by name: the struct and the text agree. */
static const char *const reasons[] = {"gone", "taken", "deadline", "restart", "quorum"};

static uint64_t reason_stat(const lk_client_stats_t *st, int i) {
  const uint64_t v[] = {st->leases_lost_gone, st->leases_lost_taken, st->leases_lost_deadline,
                        st->leases_lost_restart, st->leases_lost_quorum};
  return v[i];
}

static void check_lost(const lk_client_t *c, const char *labels, const char *want) {
  lk_client_stats_t st;
  char *text = mc_text(c, NULL), series[160];
  uint64_t sum = 0;
  int i;
  lk_client_get_stats(c, &st);
  mc_check(text);
  for (i = 0; i < 5; i++) {
    snprintf(series, sizeof(series), "latchkey_leases_lost_total{%s,reason=\"%s\"}", labels,
             reasons[i]);
    ASSERT_EQ(mc_value(text, series), (double)reason_stat(&st, i));
    ASSERT_EQ(reason_stat(&st, i), strcmp(reasons[i], want) == 0 ? 1 : 0);
    sum += reason_stat(&st, i);
  }
  ASSERT_EQ(sum, st.leases_lost);
  free(text);
}

/* A lock held under the watchdog (lease = the client's default). */
static lk_lock_t *held(fx_t *fx, const char *name, int *lost) {
  lk_lock_t *l = fx_lock(fx, name);
  ASSERT_OK(lk_lock_set_lost_cb(l, on_lost, lost));
  ASSERT_EQ(sx_acquire(fx, l, 0, LK_LEASE_DEFAULT), 0);
  return l;
}

/* lease_ms is the client's default lease: renewed every third of it. A
 * loop stalled longer than a lease would lose by deadline instead of the
 * reason a case makes, so the cases that want another reason scale it. */
static void start_short_lease(fx_t *fx, int64_t lease_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.client_name = "m";
  o.default_lease_ms = lease_ms;
  fx_start_with(fx, NULL, &o);
}

/* Closes the locks (NULL-terminated, in order), the second client
 * other, then the fixture. */
static void finish_with_other(fx_t *fx, lk_client_t *other, lk_lock_t *const *locks) {
  for (; *locks != NULL; locks++)
    fx_close_lock(fx, *locks);
  fx_close_direct_client(fx, other);
  fx_finish(fx);
}

TEST(exposition_after_known_work) {
  enum { N = 5 };
  fx_t fx;
  lk_client_t *other;
  lk_lock_t *l, *w, *holder, *lost_l;
  lk_client_stats_t st;
  sx_t s;
  int i, lost = 0, b;
  uint64_t t0;
  double sum, count, prev = 0;
  char *text, series[160];

  start_short_lease(&fx, rt_scaled_ms(900));
  /* N uncontended acquires and releases. */
  l = fx_lock(&fx, "m:plain");
  for (i = 0; i < N; i++) {
    ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), 0);
    ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  }
  /* One wait: another client holds it until the waiter listens. */
  other = fx_direct_client(&fx);
  ASSERT_OK(lk_lock_new(other, "m:wait", &holder));
  ASSERT_EQ(sx_acquire(&fx, holder, 0, 10000), 0);
  w = fx_lock(&fx, "m:wait");
  t0 = uv_hrtime();
  sx_start(w, 20000, 10000, &s);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{m:wait}", 1);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, holder, NULL), 0);
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_EQ(s.status, 0);
  /* One lost lease: the held key deleted behind its back. */
  lost_l = held(&fx, "m:lost", &lost);
  rt_cmd_int(fx.srv, "DEL m:lost");
  rt_run_until(&fx.loop, &lost, 10000);

  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.acquires, N + 2);
  ASSERT_EQ(st.acquire_waits, 1);
  ASSERT_EQ(st.releases, N);
  ASSERT_EQ(st.leases_lost, 1);
  ASSERT_EQ(st.leases_lost_gone, 1);
  ASSERT_GE(st.renewals, 1);
  ASSERT_EQ(st.acquire_timeouts, 0);
  /* The wait lasted from the call to the grant: no longer than observed. */
  ASSERT_GT(st.wait_ns_total, 0);
  ASSERT_LE(st.wait_ns_total, s.t_ns - t0);

  text = mc_text(fx.c, NULL);
  ASSERT_GT(mc_check(text), 40);
  ASSERT_EQ(mc_value(text, "latchkey_acquires_total{client=\"m\"}"), N + 2);
  ASSERT_EQ(mc_value(text, "latchkey_acquire_waits_total{client=\"m\"}"), 1);
  ASSERT_EQ(mc_value(text, "latchkey_releases_total{client=\"m\"}"), N);
  ASSERT_EQ(mc_value(text, "latchkey_leases_lost_total{client=\"m\",reason=\"gone\"}"), 1);
  ASSERT_EQ(mc_value(text, "latchkey_leases_lost_total{client=\"m\",reason=\"deadline\"}"), 0);
  ASSERT_EQ(mc_value(text, "latchkey_renewals_total{client=\"m\"}"), (double)st.renewals);
  ASSERT_EQ(mc_value(text, "latchkey_connected{client=\"m\"}"), 1);
  ASSERT_EQ(mc_value(text, "latchkey_objects{client=\"m\"}"), 3);
  snprintf(series, sizeof(series), "latchkey_client_info{client=\"m\",version=\"%s\"}",
           lk_version_string());
  ASSERT_EQ(mc_value(text, series), 1);
  /* The client id is part of every owner id: never in the metrics. */
  ASSERT_NULL(strstr(text, lk_client_id(fx.c)));
  /* The histogram: one observation, in the first bucket whose bound is
   * at least the sum, cumulative from there on. */
  sum = mc_value(text, "latchkey_acquire_wait_seconds_sum{client=\"m\"}");
  count = mc_value(text, "latchkey_acquire_wait_seconds_count{client=\"m\"}");
  ASSERT_EQ(count, 1);
  ASSERT(sum > 0 && sum * 1e9 <= (double)(s.t_ns - t0));
  for (b = 0; b < LK_WAIT_BUCKETS; b++) {
    int64_t us = lk_metrics_wait_bound_us(b);
    double v;
    char le[32];
    if (us < 0)
      snprintf(le, sizeof(le), "+Inf");
    else
      snprintf(le, sizeof(le), "%g", (double)us / 1e6);
    snprintf(series, sizeof(series), "latchkey_acquire_wait_seconds_bucket{client=\"m\",le=\"%s\"}",
             le);
    v = mc_value(text, series);
    ASSERT_EQ(v, us < 0 || (double)us / 1e6 >= sum ? 1 : 0);
    ASSERT(v >= prev);
    prev = v;
  }
  ASSERT_EQ(lk_metrics_wait_bound_us(LK_WAIT_BUCKETS - 1), -1);
  ASSERT_EQ(lk_metrics_wait_bound_us(-1), -1);
  ASSERT_EQ(lk_metrics_wait_bound_us(0), 500);
  ASSERT_EQ(lk_metrics_wait_bound_us(LK_WAIT_BUCKETS - 2), 60000000);
  free(text);

  finish_with_other(&fx, other, (lk_lock_t *[]){l, w, lost_l, holder, NULL});
}

TEST(timeouts_are_counted) {
  fx_t fx;
  lk_client_t *other;
  lk_lock_t *holder, *w;
  lk_client_stats_t st;
  char *text;
  start_short_lease(&fx, 30000);
  other = fx_direct_client(&fx);
  ASSERT_OK(lk_lock_new(other, "m:busy", &holder));
  ASSERT_EQ(sx_acquire(&fx, holder, 0, 10000), 0);
  w = fx_lock(&fx, "m:busy");
  ASSERT_EQ(sx_acquire(&fx, w, 0, 10000), LK_ETIMEDOUT);
  ASSERT_EQ(sx_acquire(&fx, w, 50, 10000), LK_ETIMEDOUT);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.acquire_timeouts, 2);
  ASSERT_EQ(st.acquires, 0);
  ASSERT_EQ(st.acquire_waits, 0); /* a wait that failed is not in the histogram */
  text = mc_text(fx.c, NULL);
  mc_check(text);
  ASSERT_EQ(mc_value(text, "latchkey_acquire_timeouts_total{client=\"m\"}"), 2);
  ASSERT_EQ(mc_value(text, "latchkey_acquire_wait_seconds_count{client=\"m\"}"), 0);
  ASSERT_EQ(mc_value(text, "latchkey_acquire_wait_seconds_bucket{client=\"m\",le=\"+Inf\"}"), 0);
  free(text);
  finish_with_other(&fx, other, (lk_lock_t *[]){w, holder, NULL});
}

TEST(short_buffer_gets_nothing_past_len) {
  fx_t fx;
  char *buf;
  int need, got;
  size_t lens[6], i, j, k;
  start_short_lease(&fx, 30000);
  need = lk_client_write_metrics(fx.c, NULL, 0, NULL);
  ASSERT_GT(need, 100);
  buf = malloc((size_t)need + 64);
  ASSERT_NOT_NULL(buf);
  lens[0] = 1, lens[1] = 2, lens[2] = 7, lens[3] = (size_t)need / 2, lens[4] = (size_t)need,
  lens[5] = (size_t)need + 1;
  for (i = 0; i < 6; i++) {
    memset(buf, 0xAB, (size_t)need + 64);
    got = lk_client_write_metrics(fx.c, buf, lens[i], NULL);
    ASSERT_EQ(got, need);
    for (j = lens[i]; j < (size_t)need + 64; j++)
      if ((unsigned char)buf[j] != 0xAB)
        FAIL("len %zu: byte %zu written", lens[i], j);
    if (lens[i] <= (size_t)need) {
      ASSERT_EQ(buf[0], '\0'); /* nothing a scraper could misread */
    } else {
      ASSERT_EQ(strlen(buf), need);
      mc_check(buf);
    }
  }
  /* len 0 writes nothing at all, with or without a buffer. */
  memset(buf, 0xAB, 8);
  ASSERT_EQ(lk_client_write_metrics(fx.c, buf, 0, NULL), need);
  for (k = 0; k < 8; k++)
    ASSERT_EQ((unsigned char)buf[k], 0xAB);
  ASSERT_EQ(lk_client_write_metrics(fx.c, NULL, 5, NULL), LK_EINVAL);
  ASSERT_EQ(lk_client_write_metrics(NULL, buf, 8, NULL), LK_EINVAL);
  free(buf);
  fx_finish(&fx);
}

typedef struct {
  lk_client_t *c;
  int rc;
} thread_arg_t;

static void *other_thread(void *p) {
  thread_arg_t *a = p;
  char buf[16];
  a->rc = lk_client_write_metrics(a->c, buf, sizeof(buf), NULL);
  return NULL;
}

TEST(labels_and_several_clients) {
  fx_t fx;
  lk_client_t *b;
  lk_client_opts_t o;
  const lk_client_t *both[2];
  const char *labels[2] = {"client=\"a\"", "client=\"b\",zone=\"eu \\\"1\\\"\\\\x\""};
  static const char *const bad[] = {"le=\"1\"",      "reason=\"x\"", "a=1",
                                    "a=\"x\",",      "__a=\"x\"",    "a=\"\\q\"",
                                    "9a=\"x\"",      "a=\"x\"b=\"y\"", "a=\"x",
                                    "a=\"x\ny\"",    "{a=\"x\"}",    "version=\"1\"",
                                    ",a=\"x\""};
  char *text, *p;
  int n, helps = 0;
  size_t i;
  pthread_t t;
  thread_arg_t ta;

  lk_client_opts_init(&o);
  o.client_name = "my\"app\\";
  fx_start_with(&fx, NULL, &o);
  fx_client_opts(&fx, &o);
  o.client_name = "b";
  ASSERT_OK(lk_client_new(&fx.loop, &o, &b));

  /* Default label: the client name, escaped. */
  text = mc_text(fx.c, NULL);
  mc_check(text);
  ASSERT_EQ(mc_value(text, "latchkey_acquires_total{client=\"my\\\"app\\\\\"}"), 0);
  free(text);
  /* No label at all: no braces. */
  text = mc_text(fx.c, "");
  mc_check(text);
  ASSERT_EQ(mc_value(text, "latchkey_acquires_total"), 0);
  ASSERT_EQ(mc_value(text, "latchkey_leases_lost_total{reason=\"gone\"}"), 0);
  ASSERT_EQ(mc_value(text, "latchkey_acquire_wait_seconds_bucket{le=\"0.0005\"}"), 0);
  free(text);

  /* Two clients in one exposition: each family's HELP once, both samples. */
  both[0] = fx.c;
  both[1] = b;
  n = lk_metrics_write(both, labels, 2, NULL, 0);
  ASSERT_GT(n, 0);
  text = malloc((size_t)n + 1);
  ASSERT_NOT_NULL(text);
  ASSERT_EQ(lk_metrics_write(both, labels, 2, text, (size_t)n + 1), n);
  mc_check(text);
  ASSERT_EQ(mc_value(text, "latchkey_acquires_total{client=\"a\"}"), 0);
  ASSERT_EQ(mc_value(text, "latchkey_acquires_total{client=\"b\",zone=\"eu \\\"1\\\"\\\\x\"}"), 0);
  for (p = text; (p = strstr(p, "# HELP latchkey_acquires_total ")) != NULL; p++)
    helps++;
  ASSERT_EQ(helps, 1);
  free(text);
  /* NULL labels for both: their client names. */
  n = lk_metrics_write(both, NULL, 2, NULL, 0);
  text = malloc((size_t)n + 1);
  ASSERT_NOT_NULL(text);
  ASSERT_EQ(lk_metrics_write(both, NULL, 2, text, (size_t)n + 1), n);
  mc_check(text);
  ASSERT_EQ(mc_value(text, "latchkey_connected{client=\"b\"}"), lk_client_is_connected(b));
  free(text);

  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    if (lk_client_write_metrics(fx.c, NULL, 0, bad[i]) != LK_EINVAL)
      FAIL("labels %s accepted", bad[i]);
  ASSERT_EQ(lk_metrics_write(NULL, NULL, 1, NULL, 0), LK_EINVAL);
  ASSERT_EQ(lk_metrics_write(both, NULL, 0, NULL, 0), LK_EINVAL);
  both[1] = NULL;
  ASSERT_EQ(lk_metrics_write(both, NULL, 2, NULL, 0), LK_EINVAL);
  /* Another thread: refused, nothing read. */
  ta.c = fx.c;
  ta.rc = 0;
  ASSERT_OK(pthread_create(&t, NULL, other_thread, &ta));
  ASSERT_OK(pthread_join(t, NULL));
  ASSERT_EQ(ta.rc, LK_EWRONGTHREAD);

  fx_close_direct_client(&fx, b);
  fx_finish(&fx);
}

/* --- each reason a lease is lost --- */

/* A lock "m:r" held with the watchdog on a client whose default lease is
 * lease_ms; cause() takes the hold away and runs the loop until the loss
 * is told (*lost); it is counted under reason. */
static void lost_for_reason(int64_t lease_ms, void (*cause)(fx_t *, int *), const char *reason) {
  fx_t fx;
  int lost = 0;
  lk_lock_t *l;
  start_short_lease(&fx, lease_ms);
  l = held(&fx, "m:r", &lost);
  cause(&fx, &lost);
  check_lost(fx.c, "client=\"m\"", reason);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

static void delete_it(fx_t *fx, int *lost) {
  rt_cmd_int(fx->srv, "DEL m:r");
  rt_run_until(&fx->loop, lost, 10000);
}

static void another_owner_takes_it(fx_t *fx, int *lost) {
  redisReply *r;
  /* Another owner's hold in its place, in one step (MULTI). */
  r = rt_cmd(fx->srv, "EVAL %s 1 m:r", "redis.call('del', KEYS[1]) "
                                      "redis.call('hset', KEYS[1], 'someone-else:1', 1) "
                                      "redis.call('pexpire', KEYS[1], 60000)");
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  rt_run_until(&fx->loop, lost, 10000);
  ASSERT_EQ(rt_cmd_int(fx->srv, "HEXISTS m:r someone-else:1"), 1); /* not touched */
}

/* No renewal can be confirmed: the local deadline (about 0.9 s after the
 * last confirmed one, well before the 3 s reply timeout) passes. */
static void pause_the_server(fx_t *fx, int *lost) {
  rt_server_pause(fx->srv);
  rt_run_until(&fx->loop, lost, 10000);
  rt_server_resume(fx->srv);
}

static void restart_the_server(fx_t *fx, int *lost) {
  ASSERT_OK(rt_server_restart(fx->srv)); /* no persistence: the key is gone */
  rt_run_until(&fx->loop, lost, 20000);
}

TEST(lost_reason_gone) { lost_for_reason(rt_scaled_ms(900), delete_it, "gone"); }

TEST(lost_reason_taken) { lost_for_reason(rt_scaled_ms(900), another_owner_takes_it, "taken"); }

TEST(lost_reason_deadline) { lost_for_reason(900, pause_the_server, "deadline"); }

/* A lease long enough that the restart's renewal, not the deadline, finds
 * the loss. */
TEST(lost_reason_restart) { lost_for_reason(rt_scaled_ms(6000), restart_the_server, "restart"); }
