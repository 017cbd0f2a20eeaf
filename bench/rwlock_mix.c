/* rwlock_mix: the read/write lock under a mixed load (bench/README.md).
 *
 *   rwlock_mix --host H --port P [--procs 8] [--seconds 2] [--warmup-ms 300]
 *              [--mixes 95,50] [--idle 0,100] [--rounds 1] [--no-pin]
 *
 * N worker processes (default 8; pinned to the CPUs of LK_BENCH_WORKER_CPUS,
 * default "1", the server being on CPU 0; --no-pin turns it off), each with
 * its own connection(s), loop on ONE name: pick a side (--mixes: percent of
 * reads, 95 = read-heavy 95/5, 50 = write-heavy 50/50) -> acquire, waiting
 * as long as it takes -> release at once -> next. Per mix, four runs:
 *
 *   variant "<mix> rwlock",     impl latchkey: lk_rwlock_t, lease 30 s
 *   variant "<mix> rwlock",     impl raw:      the same scripts with the same
 *       KEYS/ARGV on blocking hiredis, waiting the way the library does
 *       (busy: SUBSCRIBE, retry once confirmed, then wait on the channel for
 *       a message or min(ttl, 1 s) and retry; UNSUBSCRIBE once acquired)
 *       with no library logic: the limit
 *   variant "<mix> plain lock", impl latchkey: lk_lock_t under the same load
 *       (every operation exclusive): what sharing buys
 *   variant "<mix> plain lock", impl raw:      its limit
 *
 * Then the read release's cost (--idle): only reads, with K idle read holds
 * of other owners in the lock (their hold keys alive), on raw loops with
 * three read release scripts (docs/rwlock.md, "Read release"): raw-probe,
 * latchkey's (looks for one live hold only when the owner's last hold
 * goes), raw-scan, Redisson's rule (the lock's TTL recomputed from every
 * hold key of every reader on every release) and raw-noshrink (never looks:
 * dead readers keep the lock alive).
 *
 * Per run, one JSON line (bench/README.md, "The JSON lines"): value = operations (acquire +
 * release) per second over the measured window (after the warm-up), wait
 * p50/p99 (acquire called -> acquired; read and write apart), and
 * "limit_impl" naming the run that is this one's limit, for the suite's
 * ratio. --rounds R > 1 repeats everything R times, interleaved, and prints
 * medians and ratios on stderr. Exit status 1 when a run failed. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/scripts.h"
#include "latchkey.h"

#include "bench_script.h"

#define MAX_PROCS 64
#define MAX_SAMPLES (1u << 19) /* per process and run */
#define LEASE_MS 30000
#define MAX_ROUNDS 15
#define MAX_RESULTS 64

/* The two alternatives to latchkey's read release that were measured
 * (docs/rwlock.md, "Read release"); same KEYS/ARGV and replies as
 * scripts/rwlock/read_release.lua. Loaded wrapped as the embedded scripts
 * are (load_text), so they take and answer the request tag the same way. */
#define ALT_RELEASE_HEAD                                                                  \
  "local held = redis.call('hget', KEYS[1], ARGV[1])\n"                                   \
  "local now = held and tonumber(held) or 0\n"                                            \
  "local before = tonumber(ARGV[3])\n"                                                    \
  "local n = tonumber(ARGV[4])\n"                                                         \
  "if before >= 0 and (now == before - n or (now == 0 and before <= n)) then\n"           \
  "  return now\n"                                                                        \
  "end\n"                                                                                 \
  "if not held then return nil end\n"                                                     \
  "if n <= 0 then n = now end\n"                                                          \
  "local left = now - n\n"                                                                \
  "if left < 0 then left = 0 end\n"                                                       \
  "if left == 0 then redis.call('hdel', KEYS[1], ARGV[1])\n"                              \
  "else redis.call('hset', KEYS[1], ARGV[1], left) end\n"                                 \
  "for i = left + 1, now do redis.call('del', KEYS[3] .. ':' .. i) end\n"
#define ALT_RELEASE_TAIL                                                                  \
  "redis.call('del', KEYS[1])\n"                                                          \
  "redis.pcall(ARGV[2], KEYS[2], '0')\n"                                                  \
  "return left\n"

/* Redisson's rule: while anything remains, the lock's TTL becomes the
 * longest TTL of every hold key of every reader (O(holds) per release). */
