/* multilock_redlock: RedLock acquire latency over 5 masters (bench/README.md
 * contract: JSON lines with value, limit, ratio).
 *
 *   multilock_redlock --ports P1,P2,P3,P4,P5 [--host H] [--pairs N]
 *                     [--warmup W] [--rounds R]
 *   multilock_redlock --spawn [--no-pin] [...]   starts its own 5 masters
 *   [--inflight K]  K pair loops at once, each on its own names (default 1)
 *   [--only IMPL]   one implementation only (for strace -c -f or perf)
 *
 * A pair is one uncontended acquire (wait 0, lease 30000 ms) and the
 * release of that hold, pairs back to back. The acquire is timed from the
 * call to the moment the quorum is known; pairs/s is over the whole run,
 * releases included; the masters' CPU per pair is the growth of their INFO
 * cpu figures over the run and their time in commands that of INFO
 * commandstats (server_usec); client CPU is getrusage; latchkey's
 * allocations are counted through lk_replace_allocator; the commands per
 * pair are the clients' own commands_sent. Four
 * implementations on the SAME five latchkey clients (one per master),
 * interleaved within every round (the order alternates), medians of the
 * per-round figures:
 *
 *   impl "raw" (the limit): the parallel fan-out with no library logic on
 *     latchkey's connection layer (lk__script_call, as bench/raw.c does for
 *     one lock): the lock's own acquire script to all five; at the third
 *     grant the time is taken and the release script goes to all five;
 *     the next pair once all ten replies are in.
 *   impl "latchkey": lk_redlock_acquire over the five clients; the release
 *     is started from the acquire's callback and the next acquire from the
 *     release's.
 *   impl "latchkey-single": lk_lock_acquire on master 1 alone, the same
 *     loop: what one master costs, for the ratio to a single master. With
 *     five masters on one CPU the fan-out itself costs a multiple of that;
 *     that part is not the library's (bench/README.md: the masters share
 *     one CPU).
 *   impl "raw-lean": the raw fan-out with SET NAME OWNER NX PX 30000 and a
 *     compare-and-delete script instead of the Redisson hash scripts: what
 *     the least server work per master gives.
 *   impl "raw-lean-script": the raw fan-out with the lean layout's own
 *     scripts (lean/acquire, lean/release): the limit of the lean
 *     RedLock, which keeps every reply that decides a grant a tagged script
 *     (docs/design.md, "Replies are attributable"), where raw-lean's plain
 *     SET is not.
 *   impl "latchkey-lean": lk_redlock_acquire with the lean member layout
 *     (LK_REDLOCK_LAYOUT_LEAN: a string NAME = OWNER with a PX lease on each
 *     master, docs/multilock.md "Lean layout"); its limit is raw-lean-script.
 *   impl "latchkey-lean-single": a lock object in the lean layout on master
 *     1 alone: one master, for the lean RedLock's ratio to one master.
 *
 * Run it pinned: masters on CPU 0, this program on CPU 1 (tools/bench.sh
 * does that for registered programs; --spawn does it here unless --no-pin).
 * One JSON line per figure on stdout, then a markdown summary; progress on
 * stderr. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/internal.h"
#include "core/scripts.h"
#include "latchkey.h"
#include "lock/lock_internal.h" /* lk__lock_set_lean: one lean lock, one master */


#define MASTERS 5
#define QUORUM 3
#define MAX_ROUNDS 20
#define MAX_LANES 256

/* the implementations, in the order they run (alternated every round) */
enum {
  IMPL_RAW,
  IMPL_LATCHKEY,
  IMPL_SINGLE,
  IMPL_RAW_LEAN,
  IMPL_RAW_LEAN_SCRIPT,
  IMPL_LEAN,
  IMPL_LEAN_SINGLE,
  NIMPL
};
static const char *const impl_name[NIMPL] = {
    "raw",           "latchkey",      "latchkey-single",     "raw-lean",
    "raw-lean-script", "latchkey-lean", "latchkey-lean-single"};

/* The raw fan-outs' command sets (raw_t.mode). */
enum { RAW_HASH, RAW_PLAIN, RAW_LEAN_SCRIPT, NRAW };

/* Over the five masters (else master 1 alone). */
static int fans_out(int impl) { return impl != IMPL_SINGLE && impl != IMPL_LEAN_SINGLE; }

typedef struct args_s {
  const char *host;
  int ports[MASTERS];
  int have_ports, spawn, pin;
  int pairs, warmup, rounds;
  int only; /* -1: every implementation; else IMPL_* (--only NAME) */
  int inflight; /* lanes at once (--inflight K), 1 by default */
  int busy_poll_us; /* every client's busy_poll_us (--busy-poll-us N), 0 by default */
} args_t;

