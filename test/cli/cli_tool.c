/* The latchkey tool (docs/cli.md) run as a program against harness servers:
 * each case starts the built binary (LK_CLI_PATH) with fork/exec, its
 * output captured in files of a private directory. */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lk_fixture.h"
#include "redisson_emu.h"
#include "pty_read.h"
#include "pty_util.h"
#include "tool_util.h"

/* A Redisson client of srv's (returned) holding name as uuid's thread 1,
 * for a minute. */
static redisContext *redisson_holding(rt_server_t *srv, const char *name, const char *uuid) {
  redisContext *ctx = rt_rlock_connect(rt_server_port(srv));
  ASSERT_EQ(rt_rlock_try(ctx, name, uuid, 1, 60000), RT_RLOCK_ACQUIRED);
  return ctx;
}

/* Through Redisson's client ctx: the fair lock name held by aaaaaaaa-...:1,
 * with bbbbbbbb-...:2 queued behind it (both for a minute). */
static void redisson_fair_held_and_queued(redisContext *ctx, const char *name) {
  long long ttl;
  ASSERT_EQ(rt_rfair_attempt(ctx, name, "aaaaaaaa-2222-4333-8444-555555555555", 1, 60000, 60000,
                             &ttl),
            1);
  ASSERT_EQ(rt_rfair_attempt(ctx, name, "bbbbbbbb-2222-4333-8444-555555555555", 2, 60000, 60000,
                             &ttl),
            0);
}

TEST(run_excludes_another_run_on_the_same_name) {
  rt_server_t *srv;
  tool_t t[4];
  char log[256], script[1024], *text, *p;
  int i, depth = 0, starts = 0;
  srv = tool_server();
  path_of(log, sizeof(log), "log");
  /* Each child appends start, waits, appends end: with the lock held,
   * no two starts follow each other. */
  snprintf(script, sizeof(script), "echo start >> %s; sleep 0.2; echo end >> %s", log, log);
  for (i = 0; i < 4; i++) {
    char tag[16];
    const char *args[] = {"run", "--wait", "60s", "cli:excl", "--", "sh", "-c", script, NULL};
    snprintf(tag, sizeof(tag), "run%d", i);
    tool_start(&t[i], rt_server_port(srv), tag, args);
  }
  for (i = 0; i < 4; i++)
    ASSERT_EQ(tool_wait(&t[i]), 0);
  text = slurp(log);
  for (p = strtok(text, "\n"); p != NULL; p = strtok(NULL, "\n")) {
    if (strcmp(p, "start") == 0) {
      ASSERT_EQ(depth, 0);
      depth = 1, starts++;
    } else {
      ASSERT_STREQ(p, "end");
      ASSERT_EQ(depth, 1);
      depth = 0;
    }
  }
  free(text);
  ASSERT_EQ(starts, 4);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:excl"), 0);
  rt_server_stop(srv);
}

TEST(child_sees_name_owner_and_an_increasing_token) {
  rt_server_t *srv;
  char f1[256], f2[256], s1[1024], s2[1024];
  srv = tool_server();
  path_of(f1, sizeof(f1), "t1");
  path_of(f2, sizeof(f2), "t2");
  snprintf(s1, sizeof(s1), "echo $LATCHKEY_TOKEN > %s; echo $LATCHKEY_NAME $LATCHKEY_OWNER >> %s",
           f1, f1);
  snprintf(s2, sizeof(s2), "echo $LATCHKEY_TOKEN > %s", f2);
  {
    const char *a1[] = {"run", "cli:tok", "--", "sh", "-c", s1, NULL};
    const char *a2[] = {"run", "cli:tok", "--", "sh", "-c", s2, NULL};
    ASSERT_EQ(tool_run(rt_server_port(srv), "r1", a1), 0);
    ASSERT_EQ(tool_run(rt_server_port(srv), "r2", a2), 0);
  }
  ASSERT_GT(read_ll(f1), 0);
  ASSERT_GT(read_ll(f2), read_ll(f1));
  ASSERT(file_has(f1, "cli:tok "));
  ASSERT(file_has(f1, ":1")); /* UUID:TID */
  rt_server_stop(srv);
}

