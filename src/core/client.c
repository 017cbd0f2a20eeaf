/* The client: options, lifecycle, entry checks, deferred completions,
 * events and logging. Connections live in conn.c, pub/sub in pubsub.c. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/loglevel.h"
#include "core/registry.h"
#include "core/router.h"
#include "core/sentinel.h"
#include "core/url.h"
#include "core/tls.h"
#include "core/tokens.h"
#include "core/watchdog.h"

/* --- fork detection: a counter bumped in every child, compared per call
 * (one load, where getpid() would be a system call) --- */

static volatile unsigned lk__fork_gen;
static pthread_once_t lk__fork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { lk__fork_gen++; }
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

static void install_fork_hook(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

int lk__check_client(const lk_client_t *c) {
  if (c == NULL)
    return LK_EINVAL;
  if (c->fork_gen != lk__fork_gen)
    return LK_EFORKED;
  if (!uv_thread_equal(&c->thread, &(uv_thread_t){uv_thread_self()}))
    return LK_EWRONGTHREAD;
  if (c->closing)
    return LK_ECLOSED;
  return 0;
}

int lk__client_forked(const lk_client_t *c) { return c->fork_gen != lk__fork_gen; }

int lk__check_client_new(const lk_client_t *c) {
  int rc = lk__check_client(c);
  return rc == 0 && c->closing_all ? LK_ECLOSED : rc;
}

/* --- options --- */

void lk_client_opts_init(lk_client_opts_t *o) {
  if (o == NULL)
    return;
  memset(o, 0, sizeof(*o));
  o->host = "127.0.0.1";
  o->port = 6379;
  o->client_name = "latchkey";
  o->connect_timeout_ms = 2000;
  o->reply_timeout_ms = 3000;
  o->reconnect_min_ms = 50;
  o->reconnect_max_ms = 2000;
  o->max_repoll_ms = 1000;
  o->heartbeat_ms = 1000;
  o->default_lease_ms = 30000;
  o->max_inflight = 65536;
  o->max_name_len = 4096;
  o->cluster = LK_CLUSTER_AUTO;
  o->cluster_refresh_ms = 5000;
  o->cluster_max_nodes = 2000;
  o->tls.verify_peer = 1;
  o->tls.min_version = LK_TLS_1_2;
  o->sync_timeout_ms = 1000;
  o->sync_policy = LK_SYNC_GIVE_BACK;
  o->pubsub_linger_ms = 2000;
  o->pubsub_linger_max = 1024;
}

int lk_client_opts_set_url(lk_client_opts_t *opts, const char *url) {
  lk_client_opts_t probe;
  char *storage = NULL;
  int rc;
  if (opts == NULL || url == NULL)
    return LK_EINVAL;
  probe = *opts;
  rc = lk__url_apply(&probe, url, &storage);
  lk__free(storage);
  if (rc != 0)
    return rc == LK_ENOMEM ? LK_ENOMEM : LK_EINVAL;
  opts->url = url;
  return 0;
}

static int valid_ms(int64_t v, int64_t min) {
  return v >= min && v <= LK_MAX_TIME_MS;
}

/* A string option copied: 0, or LK_ENOMEM when a non-NULL one could not be. */
static int dup_opt(char **d, const char *s) {
  *d = lk__strdup(s);
  return s != NULL && *d == NULL ? LK_ENOMEM : 0;
}

static int copy_new_opts(lk__opts_t *d, const lk_client_opts_t *s) {
  const lk_tls_opts_t *t = &s->tls;
  int rc = 0;
  if ((t->enable != 0 && t->enable != 1) || (t->verify_peer != 0 && t->verify_peer != 1) ||
      (t->min_version != LK_TLS_1_2 && t->min_version != LK_TLS_1_3) ||
      ((t->cert_file == NULL) != (t->key_file == NULL)) ||
      (t->server_name != NULL && (t->server_name[0] == '\0' || strlen(t->server_name) > 253)) ||
      /* Sentinels need the master's name, and the master's name needs them. */
      ((s->sentinels == NULL) != (s->sentinel_master == NULL)) ||
      (s->sentinels != NULL && (s->sentinels[0] == '\0' || s->sentinel_master[0] == '\0')) ||
      (s->sentinel_username != NULL && s->sentinel_password == NULL) ||
      (s->sentinels != NULL && s->cluster == LK_CLUSTER_ON) ||
      s->sync_replicas < 0 || s->sync_replicas > 1000 ||
      (s->sync_aof != 0 && s->sync_aof != 1) ||
      (s->sync_policy != LK_SYNC_GIVE_BACK && s->sync_policy != LK_SYNC_REPORT) ||
      !valid_ms(s->sync_timeout_ms, 1) ||
      (s->describe_owner != 0 && s->describe_owner != 1) ||
      (s->owner_note != NULL && strlen(s->owner_note) > 256) ||
      (s->spin != 0 && s->spin != 1) || s->spin_initial_ms < 0 ||
      s->spin_initial_ms > LK_SPIN_MAX_MS || s->spin_max_ms < 0 ||
      s->spin_max_ms > LK_SPIN_MAX_MS ||
      (s->spin_max_ms != 0 && s->spin_max_ms < s->spin_initial_ms))
    return LK_EINVAL;
  d->tls_enable = t->enable;
  d->tls_verify_peer = t->verify_peer;
  d->tls_min_version = t->min_version;
  d->sync_replicas = s->sync_replicas;
  d->sync_aof = s->sync_aof;
  d->sync_policy = s->sync_policy;
  d->sync_timeout_ms = s->sync_timeout_ms;
  d->describe_owner = s->describe_owner;
  d->spin = s->spin;
  d->spin_initial_ms = s->spin_initial_ms;
  d->spin_max_ms = s->spin_max_ms;
  rc |= dup_opt(&d->owner_note, s->owner_note);
  rc |= dup_opt(&d->tls_ca_file, t->ca_file);
  rc |= dup_opt(&d->tls_ca_dir, t->ca_dir);
  rc |= dup_opt(&d->tls_server_name, t->server_name);
  rc |= dup_opt(&d->tls_cert_file, t->cert_file);
  rc |= dup_opt(&d->tls_key_file, t->key_file);
  rc |= dup_opt(&d->sentinels, s->sentinels);
  rc |= dup_opt(&d->sentinel_master, s->sentinel_master);
  rc |= dup_opt(&d->sentinel_username, s->sentinel_username);
  rc |= dup_opt(&d->sentinel_password, s->sentinel_password);
  return rc != 0 ? LK_ENOMEM : 0;
}

static int copy_opts(lk__opts_t *d, const lk_client_opts_t *s) {
  int rc;
  if (s->port <= 0 || s->port > 65535 || s->db < 0 ||
      (s->host == NULL && s->unix_path == NULL) ||
      !valid_ms(s->connect_timeout_ms, 1) || !valid_ms(s->reply_timeout_ms, 1) ||
      !valid_ms(s->reconnect_min_ms, 1) ||
      !valid_ms(s->reconnect_max_ms, s->reconnect_min_ms) ||
      !valid_ms(s->max_repoll_ms, 1) || !valid_ms(s->heartbeat_ms, 10) ||
      !valid_ms(s->default_lease_ms, 10) || s->max_inflight == 0 ||
      s->max_name_len == 0 || s->max_name_len > (64u << 20) ||
      (s->username != NULL && s->password == NULL) ||
      (s->client_name != NULL && strlen(s->client_name) > 128) ||
      (s->client_name != NULL && strpbrk(s->client_name, " \r\n") != NULL) ||
      (s->client_id != NULL && !lk__valid_client_id(s->client_id)) ||
      (s->cluster != LK_CLUSTER_AUTO && s->cluster != LK_CLUSTER_ON &&
       s->cluster != LK_CLUSTER_OFF) ||
      !valid_ms(s->cluster_refresh_ms, 10) || !valid_ms(s->pubsub_linger_ms, 0) ||
      s->cluster_max_nodes == 0 || s->cluster_max_nodes > 65534 ||
      s->busy_poll_us < 0 || s->busy_poll_us > 1000000 ||
      (s->pubsub_mode != LK_PUBSUB_AUTO && s->pubsub_mode != LK_PUBSUB_SHARDED &&
       s->pubsub_mode != LK_PUBSUB_CLASSIC) ||
      (s->lock_layout != 0 && s->lock_layout != 1) || /* LK_LOCK_LAYOUT_* (lock.h) */
      /* A cluster has only db 0 and refuses SELECT. */
      (s->cluster == LK_CLUSTER_ON && (s->db != 0 || s->unix_path != NULL)))
    return LK_EINVAL;
  d->port = s->port;
  d->db = s->db;
  d->connect_timeout_ms = s->connect_timeout_ms;
  d->reply_timeout_ms = s->reply_timeout_ms;
  d->reconnect_min_ms = s->reconnect_min_ms;
  d->reconnect_max_ms = s->reconnect_max_ms;
  d->max_repoll_ms = s->max_repoll_ms;
  d->heartbeat_ms = s->heartbeat_ms;
  d->default_lease_ms = s->default_lease_ms;
  d->max_inflight = s->max_inflight;
  d->max_name_len = s->max_name_len;
  d->cluster = s->cluster;
  d->cluster_refresh_ms = s->cluster_refresh_ms;
  d->cluster_max_nodes = s->cluster_max_nodes;
  d->pubsub_linger_ms = s->pubsub_linger_ms;
  d->pubsub_linger_max = s->pubsub_linger_max;
  d->busy_poll_us = s->busy_poll_us;
  d->pubsub_mode = s->pubsub_mode;
  d->lock_layout = s->lock_layout;
  d->host = lk__strdup(s->host ? s->host : "");
  d->unix_path = lk__strdup(s->unix_path);
  d->username = lk__strdup(s->username);
  d->password = lk__strdup(s->password);
  d->client_name = lk__strdup(s->client_name ? s->client_name : "latchkey");
  if (d->host == NULL || d->client_name == NULL ||
      (s->unix_path && !d->unix_path) || (s->username && !d->username) ||
      (s->password && !d->password))
    return LK_ENOMEM;
  rc = copy_new_opts(d, s);
  return rc;
}

static void free_opts(lk__opts_t *o) {
  lk__free(o->host);
  lk__free(o->unix_path);
  lk__free(o->username);
  lk__free(o->password);
  lk__free(o->client_name);
  lk__free(o->tls_ca_file);
  lk__free(o->tls_ca_dir);
  lk__free(o->tls_server_name);
  lk__free(o->tls_cert_file);
  lk__free(o->tls_key_file);
  lk__free(o->sentinels);
  lk__free(o->sentinel_master);
  lk__free(o->sentinel_username);
  lk__free(o->sentinel_password);
  lk__free(o->owner_note);
}

/* --- deferred work --- */

void lk__defer_init(lk__defer_t *d, lk__defer_fn fn) {
  lk__queue_init(&d->node);
  d->fn = fn;
}

static void on_idle(uv_idle_t *h);

/* Busy polling (lk_client_opts_t.busy_poll_us, or a fan-out's answers
 * due: lk__client_spin_until): replies outstanding and the window still
 * open. */
static int busy_polling(const lk_client_t *c) {
  return c->inflight > 0 && c->closing == 0 && lk__now_ns() < c->busy_until_ns;
}

void lk__client_spin_until(lk_client_t *c, uint64_t until_ns) {
  if (c->closing != 0 || c->inflight == 0)
    return;
  if (until_ns > c->busy_until_ns)
    c->busy_until_ns = until_ns;
  /* An active idle handle makes the loop poll with a zero timeout: it
   * spins instead of sleeping until the window closes (on_idle). */
  uv_idle_start(&c->idle, on_idle);
}

void lk__client_busy_poll(lk_client_t *c) {
  if (c->o.busy_poll_us <= 0)
    return;
  lk__client_spin_until(c, lk__now_ns() + (uint64_t)c->o.busy_poll_us * 1000u);
}

static void on_idle(uv_idle_t *h) {
  lk_client_t *c = h->data;
  lk__queue_t ready;
  if (lk__queue_empty(&c->deferred)) {
    if (!busy_polling(c))
      uv_idle_stop(&c->idle);
    return; /* spinning for replies: nothing deferred to run */
  }
  lk__wd_check(c);
  /* Snapshot first (libuv's timer pattern): work deferred by these
   * callbacks runs on the next pass, so one pass always ends. */
  lk__queue_init(&ready);
  lk__queue_move(&c->deferred, &ready);
  lk__client_cork(c);
  while (!lk__queue_empty(&ready)) {
    lk__defer_t *d = lk__container_of(lk__queue_head(&ready), lk__defer_t, node);
    lk__queue_remove(&d->node);
    d->fn(d);
  }
  lk__client_uncork(c);
  if (lk__queue_empty(&c->deferred) && !busy_polling(c))
    uv_idle_stop(&c->idle);
}

void lk__defer(lk_client_t *c, lk__defer_t *d) {
  if (lk__queue_linked(&d->node))
    return;
  lk__queue_insert_tail(&c->deferred, &d->node);
  uv_idle_start(&c->idle, on_idle);
}

void lk__defer_cancel(lk__defer_t *d) {
  if (lk__queue_linked(&d->node))
    lk__queue_remove(&d->node);
}

/* --- logging and events --- */

void lk__log(lk_client_t *c, lk_log_level_t level, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  if (c->log == NULL && level < LK_LOG_WARN)
    return;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (c->log != NULL) {
    c->log(level, buf, c->log_arg);
    return;
  }
  fprintf(stderr, "latchkey %s: %s\n", level == LK_LOG_WARN ? "warning" : "error",
          buf);
}

void lk__client_set_error(lk_client_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->error_text, sizeof(c->error_text), fmt, ap);
  va_end(ap);
}

