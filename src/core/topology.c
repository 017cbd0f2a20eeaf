/* Layer 2 (discovery): may call layers 0-1 (docs/design.md, "Layers"). */
/* Slot maps from CLUSTER SHARDS / CLUSTER SLOTS replies (see topology.h).
 * Every field is checked for type and range before use: the reply comes from
 * the network, and a bad one must end in an error code, never a crash. */
#include "core/topology.h"

#include <string.h>

#include "core/addr_index.h"
#include "core/alloc.h"
#include "latchkey/errno.h"

/* ---- reading reply elements ------------------------------------------------- */

/* RESP3 (a hiredis that has maps) sends key/value containers as maps: their
 * elements are the same flat key, value, key, value list. */
static int is_kv(const redisReply *r) {
  if (r == NULL)
    return 0;
#ifdef REDIS_REPLY_MAP
  if (r->type == REDIS_REPLY_MAP)
    return 1;
#endif
  return r->type == REDIS_REPLY_ARRAY && r->elements % 2 == 0;
}

static int is_array(const redisReply *r) { return r != NULL && r->type == REDIS_REPLY_ARRAY; }

static int is_text(const redisReply *r) {
  return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         (r->len == 0 || r->str != NULL);
}

static int text_is(const redisReply *r, const char *s) {
  size_t n = strlen(s);
  return is_text(r) && r->len == n && memcmp(r->str, s, n) == 0;
}

/* Text that can become a C string: no NUL inside. */
static int is_cstr(const redisReply *r) {
  return is_text(r) && (r->len == 0 || memchr(r->str, '\0', r->len) == NULL);
}

static int is_int(const redisReply *r) { return r != NULL && r->type == REDIS_REPLY_INTEGER; }

/* ---- building a map ------------------------------------------------------------ */

/* A node as read from the reply, pointing into it. */
typedef struct {
  const redisReply *id;       /* NULL: absent */
  const redisReply *ip;       /* NULL: absent */
  const redisReply *endpoint; /* NULL: absent; nil or "" : unknown */
  int endpoint_nil;
  long long port, tls_port; /* -1: absent */
  lk__topo_role_t role;
  lk__topo_health_t health;
} node_in_t;

typedef struct {
  lk__topo_t *t;
  size_t cap;
  const char *origin;
  /* The most nodes this reply may list; past it the reply is refused
   * (over_cap set) before more is allocated for it. */
  size_t max_nodes;
  int over_cap;
  /* Nodes by id and by host:port, so a reply of N nodes is read in O(N). */
  lk__addr_index_t by_id, by_addr;
} builder_t;

static void free_nodes(lk__topo_t *t) {
  for (size_t i = 0; i < t->n_nodes; i++) {
    lk__free(t->nodes[i].host);
    lk__free(t->nodes[i].id);
  }
  lk__free(t->nodes);
  t->nodes = NULL;
  t->n_nodes = 0;
}

void lk__topo_free(lk__topo_t *t) {
  if (t == NULL)
    return;
  free_nodes(t);
  lk__free(t);
}

static int builder_init(builder_t *b, const char *origin, size_t max_nodes) {
  memset(b, 0, sizeof *b);
  b->max_nodes = max_nodes < LK__TOPO_MAX_NODES ? max_nodes : LK__TOPO_MAX_NODES;
  b->t = lk__calloc(1, sizeof *b->t);
  if (b->t == NULL)
    return LK_ENOMEM;
  for (size_t i = 0; i < LK__SLOTS; i++)
    b->t->slot_node[i] = LK__TOPO_NONE;
  b->origin = (origin != NULL && *origin != '\0') ? origin : NULL;
  return 0;
}

int lk__topo_host_ok(const char *host, size_t len) {
  if (host == NULL || len == 0 || len > LK__TOPO_HOST_MAX)
    return 0;
  /* Printable ASCII but space: a NUL would cut the name short (the
   * truncated host then never matches the node it was stored as, and each
   * redirection to it opened one more node); control bytes, spaces and
   * bytes above 0x7E are in no host name or address a server announces. */
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)host[i] <= 0x20 || (unsigned char)host[i] >= 0x7F)
      return 0;
  return 1;
}