TEST(child_exit_status_is_passed_on) {
  rt_server_t *srv;
  const char *a[] = {"run", "cli:st", "--", "sh", "-c", "exit 7", NULL};
  const char *nf[] = {"run", "cli:st", "--", "/nonexistent/cmd", NULL};
  srv = tool_server();
  ASSERT_EQ(tool_run(rt_server_port(srv), "st", a), 7);
  ASSERT_EQ(tool_run(rt_server_port(srv), "nf", nf), 127);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:st"), 0);
  rt_server_stop(srv);
}

TEST(deleted_key_terminates_child_with_lost_status) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], script[1024];
  srv = tool_server();
  /* The child ignores SIGTERM: SIGKILL after --kill-after. */
  stubborn_script(script, sizeof(script), pidf, sizeof(pidf));
  {
    const char *a[] = {"run", "--lease", "3s", "--kill-after", "300ms", "cli:lost", "--", "sh",
                       "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "lost", a);
  }
  wait_file(pidf, 10000);
  ASSERT_EQ(rt_cmd_int(srv, "DEL cli:lost"), 1);
  /* The next renewal (every lease/3 = 1 s) finds the key gone. */
  tool_expect_lost(&t, pidf, 10000);
  rt_server_stop(srv);
}

TEST(sigterm_reaches_child_and_lock_is_released) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], got[256], script[1024];
  srv = tool_server();
  path_of(pidf, sizeof(pidf), "pid");
  path_of(got, sizeof(got), "got");
  snprintf(script, sizeof(script),
           "trap 'echo term > %s; exit 5' TERM; echo $$ > %s; while :; do sleep 0.05; done", got,
           pidf);
  {
    const char *a[] = {"run", "cli:sig", "--", "sh", "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "sig", a);
  }
  wait_file(pidf, 10000);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:sig"), 1);
  ASSERT_EQ(kill(t.pid, SIGTERM), 0);
  ASSERT_EQ(tool_wait(&t), 5);
  ASSERT(file_has(got, "term"));
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:sig"), 0);
  rt_server_stop(srv);
}

TEST(timeout_and_connection_errors_have_their_statuses) {
  rt_server_t *srv;
  int dead = rt_pick_port();
  srv = tool_server();
  freeReplyObject(rt_cmd(srv, "HSET cli:busy 11111111-2222-4333-8444-555555555555:1 1"));
  {
    const char *a[] = {"run", "--wait", "200ms", "cli:busy", "--", "true", NULL};
    const char *b[] = {"run", "--wait", "0", "cli:busy", "--", "true", NULL};
    const char *c[] = {"run", "--wait", "500ms", "cli:x", "--", "true", NULL};
    const char *d[] = {"ping", NULL};
    const char *e[] = {"inspect", "cli:x", NULL};
    ASSERT_EQ(tool_run(rt_server_port(srv), "to", a), 75);
    ASSERT_EQ(tool_run(rt_server_port(srv), "to0", b), 75);
    ASSERT_EQ(tool_run(dead, "c1", c), 69);
    ASSERT_EQ(tool_run(dead, "c2", d), 69);
    ASSERT_EQ(tool_run(dead, "c3", e), 69);
  }
  rt_server_stop(srv);
}

