/* The process handling redis_server.c and redis_sentinel.c share (see
 * child_proc.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "child_proc.h"

#include "redis_server.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int rt_proc_make_dir(char *dir, size_t dir_len, const char *stem, size_t max_len,
                     const char *who) {
  const char *tmp = getenv("TMPDIR");
  for (int i = 0; i < 2; i++) {
    const char *base = (i == 0 && tmp != NULL && *tmp != '\0') ? tmp : "/tmp";
    if ((size_t)snprintf(dir, dir_len, "%s/%sXXXXXX", base, stem) >= dir_len ||
        strlen(dir) >= max_len)
      continue; /* TMPDIR too long (for a unix socket path): fall back to /tmp */
    if (mkdtemp(dir) != NULL) {
      char owner_path[600];
      snprintf(owner_path, sizeof owner_path, "%s/owner", dir);
      FILE *f = fopen(owner_path, "w");
      if (f != NULL) {
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
      }
      return 0;
    }
    fprintf(stderr, "%s: mkdtemp(%s): %s\n", who, dir, strerror(errno));
  }
  dir[0] = '\0';
  return -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void rt_proc_remove_dir(const char *dir) {
  if (dir[0] == '\0')
    return;
  const char *keep = getenv("LK_TEST_KEEP_DIRS");
  if (keep != NULL && *keep != '\0' && strcmp(keep, "0") != 0) {
    fprintf(stderr, "note: keeping %s (LK_TEST_KEEP_DIRS)\n", dir);
    return;
  }
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void close_from(int lowfd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
    return;
#endif
  for (int fd = lowfd; fd < 4096; fd++)
    close(fd);
}

int rt_proc_spawn(const char *const *argv, const char *who, pid_t *pid_out) {
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "%s: fork: %s\n", who, strerror(errno));
    return -1;
  }
  if (pid == 0) {
    /* Child: async-signal-safe calls only (the parent may have threads). Dies
     * with the thread that forked it even if that is SIGKILLed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, STDIN_FILENO);
    close_from(3); /* the test's sockets and libuv fds stay with the test */
    execv(argv[0], (char *const *)argv);
    static const char msg[] = ": execv failed\n";
    ssize_t w = write(STDERR_FILENO, who, strlen(who));
    w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
  }
  *pid_out = pid;
  rt_child_track(pid);
  return 0;
}

int rt_proc_reap(pid_t pid, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  for (long i = 0; i < 1000000L; i++) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid && (WIFEXITED(st) || WIFSIGNALED(st)))
      return 1;
    if (r < 0 && errno != EINTR)
      return 1; /* ECHILD: already reaped elsewhere */
    if (rt_now_ms() > deadline)
      return 0;
    rt_sleep_ms(1);
  }
  return 0;
}

int rt_proc_kill_and_reap(pid_t pid, int sig, const char *who) {
  if (rt_proc_reap(pid, rt_scaled_ms(10000)))
    return 1;
  fprintf(stderr, "%s: pid %d ignored signal %d; sending SIGKILL\n", who, (int)pid, sig);
  kill(pid, SIGKILL);
  if (rt_proc_reap(pid, rt_scaled_ms(10000)))
    return 1;
  fprintf(stderr, "%s: pid %d not reaped\n", who, (int)pid);
  return 0;
}

redisContext *rt_proc_connect(int port, const char *requirepass, int64_t connect_ms,
                              int64_t io_ms, char *why, size_t why_len) {
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, rt_tv_ms(connect_ms));
  if (c == NULL || c->err) {
    snprintf(why, why_len, "connect: %s", c ? c->errstr : "out of memory");
    if (c)
      redisFree(c);
    return NULL;
  }
  /* hiredis 0.14 opens sockets without CLOEXEC; later children must not
   * inherit our connections. */
  fcntl(c->fd, F_SETFD, FD_CLOEXEC);
  redisSetTimeout(c, rt_tv_ms(io_ms));
  if (requirepass != NULL) {
    redisReply *r = redisCommand(c, "AUTH %s", requirepass);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    snprintf(why, why_len, "AUTH: %s", r ? (r->str ? r->str : "?") : c->errstr);
    if (r)
      freeReplyObject(r);
    if (!ok) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

int rt_proc_wait_ready(pid_t *pid, int port, const char *requirepass, const char *who,
                       rt_proc_ready_fn ready_fn, void *arg, redisContext **ctx) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(10000);
  char why[256] = "not tried";
  for (long i = 0; i < 100000L; i++) {
    int st = 0;
    if (waitpid(*pid, &st, WNOHANG) == *pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
      fprintf(stderr, "%s: port %d: the child exited (%s %d) during startup\n", who, port,
              WIFEXITED(st) ? "status" : "signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      rt_child_untrack(*pid);
      *pid = 0;
      return -1;
    }
    sigset_t old;
    rt_sigpipe_block(&old);
    redisContext *c = rt_proc_connect(port, requirepass, 200, 1000, why, sizeof why);
    int ready = c != NULL && ready_fn(c, *pid, arg, why, sizeof why);
    rt_sigpipe_restore(&old);
    if (ready) {
      redisSetTimeout(c, rt_tv_ms(rt_scaled_ms(5000)));
      *ctx = c;
      return 0;
    }
    if (c != NULL)
      redisFree(c);
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(10);
  }
  fprintf(stderr, "%s: port %d not ready in %lld ms (last: %s)\n", who, port,
          (long long)rt_scaled_ms(10000), why);
  kill(*pid, SIGKILL);
  rt_proc_reap(*pid, 2000);
  rt_child_untrack(*pid);
  *pid = 0;
  return -2;
}

void rt_proc_print_log_tail(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return;
  char buf[2048];
  long size = 0;
  if (fseek(f, 0, SEEK_END) == 0)
    size = ftell(f);
  fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "---- tail of %s ----\n%s---- end ----\n", path, buf);
}

