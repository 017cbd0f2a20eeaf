/* Real redis-server processes for tests, on free loopback ports, each with its
 * own temporary directory. Every server is killed by PID on any exit path of
 * the process that started it (see rt_child_track), and the child also gets
 * PR_SET_PDEATHSIG so it dies with the thread that started it even after a
 * SIGKILL of the test: start servers from the test's main thread.
 *
 * Not thread-safe: use one server from one thread (the test's main thread).
 * The command side channel is blocking hiredis, for assertions only. */
#ifndef LK_TEST_HARNESS_REDIS_SERVER_H
#define LK_TEST_HARNESS_REDIS_SERVER_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_server_opts_s {
  int appendonly;      /* 1: --appendonly yes (data survives restart), else no */
  int debug_command;   /* 1: --enable-debug-command local */
  const char *requirepass; /* NULL: no password; else the side channel AUTHs */
  const char *const *extra_args; /* NULL-terminated, appended to the command line */
  /* TLS (tls_certs.h makes the files): with tls_cert_file set, the server
   * also listens with TLS on a second free port (rt_server_tls_port), with
   * this certificate, key and CA; the plaintext port stays, for the side
   * channel. tls_auth_clients 1 requires client certificates
   * (--tls-auth-clients yes); 0 does not. */
  const char *tls_cert_file, *tls_key_file, *tls_ca_file;
  int tls_auth_clients;
} rt_server_opts_t;

typedef struct rt_server_s rt_server_t;

void rt_server_opts_init(rt_server_opts_t *opts);

/* Starts a server and waits (about 10 s scaled) until it answers PING and
 * reports our child's process_id. Options are copied. Returns NULL after
 * printing why (the caller ASSERTs). $LK_REDIS_SERVER overrides the binary. */
rt_server_t *rt_server_start(const rt_server_opts_t *opts);

/* rt_server_start in two halves, so that several servers start side by
 * side: rt_server_spawn makes the directory and starts the process without
 * waiting (NULL after printing why); rt_server_await waits as rt_server_start
 * does, retrying on fresh ports when the child exits early. 0, or -1 after
 * printing why: the caller then still rt_server_stops s. */
rt_server_t *rt_server_spawn(const rt_server_opts_t *opts);
int rt_server_await(rt_server_t *s);

int rt_server_port(const rt_server_t *s);
/* The TLS port, kept across restarts; 0 without TLS. */
int rt_server_tls_port(const rt_server_t *s);
const char *rt_server_unix_path(const rt_server_t *s);
const char *rt_server_dir(const rt_server_t *s);
pid_t rt_server_pid(const rt_server_t *s); /* 0 while down */
int rt_server_running(const rt_server_t *s);

/* Sends sig. SIGKILL and SIGTERM wait (bounded) for the exit and mark the
 * server down; SIGTERM escalates to SIGKILL after about 10 s scaled.
 * SIGSTOP / SIGCONT behave as rt_server_pause / rt_server_resume. */
void rt_server_kill(rt_server_t *s, int sig);
/* SIGSTOP / SIGCONT; each returns once the kernel reports the new state. */
void rt_server_pause(rt_server_t *s);
void rt_server_resume(rt_server_t *s);

/* kill -9 if running, then start again on the same port and directory with
 * the same options (AOF data survives when appendonly was on). Retries when
 * the port is briefly unavailable. Returns 0 once ready, -1 after printing. */
int rt_server_restart(rt_server_t *s);

/* As rt_server_restart, but returns as soon as the new process answers,
 * while it may still be loading its data (PING then answers LOADING in
 * Redis 7.0; INFO answers). */
int rt_server_restart_loading(rt_server_t *s);

/* Persistence for the next rt_server_restart: 1 restarts with
 * --appendonly yes (what was written under AOF is loaded back), 0 without
 * (the server comes back empty: it never loads the AOF then). */
void rt_server_set_appendonly(rt_server_t *s, int on);

/* SIGKILL, reap, remove the directory, free. NULL is a no-op. */
void rt_server_stop(rt_server_t *s);

/* Side channel: a cached blocking connection, reconnected (and AUTHed) when
 * it broke, before sending; a command is never sent twice. Returns NULL on
 * I/O error or timeout (about 5 s scaled) after printing why. Free the reply
 * with freeReplyObject. */
redisReply *rt_cmd(rt_server_t *s, const char *fmt, ...);
redisReply *rt_cmd_argv(rt_server_t *s, int argc, const char **argv, const size_t *lens);

/* ASSERT an integer reply and return it. */
long long rt_cmd_int_at(const char *file, int line, rt_server_t *s, const char *fmt, ...);
#define rt_cmd_int(s, ...) rt_cmd_int_at(__FILE__, __LINE__, (s), __VA_ARGS__)
/* malloc'd NUL-terminated copy of a string/status reply (free()), NULL for
 * nil; anything else fails the test. */
char *rt_cmd_str_at(const char *file, int line, rt_server_t *s, const char *fmt, ...);
#define rt_cmd_str(s, ...) rt_cmd_str_at(__FILE__, __LINE__, (s), __VA_ARGS__)

/* For other harness side channels (blocking hiredis): a timeval of ms, and
 * SIGPIPE blocked around their I/O and one that arrived swallowed, so a
 * server killed mid-command cannot kill the test while the library under
 * test still sees the process's normal disposition. */
struct timeval rt_tv_ms(int64_t ms);
/* Where an executable is: `name` itself if it has a '/', else the first
 * match along $PATH; 0, or -1 when none is executable. Call it before a
 * fork (it is not async-signal-safe). */
int rt_find_in_path(const char *name, char *out, size_t out_len);
void rt_sigpipe_block(sigset_t *old);
void rt_sigpipe_restore(const sigset_t *old);
/* malloc'd value of `field` in `INFO section` (e.g. "server", "run_id"), or
 * NULL when absent or unreachable. */
char *rt_server_info(rt_server_t *s, const char *section, const char *field);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDIS_SERVER_H */