static pid_t spawned[MASTERS];

static void stop_spawned(void) {
  int i;
  for (i = 0; i < MASTERS; i++)
    if (spawned[i] > 0) {
      kill(spawned[i], SIGKILL);
      waitpid(spawned[i], NULL, 0);
      spawned[i] = 0;
    }
}

static void die(const char *fmt, const char *what) {
  fprintf(stderr, "multilock_redlock: ");
  fprintf(stderr, fmt, what);
  fputc('\n', stderr);
  stop_spawned();
  exit(1);
}

/* latchkey's own allocations (lk_replace_allocator): each malloc, calloc
 * and realloc counts one. */
static uint64_t lk_allocs;
static void *count_malloc(size_t n) { return lk_allocs++, malloc(n); }
static void *count_realloc(void *p, size_t n) { return lk_allocs++, realloc(p, n); }
static void *count_calloc(size_t k, size_t n) { return lk_allocs++, calloc(k, n); }

/* This process's CPU time (user + system), ns. */
static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static double pct_us(uint64_t *v, size_t n, double q) {
  size_t rank;
  if (n == 0)
    return 0;
  qsort(v, n, sizeof(*v), cmp_u64);
  rank = (size_t)(q * (double)n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)v[rank - 1] / 1000.0;
}

static double median(double *v, int n) {
  int i, j;
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- masters ---- */

static redisContext *connect_to(const char *host, int port) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout(host, port, tv);
  if (c == NULL || c->err) {
    if (c != NULL)
      redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  return c;
}

/* Starts five redis-servers (pinned to CPU 0 unless !pin) on free ports. */
static void spawn_masters(args_t *a) {
  int i, tries;
  unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
  for (i = 0; i < MASTERS; i++) {
    for (tries = 0; tries < 20; tries++) {
      int port = 20000 + (int)(rand_r(&seed) % 10000), k;
      char portbuf[16];
      redisContext *c = NULL;
      pid_t pid;
      snprintf(portbuf, sizeof(portbuf), "%d", port);
      pid = fork();
      if (pid < 0)
        die("fork: %s", strerror(errno));
      if (pid == 0) {
        int devnull = open("/dev/null", 1);
        if (devnull >= 0)
          dup2(devnull, 1);
        if (a->pin)
          execlp("taskset", "taskset", "-c", "0", "redis-server", "--port", portbuf, "--bind",
                 "127.0.0.1", "--save", "", "--appendonly", "no", (char *)NULL);
        else
          execlp("redis-server", "redis-server", "--port", portbuf, "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", (char *)NULL);
        _exit(127);
      }
      spawned[i] = pid;
      for (k = 0; k < 200 && c == NULL; k++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
          spawned[i] = 0;
          break; /* port taken, most likely: another one */
        }
        usleep(10000);
        c = connect_to("127.0.0.1", port);
      }
      if (c != NULL) {
        redisFree(c);
        a->ports[i] = port;
        break;
      }
      if (spawned[i] > 0) {
        kill(spawned[i], SIGKILL);
        waitpid(spawned[i], NULL, 0);
        spawned[i] = 0;
      }
    }
    if (a->ports[i] == 0)
      die("cannot start redis-server %s", "(is it installed?)");
  }
  a->have_ports = 1;
}


/* The masters' time so far, summed over the five, in us: with cpu, their
 * CPU (INFO cpu: used_cpu_user + used_cpu_sys, what the process really
 * spent, event loop and socket calls included); else the time inside
 * commands (INFO commandstats: every command's usec, scripts' inner
 * commands included; a wall-clock figure, so with five masters on one CPU
 * it also counts the time a master was preempted inside a script). */
static double server_usec(redisContext *const *c, int cpu) {
  double total = 0;
  int i;
  for (i = 0; i < MASTERS; i++) {
    redisReply *r = redisCommand(c[i], cpu ? "INFO cpu" : "INFO commandstats");
    const char *p;
    if (r == NULL || r->type != REDIS_REPLY_STRING)
      die("INFO %s failed", cpu ? "cpu" : "commandstats");
    if (cpu) {
      if ((p = strstr(r->str, "used_cpu_sys:")) != NULL)
        total += strtod(p + 13, NULL) * 1e6;
      if ((p = strstr(r->str, "used_cpu_user:")) != NULL)
        total += strtod(p + 14, NULL) * 1e6;
    } else {
      for (p = r->str; (p = strstr(p, ",usec=")) != NULL; p += 6)
        total += strtod(p + 6, NULL);
    }
    freeReplyObject(r);
  }
  return total;
}

