/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* Metrics (include/latchkey/metrics.h, docs/metrics.md): the counters that
 * need a decision where they happen, and the Prometheus text exposition
 * writer (format 0.0.4). The writer reads the stats struct only: it adds no
 * cost to the operations it reports on. */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"

/* --- counting --- */

/* Bucket upper bounds (µs) and their le="..." text (seconds), in step. */
static const int64_t bound_us[LK_WAIT_BUCKETS - 1] = {
    500,    1000,    2500,    5000,    10000,   25000,    50000,    100000,
    250000, 500000,  1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
static const char *const bound_le[LK_WAIT_BUCKETS - 1] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",   "0.5",   "1",      "2.5",   "5",    "10",    "30",   "60"};

int64_t lk_metrics_wait_bound_us(int i) {
  return i >= 0 && i < LK_WAIT_BUCKETS - 1 ? bound_us[i] : -1;
}

void lk__metrics_wait(lk_client_t *c, uint64_t ns) {
  int i = 0;
  while (i < LK_WAIT_BUCKETS - 1 && ns > (uint64_t)bound_us[i] * 1000u)
    i++;
  c->stats.wait_buckets[i]++;
  c->stats.wait_ns_total += ns;
}

void lk__metrics_lost(lk_client_t *c, int reason) {
  lk_client_stats_t *st = &c->stats;
  switch (reason) {
  case LK__LOST_TAKEN: st->leases_lost_taken++; break;
  case LK__LOST_DEADLINE: st->leases_lost_deadline++; break;
  case LK__LOST_RESTART: st->leases_lost_restart++; break;
  case LK__LOST_QUORUM: st->leases_lost_quorum++; break;
  default: st->leases_lost_gone++; break;
  }
}

/* --- the text --- */

/* Output that counts what it would need and writes only what fits with
 * room for the NUL: once one piece does not fit, none after it does. */
typedef struct {
  char *buf;
  size_t len, n;
} out_t;

static void put(out_t *o, const char *s, size_t k) {
  if (o->n + k < o->len)
    memcpy(o->buf + o->n, s, k);
  o->n += k;
}

static void puts_(out_t *o, const char *s) { put(o, s, strlen(s)); }

static void put_u64(out_t *o, uint64_t v) {
  char t[24];
  int k = snprintf(t, sizeof(t), "%" PRIu64, v);
  put(o, t, (size_t)k);
}

/* Nanoseconds as seconds, exact and with '.' whatever the locale says. */
static void put_seconds(out_t *o, uint64_t ns) {
  char t[32];
  int k = snprintf(t, sizeof(t), "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
  put(o, t, (size_t)k);
}

/* A label value with \, " and newline escaped, as the format asks. */
static void put_escaped(out_t *o, const char *s) {
  for (; *s != '\0'; s++) {
    if (*s == '\\')
      puts_(o, "\\\\");
    else if (*s == '"')
      puts_(o, "\\\"");
    else if (*s == '\n')
      puts_(o, "\\n");
    else
      put(o, s, 1);
  }
}

/* One client's part of the exposition. */
typedef struct {
  const lk_client_t *c;
  const char *labels; /* checked caller labels, or NULL: client="<name>" */
} src_t;

/* Starts a sample line: NAME{labels[,extra]} and the space before the
 * value (no braces when there is no label at all). */
static void sample(out_t *o, const char *name, const src_t *s, const char *extra) {
  int own = s->labels == NULL || s->labels[0] != '\0';
  puts_(o, name);
  if (!own && extra == NULL) {
    puts_(o, " ");
    return;
  }
  puts_(o, "{");
  if (s->labels == NULL) {
    puts_(o, "client=\"");
    put_escaped(o, s->c->o.client_name != NULL ? s->c->o.client_name : "");
    puts_(o, "\"");
  } else {
    puts_(o, s->labels);
  }
  if (extra != NULL) {
    if (own)
      puts_(o, ",");
    puts_(o, extra);
  }
  puts_(o, "} ");
}

static void value(out_t *o, uint64_t v) {
  put_u64(o, v);
  puts_(o, "\n");
}

static void value_seconds(out_t *o, uint64_t ns) {
  put_seconds(o, ns);
  puts_(o, "\n");
}

static void header(out_t *o, const char *name, const char *type, const char *help) {
  puts_(o, "# HELP ");
  puts_(o, name);
  puts_(o, " ");
  puts_(o, help);
  puts_(o, "\n# TYPE ");
  puts_(o, name);
  puts_(o, " ");
  puts_(o, type);
  puts_(o, "\n");
}

typedef struct {
  const char *name, *help;
  size_t off;
} counter_t;

#define CTR(field, name, help) {"latchkey_" name "_total", help, offsetof(lk_client_stats_t, field)}

/* Every plain counter of lk_client_stats_t, in docs/metrics.md's order. */
static const counter_t counters[] = {
    CTR(acquires, "acquires", "Acquires that succeeded (every primitive)."),
    CTR(acquire_waits, "acquire_waits", "Successful acquires that had to wait."),
    CTR(acquire_timeouts, "acquire_timeouts", "Acquires whose wait budget ran out."),
    CTR(releases, "releases", "Releases that succeeded."),
    CTR(renewals, "renewals", "Leases renewed by the watchdog (one per lease per renewal sent)."),
    CTR(renewal_commands, "renewal_commands", "Renewal scripts sent (up to 100 leases each)."),
    CTR(renewal_failures, "renewal_failures",
        "Renewal scripts that got no usable answer (their leases are sent again)."),
    CTR(holds_at_risk, "holds_at_risk",
        "Holds that became at risk: a renewal failed or their connection dropped."),
    CTR(holds_safe_again, "holds_safe_again",
        "Holds at risk that a later renewal confirmed again."),
    CTR(give_backs, "give_backs",
        "Holds an acquire may have been granted after its caller stopped waiting, given back."),
    CTR(unknown_outcomes, "unknown_outcomes", "Commands whose reply was lost: outcome unknown."),
    CTR(reply_timeouts, "reply_timeouts", "Replies that did not come within the reply timeout."),
    CTR(unattributable_replies, "unattributable_replies",
        "Replies that were not their command's own (each dropped the connection)."),
    CTR(reconnects, "reconnects", "Times the command connection went down or failed to connect."),
    CTR(pubsub_reconnects, "pubsub_reconnects",
        "Times the pub/sub connection went down or failed to connect."),
    CTR(commands_sent, "commands_sent", "Commands sent."),
    CTR(replies, "replies", "Replies received."),
    CTR(noscript_reloads, "noscript_reloads", "Scripts sent again after NOSCRIPT."),
    CTR(pubsub_messages, "pubsub_messages", "Pub/sub messages received."),
    CTR(moved_redirects, "moved_redirects", "Cluster MOVED redirections followed."),
    CTR(ask_redirects, "ask_redirects", "Cluster ASK redirections followed."),
    CTR(cluster_retries, "cluster_retries", "Commands sent again after TRYAGAIN or CLUSTERDOWN."),
    CTR(topology_refreshes, "topology_refreshes", "Cluster topology reads."),
    CTR(topology_changes, "topology_changes", "Topology reads that found a slot with a new master."),
    CTR(tls_handshakes, "tls_handshakes", "TLS handshakes completed."),
    CTR(tls_failures, "tls_failures", "TLS handshakes that failed."),
    CTR(sentinel_queries, "sentinel_queries", "Master addresses asked of sentinels."),
    CTR(sentinel_switches, "sentinel_switches", "Switches to a new master address."),
    CTR(sync_waits, "sync_waits", "Grants that waited for replica acknowledgements."),
    CTR(sync_shortfalls, "sync_shortfalls", "Grants fewer replicas than asked acknowledged in time."),
    CTR(owner_writes, "owner_writes", "Owner descriptions written (describe_owner)."),
};

static uint64_t field(const src_t *s, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)&s->c->stats + off, sizeof(v));
  return v;
}