static const char scan_release[] =
    ALT_RELEASE_HEAD
    "if redis.call('hlen', KEYS[1]) > 1 then\n"
    "  if redis.call('hget', KEYS[1], 'mode') == 'write' then return left end\n"
    "  local longest = -3\n"
    "  local all = redis.call('hgetall', KEYS[1])\n"
    "  for i = 1, #all, 2 do\n"
    "    local count = tonumber(all[i + 1])\n"
    "    if all[i] ~= 'mode' and count then\n"
    "      for j = count, 1, -1 do\n"
    "        local t = redis.call('pttl', KEYS[4] .. ':' .. all[i] .. ':rwlock_timeout:' .. j)\n"
    "        if t > longest then longest = t end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if longest > 0 then\n"
    "    redis.call('pexpire', KEYS[1], longest)\n"
    "    return left\n"
    "  end\n"
    "end\n" ALT_RELEASE_TAIL;

/* Never recompute: the lock lives on while any field remains, dead readers'
 * included (O(1)). */
static const char noshrink_release[] =
    ALT_RELEASE_HEAD "if redis.call('hlen', KEYS[1]) > 1 then return left end\n" ALT_RELEASE_TAIL;

enum impl { LK_RW, RAW_RW, LK_LOCK, RAW_LOCK, RAW_PROBE, RAW_SCAN, RAW_NOSHRINK };

static const char *impl_name(enum impl i) {
  switch (i) {
  case LK_RW:
  case LK_LOCK:
    return "latchkey";
  case RAW_PROBE:
    return "raw-probe";
  case RAW_SCAN:
    return "raw-scan";
  case RAW_NOSHRINK:
    return "raw-noshrink";
  default:
    return "raw";
  }
}

typedef struct cfg_s {
  const char *host;
  int port, procs, pin, rounds;
  int64_t seconds_ms, warmup_ms;
  int mixes[8], nmixes;
  int idle[8], nidle;
  int cpus[MAX_PROCS], ncpus;
} cfg_t;

/* One worker's results, in memory shared with the parent. */
typedef struct slot_s {
  uint64_t ops, errors;
  uint32_t n;
  uint32_t lat_ns[MAX_SAMPLES]; /* acquire waits, capped at ~4 s */
  uint8_t is_write[MAX_SAMPLES];
} slot_t;

typedef struct run_s {
  enum impl impl;
  int read_pct, idle;
  char name[96];
  int64_t start_ms; /* measured window: [start + warmup, start + warmup + seconds) */
} run_t;

static cfg_t C;
static slot_t *g_slots;

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t now_ns(void) { return uv_hrtime(); }

typedef struct rng_s {
  uint64_t s;
} rng_t;

static uint64_t rnd(rng_t *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static void record(slot_t *sl, uint64_t lat, int is_write) {
  if (sl->n < MAX_SAMPLES) {
    sl->lat_ns[sl->n] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
    sl->is_write[sl->n] = (uint8_t)is_write;
    sl->n++;
  }
}

static int parse_list(const char *s, int *out, int max, int lo, int hi) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < lo || v > hi)
      return -1;
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0')
      return -1;
  }
  return n;
}

/* ---- the latchkey worker ------------------------------------------------------ */

typedef struct lkw_s {
  uv_loop_t loop;
  lk_client_t *c;
  lk_rwlock_t *rw;
  lk_lock_t *l;
  slot_t *sl;
  rng_t rng;
  int read_pct, write;
  uint64_t t_call, t_warm, t_end;
} lkw_t;

static lkw_t LW;

static void lkw_next(void);

static void lkw_client_closed(lk_client_t *c) { (void)c; }
static void lkw_rw_closed(lk_rwlock_t *rw) {
  (void)rw;
  lk_client_close(LW.c, lkw_client_closed);
}
static void lkw_lock_closed(lk_lock_t *l) {
  (void)l;
  lk_client_close(LW.c, lkw_client_closed);
}

static void lkw_stop(void) {
  if (LW.rw != NULL)
    lk_rwlock_close(LW.rw, lkw_rw_closed);
  else
    lk_lock_close(LW.l, lkw_lock_closed);
}

static void lkw_released(int status) {
  uint64_t t = now_ns();
  if (status != 0) {
    LW.sl->errors++;
    lkw_stop();
    return;
  }
  if (t >= LW.t_warm && t < LW.t_end)
    LW.sl->ops++;
  if (t >= LW.t_end) {
    lkw_stop();
    return;
  }
  lkw_next();
}

static void lkw_rw_released(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw, (void)arg;
  lkw_released(status);
}
static void lkw_lock_released(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)arg;
  lkw_released(status);
}