int rt_proc_signal(pid_t *pid, int sig, int stopped, const char *who) {
  kill(*pid, sig);
  if (sig != SIGKILL && sig != SIGTERM)
    return 0;
  if (sig == SIGTERM && stopped)
    kill(*pid, SIGCONT);
  if (!rt_proc_kill_and_reap(*pid, sig, who)) {
    *pid = 0;
    return 0;
  }
  return 1;
}

void *rt_proc_calloc(size_t size) {
  void *p = calloc(1, size);
  if (p == NULL)
    FAIL("out of memory");
  return p;
}

static rt_proc_live_t *live_children;

/* Children a test forgot to stop (or left behind by a failed assertion). */
static void at_exit_stop_children(void) {
  pid_t self = getpid();
  rt_proc_live_t *e = live_children;
  for (int i = 0; e != NULL && i < 10000; i++) {
    rt_proc_live_t *next = e->next;
    if (e->owner == self)
      e->stop(e->obj);
    e = next;
  }
}

void rt_proc_live_add(rt_proc_live_t *e, void (*stop)(void *obj), void *obj) {
  static int hooked;
  if (!hooked) {
    hooked = 1;
    atexit(at_exit_stop_children);
  }
  e->owner = getpid();
  e->stop = stop;
  e->obj = obj;
  e->next = live_children;
  live_children = e;
}

void rt_proc_release(rt_proc_live_t *e, redisContext **ctx, const char *dir) {
  for (rt_proc_live_t **pp = &live_children; *pp != NULL; pp = &(*pp)->next)
    if (*pp == e) {
      *pp = e->next;
      break;
    }
  rt_proc_side_close(ctx);
  rt_proc_remove_dir(dir);
}

void rt_proc_side_close(redisContext **ctx) {
  if (*ctx != NULL) {
    redisFree(*ctx);
    *ctx = NULL;
  }
}

/* Any readiness on an idle connection means EOF, an error, or stray bytes: in
 * every case it cannot be trusted for the next command. */
static int idle_conn_broken(redisContext *c) {
  struct pollfd p = {c->fd, POLLIN, 0};
  return c->err != 0 || poll(&p, 1, 0) != 0;
}

redisReply *rt_proc_side_send(redisContext **ctx, int port, const char *requirepass,
                              const char *who, char *cmd, long long len) {
  sigset_t old;
  void *reply = NULL;
  if (len < 0)
    return NULL;
  rt_sigpipe_block(&old);
  if (*ctx != NULL && idle_conn_broken(*ctx))
    rt_proc_side_close(ctx);
  if (*ctx == NULL) {
    char why[256];
    *ctx = rt_proc_connect(port, requirepass, rt_scaled_ms(2000), rt_scaled_ms(5000), why,
                           sizeof why);
    if (*ctx == NULL)
      fprintf(stderr, "%s: port %d: %s\n", who, port, why);
  }
  if (*ctx != NULL && (redisAppendFormattedCommand(*ctx, cmd, (size_t)len) != REDIS_OK ||
                       redisGetReply(*ctx, &reply) != REDIS_OK)) {
    fprintf(stderr, "%s: port %d: %s\n", who, port, (*ctx)->errstr);
    rt_proc_side_close(ctx);
    reply = NULL;
  }
  rt_sigpipe_restore(&old);
  redisFreeCommand(cmd);
  return reply;
}

redisReply *rt_proc_side_vcmd(redisContext **ctx, int port, const char *requirepass,
                              const char *who, const char *fmt, va_list ap) {
  char *cmd = NULL;
  int len = redisvFormatCommand(&cmd, fmt, ap);
  return rt_proc_side_send(ctx, port, requirepass, who, cmd, len);
}
