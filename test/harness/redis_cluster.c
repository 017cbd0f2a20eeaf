/* A private Redis Cluster of rt_server_t nodes (see redis_cluster.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "redis_cluster.h"

#include "test.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_NO_NODE 0xFF
#define RT_MAX_MIGRATIONS 16

typedef struct {
  rt_server_t *srv; /* NULL before start and once removed */
  int port;
  int bus; /* cluster bus port (cluster-port) */
  int paused;
  char id[48];
} node_t;

typedef struct {
  int slot, from, to; /* slot -1: free record */
} migration_t;

struct rt_cluster_s {
  node_t nodes[RT_CLUSTER_MAX_NODES];
  int n;
  int masters, replicas, node_timeout_ms;
  char **extra; /* the caller's extra args, NULL-terminated copy */
  char *tls[3];  /* certificate, key, CA (NULL: no TLS) */
  migration_t mig[RT_MAX_MIGRATIONS];
  /* slot -> node index (RT_NO_NODE: unassigned or unknown) */
  uint8_t map[RT_CLUSTER_SLOTS], ref[RT_CLUSTER_SLOTS];
  /* node -> the master CLUSTER SLOTS lists it under (RT_NO_NODE: not
   * listed as a replica) */
  uint8_t listed_under[RT_CLUSTER_MAX_NODES];
};

/* ---- small helpers ----------------------------------------------------------------- */

static int node_valid(const rt_cluster_t *c, int i) {
  return c != NULL && i >= 0 && i < c->n && c->nodes[i].srv != NULL;
}

int rt_cluster_up(const rt_cluster_t *c, int i) {
  return node_valid(c, i) && rt_server_running(c->nodes[i].srv) && !c->nodes[i].paused;
}

int rt_cluster_size(const rt_cluster_t *c) { return c->n; }

rt_server_t *rt_cluster_server(rt_cluster_t *c, int i) {
  return (c != NULL && i >= 0 && i < c->n) ? c->nodes[i].srv : NULL;
}

int rt_cluster_port(const rt_cluster_t *c, int i) {
  return (i >= 0 && i < c->n) ? c->nodes[i].port : 0;
}

const char *rt_cluster_id(const rt_cluster_t *c, int i) {
  return (i >= 0 && i < c->n) ? c->nodes[i].id : "";
}

int rt_cluster_index_of_port(const rt_cluster_t *c, int port) {
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].srv != NULL &&
        (c->nodes[i].port == port || rt_server_tls_port(c->nodes[i].srv) == port))
      return i; /* a TLS port: what replicas of a --tls-replication node report */
  return -1;
}

static int reply_is_ok(const redisReply *r) {
  return r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
}

/* Sends a command to node i, expecting +OK; prints and returns -1 otherwise. */
static int cmd_ok(rt_cluster_t *c, int i, const char *fmt, ...) {
  va_list ap;
  if (!rt_cluster_up(c, i)) {
    fprintf(stderr, "rt_cluster: node %d is not up for \"%s\"\n", i, fmt);
    return -1;
  }
  va_start(ap, fmt);
  char cmd[256];
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  /* Every argument here is a word, a number or a node id: split on spaces. */
  const char *argv[16];
  size_t lens[16];
  int argc = 0;
  for (char *save = NULL, *tok = strtok_r(cmd, " ", &save); tok != NULL && argc < 16;
       tok = strtok_r(NULL, " ", &save)) {
    argv[argc] = tok;
    lens[argc] = strlen(tok);
    argc++;
  }
  redisReply *r = rt_cmd_argv(c->nodes[i].srv, argc, argv, lens);
  int ok = reply_is_ok(r);
  if (!ok)
    fprintf(stderr, "rt_cluster: node %d (port %d): %s -> %s\n", i, c->nodes[i].port, fmt,
            r == NULL ? "no reply" : (r->str != NULL ? r->str : "non-text reply"));
  if (r != NULL)
    freeReplyObject(r);
  return ok ? 0 : -1;
}

/* "name:value" in an INFO-style text (CLUSTER INFO), as a number; -1 absent. */
static long long text_field(const char *text, size_t len, const char *name, char *val,
                            size_t val_cap) {
  size_t nlen = strlen(name);
  const char *p = text, *end = text + len;
  for (int lines = 0; p < end && lines < 10000; lines++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL)
      eol = end;
    if ((size_t)(eol - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == ':') {
      const char *v = p + nlen + 1, *vend = eol;
      if (vend > v && vend[-1] == '\r')
        vend--;
      if (val != NULL && val_cap > 0)
        snprintf(val, val_cap, "%.*s", (int)(vend - v), v);
      return atoll(v);
    }
    p = eol + 1;
  }
  if (val != NULL && val_cap > 0)
    val[0] = '\0';
  return -1;
}

/* ---- asking the nodes ------------------------------------------------------------- */

int rt_cluster_is_master(rt_cluster_t *c, int i) {
  if (!rt_cluster_up(c, i))
    return -1;
  redisReply *r = rt_cmd(c->nodes[i].srv, "ROLE");
  int role = -1;
  if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
      r->element[0]->type == REDIS_REPLY_STRING)
    role = strcmp(r->element[0]->str, "master") == 0 ? 1 : 0;
  if (r != NULL)
    freeReplyObject(r);
  return role;
}

