/* Layer 5 (owner): may call every layer (docs/design.md, "Layers"). */
/* The client: options, lifecycle, entry checks, and the owner that wires
 * the core's layers together (docs/design.md, "Layers"). Connections live
 * in conn.c, pub/sub in pubsub.c, deferred work in defer.c, logging and
 * events in log.c. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/loglevel.h"
#include "core/object.h"
#include "core/registry.h"
#include "core/router.h"
#include "core/sentinel.h"
#include "core/url.h"
#include "core/tls.h"
#include "core/tokens.h"
#include "core/watchdog.h"

/* libuv writes with write(2): a write to a connection the server or the
 * network reset raises SIGPIPE, whose default action kills the process. A
 * lost connection must be an error (LK_ECONN / LK_EUNKNOWN), so SIGPIPE is
 * ignored, once per process, unless the application chose a disposition
 * itself (docs/client.md). */
static pthread_once_t lk__sigpipe_once = PTHREAD_ONCE_INIT;
static void ignore_default_sigpipe(void) {
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) ||
      sa.sa_handler != SIG_DFL)
    return;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, NULL);
}

/* --- the idle pass (core/defer.c starts the handle with it) --- */

/* One pass over the deferred work, wrapped in the owner's part: lost leases
 * are told before anything else, and the commands the work issues leave in
 * one write per connection. */
static void on_idle(uv_idle_t *h) {
  lk_client_t *c = h->data;
  if (lk__queue_empty(&c->deferred)) {
    if (!lk__busy_polling(c))
      uv_idle_stop(&c->idle);
    return; /* spinning for replies: nothing deferred to run */
  }
  lk__wd_check(c);
  lk__client_cork(c);
  lk__defer_run(c);
  lk__client_uncork(c);
  if (lk__queue_empty(&c->deferred) && !lk__busy_polling(c))
    uv_idle_stop(&c->idle);
}

void lk__client_on_run_id(lk__conn_t *conn, const char *run_id, size_t len) {
  lk_client_t *c = conn->client;
  /* Node 0's is the client's (RedLock compares clients by it); a cluster's
   * other nodes keep their own. */
  char *mine = conn->node == NULL || conn->node == &c->node0 ? c->run_id : conn->node->run_id;
  int changed = mine[0] != '\0' && (strlen(mine) != len || memcmp(mine, run_id, len) != 0);
  memcpy(mine, run_id, len);
  mine[len] = '\0';
  if (changed) {
    lk__log(c, lk__event_level(c), "server restarted (run_id changed)");
    c->restarted_ns = lk__now_ns();
    /* Queued so it follows RECONNECTED, which the handshake emits next. */
    c->restart_pending = 1;
    /* Held leases may be gone with the server's data: verify every one now
     * (the renewals go out first once the handshake completes). */
    lk__wd_verify_all(c);
  }
}

/* --- the owner's callbacks: each event of a lower layer, to the layers
 * above that want it (lk__owner_t, core/internal.h) --- */

static void on_check_leases(lk_client_t *c) { lk__wd_check(c); }

static void on_conn_holds_at_risk(lk__conn_t *conn) { lk__wd_conn_down(conn->client, conn); }

static void on_conn_down(lk__conn_t *conn, int why, const char *what, int was_ready) {
  if (conn->kind == LK__CONN_PUBSUB)
    lk__pubsub_on_down(conn);
  else if (conn->kind == LK__CONN_SENTINEL)
    lk__sentinel_on_down(conn, why, what);
  if (was_ready && conn->kind == LK__CONN_CMD)
    lk__emit(conn->client, LK_EVENT_SUSPENDED);
  lk__router_on_conn_down(conn);
}

static void on_conn_ready(lk__conn_t *conn, int first) {
  lk_client_t *c = conn->client;
  if (conn->kind == LK__CONN_PUBSUB) {
    lk__pubsub_on_ready(conn);
  } else if (conn->kind == LK__CONN_SENTINEL) {
    /* Its query or SUBSCRIBE has just been sent (core/sentinel.h). */
  } else {
    lk__emit(c, first ? LK_EVENT_CONNECTED : LK_EVENT_RECONNECTED);
    if (c->restart_pending) {
      c->restart_pending = 0;
      lk__emit(c, LK_EVENT_SERVER_RESTARTED);
    }
    lk__router_on_conn_ready(conn);
  }
}

static int on_conn_push(lk__conn_t *conn, redisReply *r) {
  if (conn->kind == LK__CONN_PUBSUB)
    return lk__pubsub_on_push(conn, r);
  if (conn->kind == LK__CONN_SENTINEL)
    return lk__sentinel_on_push(conn, r);
  return 0;
}

static void on_conn_info(lk__conn_t *conn, const char *info, size_t len) {
  lk__router_on_info(conn, info, len); /* a cluster node: routing by slot */
  lk__pubsub_on_info(conn, info, len); /* sharded pub/sub needs 7.0+ */
}

static void on_uncorked(lk_client_t *c) {
  if (c->sentinel != NULL)
    lk__sentinel_uncork(c);
}

