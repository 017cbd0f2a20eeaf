/* B6, the cost of one operation (bench/README.md, "B6"):
 *
 * - heap allocations per acquire+release pair in steady state, for the
 *   whole process and for latchkey's own code. The whole process is counted
 *   by an interposer compiled into this program: it defines malloc, calloc,
 *   realloc and free, which the dynamic linker then binds for libuv, hiredis
 *   and libc too, and forwards them to glibc's __libc_* functions (no
 *   LD_PRELOAD; glibc only, else the whole-process figure is left out).
 *   latchkey's share is counted by a wrapper installed with
 *   lk_replace_allocator. A realloc counts as an allocation.
 * - bytes per idle lock object: latchkey's live heap (the wrapper keeps a
 *   size header) after creating N lock objects, minus before, over N.
 * - bytes per pending waiter: N objects each waiting (wait 30 s) for a name
 *   another owner holds, minus the same N idle objects, over N; on N
 *   distinct names (a subscription each) and on one name (one shared
 *   subscription). The least of passes 2 and 3: the first grows the
 *   buffers and pools a burst of N subscriptions needs (reported beside it
 *   as first_pass_bytes).
 *
 *   cost [--host H] [--port P] [--pairs N] [--objects N]
 *
 * (N pairs sequential, default 5000, then 5N at 64 in flight; each phase
 * stops early after 5 s: the counts need a few thousand pairs, not more.)
 *
 * Prints JSON lines (bench "B6") with the goals: <= 1 allocation per pair in
 * latchkey, <= 2 in the whole process, <= 512 bytes per idle lock and per
 * pending waiter. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "latchkey.h"

#include "bench_common.h"

/* --- whole process: the interposer --- */

static uint64_t proc_allocs, proc_frees;

#if defined(__GLIBC__)
#define HAVE_INTERPOSER 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void __libc_free(void *ptr);

void *malloc(size_t size) {
  __atomic_add_fetch(&proc_allocs, 1, __ATOMIC_RELAXED);
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  __atomic_add_fetch(&proc_allocs, 1, __ATOMIC_RELAXED);
  return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size) {
  __atomic_add_fetch(&proc_allocs, 1, __ATOMIC_RELAXED);
  return __libc_realloc(ptr, size);
}

void free(void *ptr) {
  if (ptr != NULL)
    __atomic_add_fetch(&proc_frees, 1, __ATOMIC_RELAXED);
  __libc_free(ptr);
}
#else
#define HAVE_INTERPOSER 0
#endif

/* --- latchkey's share: lk_replace_allocator with a size header --- */

typedef union {
  size_t size;
  max_align_t align;
} hdr_t;

static uint64_t lk_allocs, lk_frees;
static size_t lk_live;

static void *lkc_malloc(size_t n) {
  hdr_t *h = malloc(sizeof(hdr_t) + n);
  if (h == NULL)
    return NULL;
  lk_allocs++;
  h->size = n;
  lk_live += n;
  return h + 1;
}

static void *lkc_calloc(size_t c, size_t n) {
  void *p;
  if (n != 0 && c > ((size_t)-1 - sizeof(hdr_t)) / n)
    return NULL;
  p = lkc_malloc(c * n);
  if (p != NULL)
    memset(p, 0, c * n);
  return p;
}

static void *lkc_realloc(void *p, size_t n) {
  hdr_t *h;
  size_t old;
  if (p == NULL)
    return lkc_malloc(n);
  h = (hdr_t *)p - 1;
  old = h->size;
  h = realloc(h, sizeof(hdr_t) + n);
  if (h == NULL)
    return NULL;
  lk_allocs++;
  lk_live = lk_live - old + n;
  h->size = n;
  return h + 1;
}

static void lkc_free(void *p) {
  hdr_t *h;
  if (p == NULL)
    return;
  h = (hdr_t *)p - 1;
  lk_frees++;
  lk_live -= h->size;
  free(h);
}

/* --- the run --- */

typedef struct lane_s {
  lk_lock_t *lock;
  struct cost_s *c;
} lane_t;

typedef struct cost_s {
  const char *host;
  int port;
  uint64_t pairs;
  size_t objects;
  uv_loop_t loop;
  lk_client_t *client;
  lane_t *lanes;
  size_t nlanes;
  uint64_t target, started, done, cap_ns;
  size_t busy;
  lk_lock_opts_t opts;
  int failed;
  /* waiters */
  size_t pending, settled;
} cost_t;

static void lane_next(lane_t *ln);