int rt_cluster_master_of(rt_cluster_t *c, int i) {
  if (rt_cluster_is_master(c, i) != 0)
    return -1;
  char *port = rt_server_info(c->nodes[i].srv, "replication", "master_port");
  int m = port != NULL ? rt_cluster_index_of_port(c, atoi(port)) : -1;
  free(port);
  return m;
}

int rt_cluster_replica_of(rt_cluster_t *c, int master) {
  for (int i = 0; i < c->n; i++)
    if (i != master && rt_cluster_up(c, i) && rt_cluster_master_of(c, i) == master)
      return i;
  return -1;
}

int rt_cluster_masters(rt_cluster_t *c, int *out, int cap) {
  int n = 0;
  for (int i = 0; i < c->n && n < cap; i++)
    if (rt_cluster_is_master(c, i) == 1)
      out[n++] = i;
  return n;
}

int rt_cluster_is_valkey(rt_cluster_t *c) {
  for (int i = 0; i < c->n; i++) {
    if (!rt_cluster_up(c, i))
      continue;
    char *name = rt_server_info(c->nodes[i].srv, "server", "server_name");
    int valkey = name != NULL && strcmp(name, "valkey") == 0;
    free(name);
    return valkey;
  }
  return 0;
}

/* Node i's view of slot ownership (CLUSTER SLOTS) into map, and of which
 * replicas serve which master into c->listed_under. CLUSTER SLOTS leaves out
 * a replica until this node knows it as one and has heard of a replication
 * offset other than 0 from it. 0, or -1 after writing why. */
static int read_owner_map(rt_cluster_t *c, int i, uint8_t *map, char *why, size_t why_len) {
  memset(map, RT_NO_NODE, RT_CLUSTER_SLOTS);
  memset(c->listed_under, RT_NO_NODE, sizeof c->listed_under);
  redisReply *r = rt_cmd(c->nodes[i].srv, "CLUSTER SLOTS");
  int rc = 0;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
    snprintf(why, why_len, "node %d: CLUSTER SLOTS: %s", i,
             r == NULL ? "no reply" : (r->str ? r->str : "not an array"));
    rc = -1;
  }
  for (size_t k = 0; rc == 0 && k < r->elements; k++) {
    const redisReply *e = r->element[k];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
        e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
        e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
      snprintf(why, why_len, "node %d: CLUSTER SLOTS: unexpected entry", i);
      rc = -1;
      break;
    }
    long long lo = e->element[0]->integer, hi = e->element[1]->integer;
    int owner = rt_cluster_index_of_port(c, (int)e->element[2]->element[1]->integer);
    for (long long s = lo; s <= hi && s >= 0 && s < RT_CLUSTER_SLOTS; s++)
      map[s] = owner < 0 ? RT_NO_NODE - 1 : (uint8_t)owner;
    for (size_t k2 = 3; owner >= 0 && k2 < e->elements; k2++) {
      const redisReply *rep = e->element[k2];
      if (rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2 &&
          rep->element[1]->type == REDIS_REPLY_INTEGER) {
        int ri = rt_cluster_index_of_port(c, (int)rep->element[1]->integer);
        if (ri >= 0)
          c->listed_under[ri] = (uint8_t)owner;
      }
    }
  }
  if (r != NULL)
    freeReplyObject(r);
  return rc;
}

/* The first up node, or -1. */
static int any_up(const rt_cluster_t *c) {
  for (int i = 0; i < c->n; i++)
    if (rt_cluster_up(c, i))
      return i;
  return -1;
}

int rt_cluster_slot_owner(rt_cluster_t *c, int slot) {
  char why[256];
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS)
    return -1;
  for (int i = 0; i < c->n; i++) {
    if (rt_cluster_up(c, i) && read_owner_map(c, i, c->map, why, sizeof why) == 0)
      return c->map[slot] < c->n ? c->map[slot] : -1;
  }
  return -1;
}

int rt_cluster_key_slot(rt_cluster_t *c, const char *key, size_t len) {
  int i = any_up(c);
  if (i < 0)
    FAIL("rt_cluster_key_slot: no node is up");
  const char *argv[] = {"CLUSTER", "KEYSLOT", key};
  size_t lens[] = {7, 7, len};
  redisReply *r = rt_cmd_argv(c->nodes[i].srv, 3, argv, lens);
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    FAIL("rt_cluster_key_slot: CLUSTER KEYSLOT on node %d: %s", i,
         r == NULL ? "no reply" : (r->str ? r->str : "not an integer"));
  int slot = (int)r->integer;
  freeReplyObject(r);
  return slot;
}

