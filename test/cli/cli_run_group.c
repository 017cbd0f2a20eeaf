/* `latchkey run` never leaves its command running without the lock
 * (docs/cli.md, "The command's processes"): a lost lease ends the command's
 * whole process group, latchkey's own death takes the group with it, a
 * release that failed has its own exit status, and an empty server URL is
 * refused rather than taken for the default server. */
#include <errno.h>
#include <pty.h>
#include <signal.h>
#include <sys/prctl.h>

#include "lk_fixture.h"
#include "pty_read.h"
#include "pty_util.h"
#include "tool_util.h"

/* Processes the command started are orphaned when it ends: as the
 * nearest subreaper this test inherits them, so it can tell their end
 * (reaped here) from a zombie nobody waits for. */
static void adopt_orphans(void) { ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0); }

/* 1 once pid has ended (reaped here, or not ours and gone), 0 if it still
 * runs after timeout_ms (scaled). There is no callback for another
 * process's death: it is polled, bounded. */
static int ended_within(pid_t pid, int64_t timeout_ms) {
  int64_t until = rt_now_ms() + rt_scaled_ms(timeout_ms);
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return 1;
    if (r < 0 && errno == ECHILD && kill(pid, 0) < 0 && errno == ESRCH)
      return 1;
    if (rt_now_ms() > until)
      return 0;
    rt_sleep_ms(10);
  }
}

/* The command: a background job (its pid in gpid), its own pid in pid,
 * then it waits for the job. Shells do not pass SIGTERM on to the jobs
 * they wait for: only a signal to the group reaches the job. */
static void job_script(char *script, size_t cap, char *pidf, char *gpidf) {
  path_of(pidf, 256, "pid");
  path_of(gpidf, 256, "gpid");
  snprintf(script, cap, "sleep 30 & echo $! > %s; echo $$ > %s; wait", gpidf, pidf);
}

TEST(lost_lease_ends_the_commands_whole_group) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], gpidf[256], script[1024];
  pid_t job;
  adopt_orphans();
  srv = tool_server();
  job_script(script, sizeof(script), pidf, gpidf);
  {
    const char *a[] = {"run", "--lease", "3s", "--kill-after", "2s", "cli:grp", "--", "sh",
                       "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "grp", a);
  }
  wait_file(pidf, 10000);
  job = (pid_t)read_ll(gpidf);
  ASSERT_GT(job, 0);
  rt_child_track(job);
  ASSERT_EQ(rt_cmd_int(srv, "DEL cli:grp"), 1);
  /* The next renewal (every lease/3 = 1 s) finds the key gone. */
  ASSERT_EQ(tool_wait_for(&t, 10000), 79);
  ASSERT(file_has(t.err, "lost"));
  ASSERT(ended_within((pid_t)read_ll(pidf), 5000));
  /* The job got the group's SIGTERM: it may not go on without the lock. */
  ASSERT(ended_within(job, 5000));
  rt_child_untrack(job);
  rt_server_stop(srv);
}

TEST(killed_latchkey_takes_its_command_group_with_it) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], gpidf[256], script[1024];
  pid_t cmd, job;
  adopt_orphans();
  srv = tool_server();
  job_script(script, sizeof(script), pidf, gpidf);
  {
    /* The lease (30 s) would keep NAME held long after latchkey is gone:
     * the command must not outlive latchkey meanwhile. */
    const char *a[] = {"run", "cli:die", "--", "sh", "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "die", a);
  }
  wait_file(pidf, 10000);
  cmd = (pid_t)read_ll(pidf);
  job = (pid_t)read_ll(gpidf);
  ASSERT_GT(cmd, 0);
  ASSERT_GT(job, 0);
  rt_child_track(cmd);
  rt_child_track(job);
  ASSERT_EQ(kill(t.pid, SIGKILL), 0);
  ASSERT_EQ(tool_wait(&t), 128 + SIGKILL);
  ASSERT(ended_within(cmd, 5000)); /* the command (PR_SET_PDEATHSIG) */
  ASSERT(ended_within(job, 5000)); /* and its group (the guard) */
  rt_child_untrack(cmd);
  rt_child_untrack(job);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:die"), 1); /* held until its lease runs out */
  rt_server_stop(srv);
}

