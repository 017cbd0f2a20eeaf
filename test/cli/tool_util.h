/* Running the built latchkey tool (LK_CLI_PATH) from a test: fork/exec,
 * its output captured in files of a private directory, bounded waits.
 * Shared by the test/cli files. */
#ifndef LK_TEST_CLI_TOOL_UTIL_H
#define LK_TEST_CLI_TOOL_UTIL_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_server.h"
#include "test.h"

#ifndef LK_CLI_PATH
#error "LK_CLI_PATH: the latchkey binary (test/lists/cli_tests.cmake)"
#endif

#define TOOL_UNUSED __attribute__((unused))

typedef struct tool_s {
  pid_t pid;
  char out[256], err[256];
} tool_t;

static char g_dir[128];

static TOOL_UNUSED void dir_init(void) {
  snprintf(g_dir, sizeof(g_dir), "/tmp/lk_cli_XXXXXX");
  ASSERT_NOT_NULL(mkdtemp(g_dir));
}

static TOOL_UNUSED void path_of(char *buf, size_t cap, const char *leaf) {
  snprintf(buf, cap, "%s/%s", g_dir, leaf);
}

/* A fresh private directory (dir_init) and a server of its own, for one test. */
static TOOL_UNUSED rt_server_t *tool_server(void) {
  rt_server_t *srv;
  dir_init();
  srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  return srv;
}

/* Starts the tool with args (NULL-terminated), LATCHKEY_REDIS pointing at
 * port (0: unset, -1: set to ""); stdout and stderr go to files named after tag. */
static TOOL_UNUSED void tool_start(tool_t *t, int port, const char *tag, const char *const *args) {
  const char *argv[32];
  int n = 0, fd;
  argv[n++] = LK_CLI_PATH;
  while (args[n - 1] != NULL && n < 31) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  snprintf(t->out, sizeof(t->out), "%s/%s.out", g_dir, tag);
  snprintf(t->err, sizeof(t->err), "%s/%s.err", g_dir, tag);
  t->pid = fork();
  ASSERT(t->pid >= 0);
  if (t->pid == 0) {
    char url[64];
    if (port > 0) {
      snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
      setenv("LATCHKEY_REDIS", url, 1);
    } else if (port == -1) {
      setenv("LATCHKEY_REDIS", "", 1); /* set but empty */
    } else {
      unsetenv("LATCHKEY_REDIS");
    }
    fd = open("/dev/null", O_RDONLY);
    dup2(fd, 0);
    fd = open(t->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    fd = open(t->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    execv(LK_CLI_PATH, (char *const *)argv);
    _exit(99);
  }
  rt_child_track(t->pid);
}

/* Waits (bounded) for the tool to exit; its exit status, 128+N for a
 * signal, or -1 if it is still running after timeout_ms (scaled). */
static TOOL_UNUSED int tool_wait_for(tool_t *t, int64_t timeout_ms) {
  int64_t until = rt_now_ms() + rt_scaled_ms(timeout_ms);
  int st;
  for (;;) {
    pid_t r = waitpid(t->pid, &st, WNOHANG);
    if (r == t->pid) {
      rt_child_untrack(t->pid);
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    ASSERT(r == 0);
    if (rt_now_ms() > until)
      return -1;
    rt_sleep_ms(10);
  }
}

static TOOL_UNUSED int tool_wait(tool_t *t) {
  int rc = tool_wait_for(t, 30000);
  ASSERT_NE(rc, -1);
  return rc;
}

static TOOL_UNUSED int tool_run(int port, const char *tag, const char *const *args) {
  tool_t t;
  tool_start(&t, port, tag, args);
  return tool_wait(&t);
}

/* The file's bytes (malloc'd, NUL-terminated), its length in *n: a NUL in
 * it would not end it. The file must exist. */
static TOOL_UNUSED char *slurp_n(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long len;
  ASSERT_NOT_NULL(f);
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = calloc(1, (size_t)len + 1);
  ASSERT_NOT_NULL(buf);
  ASSERT_EQ(fread(buf, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return buf;
}

/* The whole of a file (malloc'd, NUL-terminated; "" when absent). */
static TOOL_UNUSED char *slurp(const char *path) {
  size_t n;
  if (access(path, F_OK) != 0)
    return strdup("");
  return slurp_n(path, &n);
}

static TOOL_UNUSED int file_has(const char *path, const char *needle) {
  char *s = slurp(path);
  int found = strstr(s, needle) != NULL;
  free(s);
  return found;
}

/* Waits (bounded, scaled) until a file exists with content. */
static TOOL_UNUSED void wait_file(const char *path, int64_t timeout_ms) {
  int64_t until = rt_now_ms() + rt_scaled_ms(timeout_ms);
  struct stat st;
  while (stat(path, &st) != 0 || st.st_size == 0) {
    if (rt_now_ms() > until)
      FAIL("%s never appeared", path);
    rt_sleep_ms(10);
  }
}

static TOOL_UNUSED long long read_ll(const char *path) {
  char *s = slurp(path);
  long long v = atoll(s);
  free(s);
  return v;
}

/* A command that ignores SIGTERM (only the SIGKILL after --kill-after ends
 * it) and writes its pid to pidf, a file "pid" of the test's directory. */
static TOOL_UNUSED void stubborn_script(char *script, size_t cap, char *pidf, size_t pidf_cap) {
  path_of(pidf, pidf_cap, "pid");
  snprintf(script, cap, "trap '' TERM; echo $$ > %s; while :; do sleep 0.05; done", pidf);
}

/* t, running stubborn_script, lost its hold: latchkey exits 79 within
 * timeout_ms, having killed the command, and says "lost". */
static TOOL_UNUSED void tool_expect_lost(tool_t *t, const char *pidf, int64_t timeout_ms) {
  ASSERT_EQ(tool_wait_for(t, timeout_ms), 79);
  ASSERT_EQ(kill((pid_t)read_ll(pidf), 0), -1); /* the command is gone */
  ASSERT(file_has(t->err, "lost"));
}

#endif /* LK_TEST_CLI_TOOL_UTIL_H */
