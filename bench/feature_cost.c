/* B10, what issue 28's features cost the server per acquisition
 * (bench/README.md, "B10"), all phases in one run against one server:
 *
 *   lock          acquire + release, the defaults (reentrant, watchdog lease)
 *   nonreentrant  the same with opts.reentrant = 0 (Redisson 4.4's layout)
 *   health        the defaults with a health callback set (client side only)
 *   guarded       acquire, one guarded INCRBY (lk_lock_guarded), release
 *   psem          a permit of a permit-expirable semaphore (what
 *                 `latchkey run --permits N` takes): acquire + release by id
 *   set           one plain SET through hiredis: the yardstick
 *
 * For each: the server's commands per pair (INFO commandstats, the scripts'
 * inner commands included: Redis counts them too), its own accounting of
 * them (usec per pair, commandstats), and its CPU per pair (INFO cpu,
 * user + sys). Sequential pairs on one connection, after a warm-up that
 * loads the scripts.
 *
 *   feature_cost [--host H] [--port P] [--pairs N]   (default 3000)
 *
 * Prints one JSON line per phase. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

typedef struct stats_s {
  long long calls;
  double usec;
  double cpu_s;
} stats_t;

static redisContext *side;

static double info_field(const char *text, const char *field) {
  const char *p = strstr(text, field);
  return p != NULL ? atof(p + strlen(field)) : 0;
}

/* Sums commandstats over every command but the side channel's own INFO
 * and CONFIG calls, which the phase subtracts by count. */
static void read_stats(stats_t *s) {
  redisReply *r = redisCommand(side, "INFO commandstats");
  memset(s, 0, sizeof(*s));
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    fprintf(stderr, "feature_cost: INFO commandstats failed\n");
    exit(1);
  }
  for (const char *p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
    const char *calls = strstr(p, "calls="), *usec = strstr(p, "usec=");
    if (strncmp(p, "cmdstat_info:", 13) == 0 || strncmp(p, "cmdstat_config|", 15) == 0)
      continue;
    if (calls != NULL)
      s->calls += atoll(calls + 6);
    if (usec != NULL)
      s->usec += atof(usec + 5);
  }
  freeReplyObject(r);
  r = redisCommand(side, "INFO cpu");
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    fprintf(stderr, "feature_cost: INFO cpu failed\n");
    exit(1);
  }
  s->cpu_s = info_field(r->str, "used_cpu_user:") + info_field(r->str, "used_cpu_sys:");
  freeReplyObject(r);
}

static void reset_stats(void) {
  redisReply *r = redisCommand(side, "CONFIG RESETSTAT");
  freeReplyObject(r);
}

/* --- the latchkey phases: a small state machine on one loop --- */

enum { PH_LOCK, PH_NONREENTRANT, PH_HEALTH, PH_GUARDED, PH_PSEM };
static const char *const phase_names[] = {"lock", "nonreentrant", "health", "guarded", "psem"};

typedef struct run_s {
  int phase;
  uint64_t left;
  int failed;
  lk_lock_t *lock;
  lk_psem_t *psem;
  char permit[LK_PSEM_ID_LEN + 1];
} run_t;

static void step(run_t *r);

static void done_pair(run_t *r, int status) {
  if (status != 0) {
    fprintf(stderr, "feature_cost: %s: %s\n", phase_names[r->phase], lk_err_name(status));
    r->failed = 1;
    return;
  }
  r->left--;
  step(r);
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)l;
  done_pair(arg, status);
}

static void release_lock(run_t *r) {
  int rc = lk_lock_release(r->lock, on_released, r);
  if (rc != 0)
    done_pair(r, rc);
}

static void on_guarded(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  (void)l;
  if (status != 0) {
    done_pair(r, status);
    return;
  }
  release_lock(r);
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  static const char *const incr[] = {"INCRBY", "{fc}:counter", "1"};
  lk_guarded_op_t op;
  int rc;
  (void)l;
  if (status != 0) {
    done_pair(r, status);
    return;
  }
  if (r->phase != PH_GUARDED) {
    release_lock(r);
    return;
  }
  memset(&op, 0, sizeof(op));
  op.argc = 3;
  op.argv = incr;
  rc = lk_lock_guarded(r->lock, &op, on_guarded, r);
  if (rc != 0)
    done_pair(r, rc);
}

static void on_psem_released(lk_psem_t *ps, int status, void *arg) {
  (void)ps;
  done_pair(arg, status);
}

static void on_psem_acquired(lk_psem_t *ps, int status, void *arg) {
  run_t *r = arg;
  int rc;
  if (status != 0) {
    done_pair(r, status);
    return;
  }
  snprintf(r->permit, sizeof(r->permit), "%s", lk_psem_permit_id(ps, 0));
  rc = lk_psem_release(ps, r->permit, on_psem_released, r);
  if (rc != 0)
    done_pair(r, rc);
}

static void on_health(lk_handle_t *h, lk_health_t state, int64_t ms_left, void *arg) {
  (void)h;
  (void)state;
  (void)ms_left;
  (void)arg;
}