static void lkw_acquired(int status) {
  uint64_t t = now_ns();
  int rc;
  if (status != 0) {
    LW.sl->errors++;
    lkw_stop();
    return;
  }
  if (LW.t_call >= LW.t_warm && t < LW.t_end)
    record(LW.sl, t - LW.t_call, LW.write);
  if (LW.rw != NULL)
    rc = lk_rwlock_release(LW.rw, LW.write ? LK_RW_WRITE : LK_RW_READ, lkw_rw_released, NULL);
  else
    rc = lk_lock_release(LW.l, lkw_lock_released, NULL);
  if (rc != 0) {
    LW.sl->errors++;
    lkw_stop();
  }
}

static void lkw_rw_acquired(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw, (void)arg;
  lkw_acquired(status);
}
static void lkw_lock_acquired(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)arg;
  lkw_acquired(status);
}

static void lkw_next(void) {
  int rc;
  LW.write = (int)(rnd(&LW.rng) % 100u) >= LW.read_pct;
  LW.t_call = now_ns();
  if (LW.rw != NULL) {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    o.lease_ms = LEASE_MS;
    rc = lk_rwlock_acquire(LW.rw, LW.write ? LK_RW_WRITE : LK_RW_READ, &o, lkw_rw_acquired,
                           NULL);
  } else {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    o.lease_ms = LEASE_MS;
    rc = lk_lock_acquire(LW.l, &o, lkw_lock_acquired, NULL);
  }
  if (rc != 0) {
    LW.sl->errors++;
    lkw_stop();
  }
}

static void lk_worker(const run_t *run, slot_t *sl, uint64_t seed) {
  lk_client_opts_t o;
  memset(&LW, 0, sizeof(LW));
  LW.sl = sl;
  LW.rng.s = seed;
  LW.read_pct = run->read_pct;
  uv_loop_init(&LW.loop);
  lk_client_opts_init(&o);
  o.host = C.host;
  o.port = C.port;
  o.client_name = "latchkey-bench";
  if (lk_client_new(&LW.loop, &o, &LW.c) != 0 ||
      (run->impl == LK_RW ? lk_rwlock_new(LW.c, run->name, &LW.rw)
                          : lk_lock_new(LW.c, run->name, &LW.l)) != 0) {
    sl->errors++;
    return;
  }
  LW.t_warm = (uint64_t)(run->start_ms + C.warmup_ms) * 1000000u;
  LW.t_end = LW.t_warm + (uint64_t)C.seconds_ms * 1000000u;
  lkw_next();
  uv_run(&LW.loop, UV_RUN_DEFAULT);
  uv_loop_close(&LW.loop);
}

/* ---- the raw worker: the same scripts, no library ----------------------------- */

typedef struct raw_script_s {
  char sha[41];
} raw_script_t;

static int load_text(redisContext *c, const char *text, size_t len, raw_script_t *out) {
  redisReply *r = redisCommand(c, "SCRIPT LOAD %b", text, len);
  int ok = r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40;
  if (ok)
    memcpy(out->sha, r->str, 41);
  if (r != NULL)
    freeReplyObject(r);
  return ok ? 0 : -1;
}

static int load(redisContext *c, const char *name, raw_script_t *out) {
  const lk__script_t *s = lk__script_find(name);
  return s == NULL ? -1 : load_text(c, s->text, s->len, out);
}

/* A script text of this program's own, wrapped as cmake/EmbedScripts.cmake
 * wraps the embedded ones (it has no "#!lua" line). */
static int load_own(redisContext *c, const char *body, raw_script_t *out) {
  size_t h = strlen(lk__script_wrap_head), b = strlen(body), t = strlen(lk__script_wrap_tail);
  char *text = malloc(h + b + t + 1);
  int rc;
  if (text == NULL)
    return -1;
  memcpy(text, lk__script_wrap_head, h);
  memcpy(text + h, body, b);
  memcpy(text + h + b, lk__script_wrap_tail, t + 1);
  rc = load_text(c, text, h + b + t, out);
  free(text);
  return rc;
}

/* Waits up to ms for a pushed reply of kind ("message", "subscribe") on
 * sub, skipping others; 1 when one came, 0 on timeout, -1 on error. */
static int sub_wait_kind(redisContext *sub, int ms, const char *kind) {
  for (;;) {
    void *reply = NULL;
    struct pollfd p = {sub->fd, POLLIN, 0};
    if (redisReaderGetReply(sub->reader, &reply) != REDIS_OK)
      return -1;
    if (reply != NULL) {
      redisReply *r = reply;
      int match = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                  r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, kind) == 0;
      freeReplyObject(reply);
      if (match)
        return 1;
      continue;
    }
    if (poll(&p, 1, ms) <= 0)
      return 0;
    if (redisBufferRead(sub) != REDIS_OK)
      return -1;
  }
}

