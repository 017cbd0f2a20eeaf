/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* The client's options: their defaults, a connection URL applied to them,
 * and their check and copy into the client (lk_client_new). Nothing here
 * knows a connection: options are plain data. */
#include <string.h>

#include "core/internal.h"
#include "core/url.h"

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

int lk__opts_copy(lk__opts_t *d, const lk_client_opts_t *s) {
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

void lk__opts_free(lk__opts_t *o) {
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