static const struct {
  const char *label;
  size_t off;
} lost_reasons[] = {
    {"reason=\"gone\"", offsetof(lk_client_stats_t, leases_lost_gone)},
    {"reason=\"taken\"", offsetof(lk_client_stats_t, leases_lost_taken)},
    {"reason=\"deadline\"", offsetof(lk_client_stats_t, leases_lost_deadline)},
    {"reason=\"restart\"", offsetof(lk_client_stats_t, leases_lost_restart)},
    {"reason=\"quorum\"", offsetof(lk_client_stats_t, leases_lost_quorum)},
};

static void write_all(out_t *o, const src_t *s, size_t n) {
  size_t i, k;
  int b;
  char le[32], info[64];

  header(o, "latchkey_client_info", "gauge",
         "Always 1; the version label says which latchkey the client runs.");
  for (i = 0; i < n; i++) {
    snprintf(info, sizeof(info), "version=\"%s\"", lk_version_string());
    sample(o, "latchkey_client_info", &s[i], info);
    value(o, 1);
  }
  for (k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
    header(o, counters[k].name, "counter", counters[k].help);
    for (i = 0; i < n; i++) {
      sample(o, counters[k].name, &s[i], NULL);
      value(o, field(&s[i], counters[k].off));
    }
  }
  header(o, "latchkey_leases_lost_total", "counter",
         "Leases lost, by reason: gone, taken (held by another owner), deadline (no renewal "
         "confirmed in time), restart (gone after a restart or master switch), quorum (RedLock).");
  for (k = 0; k < sizeof(lost_reasons) / sizeof(lost_reasons[0]); k++)
    for (i = 0; i < n; i++) {
      sample(o, "latchkey_leases_lost_total", &s[i], lost_reasons[k].label);
      value(o, field(&s[i], lost_reasons[k].off));
    }
  header(o, "latchkey_handoff_seconds_total", "counter",
         "Time from a release message to the acquire it woke, summed.");
  for (i = 0; i < n; i++) {
    sample(o, "latchkey_handoff_seconds_total", &s[i], NULL);
    value_seconds(o, s[i].c->stats.handoff_ns_total);
  }
  header(o, "latchkey_acquire_wait_seconds", "histogram",
         "How long successful acquires that had to wait waited, from the call to the grant.");
  for (i = 0; i < n; i++) {
    const lk_client_stats_t *st = &s[i].c->stats;
    uint64_t cum = 0;
    for (b = 0; b < LK_WAIT_BUCKETS; b++) {
      cum += st->wait_buckets[b];
      snprintf(le, sizeof(le), "le=\"%s\"", b < LK_WAIT_BUCKETS - 1 ? bound_le[b] : "+Inf");
      sample(o, "latchkey_acquire_wait_seconds_bucket", &s[i], le);
      value(o, cum);
    }
    sample(o, "latchkey_acquire_wait_seconds_sum", &s[i], NULL);
    value_seconds(o, st->wait_ns_total);
    sample(o, "latchkey_acquire_wait_seconds_count", &s[i], NULL);
    value(o, cum);
  }
  header(o, "latchkey_connected", "gauge", "1 while a command connection is ready, else 0.");
  for (i = 0; i < n; i++) {
    sample(o, "latchkey_connected", &s[i], NULL);
    value(o, (uint64_t)lk_client_is_connected(s[i].c));
  }
  header(o, "latchkey_objects", "gauge", "Objects open on the client.");
  for (i = 0; i < n; i++) {
    sample(o, "latchkey_objects", &s[i], NULL);
    value(o, s[i].c->objects);
  }
  header(o, "latchkey_inflight_commands", "gauge", "Commands queued or awaiting their reply.");
  for (i = 0; i < n; i++) {
    sample(o, "latchkey_inflight_commands", &s[i], NULL);
    value(o, s[i].c->inflight);
  }
}