/* ---- impl raw / raw-lean: the fan-out on latchkey's connection layer ----
 *
 * The same five clients the RedLock uses; each master gets the lock's exact
 * scripts through lk__script_call (tagged, as the lock's are) with no lock
 * object, quorum machinery, timer or hold counting. The acquire goes to all
 * five; at the third grant the time is taken and the release goes to all
 * five at once (behind a straggler's acquire on its connection, so it
 * releases that grant too); the next pair starts once all ten replies are
 * in. "raw-lean" does the same with SET NAME OWNER NX PX 30000 and a
 * compare-and-delete script (lk__cmd_argv): what the least server work per
 * master costs, beside the Redisson hash layout's scripts. */

typedef struct lk_side_s lk_side_t;
typedef struct lane_s lane_t;

typedef struct raw_s {
  lane_t *ln;
  int mode; /* RAW_* */
  char name[64], channel[96], owner[MASTERS][96], cdel_sha1[41];
  const char *acq[MASTERS][4], *rel[MASTERS][7], *set[MASTERS][6], *cdel[MASTERS][5];
  size_t acq_len[MASTERS][4], rel_len[MASTERS][7], set_len[MASTERS][6], cdel_len[MASTERS][5];
  int replies, granted, released;
} raw_t;

static const char cdel_text[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

/* ---- impl latchkey / latchkey-single ---- */

/* One loop of pairs; --inflight K runs K lanes at once, each on its own
 * names (a RedLock, a single lock, two raw fan-outs), all on the same five
 * clients. */
struct lane_s {
  lk_side_t *s;
  int idx;
  lk_redlock_t *rl, *rl_lean;
  lk_lock_t *single, *single_lean;
  raw_t raw[NRAW]; /* indexed by RAW_* */
  uint64_t t0;
};

struct lk_side_s {
  uv_loop_t loop;
  lk_client_t *c[MASTERS];
  lk_client_t *single_c;
  lane_t lane[MAX_LANES];
  int nlanes, impl;
  uint64_t *acq_ns; /* NULL during warm-up */
  int pairs, started, done, timed;
  int failed;
};

static void lane_next(lane_t *ln);

/* A pair ended: the lane starts the next while pairs are left to start. */
static void pair_done(lane_t *ln) {
  lk_side_t *s = ln->s;
  s->done++;
  if (s->started < s->pairs && !s->failed)
    lane_next(ln);
}

static void acquired_at(lane_t *ln, uint64_t now) {
  lk_side_t *s = ln->s;
  if (s->acq_ns != NULL && s->timed < s->pairs)
    s->acq_ns[s->timed++] = now - ln->t0;
}

static void raw_on_released(void *data, int status, redisReply *rep) {
  raw_t *r = data;
  (void)rep;
  if (status != 0)
    r->ln->s->failed = status;
  if (++r->released == MASTERS && r->replies == MASTERS)
    pair_done(r->ln);
}

static void raw_on_acquired(void *data, int status, redisReply *rep) {
  raw_t *r = data;
  lk_side_t *s = r->ln->s;
  int granted = status == 0 && rep != NULL &&
                (r->mode == RAW_PLAIN ? rep->type == REDIS_REPLY_STATUS
                         : rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
                               rep->element[0]->type == REDIS_REPLY_INTEGER &&
                               rep->element[0]->integer == 1);
  r->replies++;
  if (granted && ++r->granted == QUORUM) {
    int i, err = 0;
    acquired_at(r->ln, uv_hrtime());
    for (i = 0; i < MASTERS; i++) {
      lk__op_t *op;
      if (r->mode == RAW_PLAIN)
        op = lk__cmd_argv(s->c[i], 5, r->cdel[i], r->cdel_len[i], raw_on_released, r, &err);
      else
        op = lk__script_call(s->c[i],
                             lk__script_find(r->mode == RAW_HASH ? "lock/release"
                                                                 : "lean/release"),
                             2, 5, r->rel[i], r->rel_len[i], raw_on_released, r, &err);
      if (op == NULL)
        s->failed = err ? err : LK_ENOMEM;
    }
  }
  if (r->replies == MASTERS && r->granted < QUORUM)
    s->failed = LK_ENOQUORUM;
  else if (r->replies == MASTERS && r->released == MASTERS)
    pair_done(r->ln);
}

static void raw_start(raw_t *r) {
  lk_side_t *s = r->ln->s;
  int i, err = 0;
  r->replies = r->granted = r->released = 0;
  for (i = 0; i < MASTERS; i++) {
    lk__op_t *op;
    if (r->mode == RAW_PLAIN)
      op = lk__cmd_argv(s->c[i], 6, r->set[i], r->set_len[i], raw_on_acquired, r, &err);
    else
      op = lk__script_call(s->c[i],
                           lk__script_find(r->mode == RAW_HASH ? "lock/acquire"
                                                               : "lean/acquire"),
                           1, 3, r->acq[i], r->acq_len[i], raw_on_acquired, r, &err);
    if (op == NULL)
      s->failed = err ? err : LK_ENOMEM;
  }
}

/* The bytes a RedLock's five lock objects send (owner: each client's id). */
static void raw_open(lane_t *ln, int mode, redisContext *const *hc) {
  static const char *const suffix[NRAW] = {"", "lean", "leanscript"};
  lk_side_t *s = ln->s;
  raw_t *r = &ln->raw[mode];
  char name[64];
  int i, k;
  memset(r, 0, sizeof(*r));
  r->ln = ln;
  r->mode = mode;
  snprintf(name, sizeof(name), "lkbench:rl:%ld:%d:raw%s", (long)getpid(), ln->idx,
           suffix[mode]);
  memcpy(r->name, name, sizeof(name));
  snprintf(r->channel, sizeof(r->channel), "redisson_lock__channel:{%s}", name);
  for (i = 0; i < MASTERS; i++) {
    redisReply *rep = redisCommand(hc[i], "SCRIPT LOAD %s", cdel_text);
    if (rep == NULL || rep->type != REDIS_REPLY_STRING || rep->len != 40)
      die("SCRIPT LOAD %s failed", "compare-and-delete");
    memcpy(r->cdel_sha1, rep->str, 40);
    freeReplyObject(rep);
    snprintf(r->owner[i], sizeof(r->owner[i]), "%s:%d", lk_client_id(s->c[i]), ln->idx + 1);
    r->acq[i][0] = r->name, r->acq[i][1] = "30000", r->acq[i][2] = r->owner[i];
    r->acq[i][3] = "0";
    r->rel[i][0] = r->name, r->rel[i][1] = r->channel, r->rel[i][2] = "30000";
    r->rel[i][3] = r->owner[i], r->rel[i][4] = "PUBLISH", r->rel[i][5] = "-1";
    r->rel[i][6] = "1";
    r->set[i][0] = "SET", r->set[i][1] = r->name, r->set[i][2] = r->owner[i];
    r->set[i][3] = "NX", r->set[i][4] = "PX", r->set[i][5] = "30000";
    r->cdel[i][0] = "EVALSHA", r->cdel[i][1] = r->cdel_sha1, r->cdel[i][2] = "1";
    r->cdel[i][3] = r->name, r->cdel[i][4] = r->owner[i];
    for (k = 0; k < 4; k++)
      r->acq_len[i][k] = strlen(r->acq[i][k]);
    for (k = 0; k < 7; k++)
      r->rel_len[i][k] = strlen(r->rel[i][k]);
    for (k = 0; k < 6; k++)
      r->set_len[i][k] = strlen(r->set[i][k]);
    for (k = 0; k < 5; k++)
      r->cdel_len[i][k] = strlen(r->cdel[i][k]);
  }
}

static void on_rl_released(lk_redlock_t *rl, int status, void *arg) {
  lane_t *ln = arg;
  (void)rl;
  if (status != 0)
    ln->s->failed = status;
  pair_done(ln);
}

static void on_rl_acquired(lk_redlock_t *rl, int status, void *arg) {
  lane_t *ln = arg;
  uint64_t now = uv_hrtime();
  if (status != 0) {
    size_t i;
    for (i = 0; i < lk_redlock_size(rl); i++)
      fprintf(stderr, "# master %zu: %s\n", i, lk_err_name(lk_redlock_node_status(rl, i)));
    ln->s->failed = status;
    return;
  }
  acquired_at(ln, now);
  if (lk_redlock_release(rl, on_rl_released, ln) != 0)
    ln->s->failed = LK_EINVAL;
}

static void on_single_released(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  (void)l;
  if (status != 0)
    ln->s->failed = status;
  pair_done(ln);
}

static void on_single_acquired(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  uint64_t now = uv_hrtime();
  if (status != 0) {
    ln->s->failed = status;
    return;
  }
  acquired_at(ln, now);
  if (lk_lock_release(l, on_single_released, ln) != 0)
    ln->s->failed = LK_EINVAL;
}

static void lane_next(lane_t *ln) {
  lk_side_t *s = ln->s;
  s->started++;
  ln->t0 = uv_hrtime();
  if (s->impl == IMPL_RAW || s->impl == IMPL_RAW_LEAN || s->impl == IMPL_RAW_LEAN_SCRIPT) {
    raw_start(&ln->raw[s->impl == IMPL_RAW        ? RAW_HASH
                       : s->impl == IMPL_RAW_LEAN ? RAW_PLAIN
                                                  : RAW_LEAN_SCRIPT]);
  } else if (s->impl == IMPL_LATCHKEY || s->impl == IMPL_LEAN) {
    lk_redlock_opts_t o;
    lk_redlock_opts_init(&o);
    o.lease_ms = 30000;
    if (lk_redlock_acquire(s->impl == IMPL_LEAN ? ln->rl_lean : ln->rl, &o, on_rl_acquired,
                           ln) != 0)
      s->failed = LK_EINVAL;
  } else {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.lease_ms = 30000;
    if (lk_lock_acquire(s->impl == IMPL_LEAN_SINGLE ? ln->single_lean : ln->single, &o,
                        on_single_acquired, ln) != 0)
      s->failed = LK_EINVAL;
  }
}

/* impl: IMPL_*; pairs over all lanes; acq_ns gets the first `pairs`
 * acquire times in the order they complete. */
static void lk_run(lk_side_t *s, int impl, int pairs, uint64_t *acq_ns) {
  int i;
  s->acq_ns = acq_ns;
  s->pairs = pairs;
  s->impl = impl;
  s->started = s->done = s->timed = 0;
  s->failed = 0;
  for (i = 0; i < s->nlanes && s->started < pairs; i++)
    lane_next(&s->lane[i]);
  while (s->done < s->started && !s->failed)
    uv_run(&s->loop, UV_RUN_ONCE);
  if (s->failed)
    die("latchkey pair failed: %s", lk_err_name(s->failed));
}

static void lk_open(lk_side_t *s, const args_t *a, redisContext *const *hc) {
  char name[64];
  int i, rc;
  memset(s, 0, sizeof(*s));
  if (uv_loop_init(&s->loop) != 0)
    die("%s", "uv_loop_init");
  for (i = 0; i < MASTERS + 1; i++) {
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    o.host = a->host;
    o.port = a->ports[i < MASTERS ? i : 0];
    o.busy_poll_us = a->busy_poll_us;
    rc = lk_client_new(&s->loop, &o, i < MASTERS ? &s->c[i] : &s->single_c);
    if (rc != 0)
      die("lk_client_new: %s", lk_err_name(rc));
  }
  s->nlanes = a->inflight;
  for (i = 0; i < s->nlanes; i++) {
    lane_t *ln = &s->lane[i];
    ln->s = s;
    ln->idx = i;
    snprintf(name, sizeof(name), "lkbench:rl:%ld:%d:latchkey", (long)getpid(), i);
    rc = lk_redlock_new(s->c, MASTERS, name, NULL, &ln->rl);
    if (rc != 0)
      die("lk_redlock_new: %s", lk_err_name(rc));
    snprintf(name, sizeof(name), "lkbench:rl:%ld:%d:single", (long)getpid(), i);
    rc = lk_lock_new(s->single_c, name, &ln->single);
    if (rc != 0)
      die("lk_lock_new: %s", lk_err_name(rc));
    {
      lk_redlock_config_t cfg;
      lk_redlock_config_init(&cfg);
      cfg.layout = LK_REDLOCK_LAYOUT_LEAN;
      snprintf(name, sizeof(name), "lkbench:rl:%ld:%d:lean", (long)getpid(), i);
      rc = lk_redlock_new(s->c, MASTERS, name, &cfg, &ln->rl_lean);
      if (rc != 0)
        die("lk_redlock_new (lean): %s", lk_err_name(rc));
      snprintf(name, sizeof(name), "lkbench:rl:%ld:%d:leansingle", (long)getpid(), i);
      rc = lk_lock_new(s->single_c, name, &ln->single_lean);
      if (rc != 0)
        die("lk_lock_new: %s", lk_err_name(rc));
      lk__lock_set_lean(ln->single_lean, 1);
    }
    raw_open(ln, RAW_HASH, hc);
    raw_open(ln, RAW_PLAIN, hc);
    raw_open(ln, RAW_LEAN_SCRIPT, hc);
  }
}

static uint64_t lk_commands(const lk_side_t *s, int redlock) {
  lk_client_stats_t st;
  uint64_t n = 0;
  int i;
  if (!redlock) {
    lk_client_get_stats(s->single_c, &st);
    return st.commands_sent;
  }
  for (i = 0; i < MASTERS; i++) {
    lk_client_get_stats(s->c[i], &st);
    n += st.commands_sent;
  }
  return n;
}

static int closing_left;

static void on_rl_closed(lk_redlock_t *rl) {
  (void)rl;
  closing_left--;
}
static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  closing_left--;
}
static void on_client_closed(lk_client_t *c) {
  (void)c;
  closing_left--;
}