static int sub_wait(redisContext *sub, int ms) { return sub_wait_kind(sub, ms, "message"); }

/* Sends a command on sub without waiting for its reply. */
static int sub_send(redisContext *sub, const char *verb, const char *channel) {
  int done = 0;
  if (redisAppendCommand(sub, "%s %s", verb, channel) != REDIS_OK)
    return -1;
  while (!done)
    if (redisBufferWrite(sub, &done) != REDIS_OK)
      return -1;
  return 0;
}

typedef struct raw_ctx_s {
  redisContext *c, *sub;
  raw_script_t acq[2], rel[2]; /* [0] read / lock, [1] write */
  const char *acq_argv[2][12], *rel_argv[2][12];
  size_t acq_len[2][12], rel_len[2][12];
  int acq_argc[2], rel_argc[2];
} raw_ctx_t;

static const char *const numkeys[] = {"0", "1", "2", "3", "4"};

static void set_args(const char **argv, size_t *lens, int *argc, const char *sha, int nkeys,
                     const char *const *rest, int nrest) {
  argv[0] = "EVALSHA", argv[1] = sha, argv[2] = numkeys[nkeys];
  for (int i = 0; i < nrest; i++)
    argv[3 + i] = rest[i];
  argv[3 + nrest] = BENCH_TAG;
  *argc = 4 + nrest;
  for (int i = 0; i < *argc; i++)
    lens[i] = strlen(argv[i]);
}

/* 1 granted, 0 busy (*ttl set), -1 error. */
static int raw_acquire(raw_ctx_t *x, int s, long long *ttl) {
  redisReply *rep = redisCommandArgv(x->c, x->acq_argc[s], x->acq_argv[s], x->acq_len[s]);
  redisReply *r = bench_script_reply(rep);
  int out = -1;
  if (r == NULL)
    return -1;
  if (r->type == REDIS_REPLY_ARRAY)
    out = 1;
  else if (r->type == REDIS_REPLY_INTEGER)
    *ttl = r->integer, out = 0;
  else
    fprintf(stderr, "rwlock_mix: raw acquire: reply type %d %s\n", r->type,
            r->type == REDIS_REPLY_ERROR ? r->str : "");
  freeReplyObject(rep);
  return out;
}

