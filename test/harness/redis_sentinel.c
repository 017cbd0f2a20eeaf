/* Spawning, controlling and querying redis-sentinel processes (see
 * redis_sentinel.h). Process handling follows redis_server.c: fork + execv
 * with PR_SET_PDEATHSIG, tracked for the exit-path sweep, killed by PID. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redis_sentinel.h"
#include "redis_server.h"

#include "child_proc.h"

#include "test.h"

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

#define RS_PATH_MAX 512
#define RS_START_ATTEMPTS 5

struct rt_sentinel_s {
  pid_t pid;
  rt_proc_live_t live; /* for the exit-path sweep */
  int port;
  int tls_port; /* 0: no TLS */
  char *requirepass;
  char name[128]; /* the monitored master's name */
  char dir[RS_PATH_MAX];
  char conf_path[RS_PATH_MAX + 32];
  char log_path[RS_PATH_MAX + 32];
  redisContext *ctx;
};

void rt_sentinel_opts_init(rt_sentinel_opts_t *opts) { memset(opts, 0, sizeof *opts); }

/* ---- binary, directory, config ------------------------------------------------------ */

/* The binary and whether it needs --sentinel (a server binary does). */
static int find_binary(char *out, size_t out_len, int *as_server) {
  const char *s = getenv("LK_REDIS_SENTINEL"), *srv = getenv("LK_REDIS_SERVER");
  *as_server = 0;
  if (s != NULL && *s != '\0')
    return rt_find_in_path(s, out, out_len);
  *as_server = 1;
  if (srv != NULL && *srv != '\0')
    return rt_find_in_path(srv, out, out_len);
  *as_server = 0;
  if (rt_find_in_path("redis-sentinel", out, out_len) == 0)
    return 0;
  *as_server = 1;
  return rt_find_in_path("redis-server", out, out_len);
}

static int make_dir(rt_sentinel_t *s) {
  /* "lk-redis-" so redis_server.c's sweep removes a killed test's leftovers. */
  if (rt_proc_make_dir(s->dir, sizeof s->dir, "lk-redis-sentinel-", sizeof s->dir,
                       "rt_sentinel") != 0)
    return -1;
  snprintf(s->conf_path, sizeof s->conf_path, "%s/sentinel.conf", s->dir);
  snprintf(s->log_path, sizeof s->log_path, "%s/sentinel.log", s->dir);
  return 0;
}

/* Written anew before every start: the port may change between attempts. */
static int write_conf(const rt_sentinel_t *s, int master_port, const rt_sentinel_opts_t *o) {
  FILE *f = fopen(s->conf_path, "w");
  if (f == NULL) {
    fprintf(stderr, "rt_sentinel: %s: %s\n", s->conf_path, strerror(errno));
    return -1;
  }
  const char *name = o->master_name ? o->master_name : "mymaster";
  fprintf(f, "port %d\nbind 127.0.0.1\ndaemonize no\nlogfile \"%s\"\ndir \"%s\"\n", s->port,
          s->log_path, s->dir);
  if (o->requirepass != NULL)
    fprintf(f, "requirepass \"%s\"\n", o->requirepass);
  fprintf(f, "sentinel monitor %s %s %d %d\n", name,
          o->master_host ? o->master_host : "127.0.0.1", master_port,
          o->quorum > 0 ? o->quorum : 2);
  fprintf(f, "sentinel down-after-milliseconds %s %lld\n", name,
          (long long)rt_scaled_ms(o->down_after_ms > 0 ? o->down_after_ms : 1000));
  fprintf(f, "sentinel failover-timeout %s %lld\n", name,
          (long long)rt_scaled_ms(o->failover_timeout_ms > 0 ? o->failover_timeout_ms : 3000));
  fprintf(f, "sentinel parallel-syncs %s 1\n", name);
  if (o->master_auth != NULL)
    fprintf(f, "sentinel auth-pass %s \"%s\"\n", name, o->master_auth);
  if (s->tls_port != 0)
    fprintf(f,
            "tls-port %d\ntls-cert-file \"%s\"\ntls-key-file \"%s\"\ntls-ca-cert-file \"%s\"\n"
            "tls-auth-clients no\ntls-replication yes\n",
            s->tls_port, o->tls_cert_file, o->tls_key_file, o->tls_ca_file);
  return fclose(f) == 0 ? 0 : -1;
}