static void step(run_t *r) {
  int rc;
  if (r->left == 0 || r->failed)
    return;
  if (r->phase == PH_PSEM) {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    rc = lk_psem_acquire(r->psem, &o, on_psem_acquired, r);
  } else {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.reentrant = r->phase == PH_NONREENTRANT ? 0 : 1;
    rc = lk_lock_acquire(r->lock, &o, on_acquired, r);
  }
  if (rc != 0)
    done_pair(r, rc);
}

static void on_set_permits(lk_psem_t *ps, int status, void *arg) {
  (void)ps;
  *(int *)arg = status == 0 ? 1 : -1;
}

static int run_phase(uv_loop_t *loop, lk_client_t *c, int phase, uint64_t pairs, uint64_t warmup) {
  run_t r;
  stats_t s0, s1;
  memset(&r, 0, sizeof(r));
  r.phase = phase;
  if (phase == PH_PSEM) {
    int set = 0;
    if (lk_psem_new(c, "{fc}:psem", &r.psem) != 0 ||
        lk_psem_try_set_permits(r.psem, 3, on_set_permits, &set) != 0)
      return -1;
    while (set == 0)
      uv_run(loop, UV_RUN_ONCE);
  } else {
    if (lk_lock_new(c, "{fc}:lock", &r.lock) != 0)
      return -1;
    if (phase == PH_HEALTH &&
        lk_handle_set_health_cb(lk_lock_handle(r.lock), on_health, NULL) != 0)
      return -1;
  }
  r.left = warmup;
  step(&r);
  while (r.left > 0 && !r.failed)
    uv_run(loop, UV_RUN_ONCE);
  reset_stats();
  read_stats(&s0);
  r.left = pairs;
  step(&r);
  while (r.left > 0 && !r.failed)
    uv_run(loop, UV_RUN_ONCE);
  read_stats(&s1);
  if (r.psem != NULL)
    lk_psem_close(r.psem, NULL);
  if (r.lock != NULL)
    lk_lock_close(r.lock, NULL);
  if (r.failed)
    return -1;
  /* s0's own INFO cpu call is the one command left in s1 (INFO is skipped,
   * so nothing to subtract). */
  bench_json_begin("B10", "latchkey", phase_names[phase], "server_cpu_us_per_pair",
                   (s1.cpu_s - s0.cpu_s) * 1e6 / (double)pairs, "us");
  bench_json_num("commands_per_pair", (double)(s1.calls - s0.calls) / (double)pairs);
  bench_json_num("commandstats_usec_per_pair", (s1.usec - s0.usec) / (double)pairs);
  bench_json_int("pairs", (long long)pairs);
  bench_json_end();
  return 0;
}

static void set_phase(uint64_t pairs) {
  stats_t s0, s1;
  redisContext *c = redisConnect(side->tcp.host, side->tcp.port);
  if (c == NULL || c->err) {
    fprintf(stderr, "feature_cost: connect failed\n");
    exit(1);
  }
  reset_stats();
  read_stats(&s0);
  for (uint64_t i = 0; i < pairs; i++)
    freeReplyObject(redisCommand(c, "SET {fc}:plain %llu", (unsigned long long)i));
  read_stats(&s1);
  redisFree(c);
  bench_json_begin("B10", "raw-hiredis", "set", "server_cpu_us_per_pair",
                   (s1.cpu_s - s0.cpu_s) * 1e6 / (double)pairs, "us");
  bench_json_num("commands_per_pair", (double)(s1.calls - s0.calls) / (double)pairs);
  bench_json_num("commandstats_usec_per_pair", (s1.usec - s0.usec) / (double)pairs);
  bench_json_int("pairs", (long long)pairs);
  bench_json_end();
}

int main(int argc, char **argv) {
  bench_args_t a;
  uv_loop_t loop;
  lk_client_t *c;
  lk_client_opts_t o;
  if (bench_parse_args(argc, argv, &a) != 0)
    return 2;
  if (!a.pairs_given)
    a.pairs = 3000;
  side = redisConnect(a.host, a.port);
  if (side == NULL || side->err) {
    fprintf(stderr, "feature_cost: cannot reach %s:%d\n", a.host, a.port);
    return 1;
  }
  uv_loop_init(&loop);
  lk_client_opts_init(&o);
  o.host = a.host;
  o.port = a.port;
  if (lk_client_new(&loop, &o, &c) != 0)
    return 1;
  for (int phase = PH_LOCK; phase <= PH_PSEM; phase++)
    if (run_phase(&loop, c, phase, a.pairs, a.pairs / 10 + 10) != 0)
      return 1;
  set_phase(a.pairs);
  /* The objects were closed without a callback: their closes end on the
   * loop, and the client refuses to close (LK_EBUSY) until then. */
  while (lk_client_close(c, NULL) == LK_EBUSY)
    uv_run(&loop, UV_RUN_ONCE);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  redisFree(side);
  return 0;
}
