/* A private Redis Cluster for tests: N masters with R replicas each (3 + 3 by
 * default), every node an rt_server_t (redis_server.h) on free loopback
 * ports with its own directory, cluster config file and cluster bus port, so
 * every node is killed by PID on any exit path of the test exactly as a
 * single server is. The nodes start side by side and the cluster is formed
 * with CLUSTER commands, as `redis-cli --cluster create` would form it (no
 * cli needed): nodes 0..masters-1 are the masters, with equal contiguous
 * slot ranges in index order, every node has a config epoch of its own, and
 * each replica follows a master of its own (rt_cluster_replica_of).
 *
 * Nodes keep their index for the cluster's lifetime: added nodes get the next
 * index, removed ones keep theirs (rt_cluster_server is NULL then). All
 * questions about roles and slots are asked of the servers, never cached,
 * so they hold after failovers and migrations.
 *
 * Same thread rules as redis_server.h: the test's main thread only. Every
 * wait is bounded and scaled with rt_scaled_ms; functions returning int give
 * -1 after printing why (the caller ASSERTs), unless noted. */
#ifndef LK_TEST_HARNESS_REDIS_CLUSTER_H
#define LK_TEST_HARNESS_REDIS_CLUSTER_H

#include <stddef.h>

#include "redis_server.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_CLUSTER_MAX_NODES 16
#define RT_CLUSTER_SLOTS 16384

typedef struct rt_cluster_opts_s {
  int masters;         /* 3 by rt_cluster_opts_init */
  int replicas;        /* per master; 1 by rt_cluster_opts_init */
  int node_timeout_ms; /* cluster-node-timeout; 2000 by rt_cluster_opts_init */
  const char *const *extra_args; /* NULL-terminated, appended for every node */
  /* TLS for every node (redis_server.h: each gets a TLS port of its own;
   * add --tls-cluster yes / --tls-replication yes in extra_args to move the
   * bus and replication to TLS). The harness keeps talking plaintext: with
   * --tls-cluster a node tells plaintext clients the plaintext ports and TLS
   * clients the TLS ports. NULL: no TLS. */
  const char *tls_cert_file, *tls_key_file, *tls_ca_file;
} rt_cluster_opts_t;

typedef struct rt_cluster_s rt_cluster_t;

void rt_cluster_opts_init(rt_cluster_opts_t *opts);

/* Starts the nodes, creates the cluster, and waits (bounded) until every
 * node says cluster_state:ok, knows every other node, agrees on the owner of
 * every slot, and every replica's link to its master is up. NULL after
 * printing why. */
rt_cluster_t *rt_cluster_start(const rt_cluster_opts_t *opts);
/* Kills every node by PID, reaps it and removes its directory. NULL: no-op. */
void rt_cluster_stop(rt_cluster_t *c);

/* Node indexes run from 0 to rt_cluster_size() - 1 (removed ones included). */
int rt_cluster_size(const rt_cluster_t *c);
rt_server_t *rt_cluster_server(rt_cluster_t *c, int i); /* NULL once removed */
int rt_cluster_port(const rt_cluster_t *c, int i);
const char *rt_cluster_id(const rt_cluster_t *c, int i); /* node id (40 hex) */
/* Running, not paused, not removed: a node that can be asked. */
int rt_cluster_up(const rt_cluster_t *c, int i);
/* The node listening on port (its plaintext or its TLS port), or -1. */
int rt_cluster_index_of_port(const rt_cluster_t *c, int port);
/* The server's own Valkey/Redis name: 1 when INFO server says valkey. */
int rt_cluster_is_valkey(rt_cluster_t *c);

/* ROLE of node i: 1 master, 0 replica, -1 when it cannot be asked. */
int rt_cluster_is_master(rt_cluster_t *c, int i);
/* The master replica i follows (INFO replication), or -1. */
int rt_cluster_master_of(rt_cluster_t *c, int i);
/* The first up node replicating master (lowest index), or -1. */
int rt_cluster_replica_of(rt_cluster_t *c, int master);
/* Up nodes whose ROLE is master, in index order, at most cap; returns count. */
int rt_cluster_masters(rt_cluster_t *c, int *out, int cap);

/* The owner of slot according to the first up node that answers CLUSTER
 * SLOTS (the wait functions below make every node agree first); -1 if
 * unassigned or nobody answers. */
int rt_cluster_slot_owner(rt_cluster_t *c, int slot);
/* CLUSTER KEYSLOT, asked of an up node (binary-safe); FAILs the test when no
 * node answers with an integer. */
int rt_cluster_key_slot(rt_cluster_t *c, const char *key, size_t len);
/* Writes "<prefix><n>" for the smallest n in 0..9999 whose slot node i owns
 * into out (NUL-terminated). Returns its slot, or -1. */
int rt_cluster_key_on(rt_cluster_t *c, int i, const char *prefix, char *out, size_t cap);

/* kill -9 node i and reap it (its directory and nodes.conf stay). */
void rt_cluster_kill(rt_cluster_t *c, int i);
/* SIGSTOP / SIGCONT node i; a paused node is left out of every query. */
void rt_cluster_pause(rt_cluster_t *c, int i);
void rt_cluster_resume(rt_cluster_t *c, int i);

/* Waits until every up node says cluster_state:ok, knows every node that
 * was not removed (dead ones included), and all agree on one owner for every
 * slot, that owner being up; and every up replica's master link is up. */
int rt_cluster_wait_stable(rt_cluster_t *c, int64_t timeout_ms);
/* Waits until node i says ROLE master and every up node names it as the
 * owner of at least one slot. */
int rt_cluster_wait_master(rt_cluster_t *c, int i, int64_t timeout_ms);

/* CLUSTER FAILOVER [mode] on replica i (mode NULL, "FORCE" or "TAKEOVER"),
 * then waits until it is master and the cluster is stable. */
int rt_cluster_failover(rt_cluster_t *c, int replica, const char *mode);

/* Slot migration in the steps a test can act between:
 *   start:  CLUSTER SETSLOT slot IMPORTING <from> on the target `to`, then
 *           SETSLOT slot MIGRATING <to> on the current owner: from here on
 *           the owner answers ASK for keys it no longer has;
 *   keys:   moves up to max keys (0: all) with MIGRATE ... KEYS; returns
 *           how many moved (0 when none were left), -1 on error;
 *   finish: any keys left are moved, SETSLOT slot NODE <to> on the target,
 *           the source and every other master; then waits until every up
 *           node names `to` as the owner.
 * One migration per slot at a time; at most 16 in progress. */
int rt_cluster_migrate_start(rt_cluster_t *c, int slot, int to);
int rt_cluster_migrate_keys(rt_cluster_t *c, int slot, int max);
int rt_cluster_migrate_finish(rt_cluster_t *c, int slot);
/* All three. */
int rt_cluster_migrate_slot(rt_cluster_t *c, int slot, int to);

/* Starts a node with the cluster's options and joins it (CLUSTER MEET),
 * as an empty master (replica_of -1) or a replica of node replica_of
 * (CLUSTER REPLICATE); waits until the cluster is stable. Returns its index,
 * or -1. */
int rt_cluster_add_node(rt_cluster_t *c, int replica_of);
/* Removes node i, which must own no slots and have no replicas: CLUSTER
 * FORGET on every other up node, then kill -9; waits until the cluster is
 * stable. */
int rt_cluster_remove_node(rt_cluster_t *c, int i);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDIS_CLUSTER_H */