/* ---- process control ------------------------------------------------------------------ */

static int spawn(rt_sentinel_t *s) {
  char bin[RS_PATH_MAX];
  int as_server = 0;
  if (find_binary(bin, sizeof bin, &as_server) != 0) {
    fprintf(stderr, "rt_sentinel: no redis-sentinel / redis-server found "
                    "(PATH, LK_REDIS_SENTINEL or LK_REDIS_SERVER)\n");
    return -1;
  }
  const char *argv[4] = {bin, s->conf_path, as_server ? "--sentinel" : NULL, NULL};
  return rt_proc_spawn(argv, "rt_sentinel", &s->pid);
}

static void mark_down(rt_sentinel_t *s) {
  rt_child_untrack(s->pid);
  s->pid = 0;
  rt_proc_side_close(&s->ctx);
}

/* Whether c reaches our sentinel (rt_proc_ready_fn): INFO's process_id. */
static int sentinel_is_ours(redisContext *c, pid_t pid, void *arg, char *why, size_t why_len) {
  redisReply *r = redisCommand(c, "INFO server");
  long seen = -1;
  (void)arg;
  if (r != NULL && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "process_id:");
    if (p != NULL)
      seen = atol(p + 11);
  }
  if (r != NULL)
    freeReplyObject(r);
  snprintf(why, why_len, "process_id %ld, ours %d", seen, (int)pid);
  return seen == (long)pid;
}

/* 0 ready; -1 the child exited (retry on another port); -2 timed out. */
static int wait_ready(rt_sentinel_t *s) {
  return rt_proc_wait_ready(&s->pid, s->port, s->requirepass, "rt_sentinel", sentinel_is_ours,
                            NULL, &s->ctx);
}

static void stop_sentinel(void *s) { rt_sentinel_stop(s); }

