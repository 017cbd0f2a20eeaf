/* Running the built latchkey tool (LK_CLI_PATH) under a pseudo-terminal:
 * started, and reaped with the exit status it must have. Shared by the
 * test/cli files that link forkpty's library (util). */
#ifndef LK_TEST_CLI_PTY_UTIL_H
#define LK_TEST_CLI_PTY_UTIL_H

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* latchkey args... (NULL-terminated, at most 15) on a new pseudo-terminal,
 * its side in *fd (non-blocking); the child is tracked. */
static pid_t pty_spawn(int *fd, const char *const *args) {
  const char *argv[16];
  int n = 0;
  argv[n++] = LK_CLI_PATH;
  while (args[n - 1] != NULL) {
    ASSERT_LT(n, 15);
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  pid_t pid = forkpty(fd, NULL, NULL, NULL);
  ASSERT(pid >= 0);
  if (pid == 0) {
    execv(LK_CLI_PATH, (char *const *)argv);
    _exit(99);
  }
  rt_child_track(pid);
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) | O_NONBLOCK);
  return pid;
}

/* Waits for pid (from pty_spawn) to exit with status, then closes fd. */
static void pty_reap(pid_t pid, int fd, int status) {
  int st;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  rt_child_untrack(pid);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), status);
  close(fd);
}

#endif
