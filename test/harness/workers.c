/* Worker processes (workers.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "workers.h"

#include "proxy.h"

#include "test.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t parent_pid;

pid_t rt_worker_parent(void) { return parent_pid; }

/* The k-th CPU (mod the count) of the allowed set, or -1. */
static int allowed_cpu(int k) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return -1;
  int count = CPU_COUNT(&set);
  if (count <= 0)
    return -1;
  int want = k % count;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set))
      continue;
    if (seen++ == want)
      return cpu;
  }
  return -1;
}

int rt_worker_start(rt_worker_t *w, int index, rt_worker_fn fn, void *arg) {
  memset(w, 0, sizeof *w);
  w->index = index;
  w->cpu = allowed_cpu(index);
  parent_pid = getpid();
  fflush(NULL);
  rt_proxies_park_all(); /* see proxy.h: no proxy thread inside malloc */
  pid_t pid = fork();
  if (pid == 0)
    rt_proxies_forked_child();
  else
    rt_proxies_unpark_all();
  if (pid < 0) {
    fprintf(stderr, "rt_worker_start: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    /* Die with the test even when it is SIGKILLed (ctest's timeout). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent_pid)
      _exit(125);
    if (w->cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(w->cpu, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0)
        w->cpu = -1;
    }
    fn(index, arg);
    exit(0);
  }
  w->pid = pid;
  w->running = 1;
  rt_child_track(pid);
  return 0;
}

static void reaped(rt_worker_t *w, int status) {
  w->running = 0;
  w->stopped = 0;
  w->status = status;
  rt_child_untrack(w->pid);
}

/* Waits for a stop (or continue) report; 0, or -1 when the worker died. */
static int wait_report(rt_worker_t *w, int want_stopped) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  for (long i = 0; i < 1000000L; i++) {
    int st = 0;
    pid_t r = waitpid(w->pid, &st, WNOHANG | (want_stopped ? WUNTRACED : WCONTINUED));
    if (r == w->pid) {
      if (want_stopped ? WIFSTOPPED(st) : WIFCONTINUED(st))
        return 0;
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        reaped(w, st);
        return -1;
      }
    }
    if (r < 0 && errno != EINTR)
      return -1;
    if (rt_now_ms() > deadline)
      FAIL("worker %d (pid %d): no %s report", w->index, (int)w->pid,
           want_stopped ? "stop" : "continue");
    rt_sleep_ms(1);
  }
  return -1;
}

void rt_worker_stop(rt_worker_t *w) {
  if (!w->running || w->stopped)
    return;
  kill(w->pid, SIGSTOP);
  if (wait_report(w, 1) == 0)
    w->stopped = 1;
}

void rt_worker_cont(rt_worker_t *w) {
  if (!w->running || !w->stopped)
    return;
  kill(w->pid, SIGCONT);
  w->stopped = 0;
  wait_report(w, 0);
}

void rt_worker_kill(rt_worker_t *w) {
  if (!w->running)
    return;
  kill(w->pid, SIGKILL);
  int st = 0;
  for (int i = 0; i < 1000; i++) {
    pid_t r = waitpid(w->pid, &st, 0);
    if (r == w->pid || (r < 0 && errno != EINTR))
      break;
  }
  reaped(w, st);
}

int rt_workers_wait(rt_worker_t *w, int n, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  for (long iter = 0;; iter++) {
    int left = 0;
    for (int i = 0; i < n; i++) {
      if (!w[i].running)
        continue;
      int st = 0;
      pid_t r = waitpid(w[i].pid, &st, WNOHANG);
      if (r == w[i].pid && (WIFEXITED(st) || WIFSIGNALED(st)))
        reaped(&w[i], st);
      else if (r < 0 && errno == ECHILD)
        reaped(&w[i], 0x7f00); /* reaped elsewhere: exit code 127 */
      else
        left++;
    }
    if (left == 0 || rt_now_ms() > deadline || iter > 100000000L)
      return left;
    rt_sleep_ms(2);
  }
}

void rt_workers_kill_all(rt_worker_t *w, int n) {
  for (int i = 0; i < n; i++)
    rt_worker_kill(&w[i]);
}

int rt_worker_exit_code(const rt_worker_t *w) {
  if (w->running)
    return -1;
  if (WIFEXITED(w->status))
    return WEXITSTATUS(w->status);
  if (WIFSIGNALED(w->status))
    return 128 + WTERMSIG(w->status);
  return -1;
}

void rt_pids_kill(const pid_t *pids, int *running, int n) {
  for (int i = 0; i < n; i++)
    if (running[i]) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
      rt_child_untrack(pids[i]);
      running[i] = 0;
    }
}

pid_t rt_pids_fork(pid_t *pids, int *running, int n, int i) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    int e = errno;
    rt_pids_kill(pids, running, n);
    FAIL("fork: %s", strerror(e));
  }
  if (pid == 0)
    return 0;
  rt_child_track(pid);
  pids[i] = pid;
  running[i] = 1;
  return pid;
}

int rt_pids_reap_at(const char *file, int line, const pid_t *pids, int *running, int n,
                    int64_t deadline_ms, int findings_exit) {
  int left = 0, findings = 0;
  for (int i = 0; i < n; i++)
    left += running[i] != 0;
  while (left > 0) {
    for (int i = 0; i < n; i++) {
      int status = 0;
      pid_t r;
      if (!running[i])
        continue;
      r = waitpid(pids[i], &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR))
        continue;
      running[i] = 0;
      left--;
      rt_child_untrack(pids[i]);
      if (findings_exit > 0 && r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == findings_exit) {
        findings++;
        continue;
      }
      if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int e = errno;
        rt_pids_kill(pids, running, n);
        if (r < 0)
          rt_fail_at(file, line, "waitpid(worker %d): %s", i, strerror(e));
        if (WIFSIGNALED(status))
          rt_fail_at(file, line, "worker %d died of signal %d", i, WTERMSIG(status));
        rt_fail_at(file, line, "worker %d ended with status 0x%x (see its output above)", i,
                   status);
      }
    }
    if (left > 0 && rt_now_ms() > deadline_ms) {
      for (int i = 0; i < n; i++)
        if (running[i])
          fprintf(stderr, "worker %d (pid %d) still running\n", i, (int)pids[i]);
      rt_pids_kill(pids, running, n);
      rt_fail_at(file, line, "%d workers still running", left);
    }
    if (left > 0)
      rt_sleep_ms(5);
  }
  return findings;
}
