/* flash_sale: blocking access to the stock on one server or a cluster
 * (nodes.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "nodes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define FS_MAX_HOPS 5 /* redirections followed for one command */

const char *fs_addr(const fs_redis *r, int node, char *buf, size_t len) {
  snprintf(buf, len, "%s:%d", r->node[node].host, r->node[node].port);
  return buf;
}

/* The node with that address, added when new; -1 when the table is full
 * or the host does not fit. */
static int node_get(fs_redis *r, const char *host, size_t host_len, int port) {
  for (int i = 0; i < r->n; i++)
    if (r->node[i].port == port && strlen(r->node[i].host) == host_len &&
        memcmp(r->node[i].host, host, host_len) == 0)
      return i;
  if (r->n == FS_MAX_NODES || host_len >= sizeof r->node[0].host) return -1;
  fs_node *n = &r->node[r->n];
  memset(n, 0, sizeof *n);
  memcpy(n->host, host, host_len);
  n->port = port;
  return r->n++;
}

/* One hiredis reply checked: 0 for the status OK, else -1 with a message. */
static int expect_ok(fs_node *n, redisReply *ok, const char *what) {
  int rc = ok != NULL && ok->type == REDIS_REPLY_STATUS ? 0 : -1;
  if (rc < 0)
    fprintf(stderr, "flash_sale: %s on %s:%d: %s\n", what, n->host, n->port,
            ok == NULL ? n->ctx->errstr
            : ok->type == REDIS_REPLY_ERROR ? ok->str : "unexpected reply");
  if (ok != NULL) freeReplyObject(ok);
  return rc;
}

/* Connects node i (the seed over its unix socket when there is one), logs
 * in, and selects the database on a standalone server. */
static int connect_node(fs_redis *r, int i) {
  fs_node *n = &r->node[i];
  if (n->ctx != NULL) return 0;
  struct timeval tv = {2, 0};
  n->ctx = i == 0 && r->unix_path != NULL
               ? redisConnectUnixWithTimeout(r->unix_path, tv)
               : redisConnectWithTimeout(n->host, n->port, tv);
  if (n->ctx == NULL || n->ctx->err) {
    fprintf(stderr, "flash_sale: connecting to %s:%d: %s\n",
            i == 0 && r->unix_path ? r->unix_path : n->host, n->port,
            n->ctx ? n->ctx->errstr : "out of memory");
    if (n->ctx) redisFree(n->ctx);
    n->ctx = NULL;
    return -1;
  }
  tv.tv_sec = 5;
  redisSetTimeout(n->ctx, tv);
  int rc = 0;
  if (r->password != NULL)
    rc = expect_ok(n, r->username != NULL
                          ? redisCommand(n->ctx, "AUTH %s %s", r->username, r->password)
                          : redisCommand(n->ctx, "AUTH %s", r->password), "AUTH");
  if (rc == 0 && r->db != 0 && !r->cluster)
    rc = expect_ok(n, redisCommand(n->ctx, "SELECT %d", r->db), "SELECT");
  if (rc < 0) {
    redisFree(n->ctx);
    n->ctx = NULL;
  }
  return rc;
}

const char *fs_where(const lk_client_opts_t *a, char *buf, size_t len) {
  char db[16] = "";
  if (a->db != 0) snprintf(db, sizeof db, "/%d", a->db);
  if (a->unix_path != NULL)
    snprintf(buf, len, "%s%s", a->unix_path, db);
  else if (strchr(a->host, ':') != NULL)
    snprintf(buf, len, "[%s]:%d%s", a->host, a->port, db);
  else
    snprintf(buf, len, "%s:%d%s", a->host, a->port, db);
  return buf;
}

/* "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": the target's
 * node index (an empty host is the host the reply came from), or -1. */
static int redirect_target(fs_redis *r, int from, const redisReply *e,
                           int *ask) {
  const char *p;
  if (strncmp(e->str, "MOVED ", 6) == 0) {
    *ask = 0;
    p = e->str + 6;
  } else if (strncmp(e->str, "ASK ", 4) == 0) {
    *ask = 1;
    p = e->str + 4;
  } else {
    return -1;
  }
  const char *addr = strchr(p, ' '), *colon = strrchr(e->str, ':');
  if (addr == NULL || colon == NULL || colon < addr) return -1;
  addr++;
  int port = atoi(colon + 1);
  if (port <= 0 || port > 65535) return -1;
  if (colon == addr) {
    addr = r->node[from].host;
    colon = addr + strlen(addr);
  }
  return node_get(r, addr, (size_t)(colon - addr), port);
}