TEST(every_bad_argument_is_usage_and_status_2) {
  static const char *const cases[][10] = {
      {NULL},
      {"frobnicate", NULL},
      {"run", NULL},
      {"run", "x", NULL},
      {"run", "x", "--", NULL},
      {"run", "x", "true", NULL},
      {"run", "--wait", "10", "x", "--", "true", NULL},
      {"run", "--wait", "ten", "x", "--", "true", NULL},
      {"run", "--lease", "500ms", "x", "--", "true", NULL},
      {"run", "--wait", NULL},
      {"run", "--fair", "--read", "x", "--", "true", NULL},
      {"run", "--permits", "0", "--semaphore", "x", "--", "true", NULL},
      {"run", "--permits", "2", "--fair", "x", "--", "true", NULL},
      {"run", "--permits", "1001", "x", "--", "true", NULL},
      {"run", "--bogus", "x", "--", "true", NULL},
      {"run", "--redis", "http://nope", "x", "--", "true", NULL},
      {"inspect", NULL},
      {"inspect", "--bogus", "x", NULL},
      {"list", "a", "b", NULL},
      {"list", "--count", "0", NULL},
      {"release", "x", NULL},
      {"release", "--force", NULL},
      {"release", "--force", "x", NULL}, /* stdin not a terminal, no --yes */
      {"ping", "extra", NULL},
      {"watch", NULL},
      {"watch", "--interval", "1ms", "x", NULL},
      {"watch", "a", "b", NULL},
      {"stats", NULL},
      {"stats", "a", "b", NULL},
      {"stats", "--duration", "100ms", "x", NULL},
      {"stats", "--duration", "5", "x", NULL},
      {"stats", "--contenders", "1", "x", NULL},
      {"stats", "--contenders", "65", "x", NULL},
      {"stats", "--bogus", "x", NULL},
  };
  size_t i;
  dir_init();
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    tool_t t;
    char tag[16];
    snprintf(tag, sizeof(tag), "u%zu", i);
    tool_start(&t, rt_pick_port(), tag, cases[i]);
    if (tool_wait(&t) != 2)
      FAIL("case %zu (%s %s): not exit status 2", i, cases[i][0] ? cases[i][0] : "",
           cases[i][0] && cases[i][1] ? cases[i][1] : "");
    if (!file_has(t.err, "usage: latchkey"))
      FAIL("case %zu: no usage line on stderr", i);
  }
  {
    const char *h[] = {"--help", NULL};
    tool_t t;
    tool_start(&t, 0, "help", h);
    ASSERT_EQ(tool_wait(&t), 0);
    static const char *const subs[] = {"run", "inspect", "list", "release",
                                       "ping", "watch", "stats"};
    static const char *const statuses[] = {"\n  0 ", "\n  1 ", "\n  2 ", "\n  69 ",
                                           "\n  75 ", "\n  79 ", "\n  80 ", "\n  126 ",
                                           "\n  127 "};
    char want[64];
    size_t k;
    ASSERT(file_has(t.out, "Exit status"));
    /* Every subcommand: its usage line and its description. */
    for (k = 0; k < sizeof(subs) / sizeof(subs[0]); k++) {
      snprintf(want, sizeof(want), "\n  latchkey %s [", subs[k]);
      if (!file_has(t.out, want) && (snprintf(want, sizeof(want), "\n  latchkey %s ", subs[k]),
                                     !file_has(t.out, want)))
        FAIL("--help has no usage line for %s", subs[k]);
      snprintf(want, sizeof(want), "\n  %-8s ", subs[k]);
      if (!file_has(t.out, want))
        FAIL("--help does not describe %s", subs[k]);
    }
    for (k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
      if (!file_has(t.out, statuses[k]))
        FAIL("--help does not list exit status%s", statuses[k]);
  }
}

/* Holds cli:lk with the library (a fenced acquire, fixed lease). */
static void on_acq(lk_lock_t *l, int st, void *arg) {
  (void)l;
  *(int *)arg = st == 0 ? 1 : st;
}

