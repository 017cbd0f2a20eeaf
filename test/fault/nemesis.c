/* A bounded, seeded nemesis (Jepsen-style, made short enough for CI;
 * docs/reliability.md, "How it is tested"): worker processes use every registered workload
 * (one file each under test/fault/workloads/) through a fault proxy while the nemesis, from a
 * seeded schedule, pauses and restarts the server (AOF, appendfsync always:
 * the conditions under which S1 must hold), resets connections, cuts them
 * off (a blackhole ended by a reset, or a partition that heals and delivers
 * late), delays bytes, drops replies, kills pub/sub and command
 * connections, flushes the script cache, pauses clients and stops workers.
 * At the end every fault is healed, the workers close cleanly, and each
 * workload's checkers run on the merged history.
 *
 * nemesis_empty_restarts runs the workloads that survive it (wipe_ok: the
 * lock-like ones) with two more faults: a restart without persistence (the
 * server is killed and its AOF removed, so it comes back empty at once: a
 * wipe, history.h), and a delayed one (down for longer than any lease,
 * then empty). Fencing tokens must strictly increase across both, over every
 * grant of every process; exclusion is checked across delayed restarts and
 * up to each wipe. The default run never picks these faults, so a seed
 * replays the same schedule as before they existed.
 *
 *   LK_NEMESIS_SEED=N       replay the schedule of a printed seed
 *   LK_NEMESIS_SECONDS=S    run length (default 40; the test adds about 15)
 *   LK_NEMESIS_WORKERS=W    worker processes (default 4)
 *   LK_NEMESIS_WORKLOADS=a,b  only these workloads (default: all)
 *
 * nemesis_cluster runs the workloads that name their key (nemesis.h) on a
 * private 3-master + 3-replica Redis Cluster (test/harness/redis_cluster.h;
 * LK_REDIS_SERVER=valkey-server for Valkey), the workers seeded at one
 * master with no proxy in between, and its own faults aimed at the masters
 * that own the workloads' slots: a coordinated CLUSTER FAILOVER (the
 * replica catches up first, so no hold may be lost), a slot migration in
 * steps with pauses in the ASK window (keys moved all at once or one by
 * one, so scripts meet ASK and TRYAGAIN), a master paused (SIGSTOP) for
 * less than the node timeout, and one paused for longer (its replica is
 * elected meanwhile, and it wakes up a stale master); worker stops as
 * before. The checkers are
 * the same. Not in it: kill -9 of a master and failovers that do not wait
 * for the replica (FORCE, TAKEOVER), under which a hold the replica never
 * received is lost and a second holder is admitted until the watchdog's
 * verification reports the loss (test/cluster/cluster_failover.c bounds
 * that window; the exclusion checker here admits none).
 *
 * The schedule (fault kinds, order, durations, targets) is a function of the
 * seed; what the workers do in between depends on timing, as in any run. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nemesis.h"
#include "proxy.h"
#include "redis_cluster.h"
#include "server_faults.h"
#include "stall.h"
#include "test.h"
#include "workers.h"

#define MAX_WORKERS 16
#define MAX_WORKLOADS 16
#define WORKER_EXIT_FINDINGS 4

/* ---- registry ----------------------------------------------------------------------------- */

static nem_workload_t *registry;

void nem_register(nem_workload_t *w) {
  nem_workload_t **pp = &registry;
  while (*pp != NULL)
    pp = &(*pp)->next;
  w->next = NULL;
  *pp = w;
}

/* ---- run parameters (set in the parent before forking) --------------------------------------- */

typedef struct run_s {
  uint64_t seed;
  int workers;
  int64_t seconds;
  int64_t lease_ms;
  int64_t reply_timeout_ms;
  uint64_t end_ns; /* workers stop starting operations then */
  int proxy_port;
  char dir[512];
  nem_workload_t *wl[MAX_WORKLOADS];
  int n_wl;
  int wipes; /* 1: the nemesis_empty_restarts run */
  int cluster; /* 1: nemesis_cluster; the workers dial seed_port */
  int seed_port;
} run_t;

static run_t RUN;

int64_t nem_lease_ms(void) { return RUN.lease_ms; }
int nem_cluster(void) { return RUN.cluster; }
int64_t nem_reply_timeout_ms(void) { return RUN.reply_timeout_ms; }

static int64_t env_int(const char *name, int64_t def, int64_t lo, int64_t hi) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return def;
  char *end = NULL;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi)
    FAIL("%s=\"%s\": want an integer in %" PRId64 "..%" PRId64, name, v, lo, hi);
  return n;
}

/* ---- worker side --------------------------------------------------------------------------- */

typedef struct stat_s {
  char what[48];
  int status;
  long long count;
} stat_t;

static stat_t wstats[128];
static int n_wstats;
static int log_errors;

uint64_t nem_rand(nem_ctx_t *ctx) { return rt_xorshift(&ctx->rng); }

int64_t nem_between(nem_ctx_t *ctx, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  return lo + (int64_t)(nem_rand(ctx) % (uint64_t)(hi - lo + 1));
}

void nem_record(nem_ctx_t *ctx, uint16_t op, uint16_t obj, uint64_t start_ns, uint64_t end_ns,
                int64_t token, int64_t extra) {
  rt_rec_t r;
  memset(&r, 0, sizeof r);
  r.proc = (uint32_t)ctx->proc;
  r.op = op;
  r.obj = obj;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.token = token;
  r.extra = extra;
  if (rt_recs_append(ctx->hist, &r) != 0) {
    fprintf(stderr, "nemesis worker %d: writing the history: %s\n", ctx->proc, strerror(errno));
    _exit(3);
  }
  ctx->records++;
}

