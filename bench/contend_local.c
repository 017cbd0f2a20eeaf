/* B3L: contention inside ONE process (bench/README.md, "B3L"). N lock
 * objects of one client (default 8; --waiters 1000 for the big queue) loop
 * on one name: acquire (wait up to 30 s, lease 30 s) -> release at once ->
 * acquire again, for --seconds. What the server saw over the run, from INFO
 * commandstats (every command but INFO, scripts' inner commands included as
 * total_commands_processed counts them): server commands per acquisition,
 * EVALSHA per acquisition, (S)SUBSCRIBE and (S)UNSUBSCRIBE per acquisition.
 * A release that woke every local waiter cost ~N scripts per handoff; one
 * that wakes one costs ~2-3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

typedef struct {
  double total, evalsha, sub, unsub;
} stats_t;

static int read_stats(redisContext *rc, stats_t *s) {
  redisReply *r = redisCommand(rc, "INFO commandstats");
  const char *p;
  memset(s, 0, sizeof(*s));
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    if (r != NULL)
      freeReplyObject(r);
    return -1;
  }
  for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
    const char *name = p + 8, *c = strstr(p, ":calls=");
    double calls;
    if (c == NULL)
      break;
    calls = atof(c + 7);
    if (strncmp(name, "info:", 5) == 0)
      continue;
    s->total += calls;
    if (strncmp(name, "evalsha:", 8) == 0 || strncmp(name, "eval:", 5) == 0)
      s->evalsha += calls;
    if (strncmp(name, "subscribe:", 10) == 0 || strncmp(name, "ssubscribe:", 11) == 0)
      s->sub += calls;
    if (strncmp(name, "unsubscribe:", 12) == 0 || strncmp(name, "sunsubscribe:", 13) == 0)
      s->unsub += calls;
  }
  freeReplyObject(r);
  return 0;
}

typedef struct {
  uv_loop_t loop;
  lk_client_t *client;
  lk_lock_t **locks;
  int n, active, stopping, failures, closed;
  uint64_t acquired, end_ns;
} run_t;

static void start(run_t *r, lk_lock_t *l);

static void on_released(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  if (status != 0)
    r->failures++;
  if (!r->stopping && uv_hrtime() >= r->end_ns)
    r->stopping = 1;
  if (r->stopping) {
    r->active--;
    return;
  }
  start(r, l);
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  if (status != 0) {
    r->failures++;
    r->active--;
    return;
  }
  r->acquired++;
  if (lk_lock_release(l, on_released, r) != 0) {
    r->failures++;
    r->active--;
  }
}

static void start(run_t *r, lk_lock_t *l) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 30000;
  o.lease_ms = 30000;
  if (lk_lock_acquire(l, &o, on_acquired, r) != 0) {
    r->failures++;
    r->active--;
  }
}

static void on_closed(lk_lock_t *l) { ((run_t *)lk_lock_get_data(l))->closed++; }
static void on_client_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

static void line(const char *metric, double v, const char *unit, int n, double seconds,
                 uint64_t acq) {
  bench_json_begin("B3L", "latchkey", "lock", metric, v, unit);
  bench_json_int("waiters", n);
  bench_json_num("seconds", seconds);
  bench_json_int("acquisitions", (long long)acq);
  bench_json_end();
}

int main(int argc, char **argv) {
  const char *host = "127.0.0.1";
  int port = 6379, i, client_closed = 0;
  uint64_t waiters = 8, secs = 4;
  double seconds;
  redisContext *rc;
  stats_t s0, s1;
  lk_client_opts_t o;
  run_t r;
  uint64_t t0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v != NULL && strcmp(a, "--host") == 0)
      host = v;
    else if (strcmp(a, "--port") == 0 && bench_parse_port(v, &port) == 0)
      ;
    else if (strcmp(a, "--waiters") == 0 && bench_parse_u64(v, &waiters) == 0 && waiters >= 1 &&
             waiters <= 100000)
      ;
    else if (strcmp(a, "--seconds") == 0 && bench_parse_u64(v, &secs) == 0 && secs >= 1 &&
             secs <= 3600)
      ;
    else {
      fprintf(stderr, "usage: %s [--host H] [--port P] [--waiters N] [--seconds S]\n", argv[0]);
      return 2;
    }
    i++;
  }
  rc = redisConnect(host, port);
  if (rc == NULL || rc->err) {
    fprintf(stderr, "contend_local: cannot connect to %s:%d\n", host, port);
    return 1;
  }
  memset(&r, 0, sizeof(r));
  r.n = (int)waiters;
  r.locks = calloc((size_t)r.n, sizeof(*r.locks));
  uv_loop_init(&r.loop);
  lk_client_opts_init(&o);
  o.host = host;
  o.port = port;
  if (r.locks == NULL || lk_client_new(&r.loop, &o, &r.client) != 0)
    return 1;
  for (i = 0; i < r.n; i++) {
    if (lk_lock_new(r.client, "bench:contend_local", &r.locks[i]) != 0)
      return 1;
    lk_lock_set_data(r.locks[i], &r);
  }
  if (read_stats(rc, &s0) != 0)
    return 1;
  t0 = uv_hrtime();
  r.end_ns = t0 + secs * 1000000000ull;
  for (i = 0; i < r.n; i++) {
    r.active++;
    start(&r, r.locks[i]);
  }
  while (r.active > 0)
    uv_run(&r.loop, UV_RUN_ONCE);
  seconds = (double)(uv_hrtime() - t0) / 1e9;
  if (read_stats(rc, &s1) != 0)
    return 1;
  for (i = 0; i < r.n; i++)
    lk_lock_close(r.locks[i], on_closed);
  while (r.closed < r.n)
    uv_run(&r.loop, UV_RUN_ONCE);
  lk_client_set_data(r.client, &client_closed);
  if (lk_client_close(r.client, on_client_closed) != 0)
    return 1;
  while (!client_closed)
    uv_run(&r.loop, UV_RUN_ONCE);
  uv_loop_close(&r.loop);
  redisFree(rc);
  free(r.locks);
  if (r.acquired == 0 || r.failures != 0) {
    fprintf(stderr, "contend_local: %llu acquisitions, %d failures\n",
            (unsigned long long)r.acquired, r.failures);
    return 1;
  }
#define PER(x) ((x) / (double)r.acquired)
  line("acquisitions_per_s", (double)r.acquired / seconds, "1/s", r.n, seconds, r.acquired);
  line("server_cmds_per_acq", PER(s1.total - s0.total), "commands", r.n, seconds, r.acquired);
  line("evalsha_per_acq", PER(s1.evalsha - s0.evalsha), "commands", r.n, seconds, r.acquired);
  line("subscribe_per_acq", PER(s1.sub - s0.sub), "commands", r.n, seconds, r.acquired);
  line("unsubscribe_per_acq", PER(s1.unsub - s0.unsub), "commands", r.n, seconds, r.acquired);
  return 0;
}
