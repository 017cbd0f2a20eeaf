/* What the harness's server and sentinel processes share (issue 29: both
 * files carried a copy): a private directory under TMPDIR with an owner file,
 * fork + execv of the binary (dying with the parent, tracked for the
 * exit-path sweep), reaping, a blocking AUTHed connection, the wait until the
 * child answers on its port, and the tail of its log when it did not. */
#ifndef LK_TEST_HARNESS_CHILD_PROC_H
#define LK_TEST_HARNESS_CHILD_PROC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

/* Makes "<TMPDIR or /tmp>/<stem>XXXXXX" in dir (dir_len bytes) whose path
 * is shorter than max_len, and writes this process's pid in its "owner" file
 * (redis_server.c's sweep removes directories of dead owners). who prefixes
 * the error printed. 0, or -1 with dir empty. */
int rt_proc_make_dir(char *dir, size_t dir_len, const char *stem, size_t max_len,
                     const char *who);

/* Removes dir and what is in it, unless LK_TEST_KEEP_DIRS is set. */
void rt_proc_remove_dir(const char *dir);

/* Starts argv[0] (a path) with argv, stdin from /dev/null and no inherited
 * descriptor above 2; the child dies with this thread (PR_SET_PDEATHSIG) and
 * is tracked (rt_child_track). 0 and *pid set, or -1. */
int rt_proc_spawn(const char *const *argv, const char *who, pid_t *pid);

/* Reaps pid within timeout_ms. 1 when reaped (or already gone), 0 if not. */
int rt_proc_reap(pid_t pid, int64_t timeout_ms);

/* After sig (SIGKILL or SIGTERM) was sent to pid: reaps it, sending SIGKILL
 * when sig is ignored. 1 when reaped; 0 when not (pid stays tracked, so the
 * exit path kills it again). */
int rt_proc_kill_and_reap(pid_t pid, int sig, const char *who);

/* Blocking connection to 127.0.0.1:port with connect and I/O timeouts,
 * AUTHed when requirepass is set. NULL and the reason in why on failure. */
redisContext *rt_proc_connect(int port, const char *requirepass, int64_t connect_ms,
                              int64_t io_ms, char *why, size_t why_len);

/* Whether the process answering on c is ours (pid): 1 yes, 0 not (yet),
 * with what was seen in why. */
typedef int (*rt_proc_ready_fn)(redisContext *c, pid_t pid, void *arg, char *why,
                                size_t why_len);

/* Waits (10 s, scaled) until ready() says the child on port answers. 0: ready,
 * *ctx is the connection; -1: the child exited during start-up (*pid
 * untracked and set to 0; worth a retry on another port); -2: timed out
 * (the child killed, reaped, untracked, *pid 0). */
int rt_proc_wait_ready(pid_t *pid, int port, const char *requirepass, const char *who,
                       rt_proc_ready_fn ready, void *arg, redisContext **ctx);

/* The last 2 KiB of the log at path, on stderr. */
void rt_proc_print_log_tail(const char *path);

/* Sends sig to *pid; after SIGKILL or SIGTERM reaps it (sending SIGCONT
 * after the SIGTERM when the child is stopped, as a stopped process cannot
 * act on it). 1 when reaped: the caller marks it down. 0 otherwise; a kill
 * that was not reaped sets *pid to 0 (it stays tracked: the exit path kills
 * it again). */
int rt_proc_signal(pid_t *pid, int sig, int stopped, const char *who);

/* calloc(1, size), failing the test when out of memory. */
void *rt_proc_calloc(size_t size);

/* ---- the children still running, for the exit-path sweep ---------------------------- */

/* A started child's place in the one list the exit path sweeps (a server's
 * or a sentinel's, embedded in its struct): stop(obj) stops it and frees it
 * (through rt_proc_release). Only the process that started a child
 * (owner) stops it there. */
typedef struct rt_proc_live_s {
  struct rt_proc_live_s *next;
  pid_t owner;
  void (*stop)(void *obj);
  void *obj;
} rt_proc_live_t;

/* Puts e in the list, owned by this process; the first call hooks the
 * sweep with atexit. */
void rt_proc_live_add(rt_proc_live_t *e, void (*stop)(void *obj), void *obj);

/* Takes e out of the list, drops the side connection *ctx and removes dir:
 * what is left before the caller frees its struct. */
void rt_proc_release(rt_proc_live_t *e, redisContext **ctx, const char *dir);

/* ---- the side connection ------------------------------------------------------------- */

/* Drops *ctx (NULL after). */
void rt_proc_side_close(redisContext **ctx);

/* A command on the side connection *ctx to port, made anew (AUTHed with
 * requirepass) when absent or when its idle socket is broken: an error,
 * EOF or stray bytes. SIGPIPE is blocked around the I/O. The reply, or NULL
 * with the reason printed after who; a command that failed on the wire
 * drops the connection (its state is unknown; the next call reconnects). */
redisReply *rt_proc_side_vcmd(redisContext **ctx, int port, const char *requirepass,
                              const char *who, const char *fmt, va_list ap);

/* The same for a command hiredis formatted (cmd, len bytes, freed here;
 * len < 0: the formatting failed, NULL). */
redisReply *rt_proc_side_send(redisContext **ctx, int port, const char *requirepass,
                              const char *who, char *cmd, long long len);

#endif /* LK_TEST_HARNESS_CHILD_PROC_H */