TEST(failed_release_has_its_own_status) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], go[256], script[1024];
  int fd;
  srv = tool_server();
  path_of(pidf, sizeof(pidf), "pid");
  path_of(go, sizeof(go), "go");
  /* The command ends (status 0) when told to; bounded to 30 s. */
  snprintf(script, sizeof(script),
           "echo $$ > %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.05; "
           "i=$((i+1)); done",
           pidf, go);
  {
    const char *a[] = {"run", "cli:unrel", "--", "sh", "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "unrel", a);
  }
  wait_file(pidf, 10000);
  /* The server goes away while the command runs (its 30 s lease is far
   * from over): the release cannot be sent. */
  rt_server_kill(srv, SIGKILL);
  fd = open(go, O_WRONLY | O_CREAT, 0600);
  ASSERT(fd >= 0);
  close(fd);
  ASSERT_EQ(tool_wait(&t), 80);
  ASSERT(file_has(t.err, "may still be held"));
  rt_server_stop(srv);
}

TEST(empty_server_url_is_refused) {
  static const char *const cases[][8] = {
      {"run", "--redis", "", "cli:e", "--", "true", NULL},
      {"run", "--redis=", "cli:e", "--", "true", NULL},
      {"inspect", "--redis", "", "cli:e", NULL},
      {"ping", "--redis=", NULL},
  };
  size_t i;
  tool_t t;
  dir_init();
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char tag[16];
    snprintf(tag, sizeof(tag), "e%zu", i);
    tool_start(&t, 0, tag, cases[i]);
    if (tool_wait(&t) != 2)
      FAIL("case %zu (%s %s): not exit status 2", i, cases[i][0], cases[i][1]);
    ASSERT(file_has(t.err, "empty URL"));
  }
  {
    /* LATCHKEY_REDIS set but empty: the same. */
    const char *a[] = {"run", "cli:e", "--", "true", NULL};
    const char *b[] = {"ping", NULL};
    tool_start(&t, -1, "env_run", a);
    ASSERT_EQ(tool_wait(&t), 2);
    ASSERT(file_has(t.err, "LATCHKEY_REDIS is set but empty"));
    tool_start(&t, -1, "env_ping", b);
    ASSERT_EQ(tool_wait(&t), 2);
  }
}

/* latchkey run --redis <srv> name -- sh -c script on a new pseudo-terminal:
 * its pid, the terminal's fd in *fd. */
static pid_t run_on_a_terminal(rt_server_t *srv, const char *name, const char *script, int *fd) {
  char url[64];
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", rt_server_port(srv));
  const char *args[] = {"run", "--redis", url, name, "--", "sh", "-c", script, NULL};
  return pty_spawn(fd, args);
}

/* In the foreground of a terminal, the command's own group gets the
 * terminal: Ctrl-C reaches the command from the terminal itself, and the
 * command's status is latchkey's. */
TEST(on_a_terminal_the_commands_group_is_the_foreground) {
  rt_server_t *srv;
  int fd;
  pid_t pid;
  char acc[8192], *p;
  size_t len = 0;
  long pgrp = 0, tpgid = 0, self = 0;
  const char *script = "set -- $(cat /proc/$$/stat); echo \"pgrp=$5 tpgid=$8 self=$1 .\"; "
                       "trap 'echo got-int; exit 3' INT; i=0; "
                       "while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done";
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  pid = run_on_a_terminal(srv, "cli:tty", script, &fd);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, " .", 10000));
  p = strstr(acc, "pgrp=");
  ASSERT_NOT_NULL(p);
  ASSERT_EQ(sscanf(p, "pgrp=%ld tpgid=%ld self=%ld", &pgrp, &tpgid, &self), 3);
  ASSERT_EQ(pgrp, self);  /* a group of its own */
  ASSERT_EQ(tpgid, self); /* which has the terminal */
  ASSERT_EQ(write(fd, "\x03", 1), 1); /* Ctrl-C */
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "got-int", 10000));
  pty_reap(pid, fd, 3);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:tty"), 0); /* released */
  rt_server_stop(srv);
}