static int raw_release(raw_ctx_t *x, int s) {
  redisReply *rep = redisCommandArgv(x->c, x->rel_argc[s], x->rel_argv[s], x->rel_len[s]);
  redisReply *r = bench_script_reply(rep);
  int ok = r != NULL && r->type == REDIS_REPLY_INTEGER;
  if (!ok)
    fprintf(stderr, "rwlock_mix: raw release: %s\n",
            r == NULL ? x->c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
  if (rep != NULL)
    freeReplyObject(rep);
  return ok ? 0 : -1;
}

static void raw_worker(const run_t *run, slot_t *sl, uint64_t seed, int index) {
  raw_ctx_t x;
  rng_t rng = {seed};
  struct timeval tv = {10, 0};
  char owner[64], writer[80], channel[160], tp[320], kp[128];
  int rw = run->impl != RAW_LOCK;
  uint64_t t_warm, t_end;
  memset(&x, 0, sizeof(x));
  x.c = redisConnectWithTimeout(C.host, C.port, tv);
  x.sub = redisConnectWithTimeout(C.host, C.port, tv);
  if (x.c == NULL || x.c->err || x.sub == NULL || x.sub->err) {
    sl->errors++;
    return;
  }
  snprintf(owner, sizeof(owner), "00000000-0000-4000-8000-%012d:%d", getpid(), index + 1);
  snprintf(writer, sizeof(writer), "%s:write", owner);
  snprintf(channel, sizeof(channel), "%s:{%s}", rw ? "redisson_rwlock" : "redisson_lock__channel",
           run->name);
  snprintf(kp, sizeof(kp), "{%s}", run->name);
  snprintf(tp, sizeof(tp), "%s:%s:rwlock_timeout", kp, owner);
  if (rw) {
    const char *ra[] = {run->name, tp, "30000", owner, writer, "0"};
    const char *wa[] = {run->name, "30000", writer, owner, "0"};
    const char *rr[] = {run->name, channel, tp, kp, owner, "PUBLISH", "-1", "1"};
    /* The write release takes its channel last, as an argument. */
    const char *wr[] = {run->name, writer, "PUBLISH", "30000", "-1", "1", "resend", channel};
    if (load(x.c, "rwlock/read_acquire", &x.acq[0]) || load(x.c, "rwlock/write_acquire", &x.acq[1]) ||
        load(x.c, "rwlock/write_release", &x.rel[1]) ||
        (run->impl == RAW_NOSHRINK ? load_own(x.c, noshrink_release, &x.rel[0])
         : run->impl == RAW_SCAN   ? load_own(x.c, scan_release, &x.rel[0])
                                   : load(x.c, "rwlock/read_release", &x.rel[0]))) {
      sl->errors++;
      return;
    }
    set_args(x.acq_argv[0], x.acq_len[0], &x.acq_argc[0], x.acq[0].sha, 2, ra, 6);
    set_args(x.acq_argv[1], x.acq_len[1], &x.acq_argc[1], x.acq[1].sha, 1, wa, 5);
    set_args(x.rel_argv[0], x.rel_len[0], &x.rel_argc[0], x.rel[0].sha, 4, rr, 8);
    set_args(x.rel_argv[1], x.rel_len[1], &x.rel_argc[1], x.rel[1].sha, 1, wr, 8);
  } else {
    const char *la[] = {run->name, "30000", owner, "0"};
    /* The release takes its channel last, as an argument. */
    const char *lr[] = {run->name, "30000", owner, "PUBLISH", "-1", "1", "resend", channel};
    if (load(x.c, "lock/acquire", &x.acq[0]) || load(x.c, "lock/release", &x.rel[0])) {
      sl->errors++;
      return;
    }
    set_args(x.acq_argv[0], x.acq_len[0], &x.acq_argc[0], x.acq[0].sha, 1, la, 4);
    set_args(x.rel_argv[0], x.rel_len[0], &x.rel_argc[0], x.rel[0].sha, 1, lr, 8);
    x.acq[1] = x.acq[0], x.rel[1] = x.rel[0];
    memcpy(x.acq_argv[1], x.acq_argv[0], sizeof(x.acq_argv[0]));
    memcpy(x.acq_len[1], x.acq_len[0], sizeof(x.acq_len[0]));
    memcpy(x.rel_argv[1], x.rel_argv[0], sizeof(x.rel_argv[0]));
    memcpy(x.rel_len[1], x.rel_len[0], sizeof(x.rel_len[0]));
    x.acq_argc[1] = x.acq_argc[0], x.rel_argc[1] = x.rel_argc[0];
  }
  t_warm = (uint64_t)(run->start_ms + C.warmup_ms) * 1000000u;
  t_end = t_warm + (uint64_t)C.seconds_ms * 1000000u;
  for (;;) {
    int s = (int)(rnd(&rng) % 100u) >= run->read_pct, got;
    long long ttl = -1;
    uint64_t t_call = now_ns(), t;
    got = raw_acquire(&x, s, &ttl);
    if (got == 0) {
      /* Busy: as the library does, subscribe, try again once the
       * subscription is confirmed, then sleep on the channel until a
       * message or min(ttl, 1 s) and try again; unsubscribe (without
       * waiting) once acquired. */
      if (sub_send(x.sub, "SUBSCRIBE", channel) != 0 || sub_wait_kind(x.sub, 5000, "subscribe") != 1) {
        sl->errors++;
        break;
      }
      got = raw_acquire(&x, s, &ttl);
      while (got == 0) {
        int ms = ttl >= 0 && ttl < 1000 ? (int)ttl : 1000;
        if (sub_wait(x.sub, ms) < 0) {
          got = -1;
          break;
        }
        got = raw_acquire(&x, s, &ttl);
      }
      if (sub_send(x.sub, "UNSUBSCRIBE", channel) != 0)
        got = -1;
    }
    t = now_ns();
    if (got < 0 || raw_release(&x, s) != 0) {
      sl->errors++;
      break;
    }
    if (t_call >= t_warm && t < t_end)
      record(sl, t - t_call, s);
    t = now_ns();
    if (t >= t_warm && t < t_end)
      sl->ops++;
    if (t >= t_end)
      break;
  }
  redisFree(x.c);
  redisFree(x.sub);
}

/* ---- runs ------------------------------------------------------------------------- */

typedef struct result_s {
  char variant[64];
  enum impl impl;
  int idle;
  double ops_per_s[MAX_ROUNDS];
  double p50[MAX_ROUNDS], p99[MAX_ROUNDS], rp99[MAX_ROUNDS], wp99[MAX_ROUNDS];
  int n;
} result_t;

static result_t g_results[MAX_RESULTS];
static int g_nresults;
static int g_failed;

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_us(const uint32_t *v, size_t n, double q) {
  size_t rank;
  if (n == 0)
    return 0;
  rank = (size_t)(q * (double)n + 0.999999);
  rank = rank < 1 ? 1 : rank > n ? n : rank;
  return (double)v[rank - 1] / 1000.0;
}

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
}