static void on_released(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  if (status != 0 || lk_lock_result(l) != 1) {
    fprintf(stderr, "cost: release: %s\n", lk_err_name(status));
    ln->c->failed = 1;
  }
  ln->c->done++;
  lane_next(ln);
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  lane_t *ln = arg;
  int rc;
  if (status != 0) {
    fprintf(stderr, "cost: acquire: %s\n", lk_err_name(status));
    ln->c->failed = 1;
    ln->c->busy--;
    return;
  }
  rc = lk_lock_release(l, on_released, ln);
  if (rc != 0) {
    fprintf(stderr, "cost: release call: %s\n", lk_err_name(rc));
    ln->c->failed = 1;
    ln->c->busy--;
  }
}

static void lane_next(lane_t *ln) {
  cost_t *c = ln->c;
  int rc;
  if (c->failed || c->started >= c->target || uv_hrtime() >= c->cap_ns) {
    c->busy--;
    return;
  }
  c->started++;
  rc = lk_lock_acquire(ln->lock, &c->opts, on_acquired, ln);
  if (rc != 0) {
    fprintf(stderr, "cost: acquire call: %s\n", lk_err_name(rc));
    c->failed = 1;
    c->busy--;
  }
}

/* Runs `pairs` pairs over the first k lanes. */
static void run_pairs(cost_t *c, size_t k, uint64_t pairs) {
  size_t i;
  c->target = pairs;
  c->started = c->done = 0;
  c->cap_ns = uv_hrtime() + 5000000000ull;
  c->busy = k;
  for (i = 0; i < k; i++)
    lane_next(&c->lanes[i]);
  while (c->busy > 0 && uv_run(&c->loop, UV_RUN_ONCE) != 0)
    ;
}

static void pairs_line(const char *variant, const char *metric, double value, double goal,
                       uint64_t pairs, int available) {
  bench_json_begin("B6", "latchkey", variant, metric, available ? value : -1, "allocs/pair");
  bench_json_int("pairs", (long long)pairs);
  if (available) {
    char g[32];
    snprintf(g, sizeof(g), "<= %g", goal);
    bench_json_str("goal", g);
    bench_json_bool("met", value <= goal);
  } else {
    bench_json_str("note", "no interposer on this libc");
  }
  bench_json_end();
}

static void measure_pairs(cost_t *c, size_t k, uint64_t pairs) {
  uint64_t p0, l0, p1, l1, pf0, pf1;
  char variant[48];
  if (k > 1)
    snprintf(variant, sizeof(variant), "%zu in flight", k);
  else
    snprintf(variant, sizeof(variant), "sequential");
  run_pairs(c, k, pairs / 5 + k); /* warm-up: pools and buffers reach size */
  p0 = __atomic_load_n(&proc_allocs, __ATOMIC_RELAXED);
  pf0 = __atomic_load_n(&proc_frees, __ATOMIC_RELAXED);
  l0 = lk_allocs;
  run_pairs(c, k, pairs);
  p1 = __atomic_load_n(&proc_allocs, __ATOMIC_RELAXED);
  pf1 = __atomic_load_n(&proc_frees, __ATOMIC_RELAXED);
  l1 = lk_allocs;
  if (c->failed)
    return;
  pairs_line(variant, "allocs_per_pair_latchkey", (double)(l1 - l0) / (double)c->done, 1,
             c->done, 1);
  pairs_line(variant, "allocs_per_pair_process", (double)(p1 - p0) / (double)c->done, 2,
             c->done, HAVE_INTERPOSER);
  fprintf(stderr, "# cost %s: %" PRIu64 " pairs, process allocs %" PRIu64 " frees %" PRIu64
                  ", latchkey allocs %" PRIu64 "\n",
          variant, c->done, p1 - p0, pf1 - pf0, l1 - l0);
}

static void on_waiter_done(lk_lock_t *l, int status, void *arg) {
  cost_t *c = arg;
  if (status != LK_ECANCELED) {
    fprintf(stderr, "cost: waiter ended with %s, not canceled\n", lk_err_name(status));
    c->failed = 1;
  }
  c->pending--;
}

static void on_settle(uv_timer_t *t) {
  cost_t *c = t->data;
  c->settled = 1;
}

static void run_for(cost_t *c, uint64_t ms) {
  uv_timer_t t;
  uv_timer_init(&c->loop, &t);
  t.data = c;
  c->settled = 0;
  uv_timer_start(&t, on_settle, ms, 0);
  while (!c->settled && uv_run(&c->loop, UV_RUN_ONCE) != 0)
    ;
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&c->loop, UV_RUN_NOWAIT);
}

