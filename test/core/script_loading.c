/* Scripts are loaded when first needed (docs/client.md, "Connection
 * behaviour"): a connection's handshake loads none; the first call of a
 * script on a connection is sent as SCRIPT LOAD + EVALSHA in one write, and a
 * NOSCRIPT (the server restarted, failed over, or flushed its scripts) is
 * answered with EVAL exactly once per command, as before. Label scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "lk_fixture.h"
#include "workers.h"

/* Every command the server ran since CONFIG RESETSTAT, from one INFO
 * commandstats (whose own call is not in its output), less the RESETSTAT
 * itself. what gets "name=calls ..." for a failure's message. */
static long long commands_since_reset(rt_server_t *s, char *what, size_t what_len) {
  redisReply *r = rt_cmd(s, "INFO commandstats");
  long long total = 0;
  size_t used = 0;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STRING);
  what[0] = '\0';
  for (const char *p = strstr(r->str, "cmdstat_"); p != NULL; p = strstr(p + 1, "cmdstat_")) {
    const char *name = p + 8, *colon = strchr(name, ':');
    const char *calls = colon != NULL ? strstr(colon, "calls=") : NULL;
    if (colon == NULL || calls == NULL)
      break;
    long long n = atoll(calls + 6);
    if ((size_t)(colon - name) == strlen("config|resetstat") &&
        memcmp(name, "config|resetstat", (size_t)(colon - name)) == 0)
      continue;
    total += n;
    if (used < what_len)
      used += (size_t)snprintf(what + used, what_len - used, "%.*s=%lld ", (int)(colon - name),
                               name, n);
  }
  freeReplyObject(r);
  return total;
}

/* One acquire and one release of lock l, run to completion. */
static void take_and_release(fx_t *fx, lk_lock_t *l) {
  ASSERT_EQ(sx_acquire(fx, l, 0, 30000), 0);
  ASSERT_EQ(sx_run(fx, lk_lock_release, l, NULL), 0);
}

/* What `latchkey run NAME -- true`, a cron job or a CGI program does: a
 * fresh client connects, takes one lock and releases it. It used to load all
 * of the library's scripts first (about 58 commands in all); now the
 * handshake (CLIENT SETNAME, INFO) and one SCRIPT LOAD + EVALSHA per script
 * used. INFO commandstats also counts the commands the scripts run inside
 * the server: those are measured on a second, warm pair (the same two
 * scripts on the same free name, no handshake, nothing to load) and taken
 * off. The client's own count of what it sent must agree. */
TEST(fresh_client_takes_and_releases_one_lock_in_at_most_8_commands) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_stats_t st;
  char what[1024];
  fx_start_server(&fx, NULL);
  rt_server_reset_stats(fx.srv);
  fx_client_opts(&fx, &o);
  fx_start_client(&fx, &o);
  lk_lock_t *l = fx_lock(&fx, "fresh");
  take_and_release(&fx, l);
  long long fresh = commands_since_reset(fx.srv, what, sizeof what);
  printf("fresh client, one pair: %lld in the server's count (%s)\n", fresh, what);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 0); /* no NOSCRIPT on the way */
  lk_client_get_stats(fx.c, &st);
  uint64_t sent_fresh = st.commands_sent;

  rt_server_reset_stats(fx.srv);
  take_and_release(&fx, l);
  long long warm = commands_since_reset(fx.srv, what, sizeof what);
  long long warm_calls = rt_server_cmd_calls(fx.srv, "evalsha") + rt_server_cmd_calls(fx.srv, "eval");
  printf("warm pair: %lld in the server's count (%s)\n", warm, what);
  ASSERT_EQ(warm_calls, 2);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.commands_sent - sent_fresh, 2);

  long long inside_scripts = warm - warm_calls;
  long long sent = fresh - inside_scripts;
  printf("commands sent by the fresh client: %lld (its own count: %llu)\n", sent,
         (unsigned long long)sent_fresh);
  ASSERT_LE(sent, 8);
  ASSERT_EQ((long long)sent_fresh, sent);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

typedef struct burst_s {
  lk_lock_t *l[16];
  sx_t s[16];
  int done;
} burst_t;

static void burst_cb(lk_lock_t *l, int status, void *arg) {
  sx_t *s = arg;
  (void)l;
  s->calls++;
  s->status = status;
  s->done = 1;
}