/* Idle read holds of other owners, their keys alive for the whole run. */
static int add_idle_readers(redisContext *c, const char *name, int k) {
  for (int i = 0; i < k; i++) {
    char field[64];
    redisReply *r;
    snprintf(field, sizeof(field), "11111111-1111-4111-8111-%012d:1", i);
    r = redisCommand(c, "HSET %s mode read %s 1", name, field);
    if (r == NULL)
      return -1;
    freeReplyObject(r);
    r = redisCommand(c, "SET {%s}:%s:rwlock_timeout:1 1 PX 600000", name, field);
    if (r == NULL)
      return -1;
    freeReplyObject(r);
  }
  if (k > 0) {
    redisReply *r = redisCommand(c, "PEXPIRE %s 600000", name);
    if (r == NULL)
      return -1;
    freeReplyObject(r);
  }
  return 0;
}

static result_t *result_for(const char *variant, enum impl impl, int idle) {
  for (int i = 0; i < g_nresults; i++)
    if (strcmp(g_results[i].variant, variant) == 0 && g_results[i].impl == impl)
      return &g_results[i];
  if (g_nresults == MAX_RESULTS)
    return NULL;
  result_t *r = &g_results[g_nresults++];
  memset(r, 0, sizeof(*r));
  snprintf(r->variant, sizeof(r->variant), "%s", variant);
  r->impl = impl;
  r->idle = idle;
  return r;
}