void nem_status(nem_ctx_t *ctx, const char *what, int status, const int *expected) {
  int ok = status == 0;
  for (int i = 0; !ok && expected != NULL && expected[i] != 0; i++)
    ok = expected[i] == status;
  /* On a cluster a script in a slot being migrated may meet TRYAGAIN (a
   * release always does: it names its channel, never a key), which the
   * router retries for the reply timeout only; a longer migration window
   * ends the call with LK_ECLUSTER, the script not run. Counted below. */
  if (RUN.cluster && status == LK_ECLUSTER)
    ok = 1;
  if (!ok) {
    if (ctx->unexpected++ < 10)
      fprintf(stderr, "nemesis worker %d: %s: unexpected status %s\n", ctx->proc, what,
              lk_err_name(status));
  }
  for (int i = 0; i < n_wstats; i++) {
    if (wstats[i].status == status && strcmp(wstats[i].what, what) == 0) {
      wstats[i].count++;
      return;
    }
  }
  if (n_wstats < (int)(sizeof wstats / sizeof wstats[0])) {
    snprintf(wstats[n_wstats].what, sizeof wstats[n_wstats].what, "%s", what);
    wstats[n_wstats].status = status;
    wstats[n_wstats].count = 1;
    n_wstats++;
  }
}

static nem_ctx_t CTX;
static void *wl_state[MAX_WORKLOADS];
static uv_timer_t end_timer;

static void on_client_closed(lk_client_t *c) { (void)c; }

void nem_workload_closed(nem_ctx_t *ctx) {
  if (--ctx->open_workloads > 0)
    return;
  int rc = lk_client_close(ctx->client, on_client_closed);
  if (rc != 0) {
    fprintf(stderr, "nemesis worker %d: lk_client_close: %s\n", ctx->proc, lk_err_name(rc));
    _exit(3);
  }
}

static void on_end(uv_timer_t *t) {
  uv_close((uv_handle_t *)t, NULL);
  CTX.stopping = 1;
  for (int i = 0; i < RUN.n_wl; i++)
    if (wl_state[i] != NULL)
      RUN.wl[i]->stop(wl_state[i]);
}

/* A loop that does not run cannot tell a holder of its loss in time, just
 * like a stopped process. On a loaded machine a worker pinned to a busy CPU
 * can be starved for hundreds of milliseconds, so each worker beats every
 * STALL_BEAT_MS and records a gap longer than STALL_GAP_MS (the lease's
 * drift allowance, about 10 ms, is all a late loop may eat) as a stall,
 * which the checkers treat as a stop (rt_proc_paused). */
#define STALL_BEAT_MS 2
#define STALL_GAP_MS 8
static uv_timer_t stall_timer;
static uint64_t last_beat_ns;

static void on_stall_beat(uv_timer_t *t) {
  uint64_t now = uv_hrtime();
  (void)t;
  if (last_beat_ns != 0 && now - last_beat_ns > (uint64_t)STALL_GAP_MS * 1000000u)
    nem_record(&CTX, RT_OP_STALLED, 0, last_beat_ns, now, 0, 0);
  last_beat_ns = now;
}

static void worker_log(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level >= LK_LOG_ERROR && log_errors++ < 3)
    fprintf(stderr, "nemesis worker %d: latchkey error: %s\n", CTX.proc, msg);
}

static const char *handle_kind(uv_handle_type t) {
  switch (t) {
  case UV_TIMER: return "timer";
  case UV_TCP: return "tcp";
  case UV_NAMED_PIPE: return "pipe";
  case UV_IDLE: return "idle";
  case UV_SIGNAL: return "signal";
  default: return "other";
  }
}

static void print_handle(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_active(h) && !uv_is_closing(h))
    return;
  fprintf(stdout, "  handle %p: %s %s%s", (void *)h, handle_kind(h->type),
          uv_is_closing(h) ? "closing" : "active", uv_has_ref(h) ? "" : " (unref)");
  if (h->type == UV_TIMER && uv_is_active(h))
    fprintf(stdout, ", due in %lld ms",
            (long long)uv_timer_get_due_in((uv_timer_t *)h));
  fputc('\n', stdout);
}

/* The parent asks a worker that does not finish what it still waits for,
 * before it kills it: each workload's state and the loop's live handles. */
static void on_stuck_report(uv_signal_t *s, int signum) {
  (void)signum;
  printf("nemesis worker %d stuck report (stopping %d, open workloads %d):\n", CTX.proc,
         CTX.stopping, CTX.open_workloads);
  for (int i = 0; i < RUN.n_wl; i++)
    if (wl_state[i] != NULL && RUN.wl[i]->dump != NULL)
      RUN.wl[i]->dump(wl_state[i], stdout);
  uv_walk(s->loop, print_handle, NULL);
  fflush(stdout);
}

static void worker_main(int index, void *arg) {
  (void)arg;
  char path[600];
  memset(&CTX, 0, sizeof CTX);
  CTX.proc = index;
  CTX.rng = RUN.seed * 0x9e3779b97f4a7c15u + (uint64_t)index * 7919u + 1;
  CTX.lease_ms = RUN.lease_ms;
  CTX.reply_timeout_ms = RUN.reply_timeout_ms;
  snprintf(path, sizeof path, "%s/nem-%d.bin", RUN.dir, index);
  CTX.hist = rt_recs_create(path);
  if (CTX.hist == NULL) {
    fprintf(stderr, "nemesis worker %d: %s: %s\n", index, path, strerror(errno));
    _exit(3);
  }
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0)
    _exit(3);
  CTX.loop = &loop;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.port = RUN.cluster ? RUN.seed_port : RUN.proxy_port;
  if (RUN.cluster)
    o.cluster = LK_CLUSTER_ON;
  o.default_lease_ms = RUN.lease_ms;
  o.reply_timeout_ms = RUN.reply_timeout_ms;
  o.connect_timeout_ms = RUN.reply_timeout_ms;
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 200;
  o.max_repoll_ms = 200;
  o.heartbeat_ms = 200;
  o.log = worker_log;
  int rc = lk_client_new(&loop, &o, &CTX.client);
  if (rc != 0) {
    fprintf(stderr, "nemesis worker %d: lk_client_new: %s\n", index, lk_err_name(rc));
    _exit(3);
  }
  for (int i = 0; i < RUN.n_wl; i++) {
    wl_state[i] = RUN.wl[i]->start(&CTX, (uint16_t)i);
    if (wl_state[i] == NULL) {
      fprintf(stderr, "nemesis worker %d: workload %s did not start\n", index, RUN.wl[i]->name);
      _exit(3);
    }
    CTX.open_workloads++;
  }
  uv_signal_t report;
  uv_signal_init(&loop, &report);
  uv_signal_start(&report, on_stuck_report, SIGUSR1);
  uv_unref((uv_handle_t *)&report); /* must not keep the loop alive */
  uv_timer_init(&loop, &stall_timer);
  last_beat_ns = 0;
  uv_timer_start(&stall_timer, on_stall_beat, 0, STALL_BEAT_MS);
  uv_unref((uv_handle_t *)&stall_timer); /* nor this one */
  uv_timer_init(&loop, &end_timer);
  uint64_t now = uv_hrtime();
  uv_timer_start(&end_timer, on_end,
                 RUN.end_ns > now ? (RUN.end_ns - now) / 1000000u : 0, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&report, NULL);
  uv_close((uv_handle_t *)&stall_timer, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&loop);
  if (rc != 0) {
    fprintf(stderr, "nemesis worker %d: uv_loop_close: %s\n", index, uv_strerror(rc));
    _exit(3);
  }
  if (rt_recs_finish(CTX.hist) != 0)
    _exit(3);
  char line[2048];
  size_t len = (size_t)snprintf(line, sizeof line, "nemesis worker %d (cpu pinned): %lld records;",
                                index, CTX.records);
  for (int i = 0; i < n_wstats && len < sizeof line - 64; i++)
    len += (size_t)snprintf(line + len, sizeof line - len, " %s %s x%lld%s", wstats[i].what,
                            wstats[i].status ? lk_err_name(wstats[i].status) : "ok",
                            wstats[i].count, i + 1 < n_wstats ? "," : "");
  printf("%s\n", line);
  fflush(NULL);
  /* _exit, not exit: this process was forked while the parent's proxy
   * thread was moving bytes, and inherits its buffers without the thread
   * that points at them, which LeakSanitizer would report as the worker's
   * leaks. The library's own memory is checked by every other test. */
  _exit(CTX.unexpected ? WORKER_EXIT_FINDINGS : 0);
}

