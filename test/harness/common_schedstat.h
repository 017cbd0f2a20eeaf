/* Run-queue wait of a process, from /proc/<pid>/schedstat: shared by the
 * stall monitor (stall.c) and the standalone docs/acl_check.c.
 *
 * With open/read, not stdio: a worker forked while a thread held a FILE
 * would keep the FILE's heap buffer with no thread left to free it, and
 * LeakSanitizer fails the worker at its exit (and nothing of the calling
 * thread's is left on the heap when a program exits). */
#ifndef LK_TEST_HARNESS_COMMON_SCHEDSTAT_H
#define LK_TEST_HARNESS_COMMON_SCHEDSTAT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

/* 0 and *delay_ns set to pid's time spent waiting on a run queue so far, in
 * ns; -1 when it cannot be read. */
static inline int rt_read_run_delay(pid_t pid, uint64_t *delay_ns) {
  char path[64], buf[128];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  unsigned long long on_cpu = 0, waiting = 0;
  if (sscanf(buf, "%llu %llu", &on_cpu, &waiting) != 2)
    return -1;
  *delay_ns = waiting;
  return 0;
}

#endif
