/* The Redisson emulator's countdown latch (redisson_latch_emu.h). The
 * scripts are our own, written from a description of what Redisson's
 * countDown, trySetCount and delete do on the wire: not Redisson's text. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redisson_latch_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redisson_emu.h"
#include "test.h"

/* trySetCount: KEYS[1] the count, KEYS[2] the channel; ARGV[1] the message
 * for a new count ("1"), ARGV[2] the count, ARGV[3] the publish command.
 * Absent: set it, tell the channel, reply 1. Present: reply 0. */
static const char try_set_script[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('set', KEYS[1], ARGV[2])\n"
    "  redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* countDown: KEYS as above; ARGV[1] the message for zero ("0"), ARGV[2] the
 * publish command. One fewer; at zero or below the key goes; exactly zero
 * is announced. (Redisson's script replies nothing useful; this one
 * replies the count after the DECR.) */
static const char count_down_script[] =
    "local left = redis.call('decr', KEYS[1])\n"
    "if left <= 0 then\n"
    "  redis.call('del', KEYS[1])\n"
    "end\n"
    "if left == 0 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "end\n"
    "return left\n";

/* delete: KEYS as above; ARGV[1] the message for a new count ("1"), ARGV[2]
 * the publish command. */
static const char delete_script[] =
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

char *rt_rlatch_channel(const char *name) {
  size_t n = strlen("redisson_countdownlatch__channel__{}") + strlen(name) + 1;
  char *ch = malloc(n);
  if (ch == NULL)
    FAIL("redisson_latch_emu: out of memory");
  snprintf(ch, n, "redisson_countdownlatch__channel__{%s}", name);
  return ch;
}

int rt_rlatch_try_set_count(redisContext *ctx, const char *name, long long count) {
  char n[24];
  char *channel = rt_rlatch_channel(name);
  snprintf(n, sizeof n, "%lld", count);
  const char *argv[] = {"EVAL", try_set_script, "2", name, channel, "1", n, rt_emu_publish_cmd()};
  long long v = rt_emu_int(rt_emu_command(ctx, 8, argv, "trySetCount"), "trySetCount");
  free(channel);
  return (int)v;
}

long long rt_rlatch_count_down(redisContext *ctx, const char *name) {
  char *channel = rt_rlatch_channel(name);
  const char *argv[] = {"EVAL", count_down_script, "2", name, channel, "0", rt_emu_publish_cmd()};
  long long v = rt_emu_int(rt_emu_command(ctx, 7, argv, "countDown"), "countDown");
  free(channel);
  return v;
}

long long rt_rlatch_get_count(redisContext *ctx, const char *name) {
  return rt_emu_get_number(ctx, name, "getCount");
}

int rt_rlatch_delete(redisContext *ctx, const char *name) {
  char *channel = rt_rlatch_channel(name);
  const char *argv[] = {"EVAL", delete_script, "2", name, channel, "1", rt_emu_publish_cmd()};
  long long v = rt_emu_int(rt_emu_command(ctx, 7, argv, "delete"), "delete");
  free(channel);
  return (int)v;
}

typedef struct rlatch_open_s {
  redisContext *ctx;
  const char *name;
} rlatch_open_t;

static int rlatch_open(void *arg, int64_t *sleep_ms) {
  rlatch_open_t *o = arg;
  (void)sleep_ms;
  return rt_rlatch_get_count(o->ctx, o->name) <= 0;
}

int rt_rlatch_await(redisContext *ctx, redisContext *sub, const char *name,
                    int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  rlatch_open_t o = {ctx, name};
  char *channel;
  int opened;
  if (rt_rlatch_get_count(ctx, name) <= 0)
    return 1;
  channel = rt_rlatch_channel(name);
  /* "0" opens the local gate, "1" closes it: the count is read again */
  opened = rt_emu_wait_on_channel(sub, channel, deadline, rlatch_open, &o, NULL);
  free(channel);
  return opened;
}
