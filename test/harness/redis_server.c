/* Spawning, controlling and querying real redis-server processes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redis_server.h"

#include "child_proc.h"

#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RT_PATH_MAX 512
/* sun_path is 108 bytes; keep the socket path well inside it. */
#define RT_SUN_PATH_MAX 100
#define RT_START_ATTEMPTS 5

struct rt_server_s {
  pid_t pid; /* 0 while down */
  rt_proc_live_t live; /* for the exit-path sweep */
  int port;
  int tls_port; /* 0: no TLS */
  int paused;
  int accept_loading; /* wait_ready: a LOADING answer counts as up */
  int appendonly;
  int debug_command;
  char *requirepass;
  char **extra_args; /* NULL-terminated copy */
  char *tls_cert, *tls_key, *tls_ca;
  int tls_auth_clients;
  char dir[RT_PATH_MAX];
  char unix_path[RT_PATH_MAX + 32]; /* dir + "/redis.sock" always fits */
  char log_path[RT_PATH_MAX + 32];
  redisContext *ctx; /* side channel, NULL until first used */
};

/* ---- small helpers ------------------------------------------------------------------- */

static char *xstrdup(const char *s) {
  if (s == NULL)
    return NULL;
  char *d = strdup(s);
  if (d == NULL)
    FAIL("out of memory");
  return d;
}

struct timeval rt_tv_ms(int64_t ms) {
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
  return tv;
}

/* hiredis writes with plain write(): a server killed mid-command would SIGPIPE
 * the test. Block it around side-channel I/O and swallow one that arrived, so
 * the library under test still sees the process's normal disposition. */
void rt_sigpipe_block(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, old);
}

void rt_sigpipe_restore(const sigset_t *old) {
  if (!sigismember(old, SIGPIPE)) {
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      struct timespec zero = {0, 0};
      sigtimedwait(&set, NULL, &zero);
    }
  }
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

static const char *reply_type_name(int type) {
  switch (type) {
  case REDIS_REPLY_STRING: return "string";
  case REDIS_REPLY_ARRAY: return "array";
  case REDIS_REPLY_INTEGER: return "integer";
  case REDIS_REPLY_NIL: return "nil";
  case REDIS_REPLY_STATUS: return "status";
  case REDIS_REPLY_ERROR: return "error";
  default: return "unknown";
  }
}

/* Value of "field:" in an INFO text, malloc'd, or NULL. */
static char *info_lookup(const char *text, size_t len, const char *field) {
  size_t flen = strlen(field);
  const char *p = text, *end = text + len;
  for (int lines = 0; p < end && lines < 10000; lines++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL)
      eol = end;
    if ((size_t)(eol - p) > flen && memcmp(p, field, flen) == 0 && p[flen] == ':') {
      const char *v = p + flen + 1, *vend = eol;
      if (vend > v && vend[-1] == '\r')
        vend--;
      char *out = malloc((size_t)(vend - v) + 1);
      if (out == NULL)
        FAIL("out of memory");
      memcpy(out, v, (size_t)(vend - v));
      out[vend - v] = '\0';
      return out;
    }
    p = eol + 1;
  }
  return NULL;
}

/* field of an INFO reply r (NULL when r failed or lacks it), r freed. */
static char *reply_info(redisReply *r, const char *field) {
  char *v = NULL;
  if (r != NULL && r->type == REDIS_REPLY_STRING)
    v = info_lookup(r->str, r->len, field);
  if (r != NULL)
    freeReplyObject(r);
  return v;
}

static char *ctx_info(redisContext *c, const char *section, const char *field) {
  return reply_info(redisCommand(c, "INFO %s", section), field);
}

int rt_find_in_path(const char *name, char *out, size_t out_len) {
  if (strchr(name, '/') != NULL) {
    snprintf(out, out_len, "%s", name);
    return access(out, X_OK) == 0 ? 0 : -1;
  }
  const char *path = getenv("PATH");
  if (path == NULL)
    path = "/usr/local/bin:/usr/bin:/bin";
  for (int i = 0; i < 256 && *path != '\0'; i++) {
    const char *colon = strchr(path, ':');
    size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
    if (dlen > 0 && (size_t)snprintf(out, out_len, "%.*s/%s", (int)dlen, path, name) < out_len &&
        access(out, X_OK) == 0)
      return 0;
    if (colon == NULL)
      break;
    path = colon + 1;
  }
  return -1;
}