redisReply *fs_command(fs_redis *r, int *at, const char *fmt, ...) {
  int to = *at, ask = 0;
  for (int hop = 0; hop <= FS_MAX_HOPS; hop++) {
    fs_node *n = &r->node[to];
    if (connect_node(r, to) < 0) return NULL;
    if (ask) { /* the slot is moving: ASKING admits one command */
      redisReply *ok = redisCommand(n->ctx, "ASKING");
      if (ok != NULL) freeReplyObject(ok);
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = redisvCommand(n->ctx, fmt, ap);
    va_end(ap);
    if (reply == NULL) {
      fprintf(stderr, "flash_sale: %s:%d: %s\n", n->host, n->port,
              n->ctx->errstr);
      redisFree(n->ctx); /* reconnected on next use */
      n->ctx = NULL;
      return NULL;
    }
    int next = reply->type == REDIS_REPLY_ERROR
                   ? redirect_target(r, to, reply, &ask) : -1;
    if (next < 0) {
      if (!ask) *at = to;
      return reply;
    }
    freeReplyObject(reply);
    to = next;
  }
  fprintf(stderr, "flash_sale: more than %d redirections for one command\n",
          FS_MAX_HOPS);
  return NULL;
}

/* CLUSTER SLOTS: [[first, last, [host, port, ...] (master), replicas...]]. */
static int read_slots(fs_redis *r, const redisReply *slots, char *err,
                      size_t errlen) {
  for (size_t i = 0; i < slots->elements; i++) {
    const redisReply *e = slots->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[2]->type != REDIS_REPLY_ARRAY ||
        e->element[2]->elements < 2 ||
        e->element[2]->element[0]->type != REDIS_REPLY_STRING) {
      snprintf(err, errlen, "CLUSTER SLOTS: unexpected reply");
      return -1;
    }
    const redisReply *m = e->element[2];
    const char *host = m->element[0]->len ? m->element[0]->str
                                          : r->node[0].host;
    int node = node_get(r, host, strlen(host), (int)m->element[1]->integer);
    if (node < 0 || r->nranges == (int)(sizeof r->range / sizeof r->range[0])) {
      snprintf(err, errlen, "CLUSTER SLOTS: too many nodes or ranges");
      return -1;
    }
    if (!r->node[node].master) r->masters++;
    r->node[node].master = 1;
    r->range[r->nranges].first = (int)e->element[0]->integer;
    r->range[r->nranges].last = (int)e->element[1]->integer;
    r->range[r->nranges++].node = node;
  }
  if (r->masters == 0) {
    snprintf(err, errlen, "a cluster node, but no slot has a master");
    return -1;
  }
  return 0;
}

int fs_open(fs_redis *r, const lk_client_opts_t *addr, char *err,
            size_t errlen) {
  char where[300];
  memset(r, 0, sizeof *r);
  if (addr->tls.enable || addr->sentinels != NULL) {
    snprintf(err, errlen, "the demo's own stock connections (hiredis 0.14) "
             "speak neither TLS nor Sentinel");
    return -1;
  }
  r->unix_path = addr->unix_path;
  r->username = addr->username;
  r->password = addr->password;
  r->db = addr->db;
  r->cluster = 1; /* no SELECT until CLUSTER SLOTS has said otherwise */
  if (node_get(r, addr->host, strlen(addr->host), addr->port) != 0) {
    snprintf(err, errlen, "host name too long");
    return -1;
  }
  if (connect_node(r, 0) < 0) {
    snprintf(err, errlen, "cannot reach Redis at %s",
             fs_where(addr, where, sizeof where));
    return -1;
  }
  redisReply *slots = redisCommand(r->node[0].ctx, "CLUSTER SLOTS");
  if (slots == NULL) {
    snprintf(err, errlen, "CLUSTER SLOTS: %s", r->node[0].ctx->errstr);
    fs_close(r);
    return -1;
  }
  int rc = 0;
  if (slots->type == REDIS_REPLY_ARRAY) { /* else: not a cluster */
    rc = read_slots(r, slots, err, errlen);
  } else {
    r->cluster = 0;
    r->masters = 1;
    r->node[0].master = 1;
    if (r->db != 0 &&
        expect_ok(&r->node[0], redisCommand(r->node[0].ctx, "SELECT %d", r->db),
                  "SELECT") < 0) {
      snprintf(err, errlen, "SELECT %d failed", r->db);
      rc = -1;
    }
  }
  freeReplyObject(slots);
  if (rc < 0) fs_close(r);
  return rc;
}

int fs_master_of(fs_redis *r, const char *key) {
  if (!r->cluster) return 0;
  int seed = 0;
  redisReply *s = fs_command(r, &seed, "CLUSTER KEYSLOT %s", key);
  if (s == NULL) return -1;
  long long slot = s->type == REDIS_REPLY_INTEGER ? s->integer : -1;
  freeReplyObject(s);
  for (int i = 0; i < r->nranges; i++)
    if (slot >= r->range[i].first && slot <= r->range[i].last)
      return r->range[i].node;
  fprintf(stderr, "flash_sale: no master serves the slot of %s\n", key);
  return -1;
}

void fs_close(fs_redis *r) {
  for (int i = 0; i < r->n; i++) {
    if (r->node[i].ctx) redisFree(r->node[i].ctx);
    r->node[i].ctx = NULL;
  }
}
