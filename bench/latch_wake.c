/* latch_wake: how long after the final count_down each awaiter hears that
 * a countdown latch opened (bench/README.md contract: JSON lines with value,
 * limit, ratio).
 *
 *   latch_wake [--host H] [--port P] [--awaiters N] [--rounds R] [--warmup W]
 *
 * One round: the latch is armed with count 1, N awaiters wait on it
 * (subscribed, their first look done, asleep), both sides idle for
 * IDLE_MS, then t0 is taken and the final count_down is sent; each awaiter's wake-up latency is the time from
 * t0 to its completion. Rounds of the two implementations alternate (so
 * machine noise hits both alike), and p50/p99 over all awaiters of all
 * measured rounds are reported, plus the slowest awaiter per round.
 *
 *   impl "latchkey": one client (its command and pub/sub connections), one
 *     counter object and N awaiter objects (lk_latch_await, wait -1).
 *   impl "raw" (the limit): the same script sequence with no library logic,
 *     on two blocking hiredis connections: EVALSHA latch/count_down on the
 *     command connection, its reply, the "0" message on the subscriber, then
 *     the N awaiters' EVALSHA latch/state in one write, and their N replies,
 *     each timestamped as it is parsed. This is what latchkey must do at
 *     least: the message alone does not prove the latch is open now (a "0"
 *     can predate a re-arm), so every awaiter looks once more.
 *
 * ratio = latchkey / raw (latency: 1.0 is the limit, higher is slower).
 * Run it pinned like the other benches: redis-server on CPU 0, this on
 * CPU 1 (taskset). One JSON line per metric on stdout, then a markdown
 * summary; progress on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/scripts.h"
#include "latchkey.h"

#include "bench_script.h"

#define MAX_AWAITERS 10000
/* Both sides sit idle this long before the final count_down, as awaiters
 * do in real life: client and server then wake from idle for it, which
 * costs the same on both sides. */
#define IDLE_MS 10

typedef struct args_s {
  const char *host;
  int port;
  int awaiters;
  int rounds;
  int warmup;
} args_t;

static void die(const char *what) {
  fprintf(stderr, "latch_wake: %s\n", what);
  exit(1);
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double pct_us(const uint64_t *v, size_t n, double q) {
  size_t rank = (size_t)(q * (double)n + 0.999999);
  if (n == 0)
    return 0;
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)v[rank - 1] / 1000.0;
}

/* ---- samples ---- */

typedef struct samples_s {
  uint64_t *each; /* every awaiter of every measured round */
  size_t n_each;
  uint64_t *last; /* the slowest awaiter of each measured round */
  size_t n_last;
} samples_t;

static void samples_init(samples_t *s, const args_t *a) {
  s->each = calloc((size_t)a->rounds * (size_t)a->awaiters, sizeof(uint64_t));
  s->last = calloc((size_t)a->rounds, sizeof(uint64_t));
  s->n_each = s->n_last = 0;
  if (s->each == NULL || s->last == NULL)
    die("out of memory");
}

static void samples_round(samples_t *s, const uint64_t *lat, int n) {
  uint64_t worst = 0;
  for (int i = 0; i < n; i++) {
    s->each[s->n_each++] = lat[i];
    if (lat[i] > worst)
      worst = lat[i];
  }
  s->last[s->n_last++] = worst;
}

/* ---- latchkey ---- */

typedef struct lk_side_s {
  uv_loop_t loop;
  lk_client_t *client;
  lk_latch_t *counter;
  lk_latch_t **awaiters;
  uint64_t *woke_ns;
  int n;
  int woke;
  int counted;
  int failed;
  uint64_t t0;
  char name[96];
} lk_side_t;

static void run_until(uv_loop_t *loop, const int *flag) {
  while (!*flag)
    uv_run(loop, UV_RUN_ONCE);
}

static void on_tick(uv_timer_t *t) {
  int *flag = t->data;
  *flag = 1;
}