TEST(inspect_json_and_list_on_each_primitive) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  redisContext *ctx;
  char owner[128], want[256], rid[33];
  int st = 0, port;
  dir_init();
  fx_start(&fx, NULL);
  port = rt_server_port(fx.srv);
  l = fx_lock(&fx, "cli:lk");
  lk_lock_opts_init(&o);
  o.lease_ms = 60000;
  o.fenced = 1;
  ASSERT_OK(lk_lock_acquire(l, &o, on_acq, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  snprintf(owner, sizeof(owner), "%s", lk_lock_owner(l));
  ctx = rt_rlock_connect(port);
  redisson_fair_held_and_queued(ctx, "cli:fair");
  ASSERT_EQ(rt_rsem_try_set_permits(ctx, "cli:sem", 4), 1);
  ASSERT_EQ(rt_rsem_try_set_permits(ctx, "cli:psem", 2), 1);
  ASSERT_EQ(rt_rpsem_try_acquire(ctx, "cli:psem", 30000, rid), 1);
  freeReplyObject(rt_cmd(fx.srv, "HSET cli:rw mode read 11111111-2222-4333-8444-555555555555:9 2"));
  freeReplyObject(rt_cmd(fx.srv, "SET {cli:rw}:11111111-2222-4333-8444-555555555555:9:rwlock_timeout:1 1 PX 20000"));
  {
    const char *a[] = {"inspect", "--json", "cli:lk", "cli:fair", "cli:sem", "cli:psem",
                       "cli:rw", "cli:none", NULL};
    const char *b[] = {"list", "cli:*", NULL};
    const char *c[] = {"inspect", "cli:fair", NULL};
    tool_t t;
    char out[256];
    ASSERT_EQ(tool_run(port, "insp", a), 0);
    path_of(out, sizeof(out), "insp.out");
    snprintf(want, sizeof(want), "{\"name\":\"cli:lk\",\"kind\":\"lock\",\"redis_type\":\"hash\"");
    ASSERT(file_has(out, want));
    snprintf(want, sizeof(want), "\"holders\":[{\"owner\":\"%s\",\"count\":1,\"mode\":null", owner);
    ASSERT(file_has(out, want));
    snprintf(want, sizeof(want), "\"token\":%lld,", (long long)lk_lock_token(l));
    ASSERT(file_has(out, want));
    ASSERT(file_has(out, "\"kind\":\"fair\""));
    ASSERT(file_has(out, "\"waiters\":[{\"owner\":\"bbbbbbbb-2222-4333-8444-555555555555:2\""));
    ASSERT(file_has(out, "\"name\":\"cli:sem\",\"kind\":\"count\",\"redis_type\":\"string\""));
    ASSERT(file_has(out, "\"count\":4,"));
    ASSERT(file_has(out, "\"kind\":\"psem\""));
    snprintf(want, sizeof(want), "\"permits\":[{\"id\":\"%s\",\"lease_ms\":", rid);
    ASSERT(file_has(out, want));
    ASSERT(file_has(out, "\"kind\":\"rwlock\""));
    ASSERT(file_has(out, "\"mode\":\"read\""));
    ASSERT(file_has(out, "{\"owner\":\"11111111-2222-4333-8444-555555555555:9\",\"count\":2,"
                         "\"mode\":\"read\""));
    ASSERT(file_has(out, "{\"name\":\"cli:none\",\"kind\":\"none\""));

    ASSERT_EQ(tool_run(port, "list", b), 0);
    path_of(out, sizeof(out), "list.out");
    ASSERT(file_has(out, "lock    cli:lk\n"));
    ASSERT(file_has(out, "fair    cli:fair\n"));
    ASSERT(file_has(out, "count   cli:sem\n"));
    ASSERT(file_has(out, "psem    cli:psem\n"));
    ASSERT(file_has(out, "rwlock  cli:rw\n"));

    tool_start(&t, port, "table", c);
    ASSERT_EQ(tool_wait(&t), 0);
    ASSERT(file_has(t.out, "fair lock"));
    ASSERT(file_has(t.out, "aaaaaaaa-2222-4333-8444-555555555555:1"));
    ASSERT(file_has(t.out, "1 waiting"));
  }
  redisFree(ctx);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(release_force_wakes_a_waiting_run) {
  rt_server_t *srv;
  tool_t waiter;
  char ran[256], script[1024];
  redisContext *ctx;
  int64_t t0;
  srv = tool_server();
  /* A Redisson holder with a long lease: the waiter would wait a minute. */
  ctx = redisson_holding(srv, "cli:rel", "11111111-2222-4333-8444-555555555555");
  path_of(ran, sizeof(ran), "ran");
  snprintf(script, sizeof(script), "echo ran > %s", ran);
  {
    const char *w[] = {"run", "--wait", "60s", "cli:rel", "--", "sh", "-c", script, NULL};
    const char *r[] = {"release", "--force", "--yes", "cli:rel", NULL};
    tool_start(&waiter, rt_server_port(srv), "waiter", w);
    /* Waiting: it listens on the lock's channel. */
    t0 = rt_now_ms();
    while (rt_cmd_int(srv, "EVAL %s 0", "return redis.call('pubsub','numsub',"
                      "'redisson_lock__channel:{cli:rel}')[2]") < 1) {
      ASSERT_LT(rt_now_ms() - t0, rt_stall_bound_ms(t0, 10000));
      rt_sleep_ms(10);
    }
    ASSERT_EQ(tool_wait_for(&waiter, 0), -1);
    t0 = rt_now_ms();
    ASSERT_EQ(tool_run(rt_server_port(srv), "rel", r), 0);
  }
  ASSERT_EQ(tool_wait(&waiter), 0);
  ASSERT_LT(rt_now_ms() - t0, rt_stall_bound_ms(t0, 20000));
  ASSERT(file_has(ran, "ran"));
  redisFree(ctx);
  rt_server_stop(srv);
}

TEST(watch_draws_holder_and_follows_a_change) {
  rt_server_t *srv;
  redisContext *ctx;
  int fd;
  pid_t pid;
  char url[64], acc[65536];
  size_t len = 0;
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  ctx = redisson_holding(srv, "cli:w", "aaaaaaaa-2222-4333-8444-555555555555");
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", rt_server_port(srv));
  {
    const char *args[] = {"watch", "--interval", "100ms", "--redis", url, "cli:w", NULL};
    pid = pty_spawn(&fd, args);
  }
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "aaaaaaaa-2222-4333-8444-555555555555:1",
                      10000));
  ASSERT(strstr(acc, "\033[2J") != NULL); /* a terminal: redrawn in place */
  ASSERT_EQ(rt_rlock_unlock(ctx, "cli:w", "aaaaaaaa-2222-4333-8444-555555555555", 1), 1);
  ASSERT_EQ(rt_rlock_try(ctx, "cli:w", "bbbbbbbb-2222-4333-8444-555555555555", 2, 60000),
            RT_RLOCK_ACQUIRED);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "bbbbbbbb-2222-4333-8444-555555555555:2",
                      10000));
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  pty_reap(pid, fd, 0);
  redisFree(ctx);
  rt_server_stop(srv);
}

