/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* Owner descriptions (include/latchkey/owners.h, docs/owners.md): a client
 * made with describe_owner keeps the hash latchkey_client:{ID} alive with a
 * timer of its own (the watchdog ticks only while something is held), and
 * any client reads one with lk_client_describe_owner. Both go through the
 * ordinary command path, so on a cluster the key goes to its own slot. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/registry.h"

#define KEY_PREFIX "latchkey_client:{"
#define NOTE_MAX 256

/* The description's fields, in the order they are written. */
enum { F_ID, F_HOST, F_PID, F_PROGRAM, F_NAME, F_VERSION, F_STARTED, F_LEASE, F_NOTE, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "id", "host", "pid", "program", "client_name", "version", "started_ms", "lease_ms", "note"};

struct lk__registry_s {
  lk_client_t *client;
  uv_timer_t timer;
  int writing; /* a write is in flight: the next tick skips */
  int failing; /* the last write failed: logged once until one succeeds */
  char key[sizeof(KEY_PREFIX) + 64 + 1];
  size_t key_len;
  char ttl[24];
  /* Values, NUL-terminated, fixed for the client's life. */
  char host[256], pid[24], program[256], started[24], note[NOTE_MAX + 1];
};

static size_t make_key(char *out, size_t cap, const char *id, size_t id_len) {
  int k = snprintf(out, cap, KEY_PREFIX "%.*s}", (int)id_len, id);
  return k > 0 && (size_t)k < cap ? (size_t)k : 0;
}

/* --- writing --- */

static void on_written(void *data, int status, redisReply *r) {
  lk__registry_t *g = data;
  lk_client_t *c = g->client;
  (void)r;
  g->writing = 0;
  if (status == 0) {
    c->stats.owner_writes++;
    g->failing = 0;
    return;
  }
  if (status == LK_ECANCELED || g->failing)
    return;
  g->failing = 1;
  /* Refused by the server (an ACL without the key, maxmemory) needs a
   * person; an unreachable server is said by the connection's own lines. */
  lk__log(c, lk__trouble_level(status), "owner description not written (%s); tried again "
          "every lease / 3", lk_err_name(status));
}

static void write_now(lk__registry_t *g) {
  lk_client_t *c = g->client;
  const char *argv[2 + 2 * F_COUNT];
  const char *vals[F_COUNT];
  char lease[24];
  int n = 0, i, err = 0;
  if (g->writing || c->closing)
    return;
  snprintf(lease, sizeof(lease), "%" PRId64, c->o.default_lease_ms);
  vals[F_ID] = c->id;
  vals[F_HOST] = g->host;
  vals[F_PID] = g->pid;
  vals[F_PROGRAM] = g->program;
  vals[F_NAME] = c->o.client_name != NULL ? c->o.client_name : "";
  vals[F_VERSION] = lk_version_string();
  vals[F_STARTED] = g->started;
  vals[F_LEASE] = lease;
  vals[F_NOTE] = g->note;
  argv[n++] = g->key;
  argv[n++] = g->ttl;
  for (i = 0; i < F_COUNT; i++) {
    if (i == F_NOTE && g->note[0] == '\0')
      continue;
    argv[n++] = field_names[i];
    argv[n++] = vals[i];
  }
  if (lk__script_call(c, lk__script_find("client/register"), 1, n - 1, argv, NULL, on_written,
                      g, &err) != NULL)
    g->writing = 1;
  else if (!g->failing) {
    g->failing = 1;
    lk__log(c, lk__trouble_level(err), "owner description not sent (%s)", lk_err_name(err));
  }
}

static void on_timer(uv_timer_t *t) {
  lk__registry_t *g = t->data;
  lk__wd_check(g->client);
  write_now(g);
}

