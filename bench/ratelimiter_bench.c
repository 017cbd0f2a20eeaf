/* ratelimiter_bench: grants per second of the rate limiter against a raw
 * loop of the same script, measured in the same run (bench/README.md
 * contract: JSON lines with value and limit_impl).
 *
 *   ratelimiter_bench [--host H] [--port P] [--grants N] [--inflight K]
 *                     [--rounds R]
 *
 * The limiter is set to a rate no run reaches (10^15 per second, OVERALL),
 * so every acquire is granted and the figure is the cost of one grant: the
 * script (it reads the config, counts back the grants that left the window,
 * adds a zset member) plus the library around it.
 *
 *   impl "latchkey": K limiter objects on one client, each acquiring one
 *     permit (wait 0) again from its callback, until N grants in all.
 *   impl "raw" (the limit): the same script (EVALSHA ratelimiter/acquire,
 *     with the request tag the library appends) on blocking hiredis, K
 *     calls written at once and their K replies read, until N.
 *
 * Variants: sequential (K = 1) and K in flight (default 64). Rounds of the
 * two implementations alternate; each line's value is the median over the
 * rounds. One JSON line per variant and impl on stdout, then a markdown
 * summary; progress on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "bench_common.h"
#include "bench_script.h"
#include "core/scripts.h"
#include "latchkey.h"

#define NAME "bench:ratelimiter"

static struct {
  const char *host;
  int port;
  uint64_t grants;
  size_t inflight;
  int rounds;
} C = {"127.0.0.1", 6379, 50000, 64, 3};

static void die(const char *what) {
  fprintf(stderr, "ratelimiter_bench: %s\n", what);
  exit(1);
}

/* --- raw --- */

static redisContext *raw_connect(void) {
  struct timeval tv = {10, 0};
  redisContext *c = redisConnectWithTimeout(C.host, C.port, tv);
  if (c == NULL || c->err)
    die("cannot connect");
  return c;
}

static const char *keys[5] = {NAME, "{" NAME "}:value", "{" NAME "}:value:raw",
                              "{" NAME "}:permits", "{" NAME "}:permits:raw"};

static double run_raw(size_t k) {
  const lk__script_t *s = lk__script_find("ratelimiter/acquire");
  redisContext *c = raw_connect();
  redisReply *r = redisCommand(c, "SCRIPT LOAD %b", s->text, s->len);
  unsigned char id[16] = {0x52, 0x41, 0x57};
  uint64_t seq = 0, done = 0, warm = C.grants / 10, t0 = 0;
  const char *argv[11];
  size_t lens[11];
  if (r == NULL || r->type != REDIS_REPLY_STRING)
    die("SCRIPT LOAD failed");
  freeReplyObject(r);
  argv[0] = "EVALSHA", lens[0] = 7;
  argv[1] = s->sha1, lens[1] = 40;
  argv[2] = "5", lens[2] = 1;
  for (int i = 0; i < 5; i++)
    argv[3 + i] = keys[i], lens[3 + i] = strlen(keys[i]);
  argv[8] = "1", lens[8] = 1;
  argv[9] = (const char *)id, lens[9] = sizeof id;
  argv[10] = BENCH_TAG, lens[10] = BENCH_TAG_LEN;
  while (done < warm + C.grants) {
    if (done >= warm && t0 == 0)
      t0 = uv_hrtime();
    for (size_t i = 0; i < k; i++) {
      seq++;
      for (int b = 0; b < 8; b++)
        id[15 - b] = (unsigned char)(seq >> (8 * b));
      redisAppendCommandArgv(c, 11, argv, lens);
    }
    for (size_t i = 0; i < k; i++) {
      redisReply *inner;
      if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        die("raw: no reply");
      inner = bench_script_reply(r);
      if (inner->type != REDIS_REPLY_ARRAY || inner->elements != 3 ||
          inner->element[0]->integer != 1)
        die("raw: not a grant");
      freeReplyObject(r);
      done++;
    }
  }
  redisFree(c);
  return (double)C.grants / ((double)(uv_hrtime() - t0) / 1e9);
}

/* --- latchkey --- */

typedef struct {
  uv_loop_t loop;
  lk_client_t *c;
  lk_ratelimiter_t **rl;
  uint64_t done, target, warm, t0, t_end;
  size_t active;
  int failed;
} lk_run_t;

static void on_grant(lk_ratelimiter_t *rl, int status, void *arg) {
  lk_run_t *x = arg;
  if (status != 0) {
    fprintf(stderr, "acquire: %s\n", lk_err_name(status));
    x->failed = 1;
  }
  if (++x->done == x->warm)
    x->t0 = uv_hrtime();
  if (x->failed || x->done + x->active > x->target + x->warm) {
    if (--x->active == 0)
      x->t_end = uv_hrtime();
    return;
  }
  if (lk_ratelimiter_try_acquire(rl, 1, on_grant, x) != 0)
    die("try_acquire");
}

static void on_closed(lk_ratelimiter_t *rl) {
  (*(size_t *)lk_ratelimiter_get_data(rl))--;
}

