#ifndef LK_CORE_TOPOLOGY_H
#define LK_CORE_TOPOLOGY_H

/* A Redis Cluster's slot map: which master owns each of the 16384 slots, and
 * the nodes (masters and their replicas) behind it. Pure data, no I/O: built
 * from a parsed CLUSTER SHARDS (Redis / Valkey 7+) or CLUSTER SLOTS reply,
 * queried by slot, and compared with the previous map so that a slot whose
 * master changed (a failover or a migration) can be treated as a loss event.
 *
 * Errors: LK_EINVAL (NULL arguments), LK_ENOMEM, LK_EREDIS (the reply is an
 * error reply, e.g. an old server without CLUSTER SHARDS: fall back to
 * CLUSTER SLOTS), LK_EPROTOCOL (the reply is malformed: wrong types, missing
 * fields, slots out of range or overlapping, a node listed twice with
 * different roles, a host with a NUL or another byte no host has, more nodes
 * than allowed), LK_ECLUSTER (CLUSTER SHARDS only: well formed, but a shard
 * with slots names no usable master, or two equally healthy ones; a cluster
 * in the middle of a failover can say this, and CLUSTER SLOTS, which names
 * the owner of each range, settles it). On error *out is left NULL and
 * nothing is leaked. */

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "core/addr_index.h"
#include "core/slot.h"

/* slot -> node index when no node owns the slot. */
#define LK__TOPO_NONE 0xFFFFu
/* Node indexes are uint16_t; LK__TOPO_NONE is reserved. */
#define LK__TOPO_MAX_NODES 0xFFFEu
/* The longest host (a DNS name is at most 253 bytes) and node id (40 hex
 * digits today) accepted from a server; longer is malformed. */
#define LK__TOPO_HOST_MAX 255
#define LK__TOPO_ID_MAX 128

typedef enum { LK__TOPO_MASTER = 0, LK__TOPO_REPLICA = 1 } lk__topo_role_t;

/* From CLUSTER SHARDS' "health"; CLUSTER SLOTS lists only nodes it considers
 * usable and says nothing more, so its nodes are ONLINE. */
typedef enum {
  LK__TOPO_ONLINE = 0,
  LK__TOPO_LOADING = 1, /* a replica still in its initial sync */
  LK__TOPO_FAILED = 2,
  LK__TOPO_HEALTH_OTHER = 3 /* a value this code does not know */
} lk__topo_health_t;

typedef struct {
  /* Where to connect: the node's preferred endpoint, its ip when the
   * endpoint is "?" (hostname preferred but none set), or the origin host
   * given to the parser when the endpoint is unknown ("" / nil, the
   * unknown-endpoint setting: "the address you asked"). NUL-terminated. */
  char *host;
  char *id;      /* node id (40 hex digits); "" when CLUSTER SLOTS omitted it */
  int port;      /* plaintext port; 0 when only a TLS port is announced */
  int tls_port;  /* 0 when none is announced */
  lk__topo_role_t role;
  lk__topo_health_t health;
  uint16_t master; /* a replica's master (node index); LK__TOPO_NONE for masters */
  uint16_t n_replicas; /* a master's replicas (nodes whose master is this one) */
  uint32_t n_slots;    /* slots owned (masters only) */
} lk__topo_node_t;

typedef struct lk__topo_s {
  lk__topo_node_t *nodes;
  size_t n_nodes;
  size_t n_masters;
  size_t covered; /* slots with an owner */
  uint16_t slot_node[LK__SLOTS]; /* node index or LK__TOPO_NONE */
} lk__topo_t;

/* origin_host (may be NULL): the host the reply was read from, used for
 * nodes whose endpoint is unknown; without it their ip serves, and a node
 * with neither is LK_EPROTOCOL. */
int lk__topo_from_shards(const redisReply *reply, const char *origin_host, lk__topo_t **out);
int lk__topo_from_slots(const redisReply *reply, const char *origin_host, lk__topo_t **out);
/* Either one (slots_format: CLUSTER SLOTS), accepting at most max_nodes
 * nodes (masters and replicas; capped at LK__TOPO_MAX_NODES): a reply
 * listing more is LK_EPROTOCOL with *over_cap set (when not NULL), refused
 * before more than that many are allocated. Reading is O(nodes + slots). */
int lk__topo_parse(const redisReply *reply, int slots_format, const char *origin_host,
                   size_t max_nodes, lk__topo_t **out, int *over_cap);

/* 1 when host[0..len) is a host a node may announce: 1..LK__TOPO_HOST_MAX
 * bytes of printable ASCII other than space (no NUL, no control byte). */
int lk__topo_host_ok(const char *host, size_t len);

void lk__topo_free(lk__topo_t *t);

/* The master owning slot, or NULL (unassigned, slot out of range, t NULL). */
const lk__topo_node_t *lk__topo_slot_master(const lk__topo_t *t, unsigned slot);
/* Its index, or -1. */
int lk__topo_slot_index(const lk__topo_t *t, unsigned slot);
/* A node sought in an lk__addr_index_t (core/addr_index.h) by its bytes
 * key[0..len) and a number: a host and its port, or a node id and 0. The
 * index keeps no keys: owner is the list whose entries eq compares (the
 * client's nodes, a map being built). */
typedef struct {
  const void *owner;
  const char *key;
  size_t len;
  int num;
} lk__topo_key_t;

/* 1 when the entry named by s (NUL-terminated) and num is k's. */
int lk__topo_key_is(const lk__topo_key_t *k, const char *s, int num);
/* The index in x of the entry for which eq(k, index) is 1, looked up under
 * k's hash (lk__addr_hash(key, len, num)), or -1. */
long lk__topo_key_find(const lk__addr_index_t *x, const lk__topo_key_t *k,
                       int (*eq)(const void *k, uint32_t index));

/* The node announcing host:port (plaintext or TLS port), or -1. */
int lk__topo_find(const lk__topo_t *t, const char *host, int port);
/* The node with this id, or -1 ("" never matches). */
int lk__topo_find_id(const lk__topo_t *t, const char *id);

/* Slots whose master differs between before and after: owned by another
 * node (by node id; by host:port when either side has no id), or owned on
 * one side only. Sets one bit per changed slot in changed (LK__SLOTS / 8
 * bytes, bit slot % 8 of byte slot / 8; cleared first), when not NULL, and
 * returns how many changed. A NULL map counts as owning nothing. */
size_t lk__topo_diff(const lk__topo_t *before, const lk__topo_t *after, uint8_t *changed);

static inline int lk__topo_bit(const uint8_t *changed, unsigned slot) {
  return (changed[slot >> 3] >> (slot & 7)) & 1;
}

#endif /* LK_CORE_TOPOLOGY_H */
