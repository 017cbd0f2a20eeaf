/* latchkey driven by another event loop (include/latchkey/adapters/,
 * docs/embedding.md), measured against latchkey on its own libuv loop in the
 * same run. Built once per host: adapters_libevent, adapters_libev,
 * adapters_glib (HOST_USE_* picks the host, as in test/adapters).
 *
 *  T1        sequential acquire+release pairs, native uv_run against the
 *            host loop driving the same uv loop, alternated (ratio host /
 *            native; goal: the adapter costs little).
 *  tick      the host's own 10 ms timer: its period idle, and while 64 lock
 *            objects on 8 names (two clients) contend through the adapter
 *            (p50/p99/max of the period; the host must stay the host).
 *  busy      the host spends 8 of every 10 ms in its own work: a held lock
 *            with a 600 ms lease must keep it (renewals every 200 ms), a
 *            waiter must still be woken by a release soon after (wake-up
 *            latency, against the same with an idle host), and a lease
 *            deleted on the server is reported lost at the next renewal
 *            (time from the DEL to on_lost).
 *
 * One JSON line per figure on stdout (bench_common.h); diagnostics on
 * stderr; exit 1 when a run failed or a hold was lost. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

/* test/adapters/host_loops.h wants the harness's clock; the bench has its
 * own (no scaling: a bench reports what it measured). */
static inline int64_t rt_now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }
static inline int64_t rt_scaled_ms(int64_t ms) { return ms; }
#include "../test/adapters/host_loops.h"

#if defined(HOST_USE_LIBEVENT)
#define HOST_NAME "libevent"
#elif defined(HOST_USE_LIBEV)
#define HOST_NAME "libev"
#else
#define HOST_NAME "glib"
#endif

/* The impl of every line: the host, and whether it has priorities. */
static const char *impl = "latchkey-" HOST_NAME;

enum { LANES = 64, NAMES = 8, TICKS_MAX = 4096, WAKES = 40 };

typedef struct bench_s bench_t;

typedef struct lane_s {
  bench_t *b;
  lk_lock_t *lock;
} lane_t;

struct bench_s {
  const char *host;
  int port;
  double seconds;
  uv_loop_t loop;
  host_t h;
  lk_client_t *c[2];
  lk_lock_opts_t try_once, wait_forever;
  /* T1 and the contention */
  lane_t lanes[LANES];
  size_t nlanes;
  uint64_t pairs, t_end;
  int stopping, active, failed;
  /* the host tick */
  uint64_t last_tick, ticks[TICKS_MAX];
  size_t nticks;
  int recording;
  /* busy host */
  int lost;
  uint64_t lost_ns;
  int granted;
  uint64_t granted_ns;
  int released;
  uv_timer_t release_timer; /* data: the bench */
  lk_lock_t *holder;
  uint64_t t_rel;
};

static void fail(bench_t *b, const char *what, int status) {
  fprintf(stderr, "adapters_%s: %s failed: %s\n", HOST_NAME, what, lk_err_name(status));
  b->failed = 1;
}

/* ---- the host tick ------------------------------------------------------------------ */

static void on_tick(host_t *h) {
  bench_t *b = h->data;
  uint64_t now = uv_hrtime();
  if (b->recording && b->last_tick != 0 && b->nticks < TICKS_MAX)
    b->ticks[b->nticks++] = now - b->last_tick;
  b->last_tick = now;
}

static void ticks_print(bench_t *b, const char *variant) {
  qsort(b->ticks, b->nticks, sizeof(uint64_t), bench_cmp_u64);
  bench_json_begin("adapters-tick", impl, variant, "period_p99_ms",
                   bench_pct_us(b->ticks, b->nticks, 0.99) / 1000.0, "ms");
  bench_json_num("period_p50_ms", bench_pct_us(b->ticks, b->nticks, 0.50) / 1000.0);
  bench_json_num("period_max_ms", bench_pct_us(b->ticks, b->nticks, 1.0) / 1000.0);
  bench_json_int("ticks", (long long)b->nticks);
  bench_json_end();
}

/* ---- pairs: every lane loops acquire -> release -> acquire until t_end ------------- */

static void lane_next(lane_t *ln);

static void on_released(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  (void)l;
  if (status != 0)
    fail(ln->b, "release", status);
  ln->b->pairs++;
  lane_next(ln);
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  if (status != 0) {
    fail(ln->b, "acquire", status);
    ln->b->active--;
    return;
  }
  int rc = lk_lock_release(l, on_released, ln);
  if (rc != 0) {
    fail(ln->b, "release start", rc);
    ln->b->active--;
  }
}