/* Where to connect to a node; see lk__topo_node_t.host. */
static int pick_host(const builder_t *b, const node_in_t *in, const char **host, size_t *len) {
  const redisReply *ip = (in->ip != NULL && in->ip->len > 0) ? in->ip : NULL;
  const redisReply *ep = in->endpoint;
  if (ep != NULL && !in->endpoint_nil && ep->len > 0 && !text_is(ep, "?")) {
    *host = ep->str, *len = ep->len;
    return 0;
  }
  /* "?": a hostname is preferred but the node has none; its ip is known.
   * Absent (a server that predates endpoints): the ip is all there is.
   * ""/nil: the unknown-endpoint setting, which means "the address you
   * asked", so the origin comes first there. */
  int unknown = ep != NULL && (in->endpoint_nil || ep->len == 0);
  if (unknown && b->origin != NULL) {
    *host = b->origin, *len = strlen(b->origin);
    return 0;
  }
  if (ip != NULL) {
    *host = ip->str, *len = ip->len;
    return 0;
  }
  if (b->origin != NULL) {
    *host = b->origin, *len = strlen(b->origin);
    return 0;
  }
  return LK_EPROTOCOL;
}

int lk__topo_key_is(const lk__topo_key_t *k, const char *s, int num) {
  return num == k->num && strlen(s) == k->len && memcmp(s, k->key, k->len) == 0;
}

long lk__topo_key_find(const lk__addr_index_t *x, const lk__topo_key_t *k,
                       int (*eq)(const void *k, uint32_t index)) {
  return lk__addr_index_find(x, lk__addr_hash(k->key, k->len, k->num), eq, k);
}

/* The nodes of the map k->owner being built, by id or by host:port. */
static int id_is(const void *ctx, uint32_t i) {
  const lk__topo_key_t *k = ctx;
  return lk__topo_key_is(k, ((const lk__topo_t *)k->owner)->nodes[i].id, 0);
}

static int addr_is(const void *ctx, uint32_t i) {
  const lk__topo_key_t *k = ctx;
  const lk__topo_node_t *n = &((const lk__topo_t *)k->owner)->nodes[i];
  return lk__topo_key_is(k, n->host, n->port);
}

/* The node in.id names, or failing an id, the one at host:port; -1 if none. */
static int find_existing(const builder_t *b, const node_in_t *in, const char *host,
                         size_t host_len) {
  if (in->id != NULL && in->id->len > 0) {
    lk__topo_key_t id = {b->t, in->id->str, in->id->len, 0};
    return (int)lk__topo_key_find(&b->by_id, &id, id_is);
  }
  if (in->port <= 0)
    return -1;
  lk__topo_key_t addr = {b->t, host, host_len, (int)in->port};
  return (int)lk__topo_key_find(&b->by_addr, &addr, addr_is);
}

/* Appends the node, or with allow_dup (CLUSTER SLOTS lists a master once per
 * range) finds the one already there. *idx is its index. */