/* Writes text to the test directory's file leaf (its path in path) with
 * the given mode. */
static void write_file(char *path, size_t cap, const char *leaf, const char *text, mode_t mode) {
  FILE *f;
  path_of(path, cap, leaf);
  f = fopen(path, "w");
  ASSERT_NOT_NULL(f);
  fputs(text, f);
  fclose(f);
  ASSERT_EQ(chmod(path, mode), 0);
}

/* The command is found and started as execvp would: a script without a
 * #! line is run by /bin/sh, a missing one is 127, one that may not be
 * executed 126. */
TEST(command_lookup_matches_execvp) {
  rt_server_t *srv;
  char script[256], noexec[256];
  srv = tool_server();
  write_file(script, sizeof(script), "plain", "exit 9\n", 0700);
  write_file(noexec, sizeof(noexec), "noexec", "exit 0\n", 0600);
  {
    const char *a[] = {"run", "cli:lookup", "--", script, NULL};
    const char *b[] = {"run", "cli:lookup", "--", "no-such-command-latchkey-test", NULL};
    const char *c[] = {"run", "cli:lookup", "--", noexec, NULL};
    ASSERT_EQ(tool_run(rt_server_port(srv), "plain", a), 9);
    ASSERT_EQ(tool_run(rt_server_port(srv), "missing", b), 127);
    ASSERT_EQ(tool_run(rt_server_port(srv), "noexec", c), 126);
  }
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS cli:lookup"), 0);
  rt_server_stop(srv);
}

/* Ctrl-Z on a terminal stops the command, and latchkey stops too (its
 * shell sees the job stop); continued, latchkey gives the terminal back to
 * the command and continues it: a Ctrl-C then reaches it. */
TEST(on_a_terminal_ctrl_z_stops_the_job_and_it_continues) {
  rt_server_t *srv;
  int fd, st;
  pid_t pid;
  char acc[8192];
  size_t len = 0;
  int64_t until;
  /* It waits reading the terminal (a builtin: a Ctrl-Z that lands while
   * the shell is in vfork stops only the half-made child, and the shell
   * waits for it unstopped, with or without latchkey). */
  const char *script = "trap 'echo got-int; exit 4' INT; echo ready .; read x; exit 5";
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  pid = run_on_a_terminal(srv, "cli:tstp", script, &fd);
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "ready .", 10000));
  ASSERT_EQ(write(fd, "\x1a", 1), 1); /* Ctrl-Z */
  until = rt_now_ms() + rt_scaled_ms(10000);
  for (;;) { /* latchkey reports stopped (no callback for it: polled) */
    pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);
    ASSERT(r == 0 || r == pid);
    if (r == pid) {
      ASSERT(WIFSTOPPED(st));
      break;
    }
    ASSERT_LT(rt_now_ms(), until);
    rt_sleep_ms(10);
  }
  ASSERT_EQ(tcgetpgrp(fd), pid); /* latchkey took the terminal back */
  ASSERT_EQ(kill(pid, SIGCONT), 0); /* what `fg` sends */
  until = rt_now_ms() + rt_scaled_ms(10000);
  while (tcgetpgrp(fd) == pid) { /* until latchkey gives it to the command again */
    ASSERT_LT(rt_now_ms(), until);
    rt_sleep_ms(10);
  }
  ASSERT_EQ(write(fd, "\x03", 1), 1); /* Ctrl-C */
  ASSERT(rt_pty_read_until(fd, acc, sizeof(acc), &len, "got-int", 10000));
  pty_reap(pid, fd, 4);
  rt_server_stop(srv);
}
