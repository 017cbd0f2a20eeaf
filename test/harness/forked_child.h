/* The fork of the forked-child cases (a child checks that every call on
 * what it inherited answers LK_EFORKED and reports through its exit status;
 * issue 29: each primitive's bad-input file carried a copy). The child must
 * not ASSERT: its exit path belongs to the parent's harness; it ends with
 * _exit(0), or with a nonzero code naming its failed checks. Header-only. */
#ifndef LK_TEST_HARNESS_FORKED_CHILD_H
#define LK_TEST_HARNESS_FORKED_CHILD_H

#include <errno.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* fork() after flushing stdio (so nothing buffered is written twice):
 * 0 in the child, the child's pid in the parent. */
static inline pid_t rt_fork_flushed(void) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  return pid;
}

/* Reaps pid (a child of rt_fork_flushed) and fails, at the caller's line,
 * unless it exited 0. */
#define rt_wait_child_exit_0(pid) rt_wait_child_exit_0_at(__FILE__, __LINE__, (pid))

static inline void rt_wait_child_exit_0_at(const char *file, int line, pid_t pid) {
  int status = 0, i;
  /* Bounded: a blocking wait that only a signal interrupts (ctest's timeout
   * bounds the wait itself). */
  for (i = 0; waitpid(pid, &status, 0) < 0; i++)
    ASSERT(errno == EINTR && i < 1000);
  if (!WIFEXITED(status))
    rt_fail_at(file, line, "forked child %d did not exit (signal %d)", (int)pid,
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (WEXITSTATUS(status) != 0)
    rt_fail_at(file, line, "forked child %d exited %d: its failed checks", (int)pid,
               WEXITSTATUS(status));
}

#endif /* LK_TEST_HARNESS_FORKED_CHILD_H */