static void run_one(redisContext *ctl, enum impl impl, int read_pct, int idle, int round) {
  static int seq;
  run_t run;
  pid_t pids[MAX_PROCS];
  int go[2];
  uint64_t ops = 0, errors = 0;
  size_t n = 0, nr = 0, nw = 0;
  uint32_t *all, *rd, *wr;
  char variant[64];
  result_t *res;
  memset(&run, 0, sizeof(run));
  run.impl = impl;
  run.read_pct = read_pct;
  run.idle = idle;
  snprintf(run.name, sizeof(run.name), "lkbench:rw:%ld:%d", (long)getpid(), seq++);
  if (idle > 0 && add_idle_readers(ctl, run.name, idle) != 0) {
    fprintf(stderr, "rwlock_mix: cannot set up idle readers\n");
    g_failed = 1;
    return;
  }
  memset(g_slots, 0, sizeof(slot_t) * (size_t)C.procs);
  if (pipe(go) != 0) {
    perror("pipe");
    exit(1);
  }
  for (int i = 0; i < C.procs; i++) {
    fflush(NULL);
    pids[i] = fork();
    if (pids[i] < 0) {
      perror("fork");
      exit(1);
    }
    if (pids[i] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(go[1]);
      if (C.pin)
        pin_to(C.cpus[i % C.ncpus]);
      /* All start together: each reads the common start time from the
       * pipe once the parent has forked everyone. */
      if (read(go[0], &run.start_ms, sizeof(run.start_ms)) != (ssize_t)sizeof(run.start_ms))
        _exit(2);
      if (impl == LK_RW || impl == LK_LOCK)
        lk_worker(&run, &g_slots[i], now_ns() ^ ((uint64_t)getpid() << 24) ^ 0x5bd1e995u);
      else
        raw_worker(&run, &g_slots[i], now_ns() ^ ((uint64_t)getpid() << 24) ^ 0x5bd1e995u, i);
      _exit(0);
    }
  }
  close(go[0]);
  run.start_ms = (int64_t)(now_ns() / 1000000u) + 50;
  for (int i = 0; i < C.procs; i++)
    if (write(go[1], &run.start_ms, sizeof(run.start_ms)) != (ssize_t)sizeof(run.start_ms))
      exit(1);
  close(go[1]);
  for (int i = 0; i < C.procs; i++) {
    int st = 0;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
      ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      errors++;
  }
  for (int i = 0; i < C.procs; i++) {
    ops += g_slots[i].ops;
    errors += g_slots[i].errors;
    n += g_slots[i].n;
  }
  all = malloc((n + 1) * sizeof(uint32_t));
  rd = malloc((n + 1) * sizeof(uint32_t));
  wr = malloc((n + 1) * sizeof(uint32_t));
  if (all == NULL || rd == NULL || wr == NULL) {
    fprintf(stderr, "rwlock_mix: out of memory\n");
    exit(1);
  }
  n = 0;
  for (int i = 0; i < C.procs; i++)
    for (uint32_t j = 0; j < g_slots[i].n; j++) {
      all[n++] = g_slots[i].lat_ns[j];
      if (g_slots[i].is_write[j])
        wr[nw++] = g_slots[i].lat_ns[j];
      else
        rd[nr++] = g_slots[i].lat_ns[j];
    }
  qsort(all, n, sizeof(uint32_t), cmp_u32);
  qsort(rd, nr, sizeof(uint32_t), cmp_u32);
  qsort(wr, nw, sizeof(uint32_t), cmp_u32);
  if (idle > 0 || impl == RAW_PROBE || impl == RAW_SCAN || impl == RAW_NOSHRINK)
    snprintf(variant, sizeof(variant), "%d idle readers", idle);
  else
    snprintf(variant, sizeof(variant), "%d/%d %s", read_pct, 100 - read_pct,
             impl == LK_RW || impl == RAW_RW ? "rwlock" : "plain lock");
  {
    double secs = (double)C.seconds_ms / 1000.0, value = (double)ops / secs;
    const char *limit = impl == LK_RW || impl == LK_LOCK                ? "raw"
                        : impl == RAW_SCAN || impl == RAW_NOSHRINK ? "raw-probe"
                                                                   : NULL;
    printf("{\"bench\":\"%s\",\"variant\":\"%s\",\"impl\":\"%s\",\"metric\":\"ops_per_s\","
           "\"value\":%.1f,\"unit\":\"ops/s\"",
           idle > 0 || impl == RAW_PROBE || impl == RAW_SCAN || impl == RAW_NOSHRINK
               ? "rwlock_read_release"
               : "rwlock_mix",
           variant, impl_name(impl), value);
    if (limit != NULL)
      printf(",\"limit_impl\":\"%s\"", limit);
    printf(",\"procs\":%d,\"read_pct\":%d,\"idle_readers\":%d,\"ops\":%" PRIu64
           ",\"wait_p50_us\":%.1f,\"wait_p99_us\":%.1f,\"read_wait_p99_us\":%.1f,"
           "\"write_wait_p99_us\":%.1f,\"errors\":%" PRIu64,
           C.procs, read_pct, idle, ops, pct_us(all, n, 0.5), pct_us(all, n, 0.99),
           pct_us(rd, nr, 0.99), pct_us(wr, nw, 0.99), errors);
    if (C.rounds > 1)
      printf(",\"round\":%d", round);
    printf("}\n");
    fflush(stdout);
    res = result_for(variant, impl, idle);
    if (res != NULL && res->n < MAX_ROUNDS) {
      res->ops_per_s[res->n] = value;
      res->p50[res->n] = pct_us(all, n, 0.5);
      res->p99[res->n] = pct_us(all, n, 0.99);
      res->rp99[res->n] = pct_us(rd, nr, 0.99);
      res->wp99[res->n] = pct_us(wr, nw, 0.99);
      res->n++;
    }
  }
  if (errors > 0) {
    fprintf(stderr, "rwlock_mix: %s %s: %" PRIu64 " errors\n", variant, impl_name(impl), errors);
    g_failed = 1;
  }
  free(all);
  free(rd);
  free(wr);
  {
    redisReply *r = redisCommand(ctl, "DEL %s", run.name);
    if (r != NULL)
      freeReplyObject(r);
  }
}