/* Resolved in the parent: after fork only async-signal-safe calls are allowed. */
static int find_binary(char *out, size_t out_len) {
  const char *name = getenv("LK_REDIS_SERVER");
  if (name == NULL || *name == '\0')
    name = "redis-server";
  return rt_find_in_path(name, out, out_len);
}

static int pid_alive(long pid) {
  return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* A test killed with SIGKILL (ctest's timeout, a mutation script) cannot
 * remove its directory; its servers die with it (PDEATHSIG). The next process
 * that starts a server removes such leftovers: directories whose "owner" file
 * names a dead process, or, without that file, that are over an hour old.
 * A live owner (or a reused pid) keeps its directory. */
static void sweep_stale_dirs(const char *base) {
  DIR *d = opendir(base);
  if (d == NULL)
    return;
  time_t now = time(NULL);
  struct dirent *e;
  for (int i = 0; i < 100000 && (e = readdir(d)) != NULL; i++) {
    if (strncmp(e->d_name, "lk-redis-", 9) != 0)
      continue;
    char path[RT_PATH_MAX], owner_path[RT_PATH_MAX + 16];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= sizeof path ||
        lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    snprintf(owner_path, sizeof owner_path, "%s/owner", path);
    FILE *f = fopen(owner_path, "r");
    long owner = 0;
    if (f != NULL) {
      if (fscanf(f, "%ld", &owner) != 1)
        owner = 0;
      fclose(f);
    }
    if (f != NULL ? (owner > 0 && !pid_alive(owner)) : now - st.st_mtime > 3600)
      rt_proc_remove_dir(path);
  }
  closedir(d);
}

static int make_dir(rt_server_t *s) {
  const char *tmp = getenv("TMPDIR");
  static int swept;
  const char *keep = getenv("LK_TEST_KEEP_DIRS");
  if (!swept && (keep == NULL || *keep == '\0' || strcmp(keep, "0") == 0)) {
    swept = 1;
    if (tmp != NULL && *tmp != '\0' && strcmp(tmp, "/tmp") != 0)
      sweep_stale_dirs(tmp);
    sweep_stale_dirs("/tmp");
  }
  /* sun_path: the directory leaves room for "/redis.sock". */
  if (rt_proc_make_dir(s->dir, sizeof s->dir, "lk-redis-", RT_SUN_PATH_MAX - strlen("/redis.sock"),
                       "rt_server") != 0)
    return -1;
  snprintf(s->unix_path, sizeof s->unix_path, "%s/redis.sock", s->dir);
  snprintf(s->log_path, sizeof s->log_path, "%s/redis.log", s->dir);
  return 0;
}

/* ---- process control ---------------------------------------------------------------- */

static int spawn(rt_server_t *s) {
  char bin[RT_PATH_MAX];
  if (find_binary(bin, sizeof bin) != 0) {
    const char *name = getenv("LK_REDIS_SERVER");
    fprintf(stderr, "rt_server: %s not found (PATH or LK_REDIS_SERVER)\n",
            name != NULL && *name != '\0' ? name : "redis-server");
    return -1;
  }
  char port[16], tls_port[16];
  snprintf(port, sizeof port, "%d", s->port);
  snprintf(tls_port, sizeof tls_port, "%d", s->tls_port);
  size_t n_extra = 0;
  while (s->extra_args != NULL && s->extra_args[n_extra] != NULL)
    n_extra++;
  const char *fixed[] = {bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
                         "--appendonly", s->appendonly ? "yes" : "no", "--appendfsync", "always",
                         "--dir", s->dir, "--daemonize", "no", "--logfile", s->log_path,
                         "--protected-mode", "yes", "--unixsocket", s->unix_path,
                         "--unixsocketperm", "700"};
  size_t n_fixed = sizeof fixed / sizeof fixed[0];
  const char **argv = calloc(n_fixed + 4 + 10 + n_extra + 1, sizeof *argv);
  if (argv == NULL)
    FAIL("out of memory");
  size_t n = 0;
  for (size_t i = 0; i < n_fixed; i++)
    argv[n++] = fixed[i];
  if (s->debug_command) {
    argv[n++] = "--enable-debug-command";
    argv[n++] = "local";
  }
  if (s->requirepass != NULL) {
    argv[n++] = "--requirepass";
    argv[n++] = s->requirepass;
  }
  if (s->tls_cert != NULL) {
    argv[n++] = "--tls-port";
    argv[n++] = tls_port;
    argv[n++] = "--tls-cert-file";
    argv[n++] = s->tls_cert;
    argv[n++] = "--tls-key-file";
    argv[n++] = s->tls_key;
    argv[n++] = "--tls-ca-cert-file";
    argv[n++] = s->tls_ca;
    argv[n++] = "--tls-auth-clients";
    argv[n++] = s->tls_auth_clients ? "yes" : "no";
  }
  for (size_t i = 0; i < n_extra; i++)
    argv[n++] = s->extra_args[i];
  argv[n] = NULL;

  int rc = rt_proc_spawn(argv, "rt_server", &s->pid);
  free(argv);
  s->paused = 0;
  return rc;
}

static void mark_down(rt_server_t *s) {
  rt_child_untrack(s->pid);
  s->pid = 0;
  s->paused = 0;
  rt_proc_side_close(&s->ctx);
}

/* Wait for a stop (want_stopped) or continue report. Returns 0, or -1 when the
 * process died meanwhile or the report did not come. */
static int wait_state(rt_server_t *s, int want_stopped) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  int flags = WNOHANG | (want_stopped ? WUNTRACED : WCONTINUED);
  for (long i = 0; i < 1000000L; i++) {
    int st = 0;
    pid_t r = waitpid(s->pid, &st, flags);
    if (r == s->pid) {
      if (want_stopped ? WIFSTOPPED(st) : WIFCONTINUED(st))
        return 0;
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        fprintf(stderr, "rt_server: pid %d died while waiting for %s\n", (int)s->pid,
                want_stopped ? "SIGSTOP" : "SIGCONT");
        mark_down(s);
        return -1;
      }
    }
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(1);
  }
  fprintf(stderr, "rt_server: pid %d: no %s report\n", (int)s->pid,
          want_stopped ? "stop" : "continue");
  return -1;
}