/* ---- parent-side checks ------------------------------------------------------------------------- */

/* What the kernel says of a worker that did not answer its stuck report
 * (a loop that never runs again: stopped, or blocked in a lock), and its
 * threads' stacks when gdb is installed. Diagnostics only. */
static void describe_stuck(int index, pid_t pid) {
  char path[64], buf[512], cmd[160];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    if (fgets(buf, sizeof buf, f) != NULL)
      printf("nemesis worker %d (pid %d) stat: %s", index, (int)pid, buf);
    fclose(f);
  }
  snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
  f = fopen(path, "r");
  if (f != NULL) {
    if (fgets(buf, sizeof buf, f) != NULL)
      printf("nemesis worker %d wchan: %s\n", index, buf);
    fclose(f);
  }
  fflush(stdout);
  snprintf(cmd, sizeof cmd,
           "command -v gdb >/dev/null && timeout 30 gdb -p %d -batch -nx "
           "-ex 'thread apply all bt' 2>/dev/null </dev/null",
           (int)pid);
  if (system(cmd) == -1)
    printf("nemesis worker %d: no stack (system failed)\n", index);
}

size_t nem_report(const rt_check_t *c, const char *workload) {
  printf("nemesis: %s: ", workload);
  rt_check_print(stdout, c);
  return c->violations;
}

void nem_check_bounded(const rt_recs_t *h, uint16_t obj, int64_t reply_timeout_ms,
                       int64_t slack_ms, rt_check_t *out) {
  memset(out, 0, sizeof *out);
  out->name = "bounded waits";
  int64_t worst = 0;
  for (size_t i = 0; i < h->n; i++) {
    const rt_rec_t *r = &h->v[i];
    if (r->obj != obj || r->op != RT_OP_CALL || r->extra < 0)
      continue;
    out->checked++;
    int64_t took = (int64_t)(r->end_ns - r->start_ns) / 1000000;
    int64_t over = took - r->extra - reply_timeout_ms;
    if (over <= 0)
      continue;
    if (rt_proc_paused(h, r->proc, r->start_ns, r->end_ns))
      continue;
    /* A liveness bound: a call the machine starved (its worker or the
     * server sat on a run queue) may overrun by the stall (stall.h). */
    int64_t stalled = rt_stall_longest_between((int64_t)(r->start_ns / 1000000u),
                                               (int64_t)(r->end_ns / 1000000u));
    over -= stalled;
    if (over <= 0)
      continue;
    if (over > worst)
      worst = over;
    if (over > rt_scaled_ms(slack_ms)) {
      if (out->violations++ == 0)
        out->first_b = *r;
    }
  }
  out->max_seen = worst;
  snprintf(out->detail, sizeof out->detail,
           "worst overrun past wait + reply timeout and measured stalls: %" PRId64
           " ms (allowed %" PRId64 ")", worst,
           rt_scaled_ms(slack_ms));
}

/* ---- the nemesis (parent) --------------------------------------------------------------------- */

enum {
  F_SERVER_PAUSE,
  F_SERVER_PAUSE_LONG,
  F_PROXY_RESET,
  F_BLACKHOLE,
  F_PARTITION,
  F_DELAY,
  F_RESTART_AOF,
  F_KILL_PUBSUB,
  F_KILL_NORMAL,
  F_SCRIPT_FLUSH,
  F_CLIENT_PAUSE,
  F_WORKER_STOP,
  F_DROP_REPLY,
  F_RESTART_EMPTY,
  F_RESTART_EMPTY_DELAYED,
  F_QUIET,
  F_CL_FAILOVER,
  F_CL_MIGRATE,
  F_CL_MASTER_PAUSE,
  F_CL_MASTER_PAUSE_LONG,
  F_COUNT
};

/* weight: in the default run; weight_wipes: in nemesis_empty_restarts;
 * weight_cluster: in nemesis_cluster (a weight of 0 never draws, so adding
 * a kind leaves the other runs' schedules as they were). */
static const struct {
  const char *name;
  int weight, weight_wipes, weight_cluster;
} faults[F_COUNT] = {
    {"server-pause", 3, 3, 0},     {"server-pause-long", 1, 1, 0},
    {"proxy-reset", 3, 3, 0},      {"blackhole", 2, 2, 0},
    {"partition", 2, 2, 0},        {"delay", 2, 2, 0},
    {"restart-aof", 2, 2, 0},      {"kill-pubsub", 2, 2, 0},
    {"kill-normal", 1, 1, 0},      {"script-flush", 2, 2, 0},
    {"client-pause", 1, 1, 0},     {"worker-stop", 3, 3, 2},
    {"drop-reply", 2, 2, 0},       {"restart-empty", 0, 4, 0},
    {"restart-empty-delayed", 0, 3, 0}, {"quiet", 2, 2, 2},
    {"cluster-failover", 0, 0, 3}, {"slot-migration", 0, 0, 4},
    {"master-pause", 0, 0, 3},     {"master-pause-long", 0, 0, 1},
};