static void wait_numsub(rt_server_t *srv, const char *channel) {
  int64_t t0 = rt_now_ms();
  while (rt_server_numsub(srv, channel) < 1) {
    if (rt_now_ms() - t0 > rt_scaled_ms(10000))
      FAIL("nobody subscribed to %s", channel);
    rt_sleep_ms(10);
  }
}

/* watch NAME with a 10 s timer under a pseudo-terminal; its pid, fd. */
static pid_t watch_start(rt_server_t *srv, const char *name, int *fd) {
  char url[64];
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", rt_server_port(srv));
  const char *args[] = {"watch", "--interval", "10s", "--redis", url, name, NULL};
  return pty_spawn(fd, args);
}

static void watch_end(pid_t pid, int fd) {
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  pty_reap(pid, fd, 0);
}

/* A release by another process is drawn from the lock's channel, long
 * before the 10 s timer: the timer alone would fail this. */
TEST(watch_redraws_on_a_release_before_its_timer) {
  rt_server_t *srv;
  redisContext *ctx;
  int fd;
  pid_t pid;
  int64_t t0;
  char acc[65536];
  size_t len = 0;
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  ctx = redisson_holding(srv, "cli:wr", "aaaaaaaa-2222-4333-8444-555555555555");
  pid = watch_start(srv, "cli:wr", &fd);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "aaaaaaaa-2222-4333-8444-555555555555:1",
                      10000));
  wait_numsub(srv, "redisson_lock__channel:{cli:wr}");
  t0 = rt_now_ms();
  ASSERT_EQ(rt_rlock_unlock(ctx, "cli:wr", "aaaaaaaa-2222-4333-8444-555555555555", 1), 1);
  /* Only a message can give that reason (the timer's is 10 s away). */
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "this frame: change announced", 3000));
  ASSERT_LT(rt_now_ms() - t0, rt_stall_bound_ms(t0, 3000));
  ASSERT(strstr(acc, "KIND      nothing") != NULL);
  watch_end(pid, fd);
  redisFree(ctx);
  rt_server_stop(srv);
}