/* What the description says of the process, read once. */
static void read_process(lk__registry_t *g, const lk_client_t *c) {
  char path[4096];
  size_t len = sizeof(path);
  uv_timeval64_t tv;
  const char *base;
  len = sizeof(g->host);
  if (uv_os_gethostname(g->host, &len) != 0)
    g->host[0] = '\0';
  snprintf(g->pid, sizeof(g->pid), "%ld", (long)uv_os_getpid());
  len = sizeof(path);
  if (uv_exepath(path, &len) == 0) {
    base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    /* A base name longer than the field is cut (names are 255 at most). */
    len = strlen(base);
    if (len >= sizeof(g->program))
      len = sizeof(g->program) - 1;
    memcpy(g->program, base, len);
    g->program[len] = '\0';
  }
  if (uv_gettimeofday(&tv) == 0)
    snprintf(g->started, sizeof(g->started), "%" PRId64,
             (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000);
  /* lk_client_new checked its length (NOTE_MAX). */
  if (c->o.owner_note != NULL)
    memcpy(g->note, c->o.owner_note, strlen(c->o.owner_note) + 1);
}

void lk__registry_start(lk_client_t *c) {
  lk__registry_t *g;
  uint64_t period;
  if (!c->o.describe_owner)
    return;
  g = lk__calloc(1, sizeof(*g));
  if (g == NULL) {
    lk__log(c, LK_LOG_WARN, "owner description off: out of memory");
    return;
  }
  g->client = c;
  g->key_len = make_key(g->key, sizeof(g->key), c->id, strlen(c->id));
  snprintf(g->ttl, sizeof(g->ttl), "%" PRId64, c->o.default_lease_ms);
  read_process(g, c);
  uv_timer_init(c->loop, &g->timer);
  g->timer.data = g;
  c->handles_open++;
  c->registry = g;
  /* The first write waits in the queue for the connection; then one per
   * period, as the watchdog renews a lease (lease / 3). */
  period = (uint64_t)c->o.default_lease_ms / 3;
  uv_timer_start(&g->timer, on_timer, period, period > 0 ? period : 1);
  write_now(g);
}

static void on_deleted(void *data, int status, redisReply *r) {
  lk_client_t *c = data;
  (void)r;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(c, LK_LOG_INFO, "owner description not deleted (%s); it expires with its TTL",
            lk_err_name(status));
}

static void on_timer_closed(uv_handle_t *h) {
  lk__registry_t *g = h->data;
  g->client->owner->handle_closed(g->client);
}

void lk__registry_close(lk_client_t *c) {
  lk__registry_t *g = c->registry;
  const char *argv[1];
  int err = 0;
  if (g == NULL)
    return;
  /* Behind any write still on its way, on the same connection: the key is
   * gone when the close's drain ends, unless the server is out of reach
   * (then its TTL ends it). */
  argv[0] = g->key;
  if (lk__script_call(c, lk__script_find("client/unregister"), 1, 0, argv, NULL, on_deleted, c,
                      &err) == NULL)
    on_deleted(c, err, NULL);
  uv_timer_stop(&g->timer);
  uv_close((uv_handle_t *)&g->timer, on_timer_closed);
}

void lk__registry_free(lk_client_t *c) {
  lk__free(c->registry);
  c->registry = NULL;
}

/* --- reading --- */

typedef struct {
  lk_client_t *client;
  lk_owner_cb cb;
  void *arg;
} lk__describe_t;

static int64_t to_i64(const char *s, int64_t dflt) {
  char *end;
  long long v;
  if (s == NULL || *s == '\0')
    return dflt;
  v = strtoll(s, &end, 10);
  return *end == '\0' ? (int64_t)v : dflt;
}

static int is_text(const redisReply *r) {
  return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

/* {PTTL, {field, value, ...}}: 0 with *found set, or LK_EPROTOCOL. */
static int read_desc(const redisReply *r, lk_owner_desc_t *d, int *found) {
  const char *v[F_COUNT] = {0};
  const redisReply *f;
  size_t i;
  int k;
  long long ttl;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      !lk__reply_is_int(r->element[0], &ttl))
    return LK_EPROTOCOL;
  f = r->element[1];
  if (f->type != REDIS_REPLY_ARRAY || f->elements % 2 != 0)
    return LK_EPROTOCOL;
  *found = f->elements > 0;
  for (i = 0; i + 1 < f->elements; i += 2) {
    if (!is_text(f->element[i]) || !is_text(f->element[i + 1]))
      return LK_EPROTOCOL;
    for (k = 0; k < F_COUNT; k++)
      if (strcmp(f->element[i]->str, field_names[k]) == 0)
        v[k] = f->element[i + 1]->str;
  }
  memset(d, 0, sizeof(*d));
  d->id = v[F_ID] != NULL ? v[F_ID] : "";
  d->host = v[F_HOST] != NULL ? v[F_HOST] : "";
  d->pid = to_i64(v[F_PID], -1);
  d->program = v[F_PROGRAM] != NULL ? v[F_PROGRAM] : "";
  d->client_name = v[F_NAME] != NULL ? v[F_NAME] : "";
  d->version = v[F_VERSION] != NULL ? v[F_VERSION] : "";
  d->started_ms = to_i64(v[F_STARTED], 0);
  d->lease_ms = to_i64(v[F_LEASE], 0);
  d->note = v[F_NOTE] != NULL ? v[F_NOTE] : "";
  d->ttl_ms = ttl >= 0 ? (int64_t)ttl : -1;
  return 0;
}

static void on_described(void *data, int status, redisReply *r) {
  lk__describe_t q = *(lk__describe_t *)data;
  lk_owner_desc_t d;
  int found = 0;
  lk__free(data);
  lk__wd_check(q.client);
  if (status == 0)
    status = read_desc(r, &d, &found);
  q.cb(q.client, status, status == 0 && found ? &d : NULL, q.arg);
}

int lk_client_describe_owner(lk_client_t *c, const char *owner, lk_owner_cb cb, void *arg) {
  char key[sizeof(KEY_PREFIX) + 64 + 1], id[65];
  const char *argv[1];
  const char *colon;
  size_t id_len;
  lk__describe_t *q;
  int rc = lk__check_client(c), err = 0;
  if (rc != 0)
    return rc;
  if (owner == NULL || cb == NULL)
    return LK_EINVAL;
  colon = strchr(owner, ':');
  id_len = colon != NULL ? (size_t)(colon - owner) : strlen(owner);
  if (id_len == 0 || id_len >= sizeof(id))
    return LK_EINVAL;
  memcpy(id, owner, id_len);
  id[id_len] = '\0';
  if (!lk__valid_client_id(id))
    return LK_EINVAL;
  make_key(key, sizeof(key), id, id_len);
  q = lk__malloc(sizeof(*q));
  if (q == NULL)
    return LK_ENOMEM;
  q->client = c;
  q->cb = cb;
  q->arg = arg;
  argv[0] = key;
  if (lk__script_call(c, lk__script_find("client/describe"), 1, 0, argv, NULL, on_described, q,
                      &err) == NULL) {
    lk__free(q);
    return err;
  }
  return 0;
}
