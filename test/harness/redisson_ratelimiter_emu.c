/* The Redisson emulator's rate limiter (redisson_ratelimiter_emu.h). The
 * scripts are our own, written from a description of what Redisson's
 * trySetRate, setRate, tryAcquire and availablePermits do on the wire: not
 * Redisson's text. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redisson_ratelimiter_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "redisson_emu.h"
#include "test.h"

/* The window's keys for a config hash: the state of the type in field
 * 'type' ('1' = the client's own keys). Shared head of the scripts below:
 * KEYS[1] NAME, KEYS[2] {NAME}:value, KEYS[3] {NAME}:value:ID,
 * KEYS[4] {NAME}:permits, KEYS[5] {NAME}:permits:ID. */
#define RRL_HEAD                                                                         \
  "local cfg = redis.call('hmget', KEYS[1], 'rate', 'interval', 'type')\n"              \
  "if not cfg[1] or not cfg[2] or not cfg[3] then\n"                                    \
  "  return redis.error_reply('ERR RateLimiter is not initialized')\n"                  \
  "end\n"                                                                                \
  "local rate, span = tonumber(cfg[1]), tonumber(cfg[2])\n"                              \
  "local vkey, zkey = KEYS[2], KEYS[4]\n"                                                \
  "if cfg[3] == '1' then vkey, zkey = KEYS[3], KEYS[5] end\n"                           \
  "local function sum(list)\n"                                                           \
  "  local s = 0\n"                                                                      \
  "  for _, m in ipairs(list) do local _, p = struct.unpack('Bc0I', m); s = s + p end\n" \
  "  return s\n"                                                                         \
  "end\n"

/* tryAcquire: ARGV[1] permits, ARGV[2] the caller's clock (ms), ARGV[3] 16
 * random bytes. nil granted, else the wait in ms. */
static const char acquire_script[] =
    RRL_HEAD
    "local want, t = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "if want > rate then\n"
    "  return redis.error_reply('ERR Requested permits amount cannot exceed defined rate')\n"
    "end\n"
    "local member = struct.pack('Bc0I', #ARGV[3], ARGV[3], want)\n"
    "local have = redis.call('get', vkey)\n"
    "local wait = false\n"
    "if not have then\n"
    "  redis.call('set', vkey, rate)\n"
    "else\n"
    "  have = tonumber(have)\n"
    "  local back = sum(redis.call('zrangebyscore', zkey, 0, t - span))\n"
    "  if back > 0 then\n"
    "    redis.call('zremrangebyscore', zkey, 0, t - span)\n"
    "    if have + back > rate then\n"
    "      have = rate - sum(redis.call('zrange', zkey, 0, -1))\n"
    "    else\n"
    "      have = have + back\n"
    "    end\n"
    "    redis.call('set', vkey, have)\n"
    "  end\n"
    "  if have < want then\n"
    "    local first = redis.call('zrange', zkey, 0, 0, 'withscores')\n"
    "    wait = 3 + span - (t - tonumber(first[2]))\n"
    "  end\n"
    "end\n"
    "if not wait then\n"
    "  redis.call('zadd', zkey, t, member)\n"
    "  redis.call('decrby', vkey, want)\n"
    "end\n"
    "local keep = redis.call('hget', KEYS[1], 'keepAliveTime')\n"
    "if keep and tonumber(keep) > 0 then\n"
    "  for _, k in ipairs({KEYS[1], vkey, zkey}) do redis.call('pexpire', k, keep) end\n"
    "else\n"
    "  local ttl = redis.call('pttl', KEYS[1])\n"
    "  if ttl > 0 then\n"
    "    redis.call('pexpire', vkey, ttl)\n"
    "    redis.call('pexpire', zkey, ttl)\n"
    "  end\n"
    "end\n"
    "return wait\n";

/* availablePermits: ARGV[1] the caller's clock (ms). */
static const char available_script[] =
    RRL_HEAD
    "local have = redis.call('get', vkey)\n"
    "if not have then\n"
    "  redis.call('set', vkey, rate)\n"
    "  return rate\n"
    "end\n"
    "local t = tonumber(ARGV[1])\n"
    "local back = sum(redis.call('zrangebyscore', zkey, 0, t - span))\n"
    "if back > 0 then\n"
    "  redis.call('zremrangebyscore', zkey, 0, t - span)\n"
    "  have = tonumber(have) + back\n"
    "  redis.call('set', vkey, have)\n"
    "end\n"
    "return tonumber(have)\n";