/* A fair lock's release is told only to its next waiter, on the waiter's
 * own channel: the watch follows it and redraws from it. */
TEST(watch_follows_a_fair_queue_and_redraws_on_its_release) {
  rt_server_t *srv;
  redisContext *ctx;
  int fd;
  pid_t pid;
  int64_t t0;
  char acc[65536], *chan;
  size_t len = 0;
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  ctx = rt_rlock_connect(rt_server_port(srv));
  redisson_fair_held_and_queued(ctx, "cli:wf");
  pid = watch_start(srv, "cli:wf", &fd);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "1 waiting", 10000));
  chan = rt_rfair_channel("cli:wf", "bbbbbbbb-2222-4333-8444-555555555555", 2);
  wait_numsub(srv, chan);
  free(chan);
  len = 0; /* what is drawn from here on */
  t0 = rt_now_ms();
  ASSERT_EQ(rt_rfair_unlock(ctx, "cli:wf", "aaaaaaaa-2222-4333-8444-555555555555", 1), 1);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "this frame: change announced", 3000));
  ASSERT_LT(rt_now_ms() - t0, rt_stall_bound_ms(t0, 3000));
  ASSERT(strstr(acc, "HOLDERS   0 (free)") != NULL);
  ASSERT(strstr(acc, "bbbbbbbb-2222-4333-8444-555555555555:2") != NULL); /* still queued */
  watch_end(pid, fd);
  redisFree(ctx);
  rt_server_stop(srv);
}

/* A number after key in the text (-1 when key is absent). */
static long long num_after(const char *text, const char *key) {
  const char *p = strstr(text, key);
  return p != NULL ? atoll(p + strlen(key)) : -1;
}

TEST(stats_measures_both_phases) {
  rt_server_t *srv;
  tool_t t;
  char *out;
  srv = tool_server();
  {
    const char *a[] = {"stats", "--duration", "1s", "cli:st", NULL};
    const char *j[] = {"stats", "--duration", "600ms", "--contenders", "3", "--json", "cli:st",
                       NULL};
    tool_start(&t, rt_server_port(srv), "st", a);
    ASSERT_EQ(tool_wait(&t), 0);
    out = slurp(t.out);
    /* The server names itself: redis, or valkey in CI's Valkey lane. */
    ASSERT(strstr(out, "NAME       cli:st (lock), redis ") != NULL ||
           strstr(out, "NAME       cli:st (lock), valkey ") != NULL);
    ASSERT_GT(num_after(out, "ALONE      "), 0);
    ASSERT_GT(num_after(out, "CONTENDED  4 contenders: "), 0);
    ASSERT(strstr(out, "  acquire   p50 ") != NULL);
    ASSERT(strstr(out, "  hand-off  p50 ") != NULL);
    ASSERT(strstr(out, "PROBLEMS   0 timed out, 0 failed") != NULL);
    ASSERT(strstr(out, "CLIENT     ") != NULL);
    free(out);

    tool_start(&t, rt_server_port(srv), "stj", j);
    ASSERT_EQ(tool_wait(&t), 0);
    out = slurp(t.out);
    ASSERT(strncmp(out, "{\"name\":\"cli:st\",\"kind\":\"lock\",", 30) == 0);
    ASSERT_GT(num_after(out, "\"alone\":{\"workers\":1,\"ms\":"), 0);
    ASSERT_GT(num_after(strstr(out, "\"alone\""), "\"holds\":"), 0);
    ASSERT_GT(num_after(strstr(out, "\"contended\":{\"workers\":3,"), "\"holds\":"), 0);
    ASSERT(strstr(out, "\"acquire_us\":{\"p50\":") != NULL);
    ASSERT(strstr(out, "\"handoff_us\":{\"p50\":") != NULL);
    ASSERT_EQ(num_after(out, "\"timeouts\":"), 0);
    ASSERT_EQ(num_after(out, "\"errors\":"), 0);
    free(out);
  }
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:st"), 0); /* every hold given back */
  rt_server_stop(srv);
}