int rt_cluster_key_on(rt_cluster_t *c, int i, const char *prefix, char *out, size_t cap) {
  char why[256];
  int asked = any_up(c);
  if (asked < 0 || read_owner_map(c, asked, c->map, why, sizeof why) != 0)
    return -1;
  for (int n = 0; n < 10000; n++) {
    int len = snprintf(out, cap, "%s%d", prefix, n);
    if (len < 0 || (size_t)len >= cap)
      return -1;
    int slot = rt_cluster_key_slot(c, out, (size_t)len);
    if (c->map[slot] == i)
      return slot;
  }
  return -1;
}

/* ---- waiting ------------------------------------------------------------------------ */

typedef int (*pred_fn)(rt_cluster_t *c, int arg, char *why, size_t why_len);

static int wait_for(rt_cluster_t *c, pred_fn pred, int arg, int64_t timeout_ms, const char *what) {
  int64_t limit = rt_scaled_ms(timeout_ms);
  int64_t deadline = rt_now_ms() + limit;
  char why[512] = "not checked";
  for (long i = 0; i < 1000000L; i++) {
    if (pred(c, arg, why, sizeof why))
      return 0;
    if (rt_now_ms() > deadline)
      break;
    rt_sleep_ms(20);
  }
  fprintf(stderr, "rt_cluster: %s not reached in %lld ms (last: %s)\n", what, (long long)limit,
          why);
  return -1;
}

static int members(const rt_cluster_t *c) {
  int n = 0;
  for (int i = 0; i < c->n; i++)
    n += c->nodes[i].srv != NULL;
  return n;
}

/* cluster_state:ok and every member known, on node i. */
static int node_info_ok(rt_cluster_t *c, int i, char *why, size_t why_len) {
  redisReply *r = rt_cmd(c->nodes[i].srv, "CLUSTER INFO");
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    snprintf(why, why_len, "node %d: CLUSTER INFO: %s", i, r ? "not a string" : "no reply");
    if (r != NULL)
      freeReplyObject(r);
    return 0;
  }
  char state[32];
  text_field(r->str, r->len, "cluster_state", state, sizeof state);
  long long known = text_field(r->str, r->len, "cluster_known_nodes", NULL, 0);
  freeReplyObject(r);
  if (strcmp(state, "ok") != 0) {
    snprintf(why, why_len, "node %d: cluster_state:%s", i, state);
    return 0;
  }
  if (known != members(c)) {
    snprintf(why, why_len, "node %d knows %lld nodes, %d expected", i, known, members(c));
    return 0;
  }
  return 1;
}

static int pred_stable(rt_cluster_t *c, int arg, char *why, size_t why_len) {
  (void)arg;
  /* Who replicates whom, by the replicas' own word (ROLE, INFO). */
  int master_of[RT_CLUSTER_MAX_NODES];
  for (int i = 0; i < c->n; i++) {
    master_of[i] = -1;
    if (rt_cluster_up(c, i) && rt_cluster_is_master(c, i) == 0) {
      char *link = rt_server_info(c->nodes[i].srv, "replication", "master_link_status");
      int up = link != NULL && strcmp(link, "up") == 0;
      free(link);
      master_of[i] = rt_cluster_master_of(c, i);
      if (!up || master_of[i] < 0) {
        snprintf(why, why_len, "replica %d: master link not up", i);
        return 0;
      }
    }
  }
  int first = 1;
  for (int i = 0; i < c->n; i++) {
    if (!rt_cluster_up(c, i))
      continue;
    if (!node_info_ok(c, i, why, why_len) || read_owner_map(c, i, c->map, why, why_len) != 0)
      return 0;
    for (int s = 0; s < RT_CLUSTER_SLOTS; s++) {
      if (c->map[s] >= c->n || !rt_cluster_up(c, c->map[s])) {
        snprintf(why, why_len, "node %d: slot %d is %s", i, s,
                 c->map[s] >= c->n ? "unassigned or on an unknown node" : "on a node that is down");
        return 0;
      }
    }
    if (first)
      memcpy(c->ref, c->map, sizeof c->ref);
    else if (memcmp(c->ref, c->map, sizeof c->ref) != 0) {
      int s = 0;
      while (s < RT_CLUSTER_SLOTS - 1 && c->ref[s] == c->map[s])
        s++;
      snprintf(why, why_len, "nodes disagree: slot %d on node %d for one, node %d for node %d",
               s, c->ref[s], c->map[s], i);
      return 0;
    }
    first = 0;
    /* Every node must know every replica as one, or a replica's CLUSTER
     * FAILOVER can go unanswered by a master that does not know it yet. A
     * replica of a master without slots is not listed by CLUSTER SLOTS. */
    for (int r = 0; r < c->n; r++) {
      if (master_of[r] < 0 || memchr(c->map, master_of[r], sizeof c->map) == NULL)
        continue;
      if (c->listed_under[r] != master_of[r]) {
        snprintf(why, why_len, "node %d does not list replica %d under master %d", i, r,
                 master_of[r]);
        return 0;
      }
    }
  }
  if (first) {
    snprintf(why, why_len, "no node is up");
    return 0;
  }
  return 1;
}

int rt_cluster_wait_stable(rt_cluster_t *c, int64_t timeout_ms) {
  return wait_for(c, pred_stable, 0, timeout_ms, "a stable cluster");
}

