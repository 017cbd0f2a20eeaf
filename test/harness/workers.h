/* Worker processes for multi-process tests: forked from the test, pinned to
 * the allowed CPUs in turn (overlaps cannot be observed with every worker
 * on one CPU), killed with the test (PR_SET_PDEATHSIG and the
 * harness's child tracking), and controllable: SIGSTOP / SIGCONT / SIGKILL.
 *
 * A worker must build its own loop and client after the fork (a client made
 * before it answers LK_EFORKED in the child). Call these from the test's main
 * thread. */
#ifndef LK_TEST_HARNESS_WORKERS_H
#define LK_TEST_HARNESS_WORKERS_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_worker_s {
  pid_t pid;
  int index;
  int cpu;     /* CPU it runs on, -1 when not pinned */
  int running; /* started and not yet reaped */
  int stopped; /* SIGSTOPped by rt_worker_stop */
  int status;  /* waitpid status, valid once reaped */
} rt_worker_t;

/* Runs in the child; returning means success (exit(0), so LeakSanitizer
 * checks the worker too). Exit with another code to report a finding. */
typedef void (*rt_worker_fn)(int index, void *arg);

/* Forks worker `index` running fn(index, arg). 0, or -1 after printing. */
int rt_worker_start(rt_worker_t *w, int index, rt_worker_fn fn, void *arg);
/* SIGSTOP and wait until the kernel reports it stopped (bounded). */
void rt_worker_stop(rt_worker_t *w);
/* SIGCONT (and wait for the report). */
void rt_worker_cont(rt_worker_t *w);
/* SIGKILL and reap. */
void rt_worker_kill(rt_worker_t *w);
/* Reaps workers as they end until none runs or timeout_ms (as given, not
 * scaled) passes. Returns how many still run. */
int rt_workers_wait(rt_worker_t *w, int n, int64_t timeout_ms);
/* SIGKILL and reap every running worker. */
void rt_workers_kill_all(rt_worker_t *w, int n);
/* The exit code, 128 + signal when killed, -1 while running. */
int rt_worker_exit_code(const rt_worker_t *w);
/* The pid of the test process that started the workers (for getppid checks
 * inside a worker); 0 before the first rt_worker_start. */
pid_t rt_worker_parent(void);

/* Plain forked pids (the stress tests' workers, forked and tracked with
 * rt_child_track by the test): running[i] is set while pids[i] runs. */
/* SIGKILL, reap and untrack every running one. */
void rt_pids_kill(const pid_t *pids, int *running, int n);
/* Forks worker i of n, stdio flushed first: 0 in the child (which runs the
 * worker and never returns); in the parent the child is tracked and set
 * running in pids[i], running[i], and its pid returned. A failed fork kills
 * the workers already running and fails the test. */
pid_t rt_pids_fork(pid_t *pids, int *running, int n, int i);
/* Reaps them until none runs, polling every 5 ms. Exit 0 is done; exit
 * findings_exit (when > 0) is counted in the result (its history is
 * complete: the caller checks it); any other end, or one still running
 * after deadline_ms (rt_now_ms clock), kills the rest and fails the test
 * at the caller's line, naming the worker and its raw wait status. */
int rt_pids_reap_at(const char *file, int line, const pid_t *pids, int *running, int n,
                    int64_t deadline_ms, int findings_exit);
#define rt_pids_reap(pids, running, n, deadline_ms, findings_exit)                               \
  rt_pids_reap_at(__FILE__, __LINE__, (pids), (running), (n), (deadline_ms), (findings_exit))

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_WORKERS_H */