TEST(stats_on_a_held_name_or_not_a_lock) {
  rt_server_t *srv;
  redisContext *ctx;
  srv = tool_server();
  ctx = redisson_holding(srv, "cli:sh", "aaaaaaaa-2222-4333-8444-555555555555");
  ASSERT_EQ(rt_rsem_try_set_permits(ctx, "cli:ss", 2), 1);
  {
    const char *a[] = {"stats", "--duration", "200ms", "cli:sh", NULL};
    const char *b[] = {"stats", "--duration", "200ms", "cli:ss", NULL};
    tool_t t;
    /* Held all along by another: nothing measured, the timeout status. */
    tool_start(&t, rt_server_port(srv), "sh", a);
    ASSERT_EQ(tool_wait(&t), 75);
    ASSERT(file_has(t.out, "PROBLEMS   5 timed out"));
    ASSERT(file_has(t.err, "never acquired"));
    tool_start(&t, rt_server_port(srv), "ss", b);
    ASSERT_EQ(tool_wait(&t), 1);
    ASSERT(file_has(t.err, "is a count"));
  }
  ASSERT_EQ(rt_cmd_int(srv, "HEXISTS cli:sh aaaaaaaa-2222-4333-8444-555555555555:1"), 1);
  redisFree(ctx);
  rt_server_stop(srv);
}

/* A name held by `latchkey run`: inspect names the process behind the
 * owner id (the run's description, docs/owners.md), in JSON and the table. */
TEST(inspect_shows_who_a_run_holder_is) {
  rt_server_t *srv;
  tool_t run;
  char ready[256], done[256], script[1024], want[512], host[256], *out;
  const char *prog = strrchr(LK_CLI_PATH, '/') != NULL ? strrchr(LK_CLI_PATH, '/') + 1 : LK_CLI_PATH;
  int port;
  srv = tool_server();
  port = rt_server_port(srv);
  path_of(ready, sizeof(ready), "ready");
  path_of(done, sizeof(done), "done");
  /* The child says it holds the name, then waits (bounded: 60 s) for the
   * test to let it go. */
  snprintf(script, sizeof(script),
           "echo up > %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; "
           "i=$((i+1)); done",
           ready, done);
  {
    const char *args[] = {"run", "cli:who", "--", "sh", "-c", script, NULL};
    tool_start(&run, port, "who_run", args);
  }
  wait_file(ready, 30000);
  {
    const char *a1[] = {"inspect", "--json", "cli:who", NULL};
    const char *a2[] = {"inspect", "cli:who", NULL};
    ASSERT_EQ(tool_run(port, "who_json", a1), 0);
    ASSERT_EQ(tool_run(port, "who_table", a2), 0);
  }
  ASSERT_EQ(gethostname(host, sizeof(host)), 0);
  host[sizeof(host) - 1] = '\0';
  path_of(want, sizeof(want), "who_json.out");
  out = slurp(want);
  ASSERT_NOT_NULL(strstr(out, "\"owner_desc\":{"));
  snprintf(want, sizeof(want), "\"pid\":%ld,", (long)run.pid);
  ASSERT_NOT_NULL(strstr(out, want));
  snprintf(want, sizeof(want), "\"host\":\"%s\"", host);
  ASSERT_NOT_NULL(strstr(out, want));
  ASSERT_NOT_NULL(strstr(out, "\"note\":\"sh\""));
  free(out);
  path_of(want, sizeof(want), "who_table.out");
  out = slurp(want);
  snprintf(want, sizeof(want), "    = %s pid %ld %s", host, (long)run.pid, prog);
  ASSERT_NOT_NULL(strstr(out, want));
  ASSERT_NOT_NULL(strstr(out, "note: sh"));
  free(out);
  /* Let the child go: the run ends cleanly and the name is free. */
  {
    int fd = open(done, O_WRONLY | O_CREAT, 0600);
    ASSERT(fd >= 0);
    close(fd);
  }
  ASSERT_EQ(tool_wait(&run), 0);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:who"), 0);
  rt_server_stop(srv);
}