static int burst_all_done(burst_t *b, int n) {
  for (int i = 0; i < n; i++)
    if (!b->s[i].done)
      return 0;
  return 1;
}

/* Runs the loop until every callback of the burst came (bounded). */
static void burst_wait(fx_t *fx, burst_t *b, int n) {
  int64_t end = rt_now_ms() + rt_scaled_ms(15000);
  while (!burst_all_done(b, n) && rt_now_ms() < end)
    uv_run(&fx->loop, UV_RUN_ONCE);
  ASSERT(burst_all_done(b, n));
}

/* The server forgets its scripts (SCRIPT FLUSH) while a connection that has
 * used them has many calls in flight, all sent in one write: each gets
 * NOSCRIPT, which means it did not run, and is sent again as EVAL, once.
 * A re-entrant lock shows a double run as a hold count of 2, a release run
 * twice as a failure. */
TEST(noscript_after_flush_with_many_in_flight_runs_each_exactly_once) {
  enum { N = 16 };
  fx_t fx;
  burst_t b;
  lk_client_stats_t st0, st1;
  lk_lock_opts_t lo;
  char name[32];
  memset(&b, 0, sizeof b);
  fx_start(&fx, NULL);
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "burst-%d", i);
    b.l[i] = fx_lock(&fx, name);
  }
  /* Both scripts used once on this connection: loaded. */
  ASSERT_EQ(sx_acquire(&fx, b.l[0], 0, 30000), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, b.l[0], NULL), 0);
  lk_client_get_stats(fx.c, &st0);

  rt_server_script_flush(fx.srv);
  rt_server_reset_stats(fx.srv);
  lk_lock_opts_init(&lo);
  lo.wait_ms = 0;
  lo.lease_ms = 30000;
  for (int i = 0; i < N; i++)
    ASSERT_OK(lk_lock_acquire(b.l[i], &lo, burst_cb, &b.s[i]));
  burst_wait(&fx, &b, N);
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "burst-%d", i);
    ASSERT_EQ(b.s[i].calls, 1);
    ASSERT_EQ(b.s[i].status, 0);
    ASSERT_EQ(lk_lock_hold_count(b.l[i]), 1);
    char *v = rt_cmd_str(fx.srv, "HGET %s %s", name, lk_lock_owner(b.l[i]));
    ASSERT_NOT_NULL(v);
    ASSERT_EQ(atoll(v), 1); /* granted once on the server too */
    free(v);
  }
  lk_client_get_stats(fx.c, &st1);
  ASSERT_EQ(st1.noscript_reloads - st0.noscript_reloads, N);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), N);

  /* The same for N releases in flight. */
  rt_server_script_flush(fx.srv);
  for (int i = 0; i < N; i++)
    memset(&b.s[i], 0, sizeof b.s[i]);
  for (int i = 0; i < N; i++)
    ASSERT_OK(lk_lock_release(b.l[i], burst_cb, &b.s[i]));
  burst_wait(&fx, &b, N);
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "burst-%d", i);
    ASSERT_EQ(b.s[i].calls, 1);
    ASSERT_EQ(b.s[i].status, 0);
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", name), 0);
  }
  lk_client_get_stats(fx.c, &st1);
  ASSERT_EQ(st1.noscript_reloads - st0.noscript_reloads, 2 * N);
  for (int i = 0; i < N; i++)
    fx_close_lock(&fx, b.l[i]);
  fx_finish(&fx);
}

/* A restarted server has no scripts: the new connection loads each again on
 * its first use, so no call meets NOSCRIPT. */
TEST(a_new_connection_loads_scripts_again_on_first_use) {
  fx_t fx;
  lk_client_stats_t st;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "reload");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 30000), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  ASSERT_OK(rt_server_restart(fx.srv));
  /* The first acquire may meet the dropped connection (LK_ECONN or unknown);
   * waiting covers the reconnect. */
  ASSERT_EQ(sx_acquire(&fx, l, 10000, 30000), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.noscript_reloads, 0);
  ASSERT_GE(rt_server_cmd_calls(fx.srv, "script|load"), 2);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* A user whose ACL denies SCRIPT LOAD (EVALSHA and EVAL allowed): the first
 * load is refused, no other is tried on that connection, and every script
 * runs all the same (NOSCRIPT, then EVAL, once per script). */