static int weight(int kind) {
  return RUN.cluster ? faults[kind].weight_cluster
         : RUN.wipes ? faults[kind].weight_wipes
                     : faults[kind].weight;
}

typedef struct nem_s {
  uint64_t rng;
  rt_server_t *srv;
  rt_proxy_t *px;
  rt_cluster_t *cl; /* nemesis_cluster: srv and px are NULL */
  /* When the masters last voted to replace node i (rt_now_ms; 0: never):
   * they refuse to vote about the same master again for twice the node
   * timeout, so a failover sooner would not happen. */
  int64_t voted_at[RT_CLUSTER_MAX_NODES];
  rt_worker_t *w;
  rt_recs_t *h;
  long long count[F_COUNT];
} nem_t;

static int64_t nbetween(nem_t *n, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  return lo + (int64_t)(rt_xorshift(&n->rng) % (uint64_t)(hi - lo + 1));
}

/* The kind a run exists for (an empty restart in nemesis_empty_restarts, a
 * failover or migration in nemesis_cluster) while none was injected yet,
 * else -1. The draw alone misses it now and then (an empty-restart run of
 * 13 faults has no empty restart about once in 18), which tests nothing the
 * run is for. */
static int required_kind(const nem_t *n) {
  if (RUN.wipes && n->count[F_RESTART_EMPTY] + n->count[F_RESTART_EMPTY_DELAYED] == 0)
    return F_RESTART_EMPTY;
  if (RUN.cluster && n->count[F_CL_FAILOVER] + n->count[F_CL_MIGRATE] == 0)
    return F_CL_MIGRATE;
  return -1;
}

static int pick_fault(nem_t *n) {
  int total = 0;
  for (int i = 0; i < F_COUNT; i++)
    total += weight(i);
  int r = (int)nbetween(n, 0, total - 1);
  for (int i = 0; i < F_COUNT; i++) {
    if (r < weight(i))
      return i;
    r -= weight(i);
  }
  return F_QUIET;
}

/* Removes what a restart would load (the AOF directory; an RDB file if
 * any), so the next start comes back empty while later AOF restarts keep
 * working from there. The server must be down. */
static void drop_persistence(rt_server_t *srv) {
  char dir[700], path[1000];
  snprintf(dir, sizeof dir, "%s/appendonlydir", rt_server_dir(srv));
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) != 0)
        FAIL("nemesis: removing %s: %s", path, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0)
      FAIL("nemesis: removing %s: %s", dir, strerror(errno));
  } else if (errno != ENOENT) {
    FAIL("nemesis: opening %s: %s", dir, strerror(errno));
  }
  static const char *const files[] = {"appendonly.aof", "dump.rdb"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", rt_server_dir(srv), files[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      FAIL("nemesis: removing %s: %s", path, strerror(errno));
  }
}

static void record_fault(nem_t *n, int kind, uint64_t t0, int64_t arg) {
  rt_recs_add5(n->h, UINT32_MAX, RT_OP_FAULT, t0, uv_hrtime(), kind, arg);
  n->count[kind]++;
}

/* ---- cluster faults (nemesis_cluster) ---- */

/* The cluster's node timeout (rt_cluster_opts_init): a master paused for
 * longer would be failed over by its replica. */
#define CLUSTER_NODE_TIMEOUT_MS 2000

/* The master that owns key's slot now. */
static int key_owner(rt_cluster_t *cl, const char *key) {
  int owner = rt_cluster_slot_owner(cl, rt_cluster_key_slot(cl, key, strlen(key)));
  if (owner < 0)
    FAIL("nemesis: no master owns the slot of %s", key);
  return owner;
}

/* A workload's key, drawn from the schedule. */
static const char *pick_key(nem_t *n) { return RUN.wl[nbetween(n, 0, RUN.n_wl - 1)]->key; }

/* Whether master m lists node r among its replicas (CLUSTER REPLICAS): a
 * master ignores a coordinated failover's request from a node it does not
 * know as its replica yet, as right after that node, a master paused until
 * it was replaced, came back and turned replica. */
static int knows_replica(rt_cluster_t *cl, int m, int r) {
  redisReply *x = rt_cmd(rt_cluster_server(cl, m), "CLUSTER REPLICAS %s", rt_cluster_id(cl, m));
  int found = 0;
  for (size_t i = 0; x != NULL && x->type == REDIS_REPLY_ARRAY && i < x->elements; i++)
    found |= x->element[i]->type == REDIS_REPLY_STRING &&
             strncmp(x->element[i]->str, rt_cluster_id(cl, r), 40) == 0;
  if (x != NULL)
    freeReplyObject(x);
  return found;
}

/* CLUSTER FAILOVER on replica r of master m, once m knows it (bounded). A
 * coordinated failover that does not complete (the master gives it 5 s)
 * changes nothing but a pause of m's writes: said, and the run goes on. */
static void coordinated_failover(rt_cluster_t *cl, int m, int r) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (!knows_replica(cl, m, r) && rt_now_ms() < end)
    rt_sleep_ms(20);
  redisReply *x = rt_cmd(rt_cluster_server(cl, r), "CLUSTER FAILOVER");
  int ok = x != NULL && x->type == REDIS_REPLY_STATUS;
  if (x != NULL)
    freeReplyObject(x);
  if (!ok || rt_cluster_wait_master(cl, r, 10000) != 0)
    printf("nemesis: CLUSTER FAILOVER of master %d by replica %d did not complete\n", m, r);
  if (rt_cluster_wait_stable(cl, 20000) != 0)
    FAIL("nemesis: the cluster did not settle after a failover of node %d", m);
}

/* d, or d_max when d is longer: a fault's duration within its bound. */
static int64_t at_most(int64_t d, int64_t d_max) { return d > d_max ? d_max : d; }