/* Runs the loop for ms so the library finishes what it started. */
static void settle(uv_loop_t *loop, uint64_t ms) {
  uv_timer_t t;
  int done = 0;
  uv_timer_init(loop, &t);
  t.data = &done;
  uv_timer_start(&t, on_tick, ms, 0);
  run_until(loop, &done);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void on_done(lk_latch_t *l, int status, void *arg) {
  int *flag = arg;
  if (status != 0) {
    fprintf(stderr, "latch_wake: latchkey operation failed: %s %s\n", lk_err_name(status),
            lk_latch_error_text(l));
    exit(1);
  }
  *flag = 1;
}

static void on_woke(lk_latch_t *l, int status, void *arg) {
  lk_side_t *s = lk_latch_get_data(l);
  int i = (int)(intptr_t)arg;
  if (status != 0) {
    fprintf(stderr, "latch_wake: await failed: %s\n", lk_err_name(status));
    exit(1);
  }
  s->woke_ns[i] = uv_hrtime() - s->t0;
  s->woke++;
}

static void on_counted(lk_latch_t *l, int status, void *arg) {
  lk_side_t *s = arg;
  if (status != 0 || lk_latch_result(l) != 0) {
    fprintf(stderr, "latch_wake: final count_down: %s, result %" PRId64 "\n",
            lk_err_name(status), lk_latch_result(l));
    exit(1);
  }
  s->counted = 1;
}

static long long numsub(redisContext *side, const char *channel) {
  redisReply *r = redisCommand(side, "PUBSUB NUMSUB %s", channel);
  long long n;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
    die("PUBSUB NUMSUB failed");
  n = r->element[1]->integer;
  freeReplyObject(r);
  return n;
}

static void lk_side_start(lk_side_t *s, const args_t *a) {
  lk_client_opts_t o;
  int i;
  memset(s, 0, sizeof(*s));
  s->n = a->awaiters;
  snprintf(s->name, sizeof(s->name), "lkbench:latch:%ld", (long)getpid());
  if (uv_loop_init(&s->loop) != 0)
    die("uv_loop_init");
  lk_client_opts_init(&o);
  o.host = a->host;
  o.port = a->port;
  if (lk_client_new(&s->loop, &o, &s->client) != 0)
    die("lk_client_new");
  s->awaiters = calloc((size_t)s->n, sizeof(*s->awaiters));
  s->woke_ns = calloc((size_t)s->n, sizeof(uint64_t));
  if (s->awaiters == NULL || s->woke_ns == NULL)
    die("out of memory");
  if (lk_latch_new(s->client, s->name, NULL, &s->counter) != 0)
    die("lk_latch_new");
  for (i = 0; i < s->n; i++) {
    if (lk_latch_new(s->client, s->name, NULL, &s->awaiters[i]) != 0)
      die("lk_latch_new");
    lk_latch_set_data(s->awaiters[i], s);
  }
}

static void lk_round(lk_side_t *s, redisContext *side, samples_t *out) {
  int set = 0, i;
  char channel[160];
  snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__{%s}", s->name);
  if (lk_latch_try_set_count(s->counter, 1, on_done, &set) != 0)
    die("try_set_count");
  run_until(&s->loop, &set);
  s->woke = 0;
  s->counted = 0;
  for (i = 0; i < s->n; i++)
    if (lk_latch_await(s->awaiters[i], -1, on_woke, (void *)(intptr_t)i) != 0)
      die("await");
  /* Subscribed, every first look and the look after the subscription done:
   * everyone is asleep. */
  do
    settle(&s->loop, 5);
  while (numsub(side, channel) < 1);
  settle(&s->loop, IDLE_MS);
  if (s->woke != 0)
    die("an awaiter woke before the final count_down");
  s->t0 = uv_hrtime();
  if (lk_latch_count_down(s->counter, on_counted, s) != 0)
    die("count_down");
  while (s->woke < s->n || !s->counted)
    uv_run(&s->loop, UV_RUN_ONCE);
  if (out != NULL)
    samples_round(out, s->woke_ns, s->n);
}

static void on_latch_closed(lk_latch_t *l) {
  int *left = lk_latch_get_data(l);
  (*left)--;
}

static void on_client_closed(lk_client_t *c) {
  int *flag = lk_client_get_data(c);
  *flag = 1;
}

static void lk_side_finish(lk_side_t *s) {
  int left = s->n + 1, closed = 0, i;
  lk_latch_set_data(s->counter, &left);
  lk_latch_close(s->counter, on_latch_closed);
  for (i = 0; i < s->n; i++) {
    lk_latch_set_data(s->awaiters[i], &left);
    lk_latch_close(s->awaiters[i], on_latch_closed);
  }
  while (left > 0)
    uv_run(&s->loop, UV_RUN_ONCE);
  lk_client_set_data(s->client, &closed);
  lk_client_close(s->client, on_client_closed);
  run_until(&s->loop, &closed);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&s->loop) != 0)
    die("uv_loop_close: handles left open");
  free(s->awaiters);
  free(s->woke_ns);
}