TEST(script_load_denied_is_tried_once_and_scripts_still_run) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_stats_t st;
  fx_start_server(&fx, NULL);
  rt_server_acl_user(fx.srv, "noload", "pw", "~* &* +@all -script|load");
  fx_client_opts(&fx, &o);
  o.username = "noload";
  o.password = "pw";
  fx_start_client(&fx, &o);
  lk_lock_t *l = fx_lock(&fx, "noload");
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(sx_acquire(&fx, l, 0, 30000), 0);
    ASSERT_EQ(lk_lock_hold_count(l), 1);
    ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS noload"), 0);
  }
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.noscript_reloads, 2); /* the acquire's and the release's first calls */
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 2);
  redisReply *r = rt_cmd(fx.srv, "ACL LOG");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 1); /* denied SCRIPT LOADs, one entry (same user, command) */
  redisReply *e = r->element[0];
  long long count = -1;
  ASSERT_EQ(e->type, REDIS_REPLY_ARRAY);
  for (size_t k = 0; k + 1 < e->elements; k += 2)
    if (e->element[k]->type == REDIS_REPLY_STRING && strcmp(e->element[k]->str, "count") == 0)
      count = e->element[k + 1]->integer;
  ASSERT_EQ(count, 1); /* one denied, not one per script used */
  freeReplyObject(r);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* After SCRIPT FLUSH the next call of each script meets NOSCRIPT and runs as
 * EVAL; the call after that loads the script again (SCRIPT LOAD), so it does
 * not live on in EVAL's cache alone, which Redis 8 and Valkey 8 evict. */
TEST(a_flushed_script_is_loaded_again_by_its_next_call) {
  fx_t fx;
  lk_client_stats_t st;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "flushed");
  take_and_release(&fx, l);
  char *ok = rt_cmd_str(fx.srv, "SCRIPT FLUSH");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  rt_server_reset_stats(fx.srv);
  take_and_release(&fx, l); /* NOSCRIPT, then EVAL: acquire and release */
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.noscript_reloads, 2);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 2);
  rt_server_reset_stats(fx.srv);
  take_and_release(&fx, l);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "script|load"), 2);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* A script that keeps the server BUSY (another client's, 1.5 s) while this
 * client's first calls go out: their SCRIPT LOAD is refused with -BUSY,
 * which says nothing about this client's rights. Once the server is free,
 * a script's first call is still preceded by its SCRIPT LOAD (an ACL
 * refusal, NOPERM, alone turns loading off for the connection). */
static int busy_port;

static void busy_for_a_while(int index, void *arg) {
  (void)index;
  (void)arg;
  if (rt_busy_script(busy_port, 1500, NULL) != 0)
    _exit(4);
}

TEST(a_busy_server_does_not_turn_script_loading_off) {
  fx_t fx;
  lk_client_opts_t o;
  rt_server_opts_t so;
  const char *extra[] = {"--busy-reply-threshold", "200", NULL};
  rt_server_opts_init(&so);
  so.extra_args = extra;
  fx_start_server(&fx, &so);
  busy_port = rt_server_port(fx.srv);
  fx_client_opts(&fx, &o);
  o.reply_timeout_ms = 3000; /* BUSY answers come at once */
  fx_start_client(&fx, &o);
  lk_lock_t *l = fx_lock(&fx, "busyload");
  rt_worker_t w;
  ASSERT_OK(rt_worker_start(&w, 0, busy_for_a_while, NULL));
  /* Until the server answers BUSY (past its 200 ms threshold). */
  int64_t mark = rt_stall_mark();
  int busy = 0;
  for (int i = 0; i < 1000 && !busy && !rt_stall_expired(mark, 1200); i++) {
    redisReply *r = rt_cmd(fx.srv, "GET busyload-probe");
    busy = r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSY", 4) == 0;
    freeReplyObject(r);
    if (!busy)
      fx_spin(&fx, 10);
  }
  ASSERT(busy);
  ASSERT_EQ(sx_acquire(&fx, l, 5000, 30000), 0); /* loads refused, retried past BUSY */
  ASSERT_EQ(rt_workers_wait(&w, 1, rt_scaled_ms(10000)), 0);
  rt_server_reset_stats(fx.srv);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0); /* the release script's first call */
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "script|load"), 1);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}