/* Applies and heals one cluster fault aimed at the master of a workload's
 * slot; *arg records its target (a node, or the migrated slot). */
static void cluster_fault(nem_t *n, int kind, int64_t d_max, int64_t *arg) {
  rt_cluster_t *cl = n->cl;
  int64_t lease = RUN.lease_ms, d;
  const char *key = pick_key(n);
  int owner = key_owner(cl, key);
  switch (kind) {
  case F_CL_FAILOVER: {
    /* Coordinated: the replica catches up before it takes over. */
    int replica = rt_cluster_replica_of(cl, owner);
    int64_t wait = n->voted_at[owner] + 2 * CLUSTER_NODE_TIMEOUT_MS + 500 - rt_now_ms();
    *arg = owner;
    if (replica < 0)
      FAIL("nemesis: node %d (owner of %s) has no replica up", owner, key);
    if (wait > d_max) {
      *arg = -1; /* too soon after the last vote about it: nothing done */
      break;
    }
    if (wait > 0)
      rt_sleep_ms(wait);
    coordinated_failover(cl, owner, replica);
    n->voted_at[owner] = rt_now_ms();
    break;
  }
  case F_CL_MIGRATE: {
    int m[RT_CLUSTER_MAX_NODES], k = rt_cluster_masters(cl, m, RT_CLUSTER_MAX_NODES), to;
    int slot = rt_cluster_key_slot(cl, key, strlen(key));
    if (k < 2)
      FAIL("nemesis: %d masters up, a migration needs two", k);
    do
      to = m[nbetween(n, 0, k - 1)];
    while (to == owner);
    *arg = slot;
    if (rt_cluster_migrate_start(cl, slot, to) != 0)
      FAIL("nemesis: migrating slot %d to node %d did not start", slot, to);
    /* The ASK window, keys still on the source; then the keys move all at
     * once or one at a time (scripts naming several meet TRYAGAIN), with a
     * pause after each step. */
    rt_sleep_ms(nbetween(n, 0, lease / 2));
    int one_by_one = (int)nbetween(n, 0, 1);
    for (int step = 0; step < 100; step++) {
      int moved = rt_cluster_migrate_keys(cl, slot, one_by_one ? 1 : 0);
      if (moved < 0)
        FAIL("nemesis: migrating slot %d: MIGRATE failed", slot);
      if (moved == 0)
        break;
      rt_sleep_ms(nbetween(n, 0, lease / 4));
      if (!one_by_one)
        break;
    }
    if (rt_cluster_migrate_finish(cl, slot) != 0)
      FAIL("nemesis: migrating slot %d to node %d did not finish", slot, to);
    break;
  }
  case F_CL_MASTER_PAUSE:
    /* Shorter than the node timeout: no failover, the master just stalls. */
    d = at_most(nbetween(n, 30, CLUSTER_NODE_TIMEOUT_MS / 2), d_max);
    *arg = owner;
    rt_cluster_pause(cl, owner);
    rt_sleep_ms(d);
    rt_cluster_resume(cl, owner);
    break;
  case F_CL_MASTER_PAUSE_LONG: {
    /* Long enough for its replica to be elected meanwhile: the old master
     * wakes up stale and, until it hears of the new epoch, answers what
     * clients still routed to it sent in the last reply timeout before it
     * woke, grants included, while the new master grants too. That is the
     * split brain Redis Cluster admits (asynchronous replication,
     * docs/client.md "Failover and holds"), so the window from the pause to
     * a stable cluster is recorded as a wipe: exclusion and tokens are
     * not judged in it (history.h). Token 0: two masters INCR copies of
     * one counter here, so a token proves nothing about which one granted,
     * and the same token may be handed out by both (docs/client.md). With too little time
     * left, a short pause instead. */
    uint64_t paused_at = uv_hrtime();
    d = nbetween(n, 2 * CLUSTER_NODE_TIMEOUT_MS, 3 * CLUSTER_NODE_TIMEOUT_MS);
    if (d > d_max)
      d = d_max < CLUSTER_NODE_TIMEOUT_MS / 2 ? d_max : CLUSTER_NODE_TIMEOUT_MS / 2;
    *arg = owner;
    rt_cluster_pause(cl, owner);
    rt_sleep_ms(d);
    rt_cluster_resume(cl, owner);
    if (rt_cluster_wait_stable(cl, 20000) != 0)
      FAIL("nemesis: the cluster did not settle after node %d's long pause", owner);
    if (rt_cluster_is_master(cl, owner) == 0) {
      n->voted_at[owner] = rt_now_ms();
      rt_recs_add5(n->h, UINT32_MAX, RT_OP_WIPE, paused_at, uv_hrtime(), 0, 0);
    }
    printf("nemesis: master %d paused %" PRId64 " ms: %s\n", owner, d,
           rt_cluster_is_master(cl, owner) == 0 ? "its replica took over" : "still the master");
    break;
  }
  default:
    FAIL("nemesis: fault %d is not a cluster fault", kind);
  }
}