/* Whether c reaches our child (rt_proc_ready_fn): it answers PING (or is
 * loading, when that counts as up) with our process_id. */
static int server_is_ours(redisContext *c, pid_t pid, void *arg, char *why, size_t why_len) {
  const rt_server_t *s = arg;
  int ready = 0;
  redisReply *r = redisCommand(c, "PING");
  int alive = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
  if (s->accept_loading && r != NULL && r->type == REDIS_REPLY_ERROR &&
      strncmp(r->str, "LOADING", 7) == 0)
    alive = 1; /* PING is refused while loading; INFO is not */
  if (alive) {
    /* The port could belong to someone else's server for a moment: make
     * sure the one answering is our child. */
    char *p = ctx_info(c, "server", "process_id");
    ready = p != NULL && atol(p) == (long)pid;
    snprintf(why, why_len, "process_id %s, ours %d", p ? p : "?", (int)pid);
    free(p);
  } else {
    snprintf(why, why_len, "PING: %s", r ? (r->str ? r->str : reply_type_name(r->type)) : c->errstr);
  }
  if (r != NULL)
    freeReplyObject(r);
  return ready;
}

/* 0: ready (and s->ctx is the side channel); -1: the child exited (worth a
 * retry); -2: timed out. */
static int wait_ready(rt_server_t *s) {
  return rt_proc_wait_ready(&s->pid, s->port, s->requirepass, "rt_server", server_is_ours, s,
                            &s->ctx);
}

/* Picks fresh ports when pick_port, then starts the process without waiting.
 * 0; 1 when no free port was found (worth another try); -1 when the binary
 * cannot be started (after printing). */
static int launch_spawn(rt_server_t *s, int pick_port) {
  if (pick_port) {
    s->port = rt_pick_port();
    if (s->tls_cert != NULL) /* a second one, not the first again */
      for (int k = 0; k < 10 && (k == 0 || s->tls_port == s->port || s->tls_port == 0); k++)
        s->tls_port = rt_pick_port();
    if (s->port == 0 || (s->tls_cert != NULL && (s->tls_port == 0 || s->tls_port == s->port))) {
      fprintf(stderr, "rt_server: no free port found\n");
      return 1;
    }
  }
  return spawn(s) != 0 ? -1 : 0;
}