static int pred_master(rt_cluster_t *c, int node, char *why, size_t why_len) {
  if (rt_cluster_is_master(c, node) != 1) {
    snprintf(why, why_len, "node %d is not (yet) a master", node);
    return 0;
  }
  for (int i = 0; i < c->n; i++) {
    if (!rt_cluster_up(c, i))
      continue;
    if (read_owner_map(c, i, c->map, why, why_len) != 0)
      return 0;
    if (memchr(c->map, node, sizeof c->map) == NULL) {
      snprintf(why, why_len, "node %d does not yet see node %d owning a slot", i, node);
      return 0;
    }
  }
  return 1;
}

int rt_cluster_wait_master(rt_cluster_t *c, int i, int64_t timeout_ms) {
  return wait_for(c, pred_master, i, timeout_ms, "a new master");
}

/* Startup: stable, with the configured numbers of masters and replicas. */
static int pred_formed(rt_cluster_t *c, int arg, char *why, size_t why_len) {
  if (!pred_stable(c, arg, why, why_len))
    return 0;
  int masters = 0;
  int per_master[RT_CLUSTER_MAX_NODES] = {0};
  for (int i = 0; i < c->n; i++) {
    int m = rt_cluster_is_master(c, i);
    if (m < 0)
      continue; /* not up: pred_stable said so already */
    if (m == 1) {
      masters++;
    } else {
      int of = rt_cluster_master_of(c, i);
      if (of < 0) {
        snprintf(why, why_len, "replica %d: master unknown", i);
        return 0;
      }
      per_master[of]++;
    }
  }
  for (int i = 0; i < c->n; i++) {
    if (rt_cluster_is_master(c, i) == 1 && per_master[i] != c->replicas) {
      snprintf(why, why_len, "master %d has %d replicas, %d expected", i, per_master[i],
               c->replicas);
      return 0;
    }
  }
  if (masters != c->masters) {
    snprintf(why, why_len, "%d masters, %d expected", masters, c->masters);
    return 0;
  }
  return 1;
}

/* The index of the node whose id is the string reply id, or -1. */
static int index_of_id(const rt_cluster_t *c, const redisReply *id) {
  if (id == NULL || id->type != REDIS_REPLY_STRING)
    return -1;
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].srv != NULL && strlen(c->nodes[i].id) == id->len &&
        memcmp(c->nodes[i].id, id->str, id->len) == 0)
      return i;
  return -1;
}

/* The value under key in a RESP2 key-value array, or NULL. */
static const redisReply *kv_get(const redisReply *kv, const char *key) {
  if (kv == NULL || kv->type != REDIS_REPLY_ARRAY)
    return NULL;
  for (size_t k = 0; k + 1 < kv->elements; k += 2)
    if (kv->element[k]->type == REDIS_REPLY_STRING && strcmp(kv->element[k]->str, key) == 0)
      return kv->element[k + 1];
  return NULL;
}

/* Node i's CLUSTER SHARDS puts every replica r in the shard of master_of[r]
 * (Valkey groups by shard id, which gossip carries a little after CLUSTER
 * REPLICATE; a server without CLUSTER SHARDS passes). 1, or 0 with why. */
static int node_shards_ok(rt_cluster_t *c, int i, const int *master_of, char *why,
                          size_t why_len) {
  redisReply *r = rt_cmd(c->nodes[i].srv, "CLUSTER SHARDS");
  if (r != NULL && r->type == REDIS_REPLY_ERROR) {
    freeReplyObject(r);
    return 1;
  }
  int ok = r != NULL && r->type == REDIS_REPLY_ARRAY;
  snprintf(why, why_len, "node %d: CLUSTER SHARDS: %s", i, ok ? "" : "no array reply");
  int listed = 0;
  for (size_t k = 0; ok && k < r->elements; k++) {
    const redisReply *nodes = kv_get(r->element[k], "nodes");
    int shard_master = -1;
    for (size_t m = 0; nodes != NULL && nodes->type == REDIS_REPLY_ARRAY && m < nodes->elements;
         m++) {
      const redisReply *role = kv_get(nodes->element[m], "role");
      if (role != NULL && role->type == REDIS_REPLY_STRING && strcmp(role->str, "master") == 0)
        shard_master = index_of_id(c, kv_get(nodes->element[m], "id"));
    }
    for (size_t m = 0; nodes != NULL && nodes->type == REDIS_REPLY_ARRAY && m < nodes->elements;
         m++) {
      int n = index_of_id(c, kv_get(nodes->element[m], "id"));
      if (n < 0 || master_of[n] < 0)
        continue;
      listed++;
      if (shard_master != master_of[n]) {
        snprintf(why, why_len, "node %d: CLUSTER SHARDS has replica %d beside master %d", i, n,
                 shard_master);
        ok = 0;
      }
    }
  }
  if (r != NULL)
    freeReplyObject(r);
  int replicas = 0;
  for (int n = 0; n < c->n; n++)
    replicas += master_of[n] >= 0;
  if (ok && listed != replicas) {
    snprintf(why, why_len, "node %d: CLUSTER SHARDS lists %d of %d replicas", i, listed,
             replicas);
    ok = 0;
  }
  return ok;
}