const char *lk_client_error_text(const lk_client_t *c) {
  return c == NULL ? "" : c->error_text;
}

void lk__emit(lk_client_t *c, lk_event_t ev) {
  if (c->on_event != NULL && !c->closing)
    c->on_event(c, ev, c->event_arg);
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

/* --- lifecycle --- */

int lk_client_new(uv_loop_t *loop, const lk_client_opts_t *opts,
                  lk_client_t **out) {
  lk_client_opts_t defaults, from_url;
  char *url_storage = NULL;
  lk_client_t *c;
  int rc;

  if (loop == NULL || out == NULL)
    return LK_EINVAL;
  if (opts == NULL) {
    lk_client_opts_init(&defaults);
    opts = &defaults;
  }
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
  pthread_once(&lk__fork_once, install_fork_hook);
  pthread_once(&lk__sigpipe_once, ignore_default_sigpipe);
  c = lk__calloc(1, sizeof(*c));
  if (c == NULL) {
    lk__free(url_storage);
    return LK_ENOMEM;
  }
  rc = copy_opts(&c->o, opts);
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
    free_opts(&c->o);
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
    free_opts(&c->o);
    lk__free(c);
    return rc;
  }
  lk__alloc_client_born();
  c->loop = loop;
  c->thread = uv_thread_self();
  c->fork_gen = lk__fork_gen;
  c->on_event = opts->on_event;
  c->event_arg = opts->event_arg;
  c->log = opts->log;
  c->log_arg = opts->log_arg;
  lk__queue_init(&c->deferred);
  lk__queue_init(&c->obj_list);
  uv_idle_init(loop, &c->idle);
  c->idle.data = c;
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
  free_opts(&c->o);
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

void lk__object_born(lk_client_t *c) { c->objects++; }
void lk__object_died(lk_client_t *c) {
  c->objects--;
  lk__close_all_kick(c);
}

uv_loop_t *lk_client_loop(const lk_client_t *c) { return c ? c->loop : NULL; }
const char *lk_client_id(const lk_client_t *c) { return c ? c->id : NULL; }
int lk_client_is_connected(const lk_client_t *c) {
  size_t i;
  if (c == NULL)
    return 0;
  for (i = 0; i < c->n_nodes; i++)
    if (c->nodes[i]->cmd->state == LK__CONN_READY)
      return 1;
  return 0;
}
void lk_client_get_stats(const lk_client_t *c, lk_client_stats_t *out) {
  if (c != NULL && out != NULL)
    *out = c->stats;
}
void *lk_client_get_data(const lk_client_t *c) { return c ? c->data : NULL; }
void lk_client_set_data(lk_client_t *c, void *data) {
  if (c != NULL)
    c->data = data;
}