/* One fault, applied and healed; d_max bounds its duration. */
static void inject(nem_t *n, int kind, int64_t d_max) {
  int64_t lease = RUN.lease_ms;
  uint64_t t0 = uv_hrtime();
  int64_t d = 0, arg = 0;
  switch (kind) {
  case F_SERVER_PAUSE:
  case F_SERVER_PAUSE_LONG:
    d = at_most(kind == F_SERVER_PAUSE ? nbetween(n, 30, lease * 6 / 10)
                                       : nbetween(n, lease, 2 * lease),
                d_max);
    rt_server_pause(n->srv);
    rt_sleep_ms(d);
    rt_server_resume(n->srv);
    break;
  case F_PROXY_RESET:
    rt_proxy_reset_all(n->px);
    break;
  case F_BLACKHOLE:
    /* Bytes are dropped: no TCP stream survives that, so the connections
     * end when it heals (a partition TCP gave up on). Keeping them open
     * would hand the client replies that belong to other commands. */
    d = at_most(nbetween(n, 50, lease * 3 / 2), d_max);
    rt_proxy_blackhole(n->px, 1);
    rt_sleep_ms(d);
    rt_proxy_reset_all(n->px);
    rt_proxy_blackhole(n->px, 0);
    break;
  case F_PARTITION:
    /* A partition that heals before TCP gives up: bytes are held, then
     * delivered late, in order. */
    d = at_most(nbetween(n, 50, lease * 3 / 2), d_max);
    rt_proxy_pause(n->px, RT_PROXY_BOTH, 1);
    rt_sleep_ms(d);
    rt_proxy_pause(n->px, RT_PROXY_BOTH, 0);
    break;
  case F_DELAY:
    arg = nbetween(n, 5, lease / 5);
    d = at_most(nbetween(n, 200, 2 * lease), d_max);
    rt_proxy_delay(n->px, (int)arg);
    rt_sleep_ms(d);
    rt_proxy_delay(n->px, 0);
    break;
  case F_RESTART_AOF:
    if (rt_server_restart(n->srv) != 0)
      FAIL("nemesis: the server did not come back after a restart");
    break;
  case F_RESTART_EMPTY:
  case F_RESTART_EMPTY_DELAYED:
    /* Delayed: down for longer than any lease (every worker uses the run's
     * lease), so every hold ended before the server is back (S1 holds);
     * with no time left for that, it is an immediate one. Immediate: a
     * wipe, which S1 does not cover (history.h). */
    d = nbetween(n, lease + lease / 4, 2 * lease);
    if (kind == F_RESTART_EMPTY || d > d_max) {
      kind = F_RESTART_EMPTY;
      d = 0;
    }
    arg = d;
    rt_server_kill(n->srv, SIGKILL); /* and reaped: it hands out no more tokens */
    struct timespec killed_at;
    clock_gettime(CLOCK_REALTIME, &killed_at);
    drop_persistence(n->srv);
    rt_sleep_ms(d);
    if (rt_server_restart(n->srv) != 0)
      FAIL("nemesis: the server did not come back after an empty restart");
    /* Token 1: the server that comes back seeds its token counters from
     * its clock, above every token handed out before; extra: that clock
     * (the host's) once the old server is gone and before the new one
     * starts, in microseconds, so every token above it is the new one's
     * (history.h). */
    if (kind == F_RESTART_EMPTY)
      rt_recs_add5(n->h, UINT32_MAX, RT_OP_WIPE, t0, uv_hrtime(), 1,
                   (int64_t)killed_at.tv_sec * 1000000 + killed_at.tv_nsec / 1000);
    break;
  case F_KILL_PUBSUB:
    arg = rt_server_kill_clients_of_type(n->srv, "pubsub");
    break;
  case F_KILL_NORMAL:
    arg = rt_server_kill_clients_of_type(n->srv, "normal");
    break;
  case F_SCRIPT_FLUSH:
    rt_server_script_flush(n->srv);
    break;
  case F_CLIENT_PAUSE:
    d = at_most(nbetween(n, 50, lease * 6 / 10), d_max);
    arg = nbetween(n, 0, 1);
    rt_server_client_pause(n->srv, d, arg ? "ALL" : "WRITE");
    rt_sleep_ms(d);
    break;
  case F_WORKER_STOP: {
    int i = (int)nbetween(n, 0, RUN.workers - 1);
    d = at_most(nbetween(n, 50, 2 * lease), d_max);
    arg = i;
    if (n->w[i].running) {
      uint64_t s0 = uv_hrtime();
      rt_worker_stop(&n->w[i]);
      rt_sleep_ms(d);
      rt_worker_cont(&n->w[i]);
      rt_recs_add5(n->h, (uint32_t)i, RT_OP_STOPPED, s0, uv_hrtime(), 0, 0);
    }
    break;
  }
  case F_DROP_REPLY:
    arg = nbetween(n, 1, 30);
    d = at_most(nbetween(n, 100, 1000), d_max);
    rt_proxy_on_reply(n->px, "EVALSHA", (int)arg, RT_PROXY_DROP_CUT, NULL, 0);
    rt_sleep_ms(d);
    if (rt_proxy_rule_state(n->px) != RT_PROXY_RULE_APPLIED)
      kind = F_QUIET; /* never matched in time: count it as quiet */
    rt_proxy_on_reply(n->px, NULL, 0, RT_PROXY_DROP, NULL, 0);
    break;
  case F_CL_FAILOVER:
  case F_CL_MIGRATE:
  case F_CL_MASTER_PAUSE:
  case F_CL_MASTER_PAUSE_LONG:
    cluster_fault(n, kind, d_max, &arg);
    if (kind == F_CL_FAILOVER && arg < 0)
      kind = F_QUIET; /* too soon to fail that master over again */
    break;
  default:
    d = at_most(nbetween(n, 100, 1000), d_max);
    rt_sleep_ms(d);
    break;
  }
  record_fault(n, kind, t0, arg);
}

static void heal_all(nem_t *n) {
  if (n->cl != NULL) {
    for (int i = 0; i < rt_cluster_size(n->cl); i++)
      rt_cluster_resume(n->cl, i);
    if (rt_cluster_wait_stable(n->cl, 20000) != 0)
      FAIL("nemesis: the cluster did not settle after the faults");
    for (int i = 0; i < RUN.workers; i++)
      rt_worker_cont(&n->w[i]);
    return;
  }
  rt_server_resume(n->srv);
  if (!rt_server_running(n->srv) && rt_server_restart(n->srv) != 0)
    FAIL("nemesis: the server did not come back");
  rt_proxy_blackhole(n->px, 0);
  rt_proxy_delay(n->px, 0);
  rt_proxy_pause(n->px, RT_PROXY_BOTH, 0);
  rt_proxy_on_reply(n->px, NULL, 0, RT_PROXY_DROP, NULL, 0);
  rt_proxy_release(n->px);
  redisReply *r = rt_cmd(n->srv, "CLIENT UNPAUSE");
  if (r != NULL)
    freeReplyObject(r);
  for (int i = 0; i < RUN.workers; i++)
    rt_worker_cont(&n->w[i]);
}

/* For a post-mortem: every record, in start order, as text, in a file
 * that outlives the test's directory. */