static int add_node(builder_t *b, const node_in_t *in, int allow_dup, int *idx) {
  lk__topo_t *t = b->t;
  const char *host;
  size_t host_len;
  if (in->id != NULL && (!is_cstr(in->id) || in->id->len > LK__TOPO_ID_MAX))
    return LK_EPROTOCOL;
  if (in->port < -1 || in->port > 65535 || in->tls_port < -1 || in->tls_port > 65535 ||
      (in->port <= 0 && in->tls_port <= 0))
    return LK_EPROTOCOL;
  if (pick_host(b, in, &host, &host_len) != 0 || !lk__topo_host_ok(host, host_len))
    return LK_EPROTOCOL;
  int found = find_existing(b, in, host, host_len);
  if (found >= 0) {
    const lk__topo_node_t *n = &t->nodes[found];
    if (!allow_dup || n->role != in->role)
      return LK_EPROTOCOL; /* listed twice, or master in one place, replica in another */
    *idx = found;
    return 0;
  }
  if (t->n_nodes >= b->max_nodes) {
    b->over_cap = 1;
    return LK_EPROTOCOL;
  }
  if (t->n_nodes == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 8;
    if (cap > LK__TOPO_MAX_NODES)
      cap = LK__TOPO_MAX_NODES;
    lk__topo_node_t *grown = lk__realloc(t->nodes, cap * sizeof *grown);
    if (grown == NULL)
      return LK_ENOMEM;
    t->nodes = grown;
    b->cap = cap;
  }
  lk__topo_node_t *n = &t->nodes[t->n_nodes];
  memset(n, 0, sizeof *n);
  n->host = lk__memdup0(host, host_len);
  n->id = in->id != NULL ? lk__memdup0(in->id->str, in->id->len) : lk__memdup0("", 0);
  if (n->host == NULL || n->id == NULL) {
    lk__free(n->host);
    lk__free(n->id);
    return LK_ENOMEM;
  }
  n->port = in->port > 0 ? (int)in->port : 0;
  n->tls_port = in->tls_port > 0 ? (int)in->tls_port : 0;
  n->role = in->role;
  n->health = in->health;
  n->master = LK__TOPO_NONE;
  /* Indexed before it counts, so a failure leaves no half-added node (an
   * entry for an index past n_nodes is never looked at: the builder is
   * dropped on error). */
  uint32_t i = (uint32_t)t->n_nodes;
  if ((n->id[0] != '\0' &&
       lk__addr_index_add(&b->by_id, lk__addr_hash(n->id, strlen(n->id), 0), i) != 0) ||
      (n->port > 0 && lk__addr_index_add(&b->by_addr, lk__addr_hash(host, host_len, n->port),
                                         i) != 0)) {
    lk__free(n->host);
    lk__free(n->id);
    return LK_ENOMEM;
  }
  *idx = (int)t->n_nodes++;
  return 0;
}

static int assign_range(lk__topo_t *t, long long start, long long end, int node) {
  if (start < 0 || end < start || end >= LK__SLOTS)
    return LK_EPROTOCOL;
  for (long long s = start; s <= end; s++) {
    if (t->slot_node[s] != LK__TOPO_NONE)
      return LK_EPROTOCOL; /* overlapping ranges */
    t->slot_node[s] = (uint16_t)node;
  }
  return 0;
}

/* Counts derived from the map once it is complete. */
static void finish(lk__topo_t *t) {
  t->n_masters = 0;
  t->covered = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    t->nodes[i].n_replicas = 0;
    t->nodes[i].n_slots = 0;
  }
  for (size_t i = 0; i < t->n_nodes; i++) {
    if (t->nodes[i].role == LK__TOPO_MASTER)
      t->n_masters++;
    else if (t->nodes[i].master != LK__TOPO_NONE)
      t->nodes[t->nodes[i].master].n_replicas++;
  }
  for (size_t s = 0; s < LK__SLOTS; s++) {
    if (t->slot_node[s] != LK__TOPO_NONE) {
      t->nodes[t->slot_node[s]].n_slots++;
      t->covered++;
    }
  }
}

static int builder_end(builder_t *b, int rc, lk__topo_t **out, int *over_cap) {
  lk__addr_index_free(&b->by_id);
  lk__addr_index_free(&b->by_addr);
  if (over_cap != NULL)
    *over_cap = b->over_cap;
  if (rc != 0) {
    lk__topo_free(b->t);
    return rc;
  }
  finish(b->t);
  *out = b->t;
  return 0;
}

/* ---- CLUSTER SHARDS ------------------------------------------------------------ */

static lk__topo_health_t health_of(const redisReply *v) {
  if (text_is(v, "online"))
    return LK__TOPO_ONLINE;
  if (text_is(v, "loading"))
    return LK__TOPO_LOADING;
  if (text_is(v, "fail") || text_is(v, "failed"))
    return LK__TOPO_FAILED;
  return LK__TOPO_HEALTH_OTHER;
}

/* Lower is better when choosing a shard's master among several. */
static int health_rank(lk__topo_health_t h) {
  switch (h) {
  case LK__TOPO_ONLINE: return 0;
  case LK__TOPO_LOADING: return 1;
  case LK__TOPO_HEALTH_OTHER: return 2;
  default: return 3;
  }
}