rt_sentinel_t *rt_sentinel_start(int master_port, const rt_sentinel_opts_t *opts) {
  rt_sentinel_opts_t defaults;
  if (opts == NULL) {
    rt_sentinel_opts_init(&defaults);
    opts = &defaults;
  }
  rt_sentinel_t *s = rt_proc_calloc(sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", opts->master_name ? opts->master_name : "mymaster");
  if (opts->requirepass != NULL && (s->requirepass = strdup(opts->requirepass)) == NULL)
    FAIL("out of memory");
  rt_proc_live_add(&s->live, stop_sentinel, s);
  if (make_dir(s) != 0)
    goto fail;
  for (int attempt = 0; attempt < RS_START_ATTEMPTS; attempt++) {
    if (attempt > 0)
      rt_sleep_ms(50 * attempt);
    s->port = rt_pick_port();
    for (int k = 0; opts->tls_cert_file != NULL && k < 10 && (k == 0 || s->tls_port == s->port);
         k++)
      s->tls_port = rt_pick_port();
    int tls_bad = opts->tls_cert_file != NULL && (s->tls_port == 0 || s->tls_port == s->port);
    if (s->port == 0 || tls_bad || write_conf(s, master_port, opts) != 0 || spawn(s) != 0)
      continue;
    int r = wait_ready(s);
    if (r == 0)
      return s;
    if (r == -2)
      break; /* killed: waiting longer on another port would not help */
  }
  rt_proc_print_log_tail(s->log_path);
fail:
  fprintf(stderr, "rt_sentinel_start: failed\n");
  rt_sentinel_stop(s); /* not running: every failed attempt left pid 0 */
  return NULL;
}

int rt_sentinel_port(const rt_sentinel_t *s) { return s->port; }
int rt_sentinel_tls_port(const rt_sentinel_t *s) { return s->tls_port; }
pid_t rt_sentinel_pid(const rt_sentinel_t *s) { return s->pid; }
const char *rt_sentinel_dir(const rt_sentinel_t *s) { return s->dir; }

void rt_sentinel_kill(rt_sentinel_t *s, int sig) {
  if (s->pid != 0 && rt_proc_signal(&s->pid, sig, 0, "rt_sentinel"))
    mark_down(s);
}

void rt_sentinel_stop(rt_sentinel_t *s) {
  if (s == NULL)
    return;
  if (s->pid != 0)
    rt_sentinel_kill(s, SIGKILL);
  rt_proc_release(&s->live, &s->ctx, s->dir);
  free(s->requirepass);
  free(s);
}

/* ---- side channel ------------------------------------------------------------------------ */

redisReply *rt_sentinel_cmd(rt_sentinel_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r =
      rt_proc_side_vcmd(&s->ctx, s->port, s->requirepass, "rt_sentinel_cmd", fmt, ap);
  va_end(ap);
  return r;
}

int rt_sentinel_master_port(rt_sentinel_t *s) {
  redisReply *r = rt_sentinel_cmd(s, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", s->name);
  int port = -1;
  if (r != NULL && r->type == REDIS_REPLY_NIL)
    port = 0;
  else if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
           r->element[1]->type == REDIS_REPLY_STRING)
    port = atoi(r->element[1]->str);
  if (r != NULL)
    freeReplyObject(r);
  return port;
}

static long count_of(rt_sentinel_t *s, const char *what) {
  redisReply *r = rt_sentinel_cmd(s, "SENTINEL %s %s", what, s->name);
  long n = r != NULL && r->type == REDIS_REPLY_ARRAY ? (long)r->elements : -1;
  if (r != NULL)
    freeReplyObject(r);
  return n;
}

int rt_sentinels_wait_ready(rt_sentinel_t *const *s, size_t n, int replicas,
                            int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(timeout_ms);
  long others = -1, reps = -1;
  size_t i = 0;
  for (long k = 0; k < 100000L; k++) {
    for (i = 0; i < n; i++) {
      if (s[i]->pid == 0)
        continue; /* a dead one cannot be asked */
      others = count_of(s[i], "SENTINELS");
      reps = count_of(s[i], "REPLICAS");
      if (others < (long)n - 1 || reps < replicas)
        break;
    }
    if (i == n)
      return 0;
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(50);
  }
  fprintf(stderr, "rt_sentinels_wait_ready: sentinel %zu knows %ld other sentinel(s) and %ld "
                  "replica(s); wanted %zu and %d\n",
          i, others, reps, n - 1, replicas);
  return -1;
}

int rt_sentinels_wait_master(rt_sentinel_t *const *s, size_t n, int port, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(timeout_ms);
  size_t i = 0;
  int got = -1;
  for (long k = 0; k < 100000L; k++) {
    for (i = 0; i < n; i++) {
      if (s[i]->pid == 0)
        continue;
      if ((got = rt_sentinel_master_port(s[i])) != port)
        break;
    }
    if (i == n)
      return 0;
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(20);
  }
  fprintf(stderr, "rt_sentinels_wait_master: sentinel %zu names port %d, wanted %d\n", i, got,
          port);
  return -1;
}

/* "127.0.0.1:P,..." over each sentinel's plain (tls = 0) or TLS port. */
static char *sentinels_list(rt_sentinel_t *const *s, size_t n, int tls) {
  size_t cap = n * 24 + 1, len = 0;
  char *out = malloc(cap);
  if (out == NULL)
    FAIL("out of memory");
  out[0] = '\0';
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s127.0.0.1:%d", i ? "," : "",
                            tls ? s[i]->tls_port : s[i]->port);
  return out;
}

char *rt_sentinels_list(rt_sentinel_t *const *s, size_t n) { return sentinels_list(s, n, 0); }

char *rt_sentinels_tls_list(rt_sentinel_t *const *s, size_t n) { return sentinels_list(s, n, 1); }