/* Waits until the process launch_spawn started is ready, retrying on s->port
 * (or on fresh ports when pick_port) when the child exits early (bind races)
 * or no free port was found. 0, or -1 after printing the log tail. */
static int launch_wait(rt_server_t *s, int pick_port) {
  for (int attempt = 1; attempt <= RT_START_ATTEMPTS; attempt++) {
    int r = s->pid != 0 ? wait_ready(s) : -1; /* pid 0: no port was found */
    if (r == 0)
      return 0;
    if (r == -2 || attempt == RT_START_ATTEMPTS)
      break; /* killed: waiting longer on another port would not help */
    rt_sleep_ms(50 * attempt);
    if (launch_spawn(s, pick_port) < 0)
      return -1;
  }
  rt_proc_print_log_tail(s->log_path);
  return -1;
}

/* Starts the process on s->port (or on fresh ports when pick_port) and waits
 * until it is ready, retrying when the child exits early (bind races). */
static int launch(rt_server_t *s, int pick_port) {
  if (launch_spawn(s, pick_port) < 0)
    return -1;
  return launch_wait(s, pick_port);
}

/* ---- public API ------------------------------------------------------------------------ */

void rt_server_opts_init(rt_server_opts_t *opts) { memset(opts, 0, sizeof *opts); }

static void free_server(rt_server_t *s) {
  rt_proc_release(&s->live, &s->ctx, s->dir);
  if (s->extra_args != NULL)
    for (size_t i = 0; s->extra_args[i] != NULL; i++)
      free(s->extra_args[i]);
  free(s->extra_args);
  free(s->requirepass);
  free(s->tls_cert);
  free(s->tls_key);
  free(s->tls_ca);
  free(s);
}

static void stop_server(void *s) { rt_server_stop(s); }

rt_server_t *rt_server_spawn(const rt_server_opts_t *opts) {
  rt_server_opts_t defaults;
  if (opts == NULL) {
    rt_server_opts_init(&defaults);
    opts = &defaults;
  }
  rt_server_t *s = rt_proc_calloc(sizeof *s);
  s->appendonly = opts->appendonly != 0;
  s->debug_command = opts->debug_command != 0;
  s->requirepass = xstrdup(opts->requirepass);
  if (opts->tls_cert_file != NULL) {
    s->tls_cert = xstrdup(opts->tls_cert_file);
    s->tls_key = xstrdup(opts->tls_key_file);
    s->tls_ca = xstrdup(opts->tls_ca_file);
    s->tls_auth_clients = opts->tls_auth_clients != 0;
    if (s->tls_key == NULL || s->tls_ca == NULL)
      FAIL("rt_server_start: TLS needs tls_cert_file, tls_key_file and tls_ca_file");
  }
  if (opts->extra_args != NULL) {
    size_t n = 0;
    while (opts->extra_args[n] != NULL)
      n++;
    s->extra_args = calloc(n + 1, sizeof *s->extra_args);
    if (s->extra_args == NULL)
      FAIL("out of memory");
    for (size_t i = 0; i < n; i++)
      s->extra_args[i] = xstrdup(opts->extra_args[i]);
  }
  rt_proc_live_add(&s->live, stop_server, s);
  if (make_dir(s) != 0 || launch_spawn(s, 1) < 0) {
    fprintf(stderr, "rt_server_start: failed\n");
    free_server(s);
    return NULL;
  }
  return s;
}

int rt_server_await(rt_server_t *s) {
  if (launch_wait(s, 1) != 0) {
    fprintf(stderr, "rt_server_start: failed\n");
    return -1;
  }
  return 0;
}

rt_server_t *rt_server_start(const rt_server_opts_t *opts) {
  rt_server_t *s = rt_server_spawn(opts);
  if (s != NULL && rt_server_await(s) != 0) {
    free_server(s);
    return NULL;
  }
  return s;
}