/* --- checks --- */

static int name_start(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static int name_char(char ch) { return name_start(ch) || (ch >= '0' && ch <= '9'); }

/* The label names the writer adds itself: a caller's would collide. */
static int reserved(const char *s, size_t k) {
  static const char *const names[] = {"le", "reason", "version"};
  size_t i;
  if (k >= 2 && s[0] == '_' && s[1] == '_')
    return 1;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strlen(names[i]) == k && memcmp(names[i], s, k) == 0)
      return 1;
  return 0;
}

/* name="value"(,name="value")*, or "": what goes between the braces. */
static int valid_labels(const char *s) {
  while (*s != '\0') {
    const char *name = s;
    if (!name_start(*s))
      return 0;
    while (name_char(*s))
      s++;
    if (reserved(name, (size_t)(s - name)) || s[0] != '=' || s[1] != '"')
      return 0;
    for (s += 2; *s != '"'; s++) {
      if (*s == '\0' || *s == '\n')
        return 0;
      if (*s == '\\') {
        s++;
        if (*s != '\\' && *s != '"' && *s != 'n')
          return 0;
      }
    }
    s++;
    if (*s == ',') {
      s++;
      if (*s == '\0')
        return 0; /* a trailing comma */
    } else if (*s != '\0') {
      return 0;
    }
  }
  return 1;
}

static int check(const lk_client_t *c) {
  if (c == NULL)
    return LK_EINVAL;
  if (lk__client_forked(c))
    return LK_EFORKED;
  if (!uv_thread_equal(&c->thread, &(uv_thread_t){uv_thread_self()}))
    return LK_EWRONGTHREAD;
  return 0;
}

#define MAX_CLIENTS 1024

int lk_metrics_write(const lk_client_t *const *clients, const char *const *labels, size_t n,
                     char *buf, size_t len) {
  src_t s[MAX_CLIENTS];
  out_t o;
  size_t i;
  int rc;
  if (clients == NULL || n == 0 || n > MAX_CLIENTS || (buf == NULL && len > 0))
    return LK_EINVAL;
  for (i = 0; i < n; i++) {
    if ((rc = check(clients[i])) != 0)
      return rc;
    s[i].c = clients[i];
    s[i].labels = labels != NULL ? labels[i] : NULL;
    if (s[i].labels != NULL && !valid_labels(s[i].labels))
      return LK_EINVAL;
  }
  o.buf = buf;
  o.len = len;
  o.n = 0;
  write_all(&o, s, n);
  if (o.n > INT_MAX)
    return LK_ENOMEM;
  if (len > 0)
    buf[o.n < len ? o.n : 0] = '\0'; /* the whole text, or nothing */
  return (int)o.n;
}

int lk_client_write_metrics(const lk_client_t *client, char *buf, size_t len,
                            const char *labels) {
  return lk_metrics_write(&client, &labels, 1, buf, len);
}