static int read_shard_node(const redisReply *r, node_in_t *in) {
  if (!is_kv(r))
    return LK_EPROTOCOL;
  memset(in, 0, sizeof *in);
  in->port = in->tls_port = -1;
  int have_role = 0;
  for (size_t k = 0; k + 1 < r->elements; k += 2) {
    const redisReply *key = r->element[k], *v = r->element[k + 1];
    if (!is_text(key))
      return LK_EPROTOCOL;
    if (text_is(key, "id")) {
      if (!is_cstr(v) || v->len == 0)
        return LK_EPROTOCOL;
      in->id = v;
    } else if (text_is(key, "port") || text_is(key, "tls-port")) {
      if (!is_int(v))
        return LK_EPROTOCOL;
      *(text_is(key, "port") ? &in->port : &in->tls_port) = v->integer;
    } else if (text_is(key, "ip")) {
      if (!is_cstr(v))
        return LK_EPROTOCOL;
      in->ip = v;
    } else if (text_is(key, "endpoint")) {
      if (v != NULL && v->type == REDIS_REPLY_NIL) {
        in->endpoint = v, in->endpoint_nil = 1;
      } else if (is_cstr(v)) {
        in->endpoint = v, in->endpoint_nil = 0;
      } else {
        return LK_EPROTOCOL;
      }
    } else if (text_is(key, "role")) {
      /* Valkey may come to say primary; both are accepted. */
      if (text_is(v, "master") || text_is(v, "primary"))
        in->role = LK__TOPO_MASTER;
      else if (text_is(v, "replica") || text_is(v, "slave"))
        in->role = LK__TOPO_REPLICA;
      else
        return LK_EPROTOCOL;
      have_role = 1;
    } else if (text_is(key, "health")) {
      if (!is_text(v))
        return LK_EPROTOCOL;
      in->health = health_of(v);
    }
    /* hostname, replication-offset and fields added later: not needed. */
  }
  return (in->id != NULL && have_role) ? 0 : LK_EPROTOCOL;
}

/* One shard: its nodes appended, its slots given to its master. *ambiguous
 * is set when the shard has slots but no single best master. */
