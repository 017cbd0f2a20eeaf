#ifndef LK_CORE_SENTINEL_H
#define LK_CORE_SENTINEL_H

/* Redis Sentinel (docs/sentinel.md): where node 0, the master, is.
 *
 * With lk_client_opts_t.sentinels set, node 0's two connections never dial
 * the configured host and port. Every connect of either (the first and each
 * reconnect) starts with a discovery round: the sentinels are asked
 * `SENTINEL GET-MASTER-ADDR-BY-NAME <master>` one at a time, beginning with
 * the last one whose answer proved right, until one names an address; a
 * sentinel that is down, times out, refuses AUTH or answers nil is skipped
 * and its reason kept. The connection then dials that address, and its
 * handshake asks `ROLE`: anything but "master" fails the attempt (the
 * sentinel that named it is tried last in the next round), as does a round
 * in which no sentinel named an address (LK_ECONN, with the reasons in
 * lk_client_error_text); the connection's normal backoff follows. Two
 * connects at once share one round.
 *
 * Sentinel connections are lk__conn_t of kind LK__CONN_SENTINEL: one query
 * connection per sentinel (opened when first asked, left open) and one
 * subscription connection, SUBSCRIBEd to +switch-master on one sentinel at
 * a time and moved to the next when it drops. Their handshake is AUTH
 * (sentinel_username / sentinel_password) and CLIENT SETNAME only; the
 * connect and reply timeouts bound every step.
 *
 * A master switch is learnt from +switch-master for our master's name, from
 * a re-subscription's fresh answer that differs, from a ROLE other than
 * master on node 0's established command connection (asked every
 * heartbeat_ms), or from a READONLY error on it: node 0's connections are
 * dropped (commands in flight end LK_EUNKNOWN, as on any lost connection)
 * and reconnect through a new round. A command refused with READONLY did
 * not run: it is sent again once node 0 is back (router.c). The first
 * handshake on a new master verifies every held lease at once
 * (lk__wd_verify_all): a hold the new master lacks is reported lost. */

#include "core/internal.h"

/* Memory only (LK_ENOMEM), and the sentinel list's syntax: LK_EINVAL for an
 * entry that is not host:port. Nothing when no sentinels are configured. */
int lk__sentinel_alloc(lk_client_t *c);
/* Handles (one timer per connection and the module's own), then the
 * subscription. After node 0's connections exist. */
void lk__sentinel_start(lk_client_t *c);
/* Client close, second phase: every sentinel connection and the timer. */
void lk__sentinel_close(lk_client_t *c);
/* 1 while a sentinel connection still resolves a host name. */
int lk__sentinel_busy(const lk_client_t *c);
/* After the handles closed, or in a forked child (no uv call then). */
void lk__sentinel_free(lk_client_t *c, int forked);

/* From the connections layer (core/conn.c, core/handshake.c). */
/* Node 0's connection is CONNECTING: find the master, then lk__conn_dial
 * (or lk__conn_drop with LK_ECONN when no sentinel gave one). */
void lk__sentinel_resolve(lk__conn_t *conn);
/* The reply to node 0's handshake ROLE: 0 when it is a master, else the
 * status that fails the handshake. */
int lk__sentinel_on_role(lk__conn_t *conn, int status, const redisReply *r);
/* A sentinel connection dropped (why, what: as lk__conn_drop got them;
 * called before its commands fail). */
void lk__sentinel_on_down(lk__conn_t *conn, int why, const char *what);
/* A push on a sentinel connection (1: a message, handled). */
int lk__sentinel_on_push(lk__conn_t *conn, const redisReply *r);
/* Writes what the sentinel connections gathered while corked. */
void lk__sentinel_uncork(lk_client_t *c);

/* From the router: op got READONLY on node 0 (a master demoted to replica):
 * 1 when op was taken over (node 0 reconnects through the sentinels and op
 * is sent again there), 0 to complete it with the error. */
int lk__sentinel_readonly(lk__conn_t *conn, lk__op_t *op);

#endif /* LK_CORE_SENTINEL_H */