/* Startup's gate: pred_formed, and every node's CLUSTER SHARDS groups every
 * replica with its master, as a cluster redis-cli formed (with its pauses)
 * did by the time pred_formed held. */
static int pred_ready(rt_cluster_t *c, int arg, char *why, size_t why_len) {
  if (!pred_formed(c, arg, why, why_len))
    return 0;
  int master_of[RT_CLUSTER_MAX_NODES];
  for (int i = 0; i < c->n; i++)
    master_of[i] = rt_cluster_master_of(c, i);
  for (int i = 0; i < c->n; i++)
    if (rt_cluster_up(c, i) && !node_shards_ok(c, i, master_of, why, why_len))
      return 0;
  return 1;
}

/* ---- starting nodes ------------------------------------------------------------- */

static char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (d == NULL)
    FAIL("out of memory");
  return d;
}

/* Spawns a node on fresh ports without waiting for it (rt_server_spawn),
 * with its bus port (written into bus) picked apart (cluster-port), since
 * port + 10000 may fall into the kernel's ephemeral range. NULL after
 * printing why. */
static rt_server_t *spawn_node(rt_cluster_t *c, int *bus) {
  char timeout[16], bus_arg[16];
  snprintf(timeout, sizeof timeout, "%d", c->node_timeout_ms);
  *bus = rt_pick_port();
  snprintf(bus_arg, sizeof bus_arg, "%d", *bus);
  size_t n_extra = 0;
  while (c->extra != NULL && c->extra[n_extra] != NULL)
    n_extra++;
  const char *fixed[] = {
      "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
      "--cluster-node-timeout", timeout, "--cluster-port", bus_arg,
      /* replicas sync at once instead of after diskless sync's 5 s delay */
      "--repl-diskless-sync-delay", "0",
      /* the replication offset moves (and the cluster lists a replica as
       * usable) within a second even with no writes, not after 10 s */
      "--repl-ping-replica-period", "1",
      /* replicas stay where the test put them */
      "--cluster-allow-replica-migration", "no"};
  size_t n_fixed = sizeof fixed / sizeof fixed[0];
  const char **argv = calloc(n_fixed + n_extra + 1, sizeof *argv);
  if (argv == NULL)
    FAIL("out of memory");
  for (size_t k = 0; k < n_fixed; k++)
    argv[k] = fixed[k];
  for (size_t k = 0; k < n_extra; k++)
    argv[n_fixed + k] = c->extra[k];
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  so.debug_command = 1;
  so.extra_args = argv;
  so.tls_cert_file = c->tls[0];
  so.tls_key_file = c->tls[1];
  so.tls_ca_file = c->tls[2];
  rt_server_t *s = rt_server_spawn(&so);
  free(argv);
  return s;
}

/* Waits for node i's spawned server s (rt_server_await) and makes it node
 * i. 0; 1 when it did not start (s stopped: worth a try with another bus
 * port); -1 after printing why. */
static int adopt_node(rt_cluster_t *c, int i, rt_server_t *s, int bus) {
  if (s == NULL || rt_server_await(s) != 0) {
    rt_server_stop(s);
    return 1;
  }
  char *id = rt_cmd_str(s, "CLUSTER MYID");
  if (id == NULL || strlen(id) >= sizeof c->nodes[i].id) {
    free(id);
    rt_server_stop(s);
    fprintf(stderr, "rt_cluster: node %d: no CLUSTER MYID\n", i);
    return -1;
  }
  snprintf(c->nodes[i].id, sizeof c->nodes[i].id, "%s", id);
  free(id);
  c->nodes[i].srv = s;
  c->nodes[i].port = rt_server_port(s);
  c->nodes[i].bus = bus;
  c->nodes[i].paused = 0;
  return 0;
}

/* Starts node i on fresh ports. A bus port lost to a race fails the start:
 * pick another and try again. */
static int start_node(rt_cluster_t *c, int i) {
  for (int attempt = 0; attempt < 3; attempt++) {
    int bus;
    rt_server_t *s = spawn_node(c, &bus);
    int rc = adopt_node(c, i, s, bus);
    if (rc <= 0)
      return rc;
  }
  fprintf(stderr, "rt_cluster: node %d did not start\n", i);
  return -1;
}

/* Nodes 0..c->n - 1, spawned side by side, then each waited for in turn; a
 * node that did not start gets start_node's retries. 0, or -1 (the nodes
 * that started are c's, for rt_cluster_stop). */
static int start_nodes(rt_cluster_t *c) {
  rt_server_t *spawned[RT_CLUSTER_MAX_NODES];
  int bus[RT_CLUSTER_MAX_NODES];
  for (int i = 0; i < c->n; i++)
    spawned[i] = spawn_node(c, &bus[i]);
  int rc = 0;
  for (int i = 0; i < c->n; i++) {
    if (rc != 0) {
      rt_server_stop(spawned[i]);
      continue;
    }
    rc = adopt_node(c, i, spawned[i], bus[i]);
    if (rc > 0)
      rc = start_node(c, i);
  }
  return rc;
}