/* ---- the summary (--rounds > 1) ---------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double t[MAX_ROUNDS];
  memcpy(t, v, sizeof(double) * (size_t)n);
  qsort(t, (size_t)n, sizeof(double), cmp_d);
  return n == 0 ? 0 : n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void summary(void) {
  fprintf(stderr, "\n| variant | impl | ops/s (median) | ratio to limit | wait p50 us | wait p99 us "
                  "| read p99 us | write p99 us |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < g_nresults; i++) {
    result_t *r = &g_results[i], *lim = NULL;
    char ratio[32] = "";
    if (r->impl == LK_RW || r->impl == LK_LOCK)
      lim = result_for(r->variant, r->impl == LK_RW ? RAW_RW : RAW_LOCK, r->idle);
    else if (r->impl == RAW_SCAN || r->impl == RAW_NOSHRINK)
      lim = result_for(r->variant, RAW_PROBE, r->idle);
    if (lim != NULL && lim->n > 0 && median(lim->ops_per_s, lim->n) > 0)
      snprintf(ratio, sizeof(ratio), "%.3f",
               median(r->ops_per_s, r->n) / median(lim->ops_per_s, lim->n));
    fprintf(stderr, "| %s | %s | %.0f | %s | %.1f | %.1f | %.1f | %.1f |\n", r->variant,
            impl_name(r->impl), median(r->ops_per_s, r->n), ratio, median(r->p50, r->n),
            median(r->p99, r->n), median(r->rp99, r->n), median(r->wp99, r->n));
  }
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--host H] [--port P] [--procs N] [--seconds S] [--warmup-ms W]\n"
          "          [--mixes 95,50] [--idle 0,100] [--rounds R] [--no-pin]\n",
          prog);
}

int main(int argc, char **argv) {
  redisContext *ctl;
  struct timeval tv = {5, 0};
  const char *cpus = getenv("LK_BENCH_WORKER_CPUS");
  memset(&C, 0, sizeof(C));
  C.host = "127.0.0.1";
  C.port = 6379;
  C.procs = 8;
  C.pin = getenv("LK_BENCH_PIN") == NULL || strcmp(getenv("LK_BENCH_PIN"), "0") != 0;
  C.rounds = 1;
  C.seconds_ms = 2000;
  C.warmup_ms = 300;
  C.mixes[0] = 95, C.mixes[1] = 50, C.nmixes = 2;
  C.idle[0] = 0, C.idle[1] = 100, C.nidle = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--no-pin") == 0) {
      C.pin = 0;
      continue;
    }
    if (v == NULL) {
      usage(argv[0]);
      return 2;
    }
    i++;
    if (strcmp(a, "--host") == 0)
      C.host = v;
    else if (strcmp(a, "--port") == 0)
      C.port = atoi(v);
    else if (strcmp(a, "--procs") == 0)
      C.procs = atoi(v);
    else if (strcmp(a, "--seconds") == 0)
      C.seconds_ms = (int64_t)(atof(v) * 1000);
    else if (strcmp(a, "--warmup-ms") == 0)
      C.warmup_ms = atoll(v);
    else if (strcmp(a, "--rounds") == 0)
      C.rounds = atoi(v);
    else if (strcmp(a, "--mixes") == 0)
      C.nmixes = parse_list(v, C.mixes, 8, 0, 100);
    else if (strcmp(a, "--idle") == 0)
      C.nidle = parse_list(v, C.idle, 8, 0, 100000);
    else {
      usage(argv[0]);
      return 2;
    }
  }
  C.ncpus = parse_list(cpus != NULL && *cpus ? cpus : "1", C.cpus, MAX_PROCS, 0, 1023);
  if (C.port <= 0 || C.port > 65535 || C.procs < 1 || C.procs > MAX_PROCS || C.rounds < 1 ||
      C.rounds > MAX_ROUNDS || C.seconds_ms < 100 || C.warmup_ms < 0 || C.nmixes < 0 ||
      C.nidle < 0 || C.ncpus < 1) {
    usage(argv[0]);
    return 2;
  }
  g_slots = mmap(NULL, sizeof(slot_t) * (size_t)C.procs, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_slots == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  ctl = redisConnectWithTimeout(C.host, C.port, tv);
  if (ctl == NULL || ctl->err) {
    fprintf(stderr, "rwlock_mix: cannot connect to %s:%d\n", C.host, C.port);
    return 1;
  }
  fprintf(stderr, "# rwlock_mix: %d procs%s, %.1f s per run after %lld ms warm-up, %d rounds\n",
          C.procs, C.pin ? " pinned" : "", (double)C.seconds_ms / 1000,
          (long long)C.warmup_ms, C.rounds);
  for (int round = 0; round < C.rounds; round++) {
    for (int m = 0; m < C.nmixes; m++) {
      run_one(ctl, RAW_RW, C.mixes[m], 0, round);
      run_one(ctl, LK_RW, C.mixes[m], 0, round);
      run_one(ctl, RAW_LOCK, C.mixes[m], 0, round);
      run_one(ctl, LK_LOCK, C.mixes[m], 0, round);
    }
    for (int k = 0; k < C.nidle; k++) {
      run_one(ctl, RAW_PROBE, 100, C.idle[k], round);
      run_one(ctl, RAW_SCAN, 100, C.idle[k], round);
      run_one(ctl, RAW_NOSHRINK, 100, C.idle[k], round);
    }
  }
  if (C.rounds > 1)
    summary();
  redisFree(ctl);
  munmap(g_slots, sizeof(slot_t) * (size_t)C.procs);
  return g_failed ? 1 : 0;
}