static const lk__owner_t client_owner = {
    .handle_closed = lk__client_handle_closed,
    .maybe_finish_close = lk__client_maybe_finish_close,
    .check_leases = on_check_leases,
    .hold_at_risk = lk__obj_side_at_risk,
    .hold_ok = lk__obj_side_ok,
    .conn_holds_at_risk = on_conn_holds_at_risk,
    .conn_redial = lk__router_redial,
    .conn_resolve = lk__sentinel_resolve,
    .conn_role = lk__sentinel_on_role,
    .conn_run_id = lk__client_on_run_id,
    .conn_info = on_conn_info,
    .conn_ready = on_conn_ready,
    .conn_down = on_conn_down,
    .conn_push = on_conn_push,
    .conn_redirected = lk__router_redirected,
    .uncorked = on_uncorked,
    .topology_read = lk__pubsub_on_topology,
    .slots_moved = lk__wd_verify_slots,
    .slots_redirected = lk__wd_verify_redirected,
    .master_changed = lk__wd_verify_all,
    .has_channels = lk__pubsub_has_channels,
};

/* --- lifecycle --- */

int lk_client_new(uv_loop_t *loop, const lk_client_opts_t *opts,
                  lk_client_t **out) {
  lk_client_opts_t defaults, from_url;
  char *url_storage = NULL;
  lk_client_t *c;
  int rc;

  if (loop == NULL || out == NULL)
    return LK_EINVAL;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_client_opts_init);
  if (opts->url != NULL) {
    /* What the URL names replaces those fields; the parts point into
     * url_storage until they are copied below. */
    from_url = *opts;
    rc = lk__url_apply(&from_url, opts->url, &url_storage);
    if (rc != 0) {
      lk__free(url_storage);
      return rc == LK_ENOMEM ? LK_ENOMEM : LK_EINVAL;
    }
    opts = &from_url;
  }
  pthread_once(&lk__sigpipe_once, ignore_default_sigpipe);
  c = lk__calloc(1, sizeof(*c));
  if (c == NULL) {
    lk__free(url_storage);
    return LK_ENOMEM;
  }
  c->owner = &client_owner;
  rc = lk__opts_copy(&c->o, opts);
  lk__free(url_storage);
  url_storage = NULL;
  if (rc == 0) {
    if (opts->client_id != NULL)
      snprintf(c->id, sizeof(c->id), "%s", opts->client_id);
    else
      rc = lk__uuid4(c->id) == 0 ? 0 : LK_ENOMEM;
  }
  if (rc == 0) {
    /* TLS files are read now: a bad one fails here, its reason logged. */
    c->log = opts->log;
    c->log_arg = opts->log_arg;
    rc = lk__tls_client_new(c);
  }
  if (rc != 0) {
    lk__opts_free(&c->o);
    lk__free(c);
    return rc;
  }
  rc = lk__pubsub_init(c); /* only allocates: nothing to undo but memory */
  if (rc == 0 && (rc = lk__router_alloc(c)) != 0)
    lk__pubsub_free(c);
  /* The sentinel list is parsed here: a malformed one is LK_EINVAL. */
  if (rc == 0 && (rc = lk__sentinel_alloc(c)) != 0) {
    lk__router_free(c);
    lk__pubsub_free(c);
  }
  if (rc != 0) {
    lk__tls_client_free(c);
    lk__opts_free(&c->o);
    lk__free(c);
    return rc;
  }
  lk__alloc_client_born();
  c->loop = loop;
  c->thread = uv_thread_self();
  lk__fork_watch(c);
  c->on_event = opts->on_event;
  c->event_arg = opts->event_arg;
  c->log = opts->log;
  c->log_arg = opts->log_arg;
  lk__queue_init(&c->deferred);
  lk__queue_init(&c->obj_list);
  uv_idle_init(loop, &c->idle);
  c->idle.data = c;
  c->idle_cb = on_idle;
  uv_timer_init(loop, &c->hb_timer);
  c->hb_timer.data = c;
  lk__wd_init(c);
  c->handles_open = 3; /* idle, heartbeat timer, watchdog timer */
  lk__conn_init(c, &c->cmd, LK__CONN_CMD);
  lk__conn_init(c, &c->ps, LK__CONN_PUBSUB);
  lk__router_start(c);
  lk__sentinel_start(c);
  lk__conn_start(&c->cmd);
  lk__registry_start(c); /* describe_owner: docs/owners.md */
  *out = c;
  return 0;
}

/* What a client owns besides its connections' buffers. */
static void free_client_memory(lk_client_t *c) {
  lk__pubsub_free(c);
  lk__tokens_free(c);
  lk__op_pool_free(c);
  lk__free(c->scratch);
  lk__registry_free(c);
  lk__tls_client_free(c); /* memory only: safe in a forked child */
  lk__opts_free(&c->o);
  lk__alloc_client_died();
}

