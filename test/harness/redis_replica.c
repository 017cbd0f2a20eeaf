/* Replicas of harness masters (see redis_replica.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redis_replica.h"

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_REPLICA_MAX_ARGS 64

rt_server_t *rt_replica_start(rt_server_t *master, const rt_replica_opts_t *opts) {
  if (master == NULL || !rt_server_running(master)) {
    fprintf(stderr, "rt_replica_start: the master is not running\n");
    return NULL;
  }
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  if (opts != NULL && opts->server != NULL)
    so = *opts->server;

  /* Without the delay the first full sync (diskless by default in Redis 7)
   * waits 5 s for more replicas to join. */
  redisReply *r = rt_cmd(master, "CONFIG SET repl-diskless-sync-delay 0");
  if (r != NULL)
    freeReplyObject(r);

  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(master));
  const char *args[RT_REPLICA_MAX_ARGS];
  size_t n = 0;
  args[n++] = "--replicaof";
  args[n++] = "127.0.0.1";
  args[n++] = port;
  if (opts != NULL && opts->masterauth != NULL) {
    args[n++] = "--masterauth";
    args[n++] = opts->masterauth;
  }
  for (size_t i = 0; so.extra_args != NULL && so.extra_args[i] != NULL; i++) {
    if (n + 1 >= RT_REPLICA_MAX_ARGS) {
      fprintf(stderr, "rt_replica_start: more than %d extra arguments\n",
              RT_REPLICA_MAX_ARGS - 8);
      return NULL;
    }
    args[n++] = so.extra_args[i];
  }
  args[n] = NULL;
  so.extra_args = args; /* rt_server_start copies them */

  rt_server_t *replica = rt_server_start(&so);
  if (replica == NULL)
    return NULL;
  if (rt_replica_wait_link_up(replica, 10000) != 0) {
    rt_server_stop(replica);
    return NULL;
  }
  return replica;
}

int rt_replica_wait_link_up(rt_server_t *replica, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + rt_scaled_ms(timeout_ms);
  char *last = NULL;
  for (long i = 0; i < 100000L; i++) {
    free(last);
    last = rt_server_info(replica, "replication", "master_link_status");
    if (last != NULL && strcmp(last, "up") == 0) {
      free(last);
      return 0;
    }
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(20);
  }
  fprintf(stderr, "rt_replica: port %d: master_link_status %s after %lld ms\n",
          rt_server_port(replica), last ? last : "(none)",
          (long long)rt_scaled_ms(timeout_ms));
  free(last);
  return -1;
}

static long long info_ll(rt_server_t *s, const char *field) {
  char *v = rt_server_info(s, "replication", field);
  long long n = v != NULL ? atoll(v) : -1;
  free(v);
  return n;
}

int rt_replica_wait_caught_up(rt_server_t *master, rt_server_t *replica, int64_t timeout_ms) {
  long long want = info_ll(master, "master_repl_offset");
  if (want < 0) {
    fprintf(stderr, "rt_replica: port %d: no master_repl_offset\n", rt_server_port(master));
    return -1;
  }
  int64_t deadline = rt_now_ms() + rt_scaled_ms(timeout_ms);
  long long have = -1;
  for (long i = 0; i < 100000L; i++) {
    have = info_ll(replica, "slave_repl_offset");
    if (have >= want)
      return 0;
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(5);
  }
  fprintf(stderr, "rt_replica: port %d: slave_repl_offset %lld < master's %lld after %lld ms\n",
          rt_server_port(replica), have, want, (long long)rt_scaled_ms(timeout_ms));
  return -1;
}

char *rt_server_role(rt_server_t *s) {
  redisReply *r = rt_cmd(s, "ROLE");
  char *out = NULL;
  if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
      r->element[0]->type == REDIS_REPLY_STRING)
    out = strdup(r->element[0]->str);
  if (r != NULL)
    freeReplyObject(r);
  return out;
}
