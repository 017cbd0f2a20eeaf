/* latchkey acquire+release pairs on one client (bench/README.md).
 *
 * Sequential (default): acquire (wait 0, lease 30000 ms) -> in its callback
 * release -> in that callback the next acquire, on one lock object.
 * --pipelined K: K lock objects on distinct names, each running that loop, all
 * at once on the one client (K pairs in flight).
 *
 * Warm-up pairs run first and are not measured. Per pair, the time from the
 * acquire call to the release callback is recorded with uv_hrtime; the
 * acquire and release halves are recorded too, and the process's CPU time
 * over the measured phase. Only the public API is used. Prints one JSON line
 * (bench_common.h: bench B1 or B2, limit_impl "raw" = bench/raw.c at the same
 * depth) on stdout; errors go to stderr and make the exit status 1.
 *
 * --tls-ca FILE: over TLS, trusting FILE (--port is then the server's TLS
 * port): impl "latchkey-tls", limit_impl "latchkey", so the report's ratio
 * is TLS over plaintext (bench/tls.sh, docs/tls.md).
 *
 * --lean: the locks use the lean layout (client option lock_layout,
 * docs/lock.md "Lean layout"): impl "latchkey-lean". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

typedef struct bench_s bench_t;

typedef struct lane_s {
  bench_t *b;
  lk_lock_t *lock;
  uint64_t t0, t_acq;
  int busy;
} lane_t;

struct bench_s {
  bench_args_t args;
  uv_loop_t loop;
  lk_client_t *client;
  lane_t *lanes;
  size_t nlanes;
  lk_lock_opts_t opts;
  int measuring;
  uint64_t target, started, done;
  size_t busy;
  uint64_t t_start, t_end, t_cap; /* t_cap: --seconds deadline, 0 = none */
  uint64_t cpu_start, cpu_end;
  uint64_t cmds_start, cmds_end;
  uint64_t *pair_ns, *acq_ns, *rel_ns;
  size_t open_locks;
  int failed;
};

static void lane_next(lane_t *ln);

static void fail(bench_t *b, const char *what, int status, lk_lock_t *l) {
  if (!b->failed)
    fprintf(stderr, "lock_seq: %s failed: %s%s%s\n", what,
            status != 0 ? lk_err_name(status) : "unexpected result",
            l != NULL && lk_lock_error_text(l)[0] ? " - " : "",
            l != NULL ? lk_lock_error_text(l) : "");
  b->failed = 1;
}

static void on_lock_closed(lk_lock_t *l) {
  bench_t *b = lk_lock_get_data(l);
  if (--b->open_locks == 0)
    lk_client_close(b->client, NULL);
}

static void shutdown_all(bench_t *b) {
  size_t i;
  b->open_locks = b->nlanes;
  for (i = 0; i < b->nlanes; i++)
    lk_lock_close(b->lanes[i].lock, on_lock_closed);
}

static uint64_t commands_sent(const bench_t *b) {
  lk_client_stats_t st;
  lk_client_get_stats(b->client, &st);
  return st.commands_sent;
}

static void start_phase(bench_t *b, int measuring) {
  size_t i;
  b->measuring = measuring;
  b->started = b->done = 0;
  b->target = measuring ? b->args.pairs : b->args.warmup;
  if (measuring) {
    b->cmds_start = commands_sent(b);
    b->cpu_start = bench_cpu_ns();
    b->t_start = uv_hrtime();
    if (b->args.seconds > 0)
      b->t_cap = b->t_start + (uint64_t)(b->args.seconds * 1e9);
  }
  b->busy = b->nlanes;
  for (i = 0; i < b->nlanes; i++) {
    b->lanes[i].busy = 1;
    lane_next(&b->lanes[i]);
  }
}

/* Every lane has stopped: next phase, or the end. */
static void phase_done(bench_t *b) {
  if (!b->failed && !b->measuring) {
    start_phase(b, 1);
    return;
  }
  if (b->measuring) {
    b->t_end = uv_hrtime();
    b->cpu_end = bench_cpu_ns();
    b->cmds_end = commands_sent(b);
  }
  shutdown_all(b);
}

static void lane_stop(lane_t *ln) {
  bench_t *b = ln->b;
  ln->busy = 0;
  if (--b->busy == 0)
    phase_done(b);
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  bench_t *b = ln->b;
  uint64_t now = uv_hrtime();
  if (status != 0 || lk_lock_result(l) != 1) {
    fail(b, "release", status, l);
    lane_stop(ln);
    return;
  }
  if (b->measuring && b->done < b->args.pairs) {
    b->pair_ns[b->done] = now - ln->t0;
    b->acq_ns[b->done] = ln->t_acq - ln->t0;
    b->rel_ns[b->done] = now - ln->t_acq;
  }
  b->done++;
  lane_next(ln);
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  bench_t *b = ln->b;
  int rc;
  ln->t_acq = uv_hrtime();
  if (status != 0 || lk_lock_hold_count(l) != 1) {
    fail(b, "acquire", status, l);
    lane_stop(ln);
    return;
  }
  rc = lk_lock_release(l, on_released, ln);
  if (rc != 0) {
    fail(b, "release call", rc, NULL);
    lane_stop(ln);
  }
}