static void lane_next(lane_t *ln) {
  bench_t *b = ln->b;
  if (b->failed || uv_hrtime() >= b->t_end) {
    b->active--;
    return;
  }
  const lk_lock_opts_t *o = b->nlanes > 1 ? &b->wait_forever : &b->try_once;
  int rc = lk_lock_acquire(ln->lock, o, on_acquired, ln);
  if (rc != 0) {
    fail(b, "acquire start", rc);
    b->active--;
  }
}

/* Runs the lanes for `seconds` on the native loop or through the host; the
 * pairs per second. */
static double run_pairs(bench_t *b, int through_host, double seconds) {
  b->pairs = 0;
  b->active = (int)b->nlanes;
  uint64_t t0 = uv_hrtime();
  b->t_end = t0 + (uint64_t)(seconds * 1e9);
  for (size_t i = 0; i < b->nlanes; i++)
    lane_next(&b->lanes[i]);
  if (through_host) {
    host_kick(&b->h);
    uint64_t cap = b->t_end + 20000000000ull;
    while (b->active > 0 && uv_hrtime() < cap)
      host_iterate(&b->h);
  } else {
    while (b->active > 0)
      uv_run(&b->loop, UV_RUN_ONCE);
  }
  double secs = (double)(uv_hrtime() - t0) / 1e9;
  if (b->active > 0) {
    fprintf(stderr, "adapters_%s: %d lanes still running\n", HOST_NAME, b->active);
    b->failed = 1;
  }
  return secs > 0 ? (double)b->pairs / secs : 0.0;
}

static void open_lanes(bench_t *b, size_t n, int names) {
  b->nlanes = n;
  for (size_t i = 0; i < n; i++) {
    char name[96];
    snprintf(name, sizeof name, "lkbench:adapters:%d:%zu", (int)getpid(), i % (size_t)names);
    b->lanes[i].b = b;
    if (lk_lock_new(b->c[i % 2], name, &b->lanes[i].lock) != 0) {
      fprintf(stderr, "adapters_%s: lk_lock_new failed\n", HOST_NAME);
      exit(1);
    }
  }
}

static int closing;

static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  closing--;
}

static void close_lanes(bench_t *b) {
  closing = (int)b->nlanes;
  for (size_t i = 0; i < b->nlanes; i++)
    lk_lock_close(b->lanes[i].lock, on_lock_closed);
  while (closing > 0)
    uv_run(&b->loop, UV_RUN_ONCE);
  b->nlanes = 0;
}

/* ---- busy host: lease kept, wake-up, loss reported ---------------------------------- */

static void on_lost(lk_lock_t *l, int status, void *arg) {
  bench_t *b = arg;
  (void)l;
  (void)status;
  b->lost++;
  b->lost_ns = uv_hrtime();
}

static void on_flag_acquired(lk_lock_t *l, int status, void *arg) {
  bench_t *b = arg;
  (void)l;
  if (status != 0)
    fail(b, "acquire (busy phase)", status);
  b->granted = 1;
  b->granted_ns = uv_hrtime();
}

static void on_flag_released(lk_lock_t *l, int status, void *arg) {
  bench_t *b = arg;
  (void)l;
  if (status != 0)
    fail(b, "release (busy phase)", status);
  b->released = 1;
}

static void on_release_timer(uv_timer_t *t) {
  bench_t *b = t->data;
  b->t_rel = uv_hrtime();
  if (lk_lock_release(b->holder, on_flag_released, b) != 0) {
    fprintf(stderr, "adapters_%s: release start failed\n", HOST_NAME);
    b->failed = b->released = 1;
  }
}

static void host_until(bench_t *b, const int *flag, double seconds) {
  uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
  host_kick(&b->h);
  while (!*flag && uv_hrtime() < end)
    host_iterate(&b->h);
  if (!*flag) {
    fprintf(stderr, "adapters_%s: a busy-phase step did not finish\n", HOST_NAME);
    b->failed = 1;
  }
}

static void host_for(bench_t *b, double seconds) {
  uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
  host_kick(&b->h);
  while (uv_hrtime() < end)
    host_iterate(&b->h);
}