int rt_server_port(const rt_server_t *s) { return s->port; }
int rt_server_tls_port(const rt_server_t *s) { return s->tls_port; }
const char *rt_server_unix_path(const rt_server_t *s) { return s->unix_path; }
const char *rt_server_dir(const rt_server_t *s) { return s->dir; }
pid_t rt_server_pid(const rt_server_t *s) { return s->pid; }
int rt_server_running(const rt_server_t *s) { return s->pid != 0; }

void rt_server_pause(rt_server_t *s) {
  if (s->pid == 0 || s->paused)
    return;
  kill(s->pid, SIGSTOP);
  if (wait_state(s, 1) == 0)
    s->paused = 1;
}

void rt_server_resume(rt_server_t *s) {
  if (s->pid == 0 || !s->paused)
    return;
  kill(s->pid, SIGCONT);
  if (wait_state(s, 0) == 0)
    s->paused = 0;
}

void rt_server_kill(rt_server_t *s, int sig) {
  if (s->pid == 0)
    return;
  if (sig == SIGSTOP) {
    rt_server_pause(s);
    return;
  }
  if (sig == SIGCONT) {
    rt_server_resume(s);
    return;
  }
  if (rt_proc_signal(&s->pid, sig, s->paused, "rt_server"))
    mark_down(s);
  else if (s->pid == 0)
    s->paused = 0; /* not reaped, still tracked: the exit path kills it again */
}

int rt_server_restart(rt_server_t *s) {
  if (s->pid != 0)
    rt_server_kill(s, SIGKILL);
  if (launch(s, 0) != 0) {
    fprintf(stderr, "rt_server_restart: port %d: failed\n", s->port);
    return -1;
  }
  return 0;
}

void rt_server_set_appendonly(rt_server_t *s, int on) { s->appendonly = on != 0; }

int rt_server_restart_loading(rt_server_t *s) {
  s->accept_loading = 1;
  int rc = rt_server_restart(s);
  s->accept_loading = 0;
  return rc;
}

void rt_server_stop(rt_server_t *s) {
  if (s == NULL)
    return;
  if (s->pid != 0)
    rt_server_kill(s, SIGKILL);
  free_server(s);
}

/* ---- side channel -------------------------------------------------------------------- */

static redisReply *vcmd(rt_server_t *s, const char *fmt, va_list ap) {
  return rt_proc_side_vcmd(&s->ctx, s->port, s->requirepass, "rt_cmd", fmt, ap);
}

redisReply *rt_cmd(rt_server_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(s, fmt, ap);
  va_end(ap);
  return r;
}

redisReply *rt_cmd_argv(rt_server_t *s, int argc, const char **argv, const size_t *lens) {
  char *cmd = NULL;
  int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
  return rt_proc_side_send(&s->ctx, s->port, s->requirepass, "rt_cmd", cmd, len);
}

static void fail_reply(const char *file, int line, const char *fmt, const char *want,
                       const redisReply *r) {
  if (r == NULL)
    rt_fail_at(file, line, "rt_cmd \"%s\": no reply (see above)", fmt);
  int has_text = r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ||
                 r->type == REDIS_REPLY_STRING;
  rt_fail_at(file, line, "rt_cmd \"%s\": expected %s reply, got %s%s%.*s", fmt, want,
             reply_type_name(r->type), has_text ? " " : "", has_text ? (int)r->len : 0,
             has_text ? r->str : "");
}

long long rt_cmd_int_at(const char *file, int line, rt_server_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(s, fmt, ap);
  va_end(ap);
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    fail_reply(file, line, fmt, "an integer", r);
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

char *rt_cmd_str_at(const char *file, int line, rt_server_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(s, fmt, ap);
  va_end(ap);
  if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
                    r->type != REDIS_REPLY_NIL))
    fail_reply(file, line, fmt, "a string, status or nil", r);
  char *out = NULL;
  if (r->type != REDIS_REPLY_NIL) {
    out = malloc(r->len + 1);
    if (out == NULL)
      FAIL("out of memory");
    memcpy(out, r->str, r->len);
    out[r->len] = '\0';
  }
  freeReplyObject(r);
  return out;
}

char *rt_server_info(rt_server_t *s, const char *section, const char *field) {
  return reply_info(rt_cmd(s, "INFO %s", section), field);
}