static void finish_close(lk_client_t *c) {
  lk_client_close_cb cb = c->close_cb;
  lk__conn_free_buffers(&c->cmd);
  lk__conn_free_buffers(&c->ps);
  lk__router_free(c);
  lk__sentinel_free(c, 0);
  free_client_memory(c);
  if (cb != NULL)
    cb(c);
  lk__free(c);
}

static void free_op_list(lk__queue_t *list) {
  while (!lk__queue_empty(list)) {
    lk__op_t *op = lk__container_of(lk__queue_head(list), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__op_free(op);
  }
}

/* In a forked child the loop and sockets are copies of the parent's: the
 * client's memory is freed without a single uv or socket call. */
static void free_forked(lk_client_t *c) {
  size_t i;
  for (i = 0; i < c->n_nodes; i++) {
    lk__conn_t *conns[2] = {c->nodes[i]->cmd, c->nodes[i]->ps};
    int k;
    for (k = 0; k < 2; k++) {
      free_op_list(&conns[k]->sent);
      free_op_list(&conns[k]->unsent);
      if (conns[k]->reader != NULL)
        redisReaderFree(conns[k]->reader);
    }
  }
  free_op_list(&c->retry_ops);
  lk__conn_free_buffers(&c->cmd);
  lk__conn_free_buffers(&c->ps);
  lk__router_free(c);
  lk__sentinel_free(c, 1);
  free_client_memory(c);
  lk__free(c);
}

void lk__client_handle_closed(lk_client_t *c) {
  c->handles_open--;
  lk__client_maybe_finish_close(c);
}

static void on_client_handle_closed(uv_handle_t *h) {
  lk__client_handle_closed(h->data);
}

/* Closing is two-phase: first the command connection drains what is already
 * queued (a release sent by a closing lock deserves its reply, bounded by
 * the reply timeout), then every handle closes. */
void lk__client_maybe_finish_close(lk_client_t *c) {
  size_t i;
  if (!c->closing)
    return;
  if (c->closing == 1) {
    for (i = 0; i < c->n_nodes; i++)
      if (c->nodes[i]->cmd->state == LK__CONN_READY && lk__conn_is_busy(c->nodes[i]->cmd))
        return;
    if (!lk__queue_empty(&c->retry_ops))
      return; /* redirected commands on their way: each ends within the reply timeout */
    c->closing = 2;
    lk__pubsub_shutdown(c);
    for (i = 0; i < c->n_nodes; i++) {
      lk__conn_close(c->nodes[i]->cmd);
      lk__conn_close(c->nodes[i]->ps);
    }
    lk__router_close(c);
    lk__sentinel_close(c);
    uv_timer_stop(&c->hb_timer);
    uv_close((uv_handle_t *)&c->hb_timer, on_client_handle_closed);
    lk__wd_close(c);
    uv_close((uv_handle_t *)&c->wd_timer, on_client_handle_closed);
    uv_close((uv_handle_t *)&c->idle, on_client_handle_closed);
    return;
  }
  if (c->closing != 2 || c->handles_open != 0)
    return;
  for (i = 0; i < c->n_nodes; i++)
    if (c->nodes[i]->cmd->gai_pending || c->nodes[i]->ps->gai_pending)
      return;
  if (lk__sentinel_busy(c))
    return;
  c->closing = 3;
  finish_close(c);
}

static void on_close_defer(lk__defer_t *d) {
  lk_client_t *c = lk__container_of(d, lk_client_t, close_defer);
  lk__client_maybe_finish_close(c);
}

int lk_client_close(lk_client_t *c, lk_client_close_cb close_cb) {
  if (c == NULL)
    return LK_EINVAL;
  if (lk__client_forked(c)) {
    /* The child must never touch the parent's connections or locks: only
     * the memory goes, no handle is closed and no callback runs. */
    free_forked(c);
    return LK_EFORKED;
  }
  if (!uv_thread_equal(&c->thread, &(uv_thread_t){uv_thread_self()}))
    return LK_EWRONGTHREAD;
  if (c->closing || c->closing_all)
    return LK_ECLOSED;
  if (c->objects > 0)
    return LK_EBUSY;
  lk__client_begin_close(c, close_cb);
  return 0;
}

void lk__client_begin_close(lk_client_t *c, lk_client_close_cb close_cb) {
  c->closing = 1;
  c->close_cb = close_cb;
  lk__registry_close(c); /* its key goes in the drain below */
  /* Never finish inside this call: close_cb must come from the loop. */
  lk__defer_init(&c->close_defer, on_close_defer);
  lk__defer(c, &c->close_defer);
}

uv_loop_t *lk_client_loop(const lk_client_t *c) { return c ? c->loop : NULL; }
const char *lk_client_id(const lk_client_t *c) { return c ? c->id : NULL; }
void lk_client_get_stats(const lk_client_t *c, lk_client_stats_t *out) {
  if (c != NULL && out != NULL)
    *out = c->stats;
}
void *lk_client_get_data(const lk_client_t *c) { return c ? c->data : NULL; }
void lk_client_set_data(lk_client_t *c, void *data) {
  if (c != NULL)
    c->data = data;
}