/* ---- raw: the same scripts, blocking hiredis ---- */

typedef struct raw_side_s {
  redisContext *cmd, *sub;
  const lk__script_t *state, *count_down, *try_set;
  char name[96], channel[160], marker[160], tomb[160], record[200];
  uint64_t seq;
  int n;
  uint64_t *woke_ns;
} raw_side_t;

static redisContext *connect_to(const args_t *a) {
  struct timeval tv = {5, 0};
  redisContext *c = redisConnectWithTimeout(a->host, a->port, tv);
  if (c == NULL || c->err)
    die("cannot connect");
  return c;
}

static const lk__script_t *load(redisContext *c, const char *name) {
  const lk__script_t *s = lk__script_find(name);
  redisReply *r;
  if (s == NULL)
    die("script not embedded");
  r = redisCommand(c, "SCRIPT LOAD %b", s->text, s->len);
  if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40 ||
      memcmp(r->str, s->sha1, 40) != 0)
    die("SCRIPT LOAD failed");
  freeReplyObject(r);
  return s;
}

static void idle(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void raw_side_start(raw_side_t *s, const args_t *a) {
  memset(s, 0, sizeof(*s));
  s->n = a->awaiters;
  s->cmd = connect_to(a);
  s->sub = connect_to(a);
  s->state = load(s->cmd, "latch/state");
  s->count_down = load(s->cmd, "latch/count_down");
  s->try_set = load(s->cmd, "latch/try_set_count");
  snprintf(s->name, sizeof(s->name), "lkbench:rawlatch:%ld", (long)getpid());
  snprintf(s->channel, sizeof(s->channel), "redisson_countdownlatch__channel__{%s}", s->name);
  snprintf(s->marker, sizeof(s->marker), "latchkey_latch_open:{%s}", s->name);
  snprintf(s->tomb, sizeof(s->tomb), "latchkey_latch_deleted:{%s}", s->name);
  snprintf(s->record, sizeof(s->record), "latchkey_latch_req:{%s}:raw:1", s->name);
  s->woke_ns = calloc((size_t)s->n, sizeof(uint64_t));
  if (s->woke_ns == NULL)
    die("out of memory");
}

static redisReply *reply(redisContext *c) {
  void *r = NULL;
  if (redisGetReply(c, &r) != REDIS_OK || r == NULL)
    die("no reply");
  if (((redisReply *)r)->type == REDIS_REPLY_ERROR) {
    fprintf(stderr, "latch_wake: raw: %s\n", ((redisReply *)r)->str);
    exit(1);
  }
  return r;
}

static void append_state(raw_side_t *s) {
  const char *argv[7] = {"EVALSHA", s->state->sha1, "3", s->name, s->marker, s->tomb, BENCH_TAG};
  size_t lens[7];
  for (int i = 0; i < 7; i++)
    lens[i] = strlen(argv[i]);
  if (redisAppendCommandArgv(s->cmd, 7, argv, lens) != REDIS_OK)
    die("append");
}

/* The state reply as latchkey's awaiter checks it: {count|nil, 0/1, tomb|nil}. */
static int state_is_armed(redisReply *r) {
  r = bench_script_reply(r);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
      r->element[1]->type != REDIS_REPLY_INTEGER)
    die("raw: unexpected state reply");
  return r->element[0]->type == REDIS_REPLY_STRING && strtoll(r->element[0]->str, NULL, 10) > 0;
}

static void sub_command(raw_side_t *s, const char *verb) {
  redisReply *r = redisCommand(s->sub, "%s %s", verb, s->channel);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY)
    die("raw: (un)subscribe failed");
  freeReplyObject(r);
}