static int pred_replicate(rt_cluster_t *c, int arg, char *why, size_t why_len);

/* What `redis-cli --cluster create` does, by hand and without its 1 s
 * sleeps: nodes 0..masters-1 are the masters, each with an equal contiguous
 * share of the slots (redis-cli's split: 0-5460, 5461-10922, 10923-16383
 * for three); every node gets a config epoch of its own (index + 1) and
 * meets every other; replica node k (k >= masters) then replicates master
 * (k - masters) % masters. pred_ready decides when it is done. */
static int form_cluster(rt_cluster_t *c) {
  long first = 0;
  for (long m = 0; m < c->masters; m++) {
    /* redis-cli's lround((m + 1) * 16384 / masters) - 1, in integers */
    long last = (2 * (m + 1) * RT_CLUSTER_SLOTS + c->masters) / (2 * c->masters) - 1;
    if (m == c->masters - 1)
      last = RT_CLUSTER_SLOTS - 1;
    if (cmd_ok(c, (int)m, "CLUSTER ADDSLOTSRANGE %ld %ld", first, last) != 0)
      return -1;
    first = last + 1;
  }
  /* Before any MEET: SET-CONFIG-EPOCH needs a node that knows no other. */
  for (int i = 0; i < c->n; i++)
    if (cmd_ok(c, i, "CLUSTER SET-CONFIG-EPOCH %d", i + 1) != 0)
      return -1;
  for (int i = 0; i < c->n; i++)
    for (int j = i + 1; j < c->n; j++)
      if (cmd_ok(c, i, "CLUSTER MEET 127.0.0.1 %d %d", c->nodes[j].port, c->nodes[j].bus) != 0)
        return -1;
  for (int k = c->masters; k < c->n; k++)
    if (wait_for(c, pred_replicate, k | (((k - c->masters) % c->masters) << 8), 20000,
                 "CLUSTER REPLICATE") != 0)
      return -1;
  return 0;
}

void rt_cluster_opts_init(rt_cluster_opts_t *opts) {
  memset(opts, 0, sizeof *opts);
  opts->masters = 3;
  opts->replicas = 1;
  opts->node_timeout_ms = 2000;
}

rt_cluster_t *rt_cluster_start(const rt_cluster_opts_t *opts) {
  rt_cluster_opts_t defaults;
  if (opts == NULL) {
    rt_cluster_opts_init(&defaults);
    opts = &defaults;
  }
  int total = opts->masters * (1 + opts->replicas);
  /* as redis-cli --cluster create, which formed it before: 3 masters at least */
  if (opts->masters < 3 || opts->replicas < 0 || total > RT_CLUSTER_MAX_NODES ||
      opts->node_timeout_ms <= 0) {
    fprintf(stderr, "rt_cluster_start: %d masters x %d replicas not supported\n",
            opts->masters, opts->replicas);
    return NULL;
  }
  rt_cluster_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    FAIL("out of memory");
  c->masters = opts->masters;
  c->replicas = opts->replicas;
  c->node_timeout_ms = opts->node_timeout_ms;
  for (int k = 0; k < RT_MAX_MIGRATIONS; k++)
    c->mig[k].slot = -1;
  if (opts->tls_cert_file != NULL) {
    c->tls[0] = xstrdup(opts->tls_cert_file);
    c->tls[1] = xstrdup(opts->tls_key_file ? opts->tls_key_file : "");
    c->tls[2] = xstrdup(opts->tls_ca_file ? opts->tls_ca_file : "");
  }
  if (opts->extra_args != NULL) {
    size_t n = 0;
    while (opts->extra_args[n] != NULL)
      n++;
    c->extra = calloc(n + 1, sizeof *c->extra);
    if (c->extra == NULL)
      FAIL("out of memory");
    for (size_t k = 0; k < n; k++)
      c->extra[k] = xstrdup(opts->extra_args[k]);
  }
  c->n = total;
  if (start_nodes(c) != 0 || form_cluster(c) != 0 ||
      wait_for(c, pred_ready, 0, 30000, "a formed cluster") != 0) {
    rt_cluster_stop(c);
    return NULL;
  }
  return c;
}

void rt_cluster_stop(rt_cluster_t *c) {
  if (c == NULL)
    return;
  for (int i = 0; i < c->n; i++) {
    rt_server_stop(c->nodes[i].srv); /* kill -9 by PID, reap, remove its dir */
    c->nodes[i].srv = NULL;
  }
  if (c->extra != NULL)
    for (size_t k = 0; c->extra[k] != NULL; k++)
      free(c->extra[k]);
  free(c->extra);
  for (int k = 0; k < 3; k++)
    free(c->tls[k]);
  free(c);
}

/* ---- faults ------------------------------------------------------------------------ */

void rt_cluster_kill(rt_cluster_t *c, int i) {
  if (!node_valid(c, i))
    return;
  rt_server_kill(c->nodes[i].srv, SIGKILL);
  c->nodes[i].paused = 0;
}

