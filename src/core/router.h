#ifndef LK_CORE_ROUTER_H
#define LK_CORE_ROUTER_H

/* The router: which node serves a command (docs/client.md, "Redis
 * Cluster"). Primitives never name a connection: they send a script for a
 * key and subscribe to a channel, and the router picks the node.
 *
 *   standalone: node 0, the configured server, serves everything.
 *   cluster:    the master of the key's slot (CRC16 of its hash tag mod
 *               16384, core/slot.h) from the topology (CLUSTER SHARDS, or
 *               CLUSTER SLOTS on servers without it: core/topology.h). A
 *               command for a slot the map does not know yet goes to any
 *               node and follows its redirection.
 *
 * Redirections are handled here, before any primitive sees a reply (a
 * redirected command did not run, so it is simply sent again):
 *   MOVED slot host:port  the slot's owner is updated, a topology refresh
 *                         is scheduled (rate-limited), and the command is
 *                         resent to the new owner;
 *   ASK slot host:port    ASKING and the command, once, to that node;
 *   TRYAGAIN, CLUSTERDOWN the command is resent after a backoff, within
 *                         the reply timeout counted from its first send.
 * A command redirected too often ends with the last error (LK_ECLUSTER).
 * A redirection no server sends (a slot out of range, a bad port, a host
 * with a NUL or a control byte) is a garbled reply: its command ends with
 * LK_EUNKNOWN, settled as after any garbled reply. At most
 * cluster_max_nodes nodes are kept; one past it is not followed.
 *
 * Each node has its own command and pub/sub connection, opened on first
 * use; a lost reply on one node's connection makes only that node's
 * commands unknown. A change of a slot's master (failover, migration) is a
 * loss event: every watched hold in that slot is verified at once
 * (lk__wd_verify_slots), as after a server restart. While a master that
 * owns slots is unreachable the map is re-read every 100-500 ms, so its
 * replica's promotion is seen soon after it happens. */

#include "core/internal.h"
#include "core/slot.h"

/* Whether the client talks to a cluster (decided by the option, or found
 * at the first connection: cluster_enabled:1, or a MOVED). */
static inline int lk__cluster(const lk_client_t *c) { return c->cluster_on; }

/* The slot a command is for: its first key (scripts: KEYS[1]; other
 * commands: argv[key_index]); LK__NO_SLOT (core/slot.h) when it has none.
 * Computed only on a cluster, so standalone pays nothing. */

/* Where an op goes: its slot's master (cluster) or node 0. NULL only while
 * the client closes. */
lk__conn_t *lk__router_cmd_conn(lk_client_t *c, int slot);
/* The pub/sub connection a channel's subscription lives on. */
lk__conn_t *lk__router_ps_conn(lk_client_t *c, int slot);

/* A reply arrived for op on conn: 1 when it was a redirection the router
 * took over (op is queued elsewhere, or will be), 0 to complete it. */
int lk__router_redirected(lk__conn_t *conn, lk__op_t *op, redisReply *r);

/* The handshake's INFO text of a node: cluster_enabled:1 turns cluster
 * mode on (LK_CLUSTER_AUTO), and a node's run_id is kept per node. */
void lk__router_on_info(lk__conn_t *conn, const char *info, size_t len);
/* A node's command connection dropped or came up. */
void lk__router_on_conn_down(lk__conn_t *conn);
void lk__router_on_conn_ready(lk__conn_t *conn);
/* Whether a dropped connection dials again when its backoff ends: not a
 * cluster node's command connection that has nothing queued while the node
 * owns no slot (a node removed from the cluster, a master that failed
 * over), nor a cluster's pub/sub connection no channel lives on: it stays
 * idle until a command is queued for it. */
int lk__router_redial(const lk__conn_t *conn);
/* 1 when r, the error that ended one of c's commands, is TRYAGAIN (a
 * script in a slot being migrated), CLUSTERDOWN (an election), or a MOVED
 * or ASK the router stopped following, on a cluster: the command did not
 * run and may succeed later. The router
 * resends it for the reply timeout; a wait then goes on trying within its
 * own budget (core/outcome.c). */
int lk__router_try_later(const lk_client_t *c, const redisReply *r);

/* The publish command scripts use, matching how waiters subscribe
 * (core/pubsub.c): SPUBLISH on a cluster (sharded pub/sub: a release reaches
 * only its shard), PUBLISH on a standalone server, on a cluster without
 * sharded pub/sub (before 7.0) and with pubsub_mode LK_PUBSUB_CLASSIC. */
static inline const char *lk__publish_cmd(const lk_client_t *c, size_t *len) {
  int sharded = c->cluster_on && !c->ps_classic && c->o.pubsub_mode != LK_PUBSUB_CLASSIC;
  *len = sharded ? 8 : 7;
  return sharded ? "SPUBLISH" : "PUBLISH";
}

/* op, still waiting unsent on a command connection that is not ready (a
 * dial, a reconnect backoff), goes to its slot's owner now when that is
 * another node's connection (a map gave the slot to another master: the one
 * it waited for may be dead, and would hold it until its next dial). 1 when
 * op has not left and goes to its slot's owner (moved now, or waiting for
 * that node already); 0 when it was sent, sits elsewhere (a TRYAGAIN
 * pause), follows an ASKING (the pair goes where the ASK said), the map
 * names no owner for its slot, or the owner's connection is down (a stale
 * map naming a dead master: it is not moved there). */
int lk__router_reroute_unsent(lk_client_t *c, lk__op_t *op);

/* Asks for a topology read soon (rate-limited; a no-op off a cluster): a
 * sharded subscription ended or its connection dropped. */
void lk__router_refresh(lk_client_t *c);
/* r, an error reply that came on conn to a command the router did not
 * send for a key (a subscription): when it is a MOVED, the slot's owner is
 * updated and a topology read scheduled, as for a command's MOVED, and 1
 * is returned; else 0. */
int lk__router_note_moved(lk__conn_t *conn, const redisReply *r);

/* Before any handle exists (only memory: LK_ENOMEM), then its timers. */
int lk__router_alloc(lk_client_t *c);
void lk__router_start(lk_client_t *c);
void lk__router_close(lk_client_t *c);
void lk__router_free(lk_client_t *c);

#endif /* LK_CORE_ROUTER_H */