/* Runs the loop until every close callback came (bounded: 10 s). */
static void run_until_closed(lk_side_t *s) {
  uint64_t end = uv_hrtime() + 10000000000ull;
  while (closing_left > 0 && uv_hrtime() < end)
    uv_run(&s->loop, UV_RUN_ONCE);
}

static void lk_close(lk_side_t *s) {
  int i;
  closing_left = 4 * s->nlanes;
  for (i = 0; i < s->nlanes; i++) {
    lk_redlock_close(s->lane[i].rl, on_rl_closed);
    lk_redlock_close(s->lane[i].rl_lean, on_rl_closed);
    lk_lock_close(s->lane[i].single, on_lock_closed);
    lk_lock_close(s->lane[i].single_lean, on_lock_closed);
  }
  run_until_closed(s);
  closing_left = MASTERS + 1;
  for (i = 0; i < MASTERS; i++)
    lk_client_close(s->c[i], on_client_closed);
  lk_client_close(s->single_c, on_client_closed);
  run_until_closed(s);
  uv_loop_close(&s->loop);
}

/* ---- main ---- */

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: multilock_redlock (--ports P1,..,P5 | --spawn [--no-pin]) "
                  "[--host H] [--port P] [--pairs N] [--warmup W] [--rounds R]\n"
                  "       [--inflight K] [--busy-poll-us N] [--only raw|latchkey|latchkey-single|raw-lean|\n"
                  "        raw-lean-script|latchkey-lean|latchkey-lean-single]\n");
  exit(2);
}