static int hold_names(redisContext *rc, lk_lock_t **locks, size_t n, int one_name) {
  size_t i;
  for (i = 0; i < (one_name ? 1 : n); i++) {
    const char *name = lk_lock_name(locks[i]);
    redisAppendCommand(rc, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name);
    redisAppendCommand(rc, "PEXPIRE %s 60000", name);
  }
  for (i = 0; i < (one_name ? 1 : n) * 2; i++) {
    redisReply *r = NULL;
    if (redisGetReply(rc, (void **)&r) != REDIS_OK || r == NULL || r->type == REDIS_REPLY_ERROR)
      return -1;
    freeReplyObject(r);
  }
  return 0;
}

/* N objects start waiting; returns latchkey's live bytes once they all sleep,
 * then cancels them. */
static int measure_waiters(cost_t *c, lk_lock_t **objs, size_t n, size_t *live_out) {
  lk_lock_opts_t o;
  size_t i;
  lk_lock_opts_init(&o);
  o.wait_ms = 30000;
  o.lease_ms = 30000;
  for (i = 0; i < n; i++) {
    if (lk_lock_acquire(objs[i], &o, on_waiter_done, c) != 0)
      return -1;
    c->pending++;
  }
  /* Busy replies, SUBSCRIBE confirmations, the retry each confirmation
   * triggers: settled once the live bytes stop moving (at most 5 s). */
  {
    size_t prev = (size_t)-1;
    int k;
    for (k = 0; k < 50; k++) {
      run_for(c, 100);
      if (k >= 3 && lk_live == prev)
        break;
      prev = lk_live;
    }
  }
  *live_out = lk_live;
  for (i = 0; i < n; i++)
    lk_lock_cancel(objs[i]);
  while (c->pending > 0 && uv_run(&c->loop, UV_RUN_ONCE) != 0)
    ;
  run_for(c, 100); /* UNSUBSCRIBE replies */
  return 0;
}

/* Three passes: the first grows what is kept for reuse (operation records,
 * output buffers) to a burst of n waiters; the least of the next two is what
 * each waiter itself holds (in-flight commands at the snapshot add noise). */
static int waiter_bytes(cost_t *c, lk_lock_t **objs, size_t n, double *first, double *steady) {
  size_t before, live;
  int pass;
  for (pass = 0; pass < 3; pass++) {
    double b;
    before = lk_live;
    if (measure_waiters(c, objs, n, &live) != 0 || c->failed)
      return -1;
    b = ((double)live - (double)before) / (double)n;
    if (pass == 0)
      *first = b;
    else if (pass == 1 || b < *steady)
      *steady = b;
  }
  return 0;
}

static void bytes_line(const char *metric, const char *variant, double value, double first,
                       size_t n) {
  bench_json_begin("B6", "latchkey", variant, metric, value, "bytes");
  bench_json_int("objects", (long long)n);
  if (first >= 0)
    bench_json_num("first_pass_bytes", first);
  bench_json_str("goal", "<= 512");
  bench_json_bool("met", value <= 512);
  bench_json_end();
}

static void on_closed(lk_lock_t *l) {
  cost_t *c = lk_lock_get_data(l);
  c->pending--;
}