static void raw_round(raw_side_t *s, samples_t *out) {
  char seq[24], count[4] = "1";
  const char *ts[12], *cd[13];
  size_t tl[12], cl[13];
  redisReply *r;
  int i, armed = 0;
  uint64_t t0;
  /* arm */
  snprintf(seq, sizeof(seq), "%" PRIu64, ++s->seq);
  ts[0] = "EVALSHA", ts[1] = s->try_set->sha1, ts[2] = "4", ts[3] = s->name;
  ts[4] = s->channel, ts[5] = s->record, ts[6] = s->marker, ts[7] = count;
  ts[8] = "PUBLISH", ts[9] = seq, ts[10] = "600000", ts[11] = BENCH_TAG;
  for (i = 0; i < 12; i++)
    tl[i] = strlen(ts[i]);
  r = redisCommandArgv(s->cmd, 12, ts, tl);
  if (r == NULL || bench_script_reply(r)->type != REDIS_REPLY_INTEGER ||
      bench_script_reply(r)->integer != 1)
    die("raw: try_set_count");
  freeReplyObject(r);
  /* everyone subscribes (one subscription, as latchkey's client) and looks */
  sub_command(s, "SUBSCRIBE");
  for (i = 0; i < s->n; i++)
    append_state(s);
  for (i = 0; i < s->n; i++) {
    r = reply(s->cmd);
    armed += state_is_armed(r);
    freeReplyObject(r);
  }
  if (armed != s->n)
    die("raw: not armed");
  idle(IDLE_MS);
  /* the final count_down */
  snprintf(seq, sizeof(seq), "%" PRIu64, ++s->seq);
  cd[0] = "EVALSHA", cd[1] = s->count_down->sha1, cd[2] = "5", cd[3] = s->name;
  cd[4] = s->channel, cd[5] = s->record, cd[6] = s->marker, cd[7] = s->tomb;
  cd[8] = "PUBLISH", cd[9] = seq, cd[10] = "600000", cd[11] = "0", cd[12] = BENCH_TAG;
  for (i = 0; i < 13; i++)
    cl[i] = strlen(cd[i]);
  t0 = uv_hrtime();
  r = redisCommandArgv(s->cmd, 13, cd, cl);
  if (r == NULL || bench_script_reply(r)->type != REDIS_REPLY_INTEGER ||
      bench_script_reply(r)->integer != 0)
    die("raw: count_down");
  freeReplyObject(r);
  r = reply(s->sub); /* the "0" message */
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || strcmp(r->element[2]->str, "0") != 0)
    die("raw: expected the \"0\" message");
  freeReplyObject(r);
  for (i = 0; i < s->n; i++)
    append_state(s);
  for (i = 0; i < s->n; i++) {
    r = reply(s->cmd);
    if (state_is_armed(r))
      die("raw: still armed after the final count_down");
    freeReplyObject(r);
    s->woke_ns[i] = uv_hrtime() - t0;
  }
  sub_command(s, "UNSUBSCRIBE");
  if (out != NULL)
    samples_round(out, s->woke_ns, s->n);
}

static void raw_side_finish(raw_side_t *s) {
  redisReply *r = redisCommand(s->cmd, "DEL %s %s", s->record, s->marker);
  if (r != NULL)
    freeReplyObject(r);
  redisFree(s->cmd);
  redisFree(s->sub);
  free(s->woke_ns);
}

/* ---- output ---- */

typedef struct figures_s {
  double p50, p99, last_p50, last_p99;
} figures_t;

static figures_t figures(samples_t *s) {
  figures_t f;
  qsort(s->each, s->n_each, sizeof(uint64_t), cmp_u64);
  qsort(s->last, s->n_last, sizeof(uint64_t), cmp_u64);
  f.p50 = pct_us(s->each, s->n_each, 0.50);
  f.p99 = pct_us(s->each, s->n_each, 0.99);
  f.last_p50 = pct_us(s->last, s->n_last, 0.50);
  f.last_p99 = pct_us(s->last, s->n_last, 0.99);
  return f;
}