static void parse_args(int argc, char **argv, args_t *a) {
  int i, dummy;
  memset(a, 0, sizeof(*a));
  a->host = "127.0.0.1";
  a->pairs = 3000;
  a->warmup = 300;
  a->rounds = 3;
  a->pin = 1;
  a->only = -1;
  a->inflight = 1;
  for (i = 1; i < argc; i++) {
    const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--ports") == 0 && v != NULL) {
      char *copy = strdup(v), *tok, *save = NULL;
      int k = 0;
      for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
        if (k >= MASTERS || parse_int(tok, 1, 65535, &a->ports[k++]) != 0)
          usage();
      free(copy);
      if (k != MASTERS)
        usage();
      a->have_ports = 1;
      i++;
    } else if (strcmp(s, "--host") == 0 && v != NULL) {
      a->host = v, i++;
    } else if (strcmp(s, "--port") == 0 && v != NULL) {
      if (parse_int(v, 1, 65535, &dummy) != 0)
        usage();
      i++; /* the suite runner passes it; the masters come from --ports */
    } else if (strcmp(s, "--pairs") == 0 && v != NULL) {
      if (parse_int(v, 1, 10000000, &a->pairs) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--warmup") == 0 && v != NULL) {
      if (parse_int(v, 0, 10000000, &a->warmup) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--rounds") == 0 && v != NULL) {
      if (parse_int(v, 1, MAX_ROUNDS, &a->rounds) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--inflight") == 0 && v != NULL) {
      if (parse_int(v, 1, MAX_LANES, &a->inflight) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--busy-poll-us") == 0 && v != NULL) {
      if (parse_int(v, 0, 1000000, &a->busy_poll_us) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--only") == 0 && v != NULL) {
      int k;
      for (k = 0; k < NIMPL && strcmp(v, impl_name[k]) != 0; k++)
        ;
      if (k == NIMPL)
        usage();
      a->only = k;
      i++;
    } else if (strcmp(s, "--spawn") == 0) {
      a->spawn = 1;
    } else if (strcmp(s, "--no-pin") == 0) {
      a->pin = 0;
    } else {
      usage();
    }
  }
  if (!a->have_ports && !a->spawn)
    usage();
}

static void json(const char *impl, const char *metric, double v, const char *unit,
                 double limit, const char *limit_impl, const args_t *a) {
  printf("{\"bench\":\"redlock_acquire\",\"impl\":\"%s\",\"metric\":\"%s\",\"value\":%.3f,"
         "\"unit\":\"%s\"",
         impl, metric, v, unit);
  if (limit > 0)
    printf(",\"limit\":%.3f,\"limit_impl\":\"%s\",\"ratio\":%.3f", limit, limit_impl, v / limit);
  printf(",\"masters\":%d,\"quorum\":%d,\"pairs\":%d,\"rounds\":%d,\"inflight\":%d}\n",
         MASTERS, QUORUM, a->pairs, a->rounds, a->inflight);
}

int main(int argc, char **argv) {
  args_t a;
  lk_side_t *lk;
  redisContext *hc[MASTERS];
  uint64_t *samples;
  /* per impl and round: acquire p50/p99, pairs/s, the masters' us and the
   * commands sent per pair */
  double p50[NIMPL][MAX_ROUNDS], p99[NIMPL][MAX_ROUNDS], pps[NIMPL][MAX_ROUNDS];
  double srv[NIMPL][MAX_ROUNDS], cmd[NIMPL][MAX_ROUNDS], cpu[NIMPL][MAX_ROUNDS];
  double alc[NIMPL][MAX_ROUNDS], scpu[NIMPL][MAX_ROUNDS];
  double m50[NIMPL], m99[NIMPL], mpps[NIMPL], msrv[NIMPL], mcmd[NIMPL], mcpu[NIMPL];
  double malc[NIMPL], mscpu[NIMPL];
  int r, i;

  parse_args(argc, argv, &a);
  if (lk_replace_allocator(count_malloc, count_realloc, count_calloc, free) != 0)
    die("%s", "lk_replace_allocator failed");
  atexit(stop_spawned);
  if (a.spawn) {
    spawn_masters(&a);
    if (a.pin) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(1, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0)
        fprintf(stderr, "# could not pin to CPU 1: running unpinned\n");
    }
  }
  fprintf(stderr, "# masters 127.0.0.1:%d,%d,%d,%d,%d; %s\n", a.ports[0], a.ports[1],
          a.ports[2], a.ports[3], a.ports[4],
          a.spawn ? (a.pin ? "spawned, pinned to CPU 0, client on CPU 1"
                           : "spawned, unpinned")
                  : "placement as given by the caller");
  samples = malloc(sizeof(*samples) * (size_t)a.pairs);
  lk = calloc(1, sizeof(*lk));
  if (samples == NULL || lk == NULL)
    die("%s", "out of memory");
  for (i = 0; i < MASTERS; i++) {
    hc[i] = connect_to(a.host, a.ports[i]);
    if (hc[i] == NULL)
      die("cannot connect to master %s", "for INFO");
  }
  lk_open(lk, &a, hc);
  /* Warm-up: connections, script caches, allocator pools. */
  for (i = 0; i < NIMPL; i++)
    if (a.only < 0 || a.only == i)
      lk_run(lk, i, a.warmup, NULL);

  for (r = 0; r < a.rounds; r++) {
    int k;
    for (k = 0; k < NIMPL; k++) {
      int which = (r % 2) ? NIMPL - 1 - k : k; /* alternate the order */
      double s0, sc0;
      uint64_t c0, u0, w0, a0;
      if (a.only >= 0 && which != a.only) {
        p50[which][r] = p99[which][r] = pps[which][r] = srv[which][r] = cmd[which][r] = 0;
        cpu[which][r] = alc[which][r] = scpu[which][r] = 0;
        continue;
      }
      s0 = server_usec(hc, 0), sc0 = server_usec(hc, 1);
      c0 = lk_commands(lk, fans_out(which)), u0 = cpu_ns(), w0 = uv_hrtime();
      a0 = lk_allocs;
      lk_run(lk, which, a.pairs, samples);
      alc[which][r] = (double)(lk_allocs - a0) / a.pairs;
      cpu[which][r] = (double)(cpu_ns() - u0) / 1000.0 / a.pairs;
      pps[which][r] = a.pairs / ((double)(uv_hrtime() - w0) / 1e9);
      srv[which][r] = (server_usec(hc, 0) - s0) / a.pairs;
      scpu[which][r] = (server_usec(hc, 1) - sc0) / a.pairs;
      cmd[which][r] = (double)(lk_commands(lk, fans_out(which)) - c0) / a.pairs;
      p50[which][r] = pct_us(samples, (size_t)a.pairs, 0.50);
      p99[which][r] = pct_us(samples, (size_t)a.pairs, 0.99);
    }
    fprintf(stderr, "# round %d:", r + 1);
    for (i = 0; i < NIMPL; i++)
      fprintf(stderr, " %s p50 %.1f p99 %.1f us %.0f pairs/s;", impl_name[i], p50[i][r],
              p99[i][r], pps[i][r]);
    fputc('\n', stderr);
  }
  for (i = 0; i < NIMPL; i++) {
    m50[i] = median(p50[i], a.rounds), m99[i] = median(p99[i], a.rounds);
    mpps[i] = median(pps[i], a.rounds), msrv[i] = median(srv[i], a.rounds);
    mcmd[i] = median(cmd[i], a.rounds), mcpu[i] = median(cpu[i], a.rounds);
    malc[i] = median(alc[i], a.rounds), mscpu[i] = median(scpu[i], a.rounds);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 0; i < NIMPL; i++) {
    /* its limit */
    int vs = a.only >= 0 ? -1 : i == IMPL_LATCHKEY ? IMPL_RAW : i == IMPL_LEAN ? IMPL_RAW_LEAN_SCRIPT : -1;
    if (a.only >= 0 && i != a.only)
      continue;
    const char *ln = vs >= 0 ? impl_name[vs] : NULL;
    json(impl_name[i], "acq_p50_us", m50[i], "us", vs >= 0 ? m50[vs] : 0, ln, &a);
    json(impl_name[i], "acq_p99_us", m99[i], "us", vs >= 0 ? m99[vs] : 0, ln, &a);
    json(impl_name[i], "pairs_per_s", mpps[i], "pairs/s", vs >= 0 ? mpps[vs] : 0, ln, &a);
    json(impl_name[i], "server_us_per_pair", msrv[i], "us", vs >= 0 ? msrv[vs] : 0, ln, &a);
    json(impl_name[i], "server_cpu_us_per_pair", mscpu[i], "us", vs >= 0 ? mscpu[vs] : 0, ln,
         &a);
    json(impl_name[i], "cpu_us_per_pair", mcpu[i], "us", vs >= 0 ? mcpu[vs] : 0, ln, &a);
    json(impl_name[i], "lk_allocs_per_pair", malc[i], "allocations", 0, NULL, &a);
    json(impl_name[i], "commands_per_pair", mcmd[i], "commands",
         fans_out(i) ? 2.0 * MASTERS : 2.0, "ideal", &a);
  }
  if (a.only >= 0)
    goto done; /* a diagnostic run (strace, perf): no ratios */
  json("latchkey", "p50_vs_single_master", m50[IMPL_LATCHKEY] / m50[IMPL_SINGLE], "x", 0, NULL,
       &a);
  json("latchkey-lean", "p50_vs_single_master", m50[IMPL_LEAN] / m50[IMPL_LEAN_SINGLE], "x", 0,
       NULL, &a);
  /* The fan-out floors' own ratios: the bare fan-outs over one master in the
   * library (a raw single master would be a little faster still). */
  json("raw-lean", "p50_vs_single_master", m50[IMPL_RAW_LEAN] / m50[IMPL_LEAN_SINGLE], "x", 0,
       NULL, &a);
  json("raw-lean-script", "p50_vs_single_master",
       m50[IMPL_RAW_LEAN_SCRIPT] / m50[IMPL_LEAN_SINGLE], "x", 0, NULL, &a);
  printf("\n| RedLock, 5 masters, pairs in a row | acquire p50 us | p99 us | pairs/s | "
         "masters' CPU us per pair | masters' us in commands per pair | client CPU us per "
         "pair | commands per pair | latchkey allocations per pair |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  for (i = 0; i < NIMPL; i++)
    printf("| %s | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %.2f | %.2f |\n", impl_name[i],
           m50[i], m99[i], mpps[i], mscpu[i], msrv[i], mcpu[i], mcmd[i], malc[i]);
  printf("\nRedLock p50 = %.2fx the raw fan-out, %.2fx one master; pairs/s %.2fx the raw "
         "fan-out's.\n",
         m50[IMPL_LATCHKEY] / m50[IMPL_RAW], m50[IMPL_LATCHKEY] / m50[IMPL_SINGLE],
         mpps[IMPL_LATCHKEY] / mpps[IMPL_RAW]);
  printf("Lean RedLock p50 = %.2fx the raw fan-out of its scripts, %.2fx one lean master (that "
         "fan-out: %.2fx; raw-lean's: %.2fx); pairs/s %.2fx that fan-out's, %.2fx raw-lean's, "
         "%.2fx the hash layout's.\n",
         m50[IMPL_LEAN] / m50[IMPL_RAW_LEAN_SCRIPT], m50[IMPL_LEAN] / m50[IMPL_LEAN_SINGLE],
         m50[IMPL_RAW_LEAN_SCRIPT] / m50[IMPL_LEAN_SINGLE],
         m50[IMPL_RAW_LEAN] / m50[IMPL_LEAN_SINGLE], mpps[IMPL_LEAN] / mpps[IMPL_RAW_LEAN_SCRIPT],
         mpps[IMPL_LEAN] / mpps[IMPL_RAW_LEAN], mpps[IMPL_LEAN] / mpps[IMPL_LATCHKEY]);
done:
  free(samples);
  lk_close(lk);
  free(lk);
  for (i = 0; i < MASTERS; i++)
    redisFree(hc[i]);
  stop_spawned();
  return 0;
}