int main(int argc, char **argv) {
  cost_t c;
  lk_client_opts_t co;
  lk_lock_t **objs;
  redisContext *rc;
  struct timeval tv = {5, 0};
  size_t i, live0, live1, live_w;
  double first, steady;
  char name[96];
  uint64_t v;
  int rcode;

  memset(&c, 0, sizeof(c));
  c.host = "127.0.0.1";
  c.port = 6379;
  c.pairs = 5000;
  c.objects = 1000;
  for (i = 1; i < (size_t)argc; i++) {
    const char *s = argv[i], *val = i + 1 < (size_t)argc ? argv[i + 1] : NULL;
    if (val != NULL && strcmp(s, "--host") == 0)
      c.host = val;
    else if (val != NULL && strcmp(s, "--port") == 0 && bench_parse_port(val, &c.port) == 0)
      ;
    else if (val != NULL && strcmp(s, "--pairs") == 0 && bench_parse_u64(val, &v) == 0 &&
             v >= 100 && v <= 10000000)
      c.pairs = v;
    else if (val != NULL && strcmp(s, "--objects") == 0 && bench_parse_u64(val, &v) == 0 &&
             v >= 10 && v <= 1000000)
      c.objects = (size_t)v;
    else {
      fprintf(stderr, "usage: %s [--host H] [--port P] [--pairs N] [--objects N]\n", argv[0]);
      return 2;
    }
    i++;
  }
  if (lk_replace_allocator(lkc_malloc, lkc_realloc, lkc_calloc, lkc_free) != 0)
    return 1;
  rc = redisConnectWithTimeout(c.host, c.port, tv);
  if (rc == NULL || rc->err) {
    fprintf(stderr, "cost: cannot reach %s:%d\n", c.host, c.port);
    return 1;
  }
  uv_loop_init(&c.loop);
  lk_client_opts_init(&co);
  co.host = c.host;
  co.port = c.port;
  co.client_name = "latchkey-bench-cost";
  if (lk_client_new(&c.loop, &co, &c.client) != 0)
    return 1;
  lk_lock_opts_init(&c.opts);
  c.opts.wait_ms = 0;
  c.opts.lease_ms = 30000;

  /* Allocations per pair: one lane, then 64. */
  c.nlanes = 64;
  c.lanes = calloc(c.nlanes, sizeof(*c.lanes));
  for (i = 0; i < c.nlanes; i++) {
    snprintf(name, sizeof(name), "lkbench:cost:%ld:pair:%zu", (long)getpid(), i);
    c.lanes[i].c = &c;
    if (lk_lock_new(c.client, name, &c.lanes[i].lock) != 0)
      return 1;
  }
  measure_pairs(&c, 1, c.pairs);
  measure_pairs(&c, 64, c.pairs * 5);

  /* Bytes per idle lock object (names as long as the pair lanes'). */
  objs = calloc(c.objects, sizeof(*objs));
  live0 = lk_live;
  for (i = 0; i < c.objects; i++) {
    snprintf(name, sizeof(name), "lkbench:cost:%ld:obj:%zu", (long)getpid(), i);
    if (lk_lock_new(c.client, name, &objs[i]) != 0)
      return 1;
    lk_lock_set_data(objs[i], &c);
  }
  live1 = lk_live;
  bytes_line("bytes_per_idle_lock", "lock object", (double)(live1 - live0) / (double)c.objects,
             -1, c.objects);

  /* Bytes per pending waiter. The pub/sub connection is warmed first (one
   * waiter on a held name), so only per-waiter memory is counted. */
  if (hold_names(rc, objs, c.objects, 0) != 0) {
    fprintf(stderr, "cost: cannot hold the names\n");
    return 1;
  }
  if (measure_waiters(&c, objs, 1, &live_w) != 0)
    return 1;
  if (waiter_bytes(&c, objs, c.objects, &first, &steady) != 0)
    return 1;
  bytes_line("bytes_per_pending_waiter", "distinct names", steady, first, c.objects);
  /* One name: every object waits for objs[0]'s name. */
  {
    lk_lock_t **same = calloc(c.objects, sizeof(*same));
    const char *n0 = lk_lock_name(objs[0]);
    for (i = 0; i < c.objects; i++) {
      if (lk_lock_new(c.client, n0, &same[i]) != 0)
        return 1;
      lk_lock_set_data(same[i], &c);
    }
    if (waiter_bytes(&c, same, c.objects, &first, &steady) != 0)
      return 1;
    bytes_line("bytes_per_pending_waiter", "one name", steady, first, c.objects);
    c.pending = c.objects;
    for (i = 0; i < c.objects; i++)
      lk_lock_close(same[i], on_closed);
    while (c.pending > 0 && uv_run(&c.loop, UV_RUN_ONCE) != 0)
      ;
    free(same);
  }

  /* Clean up: objects, names, client. */
  c.pending = c.objects;
  for (i = 0; i < c.objects; i++)
    lk_lock_close(objs[i], on_closed);
  while (c.pending > 0 && uv_run(&c.loop, UV_RUN_ONCE) != 0)
    ;
  for (i = 0; i < c.objects; i++) {
    redisReply *r;
    snprintf(name, sizeof(name), "lkbench:cost:%ld:obj:%zu", (long)getpid(), i);
    r = redisCommand(rc, "DEL %s", name);
    if (r != NULL)
      freeReplyObject(r);
  }
  for (i = 0; i < c.nlanes; i++) {
    lk_lock_set_data(c.lanes[i].lock, &c);
    c.pending++;
    lk_lock_close(c.lanes[i].lock, on_closed);
  }
  while (c.pending > 0 && uv_run(&c.loop, UV_RUN_ONCE) != 0)
    ;
  lk_client_close(c.client, NULL);
  uv_run(&c.loop, UV_RUN_DEFAULT);
  rcode = uv_loop_close(&c.loop);
  redisFree(rc);
  free(objs);
  free(c.lanes);
  return c.failed || rcode != 0 ? 1 : 0;
}