/* The holder keeps a 600 ms lease for 3 s; then WAKES times: holder holds,
 * the waiter (other client) waits, the holder releases after 50 ms and the
 * waiter's grant is timed from the release call. */
static void busy_phase(bench_t *b, int64_t busy_us, const char *variant) {
  lk_lock_t *holder, *waiter;
  char name[96];
  lk_lock_opts_t lease;
  uint64_t wake[WAKES];
  size_t nwake = 0;
  snprintf(name, sizeof name, "lkbench:adapters:%d:busy", (int)getpid());
  if (lk_lock_new(b->c[0], name, &holder) != 0 || lk_lock_new(b->c[1], name, &waiter) != 0)
    exit(1);
  lk_lock_set_lost_cb(holder, on_lost, b);
  lk_lock_opts_init(&lease);
  lease.lease_ms = -1; /* the client's default lease: 600 ms here, renewed */
  b->h.busy_us = busy_us;
  b->lost = 0;

  b->granted = 0;
  lk_lock_acquire(holder, &lease, on_flag_acquired, b);
  host_until(b, &b->granted, 5);
  host_for(b, 3.0); /* five lease periods with the host busy */
  int kept = b->lost == 0 && lk_lock_is_held(holder);
  b->released = 0;
  lk_lock_release(holder, on_flag_released, b);
  host_until(b, &b->released, 5);

  for (int i = 0; i < WAKES && !b->failed; i++) {
    b->granted = 0;
    lk_lock_acquire(holder, &b->try_once, on_flag_acquired, b);
    host_until(b, &b->granted, 5);
    b->granted = 0;
    lk_lock_acquire(waiter, &b->wait_forever, on_flag_acquired, b);
    /* The release starts from a uv timer, as a latchkey callback would
     * start it: a call from host code waits for the host's next turn. */
    b->released = 0;
    b->holder = holder;
    /* 50-60 ms: a fixed delay would lock its phase to the host's 10 ms
     * tick and measure one point of it. */
    uv_timer_start(&b->release_timer, on_release_timer, 50 + (uint64_t)(rand() % 11), 0);
    host_until(b, &b->granted, 5);
    host_until(b, &b->released, 5);
    wake[nwake++] = b->granted_ns - b->t_rel;
    b->released = 0;
    lk_lock_release(waiter, on_flag_released, b);
    host_until(b, &b->released, 5);
  }

  /* The lease taken away on the server: reported lost by the next renewal. */
  b->granted = 0;
  b->lost = 0;
  lk_lock_acquire(holder, &lease, on_flag_acquired, b);
  host_until(b, &b->granted, 5);
  redisContext *rc = redisConnect(b->host, b->port);
  uint64_t t_del = uv_hrtime();
  redisReply *r = rc != NULL && rc->err == 0 ? redisCommand(rc, "DEL %s", name) : NULL;
  if (r == NULL) {
    fprintf(stderr, "adapters_%s: DEL failed\n", HOST_NAME);
    b->failed = 1;
  }
  freeReplyObject(r);
  redisFree(rc);
  host_until(b, &b->lost, 5);
  double lost_ms = b->lost ? (double)(b->lost_ns - t_del) / 1e6 : -1;

  qsort(wake, nwake, sizeof(uint64_t), bench_cmp_u64);
  bench_json_begin("adapters-busy", impl, variant, "wake_p50_ms",
                   bench_pct_us(wake, nwake, 0.5) / 1000.0, "ms");
  bench_json_num("wake_p90_ms", bench_pct_us(wake, nwake, 0.9) / 1000.0);
  bench_json_num("wake_max_ms", bench_pct_us(wake, nwake, 1.0) / 1000.0);
  bench_json_int("host_busy_us_per_10ms", (long long)busy_us);
  bench_json_bool("lease_kept_3s", kept);
  bench_json_num("lost_reported_after_ms", lost_ms);
  bench_json_int("renewal_period_ms", 200);
  bench_json_end();
  if (!kept) {
    fprintf(stderr, "adapters_%s: the 600 ms lease was lost with the host busy\n", HOST_NAME);
    b->failed = 1;
  }
  b->h.busy_us = 0;
  closing = 2;
  lk_lock_close(holder, on_lock_closed);
  lk_lock_close(waiter, on_lock_closed);
  while (closing > 0)
    uv_run(&b->loop, UV_RUN_ONCE);
}

/* ---- main ------------------------------------------------------------------------- */

static int clients_open;

static void on_client_closed(lk_client_t *c) {
  (void)c;
  clients_open--;
}