static double run_lk(size_t k) {
  lk_run_t x;
  lk_client_opts_t o;
  size_t open;
  memset(&x, 0, sizeof x);
  x.target = C.grants;
  x.warm = C.grants / 10;
  if (uv_loop_init(&x.loop) != 0)
    die("uv_loop_init");
  lk_client_opts_init(&o);
  o.host = C.host;
  o.port = C.port;
  if (lk_client_new(&x.loop, &o, &x.c) != 0)
    die("lk_client_new");
  x.rl = calloc(k, sizeof *x.rl);
  for (size_t i = 0; i < k; i++) {
    if (lk_ratelimiter_new(x.c, NAME, &x.rl[i]) != 0)
      die("lk_ratelimiter_new");
    x.active++;
    if (lk_ratelimiter_try_acquire(x.rl[i], 1, on_grant, &x) != 0)
      die("try_acquire");
  }
  while (x.active > 0)
    uv_run(&x.loop, UV_RUN_ONCE);
  if (x.failed)
    die("latchkey: an acquire failed");
  open = k;
  for (size_t i = 0; i < k; i++) {
    lk_ratelimiter_set_data(x.rl[i], &open);
    lk_ratelimiter_close(x.rl[i], on_closed);
  }
  while (open > 0)
    uv_run(&x.loop, UV_RUN_ONCE);
  lk_client_close(x.c, NULL);
  uv_run(&x.loop, UV_RUN_DEFAULT);
  uv_loop_close(&x.loop);
  free(x.rl);
  return (double)(x.done - x.warm) / ((double)(x.t_end - x.t0) / 1e9);
}

static void reset(void) {
  redisContext *c = raw_connect();
  redisReply *r = redisCommand(c, "DEL %s %s %s %s %s", keys[0], keys[1], keys[2], keys[3],
                               keys[4]);
  freeReplyObject(r);
  r = redisCommand(c, "HSET %s rate 1000000000000000 interval 1000 type 0 keepAliveTime 0",
                   NAME);
  if (r == NULL || r->type == REDIS_REPLY_ERROR)
    die("cannot set the rate");
  freeReplyObject(r);
  redisFree(c);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  double lk[2][16], raw[2][16], m_lk[2], m_raw[2];
  size_t ks[2];
  uint64_t v;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
      C.host = argv[++i];
    else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc && bench_parse_port(argv[i + 1], &C.port) == 0)
      i++;
    else if (strcmp(argv[i], "--grants") == 0 && i + 1 < argc &&
             bench_parse_u64(argv[i + 1], &v) == 0 && v > 0 && v <= 10000000)
      C.grants = v, i++;
    else if (strcmp(argv[i], "--inflight") == 0 && i + 1 < argc &&
             bench_parse_u64(argv[i + 1], &v) == 0 && v > 1 && v <= 4096)
      C.inflight = (size_t)v, i++;
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
             bench_parse_u64(argv[i + 1], &v) == 0 && v > 0 && v <= 16)
      C.rounds = (int)v, i++;
    else {
      fprintf(stderr, "usage: %s [--host H] [--port P] [--grants N] [--inflight K] [--rounds R]\n",
              argv[0]);
      return 2;
    }
  }
  ks[0] = 1, ks[1] = C.inflight;
  for (int r = 0; r < C.rounds; r++) {
    for (int k = 0; k < 2; k++) {
      reset();
      if (r % 2 == 0) {
        raw[k][r] = run_raw(ks[k]);
        reset();
        lk[k][r] = run_lk(ks[k]);
      } else {
        lk[k][r] = run_lk(ks[k]);
        reset();
        raw[k][r] = run_raw(ks[k]);
      }
      fprintf(stderr, "# round %d/%d, %zu in flight: raw %.0f latchkey %.0f grants/s\n", r + 1,
              C.rounds, ks[k], raw[k][r], lk[k][r]);
    }
  }
  for (int k = 0; k < 2; k++) {
    char variant[32];
    m_lk[k] = median(lk[k], C.rounds);
    m_raw[k] = median(raw[k], C.rounds);
    if (ks[k] == 1)
      snprintf(variant, sizeof variant, "sequential");
    else
      snprintf(variant, sizeof variant, "%zu in flight", ks[k]);
    bench_json_begin("ratelimiter_grants", "raw", variant, "grants_per_s", m_raw[k], "1/s");
    bench_json_end();
    bench_json_begin("ratelimiter_grants", "latchkey", variant, "grants_per_s", m_lk[k], "1/s");
    bench_json_str("limit_impl", "raw");
    bench_json_end();
  }
  printf("\n## latchkey rate limiter: grants per second, medians of %d interleaved rounds\n\n",
         C.rounds);
  printf("| run | latchkey | raw loop (limit) | ratio |\n|---|---|---|---|\n");
  printf("| sequential | %.0f | %.0f | %.2f |\n", m_lk[0], m_raw[0], m_lk[0] / m_raw[0]);
  printf("| %zu in flight | %.0f | %.0f | %.2f |\n", ks[1], m_lk[1], m_raw[1], m_lk[1] / m_raw[1]);
  return 0;
}