static void lane_next(lane_t *ln) {
  bench_t *b = ln->b;
  int rc;
  uint64_t now = uv_hrtime();
  if (b->failed || b->started >= b->target ||
      (b->measuring && b->t_cap != 0 && now >= b->t_cap)) {
    lane_stop(ln);
    return;
  }
  b->started++;
  ln->t0 = now;
  rc = lk_lock_acquire(ln->lock, &b->opts, on_acquired, ln);
  if (rc != 0) {
    fail(b, "acquire call", rc, NULL);
    lane_stop(ln);
  }
}

int main(int argc, char **argv) {
  bench_t b;
  lk_client_opts_t co;
  bench_result_t res;
  size_t i;
  int rc;
  char name[128];

  const char *tls_ca = NULL;
  int nargs = 1, lean = 0;

  memset(&b, 0, sizeof(b));
  /* --tls-ca FILE and --lean are this program's own; the rest is the suite's. */
  for (i = 1; i < (size_t)argc; i++) {
    if (strcmp(argv[i], "--tls-ca") == 0 && i + 1 < (size_t)argc)
      tls_ca = argv[++i];
    else if (strcmp(argv[i], "--lean") == 0)
      lean = 1;
    else
      argv[nargs++] = argv[i];
  }
  argc = nargs;
  if (bench_parse_args(argc, argv, &b.args) != 0)
    return 2;
  b.nlanes = b.args.inflight;
  b.lanes = calloc(b.nlanes, sizeof(*b.lanes));
  b.pair_ns = calloc(b.args.pairs, sizeof(uint64_t));
  b.acq_ns = calloc(b.args.pairs, sizeof(uint64_t));
  b.rel_ns = calloc(b.args.pairs, sizeof(uint64_t));
  if (b.lanes == NULL || b.pair_ns == NULL || b.acq_ns == NULL || b.rel_ns == NULL) {
    fprintf(stderr, "lock_seq: out of memory\n");
    return 1;
  }
  lk_lock_opts_init(&b.opts);
  b.opts.wait_ms = 0;
  b.opts.lease_ms = 30000;

  uv_loop_init(&b.loop);
  lk_client_opts_init(&co);
  co.host = b.args.host;
  co.port = b.args.port;
  co.client_name = "latchkey-bench";
  if (lean)
    co.lock_layout = LK_LOCK_LAYOUT_LEAN;
  if (tls_ca != NULL) {
    co.tls.enable = 1;
    co.tls.ca_file = tls_ca;
  }
  rc = lk_client_new(&b.loop, &co, &b.client);
  if (rc != 0) {
    fprintf(stderr, "lock_seq: lk_client_new: %s\n", lk_strerror(rc));
    return 1;
  }
  for (i = 0; i < b.nlanes; i++) {
    /* Distinct per run and lane, so nothing left over can be in the way. */
    snprintf(name, sizeof(name), "lkbench:lk:%ld:%zu", (long)getpid(), i);
    b.lanes[i].b = &b;
    rc = lk_lock_new(b.client, name, &b.lanes[i].lock);
    if (rc != 0) {
      fprintf(stderr, "lock_seq: lk_lock_new: %s\n", lk_strerror(rc));
      return 1;
    }
    lk_lock_set_data(b.lanes[i].lock, &b);
  }
  /* The first acquires queue until the connection is ready; the warm-up
   * absorbs connecting and the one-time NOSCRIPT -> EVAL load. */
  start_phase(&b, b.args.warmup == 0);
  uv_run(&b.loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&b.loop);
  if (rc != 0)
    fprintf(stderr, "lock_seq: uv_loop_close: %s\n", uv_strerror(rc));

  if (!b.failed && b.done > 0 && (b.done == b.args.pairs || b.t_cap != 0)) {
    memset(&res, 0, sizeof(res));
    res.impl = tls_ca != NULL ? "latchkey-tls" : lean ? "latchkey-lean" : "latchkey";
    res.limit_impl = tls_ca != NULL ? "latchkey" : "raw";
    res.args = &b.args;
    res.elapsed_ns = b.t_end - b.t_start;
    res.cpu_ns = b.cpu_end - b.cpu_start;
    res.pair_ns = b.pair_ns;
    res.acq_ns = b.acq_ns;
    res.rel_ns = b.rel_ns;
    res.n = (size_t)b.done;
    res.commands_per_pair = (double)(b.cmds_end - b.cmds_start) / (double)b.done;
    bench_print(&res);
  } else if (!b.failed) {
    fprintf(stderr, "lock_seq: %" PRIu64 " of %" PRIu64 " pairs done\n", b.done,
            b.args.pairs);
    b.failed = 1;
  }
  free(b.lanes);
  free(b.pair_ns);
  free(b.acq_ns);
  free(b.rel_ns);
  return b.failed || rc != 0 ? 1 : 0;
}