int main(int argc, char **argv) {
  static bench_t b;
  int priorities = 0;
  b.host = "127.0.0.1";
  b.port = 6379;
  b.seconds = 2;
  for (int i = 1; i < argc; i++) {
    uint64_t v;
    if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
      b.host = argv[++i];
    else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc && bench_parse_port(argv[i + 1], &b.port) == 0)
      i++;
    else if (strcmp(argv[i], "--priorities") == 0)
      priorities = 1;
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc &&
             bench_parse_u64(argv[i + 1], &v) == 0 && v > 0 && v < 60)
      b.seconds = (double)v, i++;
    else {
      fprintf(stderr, "usage: %s [--host H] [--port P] [--seconds S per phase] [--priorities]\n"
                      "  --priorities: libevent only, the host sets up priority levels\n",
              argv[0]);
      return 2;
    }
  }
  if (uv_loop_init(&b.loop) != 0)
    return 1;
  lk_client_opts_t co;
  lk_client_opts_init(&co);
  co.host = b.host;
  co.port = b.port;
  co.default_lease_ms = 600;
  for (int i = 0; i < 2; i++)
    if (lk_client_new(&b.loop, &co, &b.c[i]) != 0)
      return 1;
  lk_lock_opts_init(&b.try_once);
  lk_lock_opts_init(&b.wait_forever);
  b.try_once.lease_ms = b.wait_forever.lease_ms = 30000;
  b.wait_forever.wait_ms = -1;
  uv_timer_init(&b.loop, &b.release_timer);
#if defined(HOST_USE_LIBEVENT)
  /* --priorities: the host sets up three priority levels before its events
   * exist (its tick at the middle one), so the adapter's take the highest. */
  if (priorities) {
    host_libevent_priorities = 3;
    impl = "latchkey-libevent-priorities";
  }
#else
  if (priorities) {
    fprintf(stderr, "--priorities is for libevent only\n");
    return 2;
  }
#endif
  b.release_timer.data = &b;
  if (host_open(&b.h, &b.loop) != 0)
    return 1;
  b.h.data = &b;
  b.h.on_tick = on_tick;

  /* T1: native and host alternated, two rounds each, after a warm-up. */
  open_lanes(&b, 1, 1);
  run_pairs(&b, 0, 0.3);
  double native[2], hosted[2];
  for (int r = 0; r < 2; r++) {
    native[r] = run_pairs(&b, 0, b.seconds);
    hosted[r] = run_pairs(&b, 1, b.seconds);
  }
  double nat = (native[0] + native[1]) / 2, hos = (hosted[0] + hosted[1]) / 2;
  bench_json_begin("adapters-T1", "latchkey-libuv", "sequential", "pairs_per_s", nat, "pairs/s");
  bench_json_end();
  bench_json_begin("adapters-T1", impl, "sequential", "pairs_per_s", hos,
                   "pairs/s");
  bench_json_str("limit_impl", "latchkey-libuv");
  bench_json_num("ratio_same_run", nat > 0 ? hos / nat : 0);
  bench_json_str("goal_ratio", ">= 0.9");
  bench_json_end();
  close_lanes(&b);

  /* The host's 10 ms tick, idle and under contention. */
  b.recording = 1;
  b.nticks = 0;
  b.last_tick = 0;
  host_for(&b, b.seconds);
  ticks_print(&b, "idle");
  open_lanes(&b, LANES, NAMES);
  b.nticks = 0;
  b.last_tick = 0;
  double rate = run_pairs(&b, 1, b.seconds);
  ticks_print(&b, "64 lanes on 8 names");
  fprintf(stderr, "adapters_%s: %.0f acquisitions/s under contention through the host\n",
          HOST_NAME, rate);
  b.recording = 0;
  close_lanes(&b);

  /* The host busy 8 of every 10 ms, against an idle host. */
  busy_phase(&b, 0, "host idle");
  busy_phase(&b, 8000, "host busy 80%");

  clients_open = 2;
  lk_client_close(b.c[0], on_client_closed);
  lk_client_close(b.c[1], on_client_closed);
  while (clients_open > 0)
    uv_run(&b.loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&b.release_timer, NULL);
  host_detach(&b.h);
  if (host_close(&b.h) != 0)
    b.failed = 1;
  uv_run(&b.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&b.loop) != 0)
    b.failed = 1;
  return b.failed ? 1 : 0;
}
