/* Server-side faults and probes (server_faults.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "server_faults.h"

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_ok(redisReply *r, const char *what) {
  if (r == NULL)
    FAIL("%s: no reply (see above)", what);
  if (r->type == REDIS_REPLY_ERROR)
    FAIL("%s: %s", what, r->str);
  freeReplyObject(r);
}

long long rt_server_kill_clients_of_type(rt_server_t *s, const char *type) {
  return rt_cmd_int(s, "CLIENT KILL TYPE %s SKIPME yes", type);
}

/* Finds "key=" in a CLIENT LIST line; copies the value into out. */
static int field_of(const char *line, size_t len, const char *key, char *out, size_t out_len) {
  size_t klen = strlen(key);
  for (size_t i = 0; i + klen < len; i++) {
    if ((i == 0 || line[i - 1] == ' ') && memcmp(line + i, key, klen) == 0 &&
        line[i + klen] == '=') {
      size_t j = i + klen + 1, n = 0;
      while (j < len && line[j] != ' ' && n + 1 < out_len)
        out[n++] = line[j++];
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

int rt_server_client_ids_named(rt_server_t *s, const char *name, long long *ids, int max) {
  redisReply *r = rt_cmd(s, "CLIENT LIST");
  if (r == NULL || r->type != REDIS_REPLY_STRING)
    FAIL("CLIENT LIST failed");
  int n = 0;
  const char *p = r->str, *end = r->str + r->len;
  for (int lines = 0; p < end && lines < 100000; lines++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL)
      eol = end;
    char id[32], nm[256];
    if (field_of(p, (size_t)(eol - p), "name", nm, sizeof nm) && strcmp(nm, name) == 0 &&
        field_of(p, (size_t)(eol - p), "id", id, sizeof id) && n < max)
      ids[n++] = atoll(id);
    p = eol + 1;
  }
  freeReplyObject(r);
  return n;
}

long long rt_server_kill_clients_named(rt_server_t *s, const char *name) {
  long long ids[256];
  int n = rt_server_client_ids_named(s, name, ids, 256);
  long long killed = 0;
  for (int i = 0; i < n; i++) {
    redisReply *r = rt_cmd(s, "CLIENT KILL ID %lld", ids[i]);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
      killed += r->integer;
    if (r != NULL)
      freeReplyObject(r);
  }
  return killed;
}

void rt_server_client_pause(rt_server_t *s, long long ms, const char *mode) {
  expect_ok(rt_cmd(s, "CLIENT PAUSE %lld %s", ms, mode), "CLIENT PAUSE");
}

void rt_server_client_unpause(rt_server_t *s) {
  expect_ok(rt_cmd(s, "CLIENT UNPAUSE"), "CLIENT UNPAUSE");
}

void rt_server_script_flush(rt_server_t *s) {
  expect_ok(rt_cmd(s, "SCRIPT FLUSH"), "SCRIPT FLUSH");
}

void rt_server_maxmemory(rt_server_t *s, long long bytes, const char *policy) {
  expect_ok(rt_cmd(s, "CONFIG SET maxmemory-policy %s", policy), "CONFIG SET maxmemory-policy");
  expect_ok(rt_cmd(s, "CONFIG SET maxmemory %lld", bytes), "CONFIG SET maxmemory");
}

void rt_server_acl_user(rt_server_t *s, const char *name, const char *password,
                        const char *rules) {
  const char *argv[64];
  size_t lens[64];
  char pw[256];
  char *copy = strdup(rules != NULL ? rules : "");
  if (copy == NULL)
    FAIL("out of memory");
  int argc = 0;
  argv[argc++] = "ACL";
  argv[argc++] = "SETUSER";
  argv[argc++] = name;
  argv[argc++] = "reset";
  argv[argc++] = "on";
  snprintf(pw, sizeof pw, ">%s", password);
  argv[argc++] = pw;
  char *save = NULL;
  for (char *w = strtok_r(copy, " ", &save); w != NULL && argc < 64;
       w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  for (int i = 0; i < argc; i++)
    lens[i] = strlen(argv[i]);
  expect_ok(rt_cmd_argv(s, argc, argv, lens), "ACL SETUSER");
  free(copy);
}

long long rt_server_cmd_calls(rt_server_t *s, const char *cmd) {
  char field[128];
  snprintf(field, sizeof field, "cmdstat_%s", cmd);
  char *v = rt_server_info(s, "commandstats", field);
  if (v == NULL)
    return 0;
  /* The field starts "calls=N,usec=..."; another shape is a harness bug
   * that must not read as zero calls. */
  long long calls = 0;
  int parsed = sscanf(v, "calls=%lld", &calls);
  if (parsed != 1)
    FAIL("%s reads \"%s\", not calls=<n>", field, v);
  free(v);
  return calls;
}

void rt_server_reset_stats(rt_server_t *s) {
  expect_ok(rt_cmd(s, "CONFIG RESETSTAT"), "CONFIG RESETSTAT");
}

long long rt_server_info_int(rt_server_t *s, const char *section, const char *field) {
  char *v = rt_server_info(s, section, field);
  if (v == NULL)
    return -1;
  long long n = atoll(v);
  free(v);
  return n;
}

long long rt_cmd_argv_int(rt_server_t *s, int argc, const char **argv, const size_t *lens) {
  redisReply *r = rt_cmd_argv(s, argc, argv, lens);
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    FAIL("%s on port %d: want an integer reply", argv[0], rt_server_port(s));
  long long n = r->integer;
  freeReplyObject(r);
  return n;
}

long long rt_cmd_argv_num(rt_server_t *s, int argc, const char **argv, const size_t *lens,
                          long long if_nil) {
  redisReply *r = rt_cmd_argv(s, argc, argv, lens);
  if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
    FAIL("%s on port %d: want a number or nil", argv[0], rt_server_port(s));
  long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : if_nil;
  freeReplyObject(r);
  return n;
}

/* verb: NUMSUB or SHARDNUMSUB. */
static long long pubsub_count(rt_server_t *s, const char *verb, const char *channel) {
  redisReply *r = rt_cmd(s, "PUBSUB %s %s", verb, channel);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[1]->type != REDIS_REPLY_INTEGER)
    FAIL("PUBSUB %s %s on port %d: unexpected reply", verb, channel, rt_server_port(s));
  long long n = r->element[1]->integer;
  freeReplyObject(r);
  return n;
}

long long rt_server_numsub(rt_server_t *s, const char *channel) {
  return pubsub_count(s, "NUMSUB", channel);
}

long long rt_server_shardnumsub(rt_server_t *s, const char *channel) {
  return pubsub_count(s, "SHARDNUMSUB", channel);
}

void rt_server_wait_channels_gone_at(const char *file, int line, rt_server_t *s,
                                     const char *pattern) {
  int64_t end = rt_now_ms() + rt_scaled_ms(2000);
  for (long i = 0; i < 1000000L; i++) {
    redisReply *r = rt_cmd(s, "PUBSUB CHANNELS %s", pattern);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
      rt_fail_at(file, line, "PUBSUB CHANNELS %s: unexpected reply", pattern);
    size_t n = r->elements;
    char first[256] = "";
    if (n > 0 && r->element[0]->type == REDIS_REPLY_STRING)
      snprintf(first, sizeof first, "%s", r->element[0]->str);
    freeReplyObject(r);
    if (n == 0)
      return;
    if (rt_now_ms() > end)
      rt_fail_at(file, line, "%zu channels like %s still subscribed after %lld ms, first: %s",
                 n, pattern, (long long)rt_scaled_ms(2000), first);
    rt_sleep_ms(5);
  }
}

long long rt_server_count_keys(rt_server_t *s, const char *pattern) {
  redisReply *r = rt_cmd(s, "KEYS %s", pattern);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY)
    FAIL("KEYS %s: unexpected reply", pattern);
  long long n = (long long)r->elements;
  freeReplyObject(r);
  return n;
}

int rt_busy_script(int port, long long busy_ms, const char *mark_key) {
  redisContext *c = redisConnect("127.0.0.1", port);
  redisReply *r;
  int rc;
  if (c == NULL || c->err) {
    redisFree(c);
    return -1;
  }
  r = redisCommand(c, "EVAL %s 1 %s %lld",
                   "local t = redis.call('time') "
                   "local start = t[1] * 1000000 + t[2] "
                   "if KEYS[1] ~= '' then redis.call('set', KEYS[1], t[1] .. ' ' .. t[2]) end "
                   "while true do "
                   "  t = redis.call('time') "
                   "  if t[1] * 1000000 + t[2] - start > tonumber(ARGV[1]) * 1000 then break end "
                   "end return 1",
                   mark_key != NULL ? mark_key : "", busy_ms);
  rc = r != NULL && r->type == REDIS_REPLY_INTEGER ? 0 : -1;
  freeReplyObject(r);
  redisFree(c);
  return rc;
}