static int rec_start_cmp(const void *pa, const void *pb) {
  const rt_rec_t *a = pa, *b = pb;
  return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

static void dump_timeline(rt_recs_t *h) {
  static const char *const ops[] = {"?",     "hold",  "read",    "write", "permits",
                                    "countdown", "await", "lost", "stopped", "fault",
                                    "call",  "stalled", "grant", "wipe"};
  const char *tmp = getenv("TMPDIR");
  char path[600];
  snprintf(path, sizeof path, "%s/lk-nemesis-%" PRIu64 "-%d.txt",
           tmp != NULL && *tmp != '\0' ? tmp : "/tmp", RUN.seed, (int)getpid());
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return;
  qsort(h->v, h->n, sizeof *h->v, rec_start_cmp);
  uint64_t t0 = h->n > 0 ? h->v[0].start_ns : 0;
  for (size_t i = 0; i < h->n; i++) {
    const rt_rec_t *r = &h->v[i];
    const char *what = r->op < sizeof ops / sizeof ops[0] ? ops[r->op] : "?";
    if (r->op == RT_OP_FAULT)
      fprintf(f, "%10.3f %10.3f nemesis  fault %s arg %" PRId64 "\n",
              (double)(r->start_ns - t0) / 1e6, (double)(r->end_ns - t0) / 1e6,
              r->token >= 0 && r->token < F_COUNT ? faults[r->token].name : "?", r->extra);
    else if (r->op == RT_OP_WIPE)
      fprintf(f, "%10.3f %10.3f nemesis  wipe (the server's data was lost or diverged)\n",
              (double)(r->start_ns - t0) / 1e6, (double)(r->end_ns - t0) / 1e6);
    else
      fprintf(f, "%10.3f %10.3f proc %-3u %s obj %s %-9s token/status %" PRId64 " extra %" PRId64 "\n",
              (double)(r->start_ns - t0) / 1e6, (double)(r->end_ns - t0) / 1e6, r->proc, what,
              r->obj < RUN.n_wl ? RUN.wl[r->obj]->name : "?",
              r->op == RT_OP_CALL && r->token < 0 ? lk_err_name((int)r->token) : "",
              r->token, r->extra);
  }
  fclose(f);
  printf("nemesis: timeline of every record kept in %s\n", path);
}

static void select_workloads(void) {
  const char *only = getenv("LK_NEMESIS_WORKLOADS");
  RUN.n_wl = 0;
  for (nem_workload_t *w = registry; w != NULL && RUN.n_wl < MAX_WORKLOADS; w = w->next) {
    if (only != NULL && *only != '\0') {
      size_t len = strlen(w->name);
      const char *p = strstr(only, w->name);
      int found = 0;
      for (; p != NULL; p = strstr(p + 1, w->name))
        if ((p == only || p[-1] == ',') && (p[len] == '\0' || p[len] == ','))
          found = 1;
      if (!found)
        continue;
    }
    if (RUN.cluster && w->key == NULL) {
      if (only != NULL && *only != '\0')
        FAIL("nemesis: workload %s names no key, so it cannot run on a cluster", w->name);
      continue;
    }
    if (RUN.wipes && !w->wipe_ok) {
      if (only != NULL && *only != '\0')
        FAIL("nemesis: workload %s does not survive restarts without persistence", w->name);
      continue;
    }
    RUN.wl[RUN.n_wl++] = w;
  }
  if (RUN.n_wl == 0)
    FAIL("nemesis: no workload selected (LK_NEMESIS_WORKLOADS=\"%s\")", only ? only : "");
}

/* Fencing tokens checked over every grant (rt_check_grant_tokens), summed
 * over the workloads, for the summary. */
static void count_grants(const rt_recs_t *h, size_t *grants, size_t *violations) {
  *grants = *violations = 0;
  for (int i = 0; i < RUN.n_wl; i++) {
    rt_check_t c;
    rt_check_grant_tokens(h, (uint16_t)i, &c);
    *grants += c.checked;
    *violations += c.violations;
  }
}

/* The server a workload's setup and checks talk to: on a cluster, the
 * master that owns its key's slot now. */
static rt_server_t *workload_server(rt_server_t *srv, rt_cluster_t *cl, int i) {
  return cl != NULL ? rt_cluster_server(cl, key_owner(cl, RUN.wl[i]->key)) : srv;
}

static void run_nemesis(int wipes, int cluster) {
  memset(&RUN, 0, sizeof RUN);
  RUN.wipes = wipes;
  RUN.cluster = cluster;
  const char *seed_env = getenv("LK_NEMESIS_SEED");
  if (seed_env != NULL && *seed_env != '\0')
    RUN.seed = strtoull(seed_env, NULL, 10);
  else
    RUN.seed = (uv_hrtime() ^ ((uint64_t)getpid() << 32)) % 1000000000000u;
  if (RUN.seed == 0)
    RUN.seed = 1;
  RUN.workers = (int)env_int("LK_NEMESIS_WORKERS", 4, 2, MAX_WORKERS);
  RUN.seconds = env_int("LK_NEMESIS_SECONDS", wipes ? 30 : cluster ? 20 : 40, 1, 3600);
  RUN.lease_ms = rt_scaled_ms(800);
  RUN.reply_timeout_ms = RUN.lease_ms / 2;
  select_workloads();
  printf("nemesis%s: seed %" PRIu64 " (replay the schedule with LK_NEMESIS_SEED=%" PRIu64
         "); %d workers, %" PRId64 " s, lease %" PRId64 " ms; workloads:",
         wipes     ? " (restarts without persistence)"
         : cluster ? " (Redis Cluster: failover, migration, paused master)"
                   : "",
         RUN.seed, RUN.seed, RUN.workers,
         RUN.seconds, RUN.lease_ms);
  for (int i = 0; i < RUN.n_wl; i++)
    printf(" %s", RUN.wl[i]->name);
  printf("\n");

  rt_server_t *srv = NULL;
  rt_proxy_t *px = NULL;
  rt_cluster_t *cl = NULL;
  if (cluster) {
    /* No proxy: the workers follow redirections to every node. */
    int m[RT_CLUSTER_MAX_NODES];
    cl = rt_cluster_start(NULL);
    ASSERT_NOT_NULL(cl);
    ASSERT_GE(rt_cluster_masters(cl, m, RT_CLUSTER_MAX_NODES), 2);
    RUN.seed_port = rt_cluster_port(cl, m[0]);
    snprintf(RUN.dir, sizeof RUN.dir, "%s", rt_server_dir(rt_cluster_server(cl, m[0])));
  } else {
    rt_server_opts_t so;
    rt_server_opts_init(&so);
    so.appendonly = 1; /* with appendfsync always (the harness's default) */
    srv = rt_server_start(&so);
    ASSERT_NOT_NULL(srv);
    px = rt_proxy_start(rt_server_port(srv));
    ASSERT_NOT_NULL(px);
    RUN.proxy_port = rt_proxy_port(px);
    snprintf(RUN.dir, sizeof RUN.dir, "%s", rt_server_dir(srv));
  }
  for (int i = 0; i < RUN.n_wl; i++)
    if (RUN.wl[i]->setup != NULL)
      RUN.wl[i]->setup(workload_server(srv, cl, i), (uint16_t)i);

  rt_recs_t h;
  rt_recs_init(&h);
  rt_worker_t w[MAX_WORKERS];
  uint64_t t_begin = uv_hrtime();
  RUN.end_ns = t_begin + (uint64_t)RUN.seconds * 1000000000u;
  for (int i = 0; i < RUN.workers; i++)
    ASSERT_OK(rt_worker_start(&w[i], i, worker_main, NULL));

  nem_t n;
  memset(&n, 0, sizeof n);
  n.rng = RUN.seed;
  n.srv = srv;
  n.px = px;
  n.cl = cl;
  n.w = w;
  n.h = &h;
  /* Faults stop early enough that the longest one is healed before the
   * workers wind down. */
  uint64_t faults_end = RUN.end_ns - (uint64_t)(3 * RUN.lease_ms) * 1000000u;
  /* Past the middle of the fault window, the kind the run is for comes
   * next if the draw has not brought it yet. */
  uint64_t faults_start = uv_hrtime();
  uint64_t faults_half =
      faults_end > faults_start ? faults_start + (faults_end - faults_start) / 2 : faults_end;
  for (long iter = 0; iter < 100000 && uv_hrtime() < faults_end; iter++) {
    int64_t d_max = (int64_t)(faults_end - uv_hrtime()) / 1000000;
    int kind = pick_fault(&n), req = required_kind(&n);
    if (req >= 0 && uv_hrtime() >= faults_half)
      kind = req;
    inject(&n, kind, d_max > 0 ? d_max : 0);
    /* Let the system breathe between faults. */
    int64_t gap = nbetween(&n, 20, 300);
    if (uv_hrtime() + (uint64_t)gap * 1000000u < faults_end)
      rt_sleep_ms(gap);
  }
  heal_all(&n);

  int64_t budget = (int64_t)(RUN.end_ns > uv_hrtime() ? (RUN.end_ns - uv_hrtime()) / 1000000u : 0) +
                   4 * RUN.lease_ms + rt_scaled_ms(20000);
  int left = rt_workers_wait(w, RUN.workers, budget);
  if (left > 0) {
    for (int i = 0; i < RUN.workers; i++)
      if (w[i].running)
        kill(w[i].pid, SIGUSR1);
    rt_sleep_ms(1000); /* time to print the stuck reports */
    for (int i = 0; i < RUN.workers; i++)
      if (w[i].running)
        describe_stuck(i, w[i].pid);
    rt_workers_kill_all(w, RUN.workers);
    FAIL("nemesis: %d workers did not finish within %" PRId64 " ms", left, budget);
  }
  int findings = 0;
  for (int i = 0; i < RUN.workers; i++) {
    int code = rt_worker_exit_code(&w[i]);
    if (code == WORKER_EXIT_FINDINGS)
      findings++;
    else if (code != 0)
      FAIL("nemesis: worker %d exited with %d (see its output above)", i, code);
  }

  long long total_faults = 0;
  printf("nemesis: faults injected:");
  for (int k = 0; k < F_COUNT; k++) {
    if (k != F_QUIET)
      total_faults += n.count[k];
    printf(" %s %lld%s", faults[k].name, n.count[k], k + 1 < F_COUNT ? "," : "\n");
  }
  for (int i = 0; i < RUN.workers; i++) {
    char path[700];
    snprintf(path, sizeof path, "%s/nem-%d.bin", RUN.dir, i);
    if (rt_recs_load(&h, path, 1) != 0)
      FAIL("nemesis: cannot load %s", path);
  }
  size_t violations = 0;
  for (int i = 0; i < RUN.n_wl; i++)
    violations += RUN.wl[i]->check(&h, (uint16_t)i, workload_server(srv, cl, i));
  size_t grants = 0, token_violations = 0;
  count_grants(&h, &grants, &token_violations);
  printf("nemesis: %lld restarts without persistence (%lld immediate, %lld delayed), %zu "
         "grants' fencing tokens checked across every process, %zu token violations\n",
         n.count[F_RESTART_EMPTY] + n.count[F_RESTART_EMPTY_DELAYED], n.count[F_RESTART_EMPTY],
         n.count[F_RESTART_EMPTY_DELAYED], grants, token_violations);
  printf("nemesis: %zu records checked, %lld faults injected, %zu violations, %d workers with "
         "unexpected statuses; seed %" PRIu64 "\n",
         h.n, total_faults, violations, findings, RUN.seed);
  if (violations > 0 || findings > 0)
    dump_timeline(&h);
  rt_recs_free(&h);
  ASSERT_EQ(violations, 0);
  ASSERT_EQ(findings, 0);
  ASSERT_GT(total_faults, 0);
  if (wipes)
    ASSERT_GT(n.count[F_RESTART_EMPTY] + n.count[F_RESTART_EMPTY_DELAYED], 0);
  if (cluster)
    ASSERT_GT(n.count[F_CL_FAILOVER] + n.count[F_CL_MIGRATE], 0);
  rt_proxy_stop(px);
  rt_server_stop(srv);
  rt_cluster_stop(cl);
}

TEST(nemesis_seeded_run) { run_nemesis(0, 0); }

/* Restarts without persistence, immediate and delayed, among the other
 * faults, for the workloads that survive them: tokens strictly increase over
 * every grant of every process (issue 15). */
TEST(nemesis_empty_restarts) { run_nemesis(1, 0); }

/* The cluster faults (coordinated failover, slot migration in steps, a
 * paused master) and worker stops, on a 3-master + 3-replica cluster, for
 * the workloads that name their key; the same checkers (issue 14). */
TEST(nemesis_cluster) { run_nemesis(0, 1); }