void rt_cluster_pause(rt_cluster_t *c, int i) {
  if (!node_valid(c, i) || c->nodes[i].paused)
    return;
  rt_server_pause(c->nodes[i].srv);
  c->nodes[i].paused = rt_server_running(c->nodes[i].srv);
}

void rt_cluster_resume(rt_cluster_t *c, int i) {
  if (!node_valid(c, i) || !c->nodes[i].paused)
    return;
  rt_server_resume(c->nodes[i].srv);
  c->nodes[i].paused = 0;
}

int rt_cluster_failover(rt_cluster_t *c, int replica, const char *mode) {
  if (rt_cluster_is_master(c, replica) != 0) {
    fprintf(stderr, "rt_cluster_failover: node %d is not an up replica\n", replica);
    return -1;
  }
  int rc = mode != NULL ? cmd_ok(c, replica, "CLUSTER FAILOVER %s", mode)
                        : cmd_ok(c, replica, "CLUSTER FAILOVER");
  if (rc != 0)
    return -1;
  /* A coordinated failover takes well under a second; FORCE and TAKEOVER
   * too. The old master then resyncs as a replica of the new one. */
  if (rt_cluster_wait_master(c, replica, 20000) != 0)
    return -1;
  return rt_cluster_wait_stable(c, 20000);
}

/* ---- migration ----------------------------------------------------------------------- */

static migration_t *mig_find(rt_cluster_t *c, int slot) {
  for (int k = 0; k < RT_MAX_MIGRATIONS; k++)
    if (c->mig[k].slot == slot)
      return &c->mig[k];
  return NULL;
}

int rt_cluster_migrate_start(rt_cluster_t *c, int slot, int to) {
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS || mig_find(c, slot) != NULL ||
      rt_cluster_is_master(c, to) != 1) {
    fprintf(stderr, "rt_cluster_migrate_start: slot %d to node %d: bad slot, slot already "
                    "migrating, or target not an up master\n", slot, to);
    return -1;
  }
  int from = rt_cluster_slot_owner(c, slot);
  migration_t *m = mig_find(c, -1);
  if (from < 0 || from == to || m == NULL) {
    fprintf(stderr, "rt_cluster_migrate_start: slot %d: owner %d, target %d%s\n", slot, from,
            to, m == NULL ? ", too many migrations" : "");
    return -1;
  }
  if (cmd_ok(c, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, c->nodes[from].id) != 0 ||
      cmd_ok(c, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, c->nodes[to].id) != 0)
    return -1;
  m->slot = slot, m->from = from, m->to = to;
  return 0;
}

int rt_cluster_migrate_keys(rt_cluster_t *c, int slot, int max) {
  migration_t *m = mig_find(c, slot);
  if (m == NULL || !rt_cluster_up(c, m->from)) {
    fprintf(stderr, "rt_cluster_migrate_keys: slot %d is not migrating from an up node\n",
            slot);
    return -1;
  }
  rt_server_t *src = c->nodes[m->from].srv;
  char port[16], timeout[16];
  snprintf(port, sizeof port, "%d", c->nodes[m->to].port);
  snprintf(timeout, sizeof timeout, "%lld", (long long)rt_scaled_ms(5000));
  int moved = 0;
  for (int round = 0; round < 100000 && (max <= 0 || moved < max); round++) {
    int want = max <= 0 ? 100 : (max - moved < 100 ? max - moved : 100);
    redisReply *keys = rt_cmd(src, "CLUSTER GETKEYSINSLOT %d %d", slot, want);
    if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
      fprintf(stderr, "rt_cluster_migrate_keys: GETKEYSINSLOT: %s\n",
              keys == NULL ? "no reply" : (keys->str ? keys->str : "not an array"));
      if (keys != NULL)
        freeReplyObject(keys);
      return -1;
    }
    size_t n = keys->elements;
    if (n == 0) {
      freeReplyObject(keys);
      break;
    }
    /* MIGRATE host port "" 0 timeout KEYS k... */
    const char **argv = calloc(n + 7, sizeof *argv);
    size_t *lens = calloc(n + 7, sizeof *lens);
    if (argv == NULL || lens == NULL)
      FAIL("out of memory");
    const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", timeout, "KEYS"};
    for (int k = 0; k < 7; k++)
      argv[k] = head[k], lens[k] = strlen(head[k]);
    for (size_t k = 0; k < n; k++)
      argv[7 + k] = keys->element[k]->str, lens[7 + k] = keys->element[k]->len;
    redisReply *r = rt_cmd_argv(src, (int)(n + 7), argv, lens);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS &&
             (strcmp(r->str, "OK") == 0 || strcmp(r->str, "NOKEY") == 0);
    if (!ok)
      fprintf(stderr, "rt_cluster_migrate_keys: MIGRATE: %s\n",
              r == NULL ? "no reply" : (r->str ? r->str : "unexpected reply"));
    if (r != NULL)
      freeReplyObject(r);
    free(argv);
    free(lens);
    freeReplyObject(keys);
    if (!ok)
      return -1;
    moved += (int)n;
  }
  return moved;
}