static int read_shard(builder_t *b, const redisReply *shard, int *ambiguous) {
  const redisReply *slots = NULL, *nodes = NULL;
  if (!is_kv(shard))
    return LK_EPROTOCOL;
  for (size_t k = 0; k + 1 < shard->elements; k += 2) {
    const redisReply *key = shard->element[k];
    if (!is_text(key))
      return LK_EPROTOCOL;
    if (text_is(key, "slots"))
      slots = shard->element[k + 1];
    else if (text_is(key, "nodes"))
      nodes = shard->element[k + 1];
  }
  if (!is_array(slots) || slots->elements % 2 != 0 || !is_array(nodes))
    return LK_EPROTOCOL;

  lk__topo_t *t = b->t;
  size_t first = t->n_nodes;
  if (nodes->elements > b->max_nodes - t->n_nodes) {
    b->over_cap = 1;
    return LK_EPROTOCOL;
  }
  if (slots->elements > 2 * (size_t)LK__SLOTS)
    return LK_EPROTOCOL; /* more ranges than slots: some overlap */
  for (size_t i = 0; i < nodes->elements; i++) {
    node_in_t in;
    int idx, rc = read_shard_node(nodes->element[i], &in);
    if (rc == 0)
      rc = add_node(b, &in, 0, &idx);
    if (rc != 0)
      return rc;
  }

  /* The master: a failover can leave the failed old master listed beside the
   * promoted replica, both as masters (Valkey 8 keeps them in one shard), so
   * the healthiest one is the owner; a tie cannot be settled from here. */
  int master = -1, best = 99, tie = 0;
  for (size_t i = first; i < t->n_nodes; i++) {
    if (t->nodes[i].role != LK__TOPO_MASTER)
      continue;
    int rank = health_rank(t->nodes[i].health);
    if (rank < best)
      best = rank, master = (int)i, tie = 0;
    else if (rank == best)
      tie = 1;
  }
  if (tie)
    master = -1;
  for (size_t i = first; i < t->n_nodes; i++)
    if (t->nodes[i].role == LK__TOPO_REPLICA && master >= 0)
      t->nodes[i].master = (uint16_t)master;

  for (size_t k = 0; k < slots->elements; k += 2) {
    const redisReply *s = slots->element[k], *e = slots->element[k + 1];
    if (!is_int(s) || !is_int(e))
      return LK_EPROTOCOL;
    if (master < 0) {
      *ambiguous = 1;
      /* Still check the range, so a malformed reply is told apart. */
      if (s->integer < 0 || e->integer < s->integer || e->integer >= LK__SLOTS)
        return LK_EPROTOCOL;
      continue;
    }
    int rc = assign_range(t, s->integer, e->integer, master);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* What both parsers check first: 0, or the code to return. */
static int check_reply(const redisReply *reply, lk__topo_t **out) {
  if (out == NULL)
    return LK_EINVAL;
  *out = NULL;
  if (reply == NULL)
    return LK_EINVAL;
  if (reply->type == REDIS_REPLY_ERROR)
    return LK_EREDIS;
  return is_array(reply) ? 0 : LK_EPROTOCOL;
}

static int from_shards(const redisReply *reply, builder_t *b) {
  int rc = 0, ambiguous = 0;
  /* Each shard lists at least its master: more shards than nodes allowed
   * is refused before any is read. */
  if (reply->elements > b->max_nodes) {
    b->over_cap = 1;
    return LK_EPROTOCOL;
  }
  for (size_t i = 0; i < reply->elements && rc == 0; i++)
    rc = read_shard(b, reply->element[i], &ambiguous);
  return rc == 0 && ambiguous ? LK_ECLUSTER : rc;
}

/* ---- CLUSTER SLOTS ------------------------------------------------------------- */

/* [endpoint, port, id?, metadata?, ...] */
static int read_slots_node(const redisReply *r, lk__topo_role_t role, node_in_t *in) {
  if (!is_array(r) || r->elements < 2)
    return LK_EPROTOCOL;
  memset(in, 0, sizeof *in);
  in->tls_port = -1;
  in->role = role;
  in->health = LK__TOPO_ONLINE;
  const redisReply *ep = r->element[0];
  if (ep != NULL && ep->type == REDIS_REPLY_NIL)
    in->endpoint = ep, in->endpoint_nil = 1;
  else if (is_cstr(ep))
    in->endpoint = ep;
  else
    return LK_EPROTOCOL;
  if (!is_int(r->element[1]) || r->element[1]->integer <= 0)
    return LK_EPROTOCOL;
  in->port = r->element[1]->integer;
  if (r->elements >= 3) {
    if (!is_cstr(r->element[2]))
      return LK_EPROTOCOL;
    in->id = r->element[2];
  }
  if (r->elements >= 4) {
    const redisReply *meta = r->element[3];
    if (!is_kv(meta))
      return LK_EPROTOCOL;
    for (size_t k = 0; k + 1 < meta->elements; k += 2) {
      if (!is_text(meta->element[k]))
        return LK_EPROTOCOL;
      if (text_is(meta->element[k], "ip")) {
        if (!is_cstr(meta->element[k + 1]))
          return LK_EPROTOCOL;
        in->ip = meta->element[k + 1];
      }
    }
  }
  return 0;
}

static int read_range(builder_t *b, const redisReply *r) {
  if (!is_array(r) || r->elements < 3 || !is_int(r->element[0]) || !is_int(r->element[1]))
    return LK_EPROTOCOL;
  node_in_t in;
  int master, rc = read_slots_node(r->element[2], LK__TOPO_MASTER, &in);
  if (rc == 0)
    rc = add_node(b, &in, 1, &master);
  if (rc != 0)
    return rc;
  for (size_t i = 3; i < r->elements; i++) {
    int idx;
    rc = read_slots_node(r->element[i], LK__TOPO_REPLICA, &in);
    if (rc == 0)
      rc = add_node(b, &in, 1, &idx);
    if (rc != 0)
      return rc;
    lk__topo_node_t *n = &b->t->nodes[idx];
    if (n->master != LK__TOPO_NONE && n->master != (uint16_t)master)
      return LK_EPROTOCOL; /* one replica under two masters */
    n->master = (uint16_t)master;
  }
  return assign_range(b->t, r->element[0]->integer, r->element[1]->integer, master);
}

static int from_slots(const redisReply *reply, builder_t *b) {
  int rc = 0;
  if (reply->elements > LK__SLOTS)
    return LK_EPROTOCOL; /* more ranges than slots: some overlap */
  for (size_t i = 0; i < reply->elements && rc == 0; i++)
    rc = read_range(b, reply->element[i]);
  return rc;
}

int lk__topo_parse(const redisReply *reply, int slots_format, const char *origin_host,
                   size_t max_nodes, lk__topo_t **out, int *over_cap) {
  if (over_cap != NULL)
    *over_cap = 0;
  int rc0 = check_reply(reply, out);
  if (rc0 != 0)
    return rc0;
  builder_t b;
  int rc = builder_init(&b, origin_host, max_nodes);
  if (rc != 0)
    return rc;
  rc = slots_format ? from_slots(reply, &b) : from_shards(reply, &b);
  return builder_end(&b, rc, out, over_cap);
}

int lk__topo_from_shards(const redisReply *reply, const char *origin_host, lk__topo_t **out) {
  return lk__topo_parse(reply, 0, origin_host, LK__TOPO_MAX_NODES, out, NULL);
}

int lk__topo_from_slots(const redisReply *reply, const char *origin_host, lk__topo_t **out) {
  return lk__topo_parse(reply, 1, origin_host, LK__TOPO_MAX_NODES, out, NULL);
}

/* ---- queries -------------------------------------------------------------------- */

int lk__topo_slot_index(const lk__topo_t *t, unsigned slot) {
  if (t == NULL || slot >= LK__SLOTS || t->slot_node[slot] == LK__TOPO_NONE)
    return -1;
  return t->slot_node[slot];
}

const lk__topo_node_t *lk__topo_slot_master(const lk__topo_t *t, unsigned slot) {
  int i = lk__topo_slot_index(t, slot);
  return i < 0 ? NULL : &t->nodes[i];
}

int lk__topo_find(const lk__topo_t *t, const char *host, int port) {
  if (t == NULL || host == NULL || port <= 0)
    return -1;
  for (size_t i = 0; i < t->n_nodes; i++)
    if ((t->nodes[i].port == port || t->nodes[i].tls_port == port) &&
        strcmp(t->nodes[i].host, host) == 0)
      return (int)i;
  return -1;
}

int lk__topo_find_id(const lk__topo_t *t, const char *id) {
  if (t == NULL || id == NULL || *id == '\0')
    return -1;
  for (size_t i = 0; i < t->n_nodes; i++)
    if (strcmp(t->nodes[i].id, id) == 0)
      return (int)i;
  return -1;
}

static int same_node(const lk__topo_node_t *a, const lk__topo_node_t *b) {
  if (a->id[0] != '\0' && b->id[0] != '\0')
    return strcmp(a->id, b->id) == 0;
  return a->port == b->port && a->tls_port == b->tls_port && strcmp(a->host, b->host) == 0;
}

size_t lk__topo_diff(const lk__topo_t *before, const lk__topo_t *after, uint8_t *changed) {
  if (changed != NULL)
    memset(changed, 0, LK__SLOTS / 8);
  size_t n = 0;
  /* Slots come in long runs of one owner: remember the last comparison. */
  unsigned last_a = LK__TOPO_NONE, last_b = LK__TOPO_NONE;
  int last_same = 1;
  for (unsigned s = 0; s < LK__SLOTS; s++) {
    unsigned a = before != NULL ? before->slot_node[s] : LK__TOPO_NONE;
    unsigned b = after != NULL ? after->slot_node[s] : LK__TOPO_NONE;
    int same;
    if (a == LK__TOPO_NONE || b == LK__TOPO_NONE) {
      same = a == b;
    } else {
      if (a != last_a || b != last_b) {
        last_same = same_node(&before->nodes[a], &after->nodes[b]);
        last_a = a, last_b = b;
      }
      same = last_same;
    }
    if (!same) {
      n++;
      if (changed != NULL)
        changed[s >> 3] |= (uint8_t)(1u << (s & 7));
    }
  }
  return n;
}