static void json(const char *impl, const char *metric, double v, double limit, const args_t *a,
                 size_t samples) {
  printf("{\"bench\":\"latch_wake\",\"impl\":\"%s\",\"metric\":\"%s\",\"value\":%.1f,"
         "\"unit\":\"us\"",
         impl, metric, v);
  if (limit > 0)
    printf(",\"limit\":%.1f,\"limit_impl\":\"raw\",\"ratio\":%.3f", limit, v / limit);
  printf(",\"awaiters\":%d,\"rounds\":%d,\"samples\":%zu,\"connections\":2}\n", a->awaiters,
         a->rounds, samples);
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

int main(int argc, char **argv) {
  args_t a = {"127.0.0.1", 6379, 50, 200, 20};
  lk_side_t lk;
  raw_side_t raw;
  redisContext *side;
  samples_t s_lk, s_raw;
  figures_t f_lk, f_raw;
  int i;
  for (i = 1; i < argc; i++) {
    int bad = 0;
    if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
      a.host = argv[++i];
    else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
      bad = parse_int(argv[++i], 1, 65535, &a.port);
    else if (strcmp(argv[i], "--awaiters") == 0 && i + 1 < argc)
      bad = parse_int(argv[++i], 1, MAX_AWAITERS, &a.awaiters);
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      bad = parse_int(argv[++i], 1, 1000000, &a.rounds);
    else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
      bad = parse_int(argv[++i], 0, 1000000, &a.warmup);
    else
      bad = -1;
    if (bad) {
      fprintf(stderr, "usage: %s [--host H] [--port P] [--awaiters N] [--rounds R] "
                      "[--warmup W]\n",
              argv[0]);
      return 2;
    }
  }
  side = connect_to(&a);
  lk_side_start(&lk, &a);
  raw_side_start(&raw, &a);
  samples_init(&s_lk, &a);
  samples_init(&s_raw, &a);
  fprintf(stderr, "# latch_wake: %d awaiters, %d warm-up + %d measured rounds per impl, "
                  "alternating\n",
          a.awaiters, a.warmup, a.rounds);
  for (i = 0; i < a.warmup + a.rounds; i++) {
    int measured = i >= a.warmup;
    /* Alternate which goes first, so neither always follows the other. */
    if (i % 2 == 0) {
      lk_round(&lk, side, measured ? &s_lk : NULL);
      raw_round(&raw, measured ? &s_raw : NULL);
    } else {
      raw_round(&raw, measured ? &s_raw : NULL);
      lk_round(&lk, side, measured ? &s_lk : NULL);
    }
  }
  f_lk = figures(&s_lk);
  f_raw = figures(&s_raw);
  json("latchkey", "wake_p50_us", f_lk.p50, f_raw.p50, &a, s_lk.n_each);
  json("latchkey", "wake_p99_us", f_lk.p99, f_raw.p99, &a, s_lk.n_each);
  json("latchkey", "last_awaiter_p50_us", f_lk.last_p50, f_raw.last_p50, &a, s_lk.n_last);
  json("latchkey", "last_awaiter_p99_us", f_lk.last_p99, f_raw.last_p99, &a, s_lk.n_last);
  json("raw", "wake_p50_us", f_raw.p50, 0, &a, s_raw.n_each);
  json("raw", "wake_p99_us", f_raw.p99, 0, &a, s_raw.n_each);
  json("raw", "last_awaiter_p50_us", f_raw.last_p50, 0, &a, s_raw.n_last);
  json("raw", "last_awaiter_p99_us", f_raw.last_p99, 0, &a, s_raw.n_last);
  printf("\n| %d awaiters, wake-up after the final count_down | latchkey | raw (limit) | ratio |\n"
         "|---|---|---|---|\n"
         "| every awaiter p50 | %.1f us | %.1f us | %.2f |\n"
         "| every awaiter p99 | %.1f us | %.1f us | %.2f |\n"
         "| slowest per round p50 | %.1f us | %.1f us | %.2f |\n"
         "| slowest per round p99 | %.1f us | %.1f us | %.2f |\n",
         a.awaiters, f_lk.p50, f_raw.p50, f_lk.p50 / f_raw.p50, f_lk.p99, f_raw.p99,
         f_lk.p99 / f_raw.p99, f_lk.last_p50, f_raw.last_p50, f_lk.last_p50 / f_raw.last_p50,
         f_lk.last_p99, f_raw.last_p99, f_lk.last_p99 / f_raw.last_p99);
  lk_side_finish(&lk);
  raw_side_finish(&raw);
  redisFree(side);
  free(s_lk.each);
  free(s_lk.last);
  free(s_raw.each);
  free(s_raw.last);
  return 0;
}