static int pred_owner(rt_cluster_t *c, int arg, char *why, size_t why_len) {
  int slot = arg & 0xFFFF, to = arg >> 16;
  for (int i = 0; i < c->n; i++) {
    if (!rt_cluster_up(c, i))
      continue;
    if (read_owner_map(c, i, c->map, why, why_len) != 0)
      return 0;
    if (c->map[slot] != to) {
      snprintf(why, why_len, "node %d says slot %d is on node %d", i, slot, c->map[slot]);
      return 0;
    }
  }
  return 1;
}

int rt_cluster_migrate_finish(rt_cluster_t *c, int slot) {
  migration_t *m = mig_find(c, slot);
  if (m == NULL) {
    fprintf(stderr, "rt_cluster_migrate_finish: slot %d is not migrating\n", slot);
    return -1;
  }
  int from = m->from, to = m->to;
  if (rt_cluster_migrate_keys(c, slot, 0) < 0)
    return -1;
  /* The order the cluster specification gives: the target first (it then
   * owns the slot and bumps its epoch), the source, then the other masters
   * so they need not wait for gossip. */
  if (cmd_ok(c, to, "CLUSTER SETSLOT %d NODE %s", slot, c->nodes[to].id) != 0 ||
      cmd_ok(c, from, "CLUSTER SETSLOT %d NODE %s", slot, c->nodes[to].id) != 0)
    return -1;
  for (int i = 0; i < c->n; i++)
    if (i != to && i != from && rt_cluster_is_master(c, i) == 1 &&
        cmd_ok(c, i, "CLUSTER SETSLOT %d NODE %s", slot, c->nodes[to].id) != 0)
      return -1;
  m->slot = -1;
  return wait_for(c, pred_owner, slot | (to << 16), 20000, "the slot's new owner everywhere");
}

int rt_cluster_migrate_slot(rt_cluster_t *c, int slot, int to) {
  if (rt_cluster_migrate_start(c, slot, to) != 0)
    return -1;
  return rt_cluster_migrate_finish(c, slot);
}

/* ---- membership ------------------------------------------------------------------------ */

static int pred_replicate(rt_cluster_t *c, int arg, char *why, size_t why_len) {
  int node = arg & 0xFF, master = arg >> 8;
  /* Refused with "Unknown node" until gossip has told node about master. */
  const char *argv[] = {"CLUSTER", "REPLICATE", c->nodes[master].id};
  size_t lens[] = {7, 9, strlen(c->nodes[master].id)};
  redisReply *r = rt_cmd_argv(c->nodes[node].srv, 3, argv, lens);
  int ok = reply_is_ok(r);
  snprintf(why, why_len, "CLUSTER REPLICATE: %s",
           r == NULL ? "no reply" : (r->str ? r->str : "unexpected reply"));
  if (r != NULL)
    freeReplyObject(r);
  return ok;
}

int rt_cluster_add_node(rt_cluster_t *c, int replica_of) {
  int via = any_up(c);
  if (c->n >= RT_CLUSTER_MAX_NODES || via < 0 ||
      (replica_of >= 0 && rt_cluster_is_master(c, replica_of) != 1)) {
    fprintf(stderr, "rt_cluster_add_node: no room, no node up, or %d is not an up master\n",
            replica_of);
    return -1;
  }
  int i = c->n;
  c->n = i + 1;
  if (start_node(c, i) != 0) {
    c->n = i;
    return -1;
  }
  /* MEET takes the bus port, since it is not port + 10000 here. */
  if (cmd_ok(c, i, "CLUSTER MEET 127.0.0.1 %d %d", c->nodes[via].port, c->nodes[via].bus) != 0)
    return -1;
  if (replica_of >= 0 &&
      wait_for(c, pred_replicate, i | (replica_of << 8), 20000, "CLUSTER REPLICATE") != 0)
    return -1;
  return rt_cluster_wait_stable(c, 20000) == 0 ? i : -1;
}

int rt_cluster_remove_node(rt_cluster_t *c, int i) {
  char why[256];
  int via = -1;
  for (int k = 0; k < c->n && via < 0; k++)
    if (k != i && rt_cluster_up(c, k))
      via = k;
  if (!node_valid(c, i) || via < 0 || read_owner_map(c, via, c->map, why, sizeof why) != 0 ||
      memchr(c->map, i, sizeof c->map) != NULL || rt_cluster_replica_of(c, i) >= 0) {
    fprintf(stderr, "rt_cluster_remove_node: node %d cannot go: gone already, owns slots or "
                    "has replicas\n", i);
    return -1;
  }
  /* FORGET on every other node (each then ignores it for 60 s), so gossip
   * cannot bring it back before it is gone. */
  for (int k = 0; k < c->n; k++)
    if (k != i && rt_cluster_up(c, k) && cmd_ok(c, k, "CLUSTER FORGET %s", c->nodes[i].id) != 0)
      return -1;
  rt_server_stop(c->nodes[i].srv);
  c->nodes[i].srv = NULL;
  c->nodes[i].paused = 0;
  return rt_cluster_wait_stable(c, 20000);
}