/* trySetRate: KEYS[1] NAME; ARGV rate, interval, type, keepAliveTime. */
static const char try_set_script[] =
    "redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])\n"
    "redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])\n"
    "redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])\n"
    "local fresh = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])\n"
    "if fresh == 1 and tonumber(ARGV[4]) > 0 then redis.call('pexpire', KEYS[1], ARGV[4]) end\n"
    "return fresh\n";

/* setRate: the five keys; ARGV as trySetRate. */
static const char set_script[] =
    "redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2], 'type', ARGV[3],\n"
    "  'keepAliveTime', ARGV[4])\n"
    "if tonumber(ARGV[4]) > 0 then redis.call('pexpire', KEYS[1], ARGV[4]) end\n"
    "if ARGV[3] == '1' then redis.call('del', KEYS[3], KEYS[5])\n"
    "else redis.call('del', KEYS[2], KEYS[4]) end\n"
    "return 1\n";

int64_t rt_rrl_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* suffixName: "NAME:suffix" when NAME has '{', else "{NAME}:suffix". */
static char *suffix_name(const char *name, const char *suffix) {
  return strchr(name, '{') != NULL ? rt_emu_asprintf("%s:%s", name, suffix)
                                   : rt_emu_asprintf("{%s}:%s", name, suffix);
}

typedef struct {
  char *k[5];
} keys_t;

static void keys_make(keys_t *ks, const char *name, const char *client_id) {
  char *v = suffix_name(name, "value"), *p = suffix_name(name, "permits");
  ks->k[0] = rt_emu_asprintf("%s", name);
  ks->k[1] = v;
  ks->k[2] = rt_emu_asprintf("%s:%s", v, client_id);
  ks->k[3] = p;
  ks->k[4] = rt_emu_asprintf("%s:%s", p, client_id);
}

static void keys_free(keys_t *ks) {
  for (int i = 0; i < 5; i++)
    free(ks->k[i]);
}

/* EVAL with the five keys and up to EVAL5_MAX_ARGS args (lens for binary
 * ones); the raw reply, errors included. Fixed slots (EVAL, script, 5, the
 * keys, then the args) and a checked arg count: setRate passes 4 args, one
 * more than the old 11-slot arrays held (gcc -O2 -Warray-bounds saw it). */
#define EVAL5_HEAD 8 /* EVAL, script, "5", five keys */
#define EVAL5_MAX_ARGS 4
static redisReply *eval5(redisContext *ctx, const char *script, const keys_t *ks, int nargs,
                         const char **args, const size_t *arg_lens, const char *what) {
  const char *argv[EVAL5_HEAD + EVAL5_MAX_ARGS];
  size_t lens[EVAL5_HEAD + EVAL5_MAX_ARGS];
  if (nargs < 0 || nargs > EVAL5_MAX_ARGS)
    FAIL("redisson_ratelimiter_emu: %s: %d args, at most %d", what, nargs, EVAL5_MAX_ARGS);
  argv[0] = "EVAL", lens[0] = 4;
  argv[1] = script, lens[1] = strlen(script);
  argv[2] = "5", lens[2] = 1;
  for (int i = 0; i < 5; i++)
    argv[3 + i] = ks->k[i], lens[3 + i] = strlen(ks->k[i]);
  for (int i = 0; i < nargs && i < EVAL5_MAX_ARGS; i++)
    argv[EVAL5_HEAD + i] = args[i], lens[EVAL5_HEAD + i] = arg_lens[i];
  redisReply *r = redisCommandArgv(ctx, EVAL5_HEAD + nargs, argv, lens);
  if (r == NULL)
    FAIL("redisson_ratelimiter_emu: %s: %s", what, ctx->errstr[0] ? ctx->errstr : "no reply");
  return r;
}

static int error_is(const redisReply *r, const char *text) {
  return r->type == REDIS_REPLY_ERROR && memmem(r->str, r->len, text, strlen(text)) != NULL;
}

int rt_rrl_try_set_rate(redisContext *ctx, const char *name, int type, long long rate,
                        long long interval_ms, long long keep_alive_ms) {
  char a[4][24];
  snprintf(a[0], 24, "%lld", rate);
  snprintf(a[1], 24, "%lld", interval_ms);
  snprintf(a[2], 24, "%d", type);
  snprintf(a[3], 24, "%lld", keep_alive_ms);
  const char *argv[] = {"EVAL", try_set_script, "1", name, a[0], a[1], a[2], a[3]};
  redisReply *r = rt_emu_command(ctx, 8, argv, "trySetRate");
  long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  freeReplyObject(r);
  if (v != 0 && v != 1)
    FAIL("redisson_ratelimiter_emu: trySetRate: unexpected reply");
  return (int)v;
}

