/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* A new connection's handshake, pipelined in one write: AUTH, SELECT, ROLE
 * (a master found through sentinels), CLIENT SETNAME and INFO (restart
 * detection, the eviction policy, cluster mode). Which failures cost the
 * connection and which only a feature is decided here; the connection
 * (core/conn.c) goes ready or is dropped when the last reply is in. */
#include <stdio.h>
#include <string.h>

#include "core/conn_parts.h"
#include "core/internal.h"

static void handshake_step_done(lk__conn_t *conn);

static int handshake_fatal(int kind_auth_or_select, int status) {
  if (status == 0)
    return 0;
  /* SETNAME and INFO may be denied to a restricted user; that costs a
   * feature, not the connection. A missing password is fatal everywhere. */
  return kind_auth_or_select || status == LK_EAUTH;
}

/* One reply in: the first failure that costs the connection is kept. */
static void hs_answered(lk__conn_t *conn, int err) {
  if (err != 0 && conn->handshake_err == 0)
    conn->handshake_err = err;
  handshake_step_done(conn);
}

/* AUTH, SELECT. */
static void on_hs_required(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  (void)r;
  if (conn->state == LK__CONN_HANDSHAKE)
    hs_answered(conn, handshake_fatal(1, status) ? status : 0);
}

/* CLIENT SETNAME. */
static void on_hs_optional(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  (void)r;
  if (conn->state == LK__CONN_HANDSHAKE)
    hs_answered(conn, handshake_fatal(0, status) ? status : 0);
}

/* Sentinel: the server they named must say it is the master. */
static void on_hs_role(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  if (conn->state == LK__CONN_HANDSHAKE)
    hs_answered(conn, conn->client->owner->conn_role(conn, status, r));
}

/* The length of an INFO field's value at p: to its line's end, at most 40. */
static size_t info_value_len(const char *p) {
  size_t n = 0;
  while (p[n] != '\0' && p[n] != '\r' && p[n] != '\n' && n < 40)
    n++;
  return n;
}

static void on_hs_info(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  if (conn->state != LK__CONN_HANDSHAKE)
    return;
  if (conn->handshake_err != 0) {
    /* Refused already (AUTH, or ROLE: a replica the sentinels named): its
     * run_id is not the one restarts are judged by. */
    handshake_step_done(conn);
    return;
  }
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "run_id:");
    if (p != NULL)
      conn->client->owner->conn_run_id(conn, p + 7, info_value_len(p + 7));
    conn->client->owner->conn_info(conn, r->str, r->len);
    /* Any policy but noeviction lets Redis evict lock keys (they carry a
     * TTL, so volatile-* policies pick them first): say so at connect. */
    p = strstr(r->str, "maxmemory_policy:");
    if (p != NULL && strncmp(p + 17, "noeviction", 10) != 0) {
      p += 17;
      lk__log(conn->client, LK_LOG_WARN,
              "maxmemory-policy is %.*s: Redis may evict held locks (use noeviction)",
              (int)info_value_len(p), p);
    }
  } else if (handshake_fatal(0, status) && conn->handshake_err == 0) {
    conn->handshake_err = status;
  } else if (status != 0) {
    lk__log(conn->client, LK_LOG_WARN,
            "INFO denied (%s): server restarts will not be detected",
            lk_err_name(status));
  }
  handshake_step_done(conn);
}

/* expect_type: the only reply type, an error apart, that can be this
 * command's own (lk__op_t.expect_type). */
static int hs_send(lk__conn_t *conn, int argc, const char **argv, int expect_type,
                   lk__op_cb cb) {
  int err = 0;
  lk__op_t *op = lk__op_internal(conn->client, argc, argv, NULL, cb, conn, &err);
  if (op == NULL)
    return err;
  op->expect_type = (unsigned char)expect_type;
  conn->handshake_left++;
  lk__conn_send(conn, op);
  return 0;
}

void lk__handshake_start(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  const lk__opts_t *o = &c->o;
  char dbuf[24];
  char name[256];
  int err = 0;

  conn->state = LK__CONN_HANDSHAKE;
  conn->handshake_left = 0;
  conn->handshake_err = 0;
  /* A new connection may reach another server (a restart, a failover): no
   * script is taken as loaded there until this connection loads it. */
  memset(conn->scripts_loaded, 0, sizeof(conn->scripts_loaded));
  conn->script_load_denied = 0;
  /* Pipelined: AUTH must be first so nothing else runs unauthenticated.
   * A sentinel has credentials of its own. */
  const char *user = conn->kind == LK__CONN_SENTINEL ? o->sentinel_username : o->username;
  const char *pass = conn->kind == LK__CONN_SENTINEL ? o->sentinel_password : o->password;
  if (pass != NULL) {
    const char *a3[3] = {"AUTH", user, pass};
    const char *a2[2] = {"AUTH", pass};
    err = user != NULL ? hs_send(conn, 3, a3, REDIS_REPLY_STATUS, on_hs_required)
                       : hs_send(conn, 2, a2, REDIS_REPLY_STATUS, on_hs_required);
  }
  /* A cluster has only db 0 and refuses SELECT (docs/client.md). */
  if (err == 0 && o->db != 0 && conn->kind == LK__CONN_CMD && !c->cluster_on) {
    const char *a[2] = {"SELECT", dbuf};
    snprintf(dbuf, sizeof(dbuf), "%d", o->db);
    err = hs_send(conn, 2, a, REDIS_REPLY_STATUS, on_hs_required);
  }
  /* Node 0 found through the sentinels: is it the master (core/sentinel.h)? */
  if (err == 0 && c->sentinel != NULL && conn->node == &c->node0) {
    const char *a[1] = {"ROLE"};
    err = hs_send(conn, 1, a, REDIS_REPLY_ARRAY, on_hs_role);
  }
  if (err == 0) {
    const char *a[3] = {"CLIENT", "SETNAME", name};
    snprintf(name, sizeof(name), "%s%s", o->client_name,
             conn->kind == LK__CONN_PUBSUB     ? "-pubsub"
             : conn->kind == LK__CONN_SENTINEL ? "-sentinel"
                                               : "");
    err = hs_send(conn, 3, a, REDIS_REPLY_STATUS, on_hs_optional);
  }
  if (err == 0 && conn->kind == LK__CONN_CMD) {
    /* server: run_id (restart detection); memory: the eviction policy;
     * cluster: whether this is a cluster node (core/router.h). */
    const char *a[4] = {"INFO", "server", "memory", "cluster"};
    err = hs_send(conn, 4, a, REDIS_REPLY_STRING, on_hs_info);
  }
  /* No script is loaded here: each is loaded just before its first call on
   * this connection (lk__conn_send, core/conn_scripts.c), so a process that takes one lock sends a
   * few commands, not one per script the library has. Every reply above has
   * a type only its own command gives (hs_send), so a reply the server did
   * not owe is caught here, before any user command is sent. */
  if (err != 0)
    lk__conn_drop(conn, err, "handshake could not be sent");
}


static void handshake_step_done(lk__conn_t *conn) {
  if (--conn->handshake_left > 0)
    return;
  if (conn->handshake_err != 0) {
    lk__log(conn->client, conn->kind == LK__CONN_SENTINEL ? LK_LOG_DEBUG : LK_LOG_ERROR,
            "%s connection refused by server: %s",
            lk__conn_label(conn), lk_strerror(conn->handshake_err));
    lk__conn_drop(conn, conn->handshake_err, "handshake failed");
    return;
  }
  lk__conn_become_ready(conn);
}