void rt_rrl_set_rate(redisContext *ctx, const char *name, const char *client_id, int type,
                     long long rate, long long interval_ms, long long keep_alive_ms) {
  char a[4][24];
  const char *args[4] = {a[0], a[1], a[2], a[3]};
  size_t lens[4];
  keys_t ks;
  snprintf(a[0], 24, "%lld", rate);
  snprintf(a[1], 24, "%lld", interval_ms);
  snprintf(a[2], 24, "%d", type);
  snprintf(a[3], 24, "%lld", keep_alive_ms);
  for (int i = 0; i < 4; i++)
    lens[i] = strlen(a[i]);
  keys_make(&ks, name, client_id);
  redisReply *r = eval5(ctx, set_script, &ks, 4, args, lens, "setRate");
  keys_free(&ks);
  if (r->type == REDIS_REPLY_ERROR)
    FAIL("redisson_ratelimiter_emu: setRate: %.*s", (int)r->len, r->str);
  freeReplyObject(r);
}

long long rt_rrl_try_acquire(redisContext *ctx, const char *name, const char *client_id,
                             long long permits, int64_t *now_ms) {
  unsigned char id[16];
  char n[24], t[24];
  const char *args[3] = {n, t, (const char *)id};
  size_t lens[3];
  long long v;
  keys_t ks;
  int64_t now = rt_rrl_wall_ms();
  int rc = uv_random(NULL, NULL, id, sizeof id, 0, NULL);
  if (rc != 0)
    FAIL("redisson_ratelimiter_emu: uv_random: %s", uv_strerror(rc));
  snprintf(n, sizeof n, "%lld", permits);
  snprintf(t, sizeof t, "%lld", (long long)now);
  lens[0] = strlen(n), lens[1] = strlen(t), lens[2] = sizeof id;
  keys_make(&ks, name, client_id);
  redisReply *r = eval5(ctx, acquire_script, &ks, 3, args, lens, "tryAcquire");
  keys_free(&ks);
  if (r->type == REDIS_REPLY_NIL) {
    v = RT_RRL_ACQUIRED;
    if (now_ms != NULL)
      *now_ms = now;
  } else if (r->type == REDIS_REPLY_INTEGER) {
    v = r->integer;
  } else if (error_is(r, "cannot exceed defined rate")) {
    v = RT_RRL_EXCEEDS_RATE;
  } else if (error_is(r, "not initialized")) {
    v = RT_RRL_NOT_SET;
  } else {
    int type = r->type;
    freeReplyObject(r);
    FAIL("redisson_ratelimiter_emu: tryAcquire: reply type %d", type);
  }
  freeReplyObject(r);
  return v;
}

int rt_rrl_acquire_timeout(redisContext *ctx, const char *name, const char *client_id,
                           long long permits, int64_t timeout_ms, int64_t *now_ms) {
  int64_t start = rt_now_ms();
  for (int tries = 0; tries < 1000000; tries++) {
    long long wait = rt_rrl_try_acquire(ctx, name, client_id, permits, now_ms);
    if (wait == RT_RRL_ACQUIRED)
      return 1;
    if (wait < 0)
      return (int)wait;
    int64_t remains = timeout_ms - (rt_now_ms() - start);
    if (remains <= 0)
      return 0;
    if (remains < wait) {
      rt_sleep_ms(remains);
      return 0;
    }
    rt_sleep_ms(wait);
    if (rt_now_ms() - start >= timeout_ms)
      return 0;
  }
  FAIL("redisson_ratelimiter_emu: tryAcquire(timeout) did not end");
  return 0;
}

long long rt_rrl_available(redisContext *ctx, const char *name, const char *client_id) {
  char t[24];
  const char *args[1] = {t};
  size_t lens[1];
  keys_t ks;
  long long v;
  snprintf(t, sizeof t, "%lld", (long long)rt_rrl_wall_ms());
  lens[0] = strlen(t);
  keys_make(&ks, name, client_id);
  redisReply *r = eval5(ctx, available_script, &ks, 1, args, lens, "availablePermits");
  keys_free(&ks);
  if (r->type == REDIS_REPLY_INTEGER) {
    v = r->integer;
  } else if (error_is(r, "not initialized")) {
    v = RT_RRL_NOT_SET;
  } else {
    freeReplyObject(r);
    FAIL("redisson_ratelimiter_emu: availablePermits: unexpected reply");
  }
  freeReplyObject(r);
  return v;
}
