#ifndef LATCHKEY_CLIENT_H
#define LATCHKEY_CLIENT_H

#include <uv.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lk_client_s lk_client_t;

typedef enum {
  LK_EVENT_CONNECTED = 1,   /* first connection ready (handshake done) */
  LK_EVENT_SUSPENDED,       /* command connection lost; reconnecting */
  LK_EVENT_RECONNECTED,     /* command connection ready again */
  LK_EVENT_SERVER_RESTARTED, /* reconnected to a server with a new run_id */
  /* A cluster's slot changed master (failover, migration, a node added or
   * removed): the holds in it are being verified, on_lost follows for the
   * ones that are gone (docs/client.md, "Redis Cluster"). */
  LK_EVENT_TOPOLOGY_CHANGED
} lk_event_t;

/* How the client treats a Redis Cluster (docs/client.md, "Redis Cluster"). */
typedef enum {
  /* Found out: a node that says cluster_enabled:1, or a MOVED reply, turns
   * cluster routing on. The default. */
  LK_CLUSTER_AUTO = 0,
  /* host/port is a cluster node (a seed); db must be 0. */
  LK_CLUSTER_ON,
  /* Never: a redirection ends the command with LK_ECLUSTER. */
  LK_CLUSTER_OFF
} lk_cluster_mode_t;

/* How waiters listen and releases publish on a Redis Cluster (docs/client.md,
 * "Redis Cluster"). A standalone server always uses classic pub/sub. */
typedef enum {
  /* Sharded (SSUBSCRIBE/SPUBLISH) on a 7.0+ cluster, classic on an older
   * one, with one warning. The default. */
  LK_PUBSUB_AUTO = 0,
  /* Sharded only: on a cluster without sharded pub/sub nothing is
   * subscribed (one LK_LOG_ERROR) and waiters poll every max_repoll_ms. */
  LK_PUBSUB_SHARDED,
  /* Classic (SUBSCRIBE/PUBLISH) on every cluster, as Redisson with
   * shardedSubscriptionMode OFF or before 3.22 listens: each release is
   * broadcast to every node of the cluster. */
  LK_PUBSUB_CLASSIC
} lk_pubsub_mode_t;

/* Oldest TLS version the client accepts (docs/tls.md). */
typedef enum { LK_TLS_1_2 = 0, LK_TLS_1_3 = 1 } lk_tls_version_t;

/* TLS on every connection the client opens: commands, pub/sub, a cluster's
 * nodes, sentinels (docs/tls.md). Zeroed by lk_client_opts_init except
 * verify_peer (1). */
typedef struct lk_tls_opts_s {
  int enable;              /* 1: speak TLS (the rediss:// scheme sets it) */
  const char *ca_file;     /* PEM bundle of trusted CAs */
  const char *ca_dir;      /* hashed CA directory; both NULL: the system store */
  int verify_peer;         /* default 1: the chain and the server's name are
                              checked; 0 accepts any certificate (tests only) */
  const char *server_name; /* SNI and the name checked; default: the host
                              connected to (an IP address is checked as one) */
  const char *cert_file;   /* client certificate, PEM (mutual TLS) */
  const char *key_file;    /* its private key, PEM; both or neither */
  int min_version;         /* lk_tls_version_t, default LK_TLS_1_2 */
} lk_tls_opts_t;

/* What an acquire does when fewer replicas than asked acknowledged its grant
 * in time (docs/replica-sync.md). */
typedef enum {
  /* The hold is given back and the acquire fails with LK_ENOREPLICAS. */
  LK_SYNC_GIVE_BACK = 0,
  /* The acquire succeeds; the shortfall is counted (stats.sync_shortfalls)
   * and readable from the object (docs/replica-sync.md). */
  LK_SYNC_REPORT
} lk_sync_policy_t;

typedef enum { LK_LOG_DEBUG = 0, LK_LOG_INFO, LK_LOG_WARN, LK_LOG_ERROR } lk_log_level_t;

typedef void (*lk_client_event_cb)(lk_client_t *client, lk_event_t event,
                                   void *arg);
/* msg is borrowed, valid until the callback returns. Owner ids never appear
 * in messages above LK_LOG_DEBUG. */
typedef void (*lk_log_cb)(lk_log_level_t level, const char *msg, void *arg);
typedef void (*lk_client_close_cb)(lk_client_t *client);

typedef struct lk_client_opts_s {
  const char *host;      /* default "127.0.0.1"; resolved with uv_getaddrinfo */
  int port;              /* default 6379 */
  const char *unix_path; /* when set, used instead of host/port */
  const char *username;  /* ACL user (AUTH user pass), or NULL */
  const char *password;  /* AUTH password, or NULL */
  int db;                /* SELECT db, default 0 */
  const char *client_name; /* CLIENT SETNAME, default "latchkey" */
  int64_t connect_timeout_ms; /* default 2000 */
  int64_t reply_timeout_ms;   /* default 3000; a late reply drops the connection */
  int64_t reconnect_min_ms;   /* backoff start, default 50 */
  int64_t reconnect_max_ms;   /* backoff cap, default 2000 */
  int64_t max_repoll_ms;      /* longest a waiter sleeps between tries, default 1000 */
  int64_t heartbeat_ms;       /* pub/sub health check period, default 1000 */
  int64_t default_lease_ms;   /* lease used for LK_LEASE_DEFAULT, default 30000 */
  size_t max_inflight;        /* commands queued or in flight, default 65536 */
  size_t max_name_len;        /* longest object name in bytes, default 4096 */
  const char *client_id;      /* UUID override for interop and tests; NULL = random */
  lk_client_event_cb on_event;
  void *event_arg;
  lk_log_cb log;              /* NULL: warnings and errors go to stderr */
  void *log_arg;
  int cluster;                /* lk_cluster_mode_t, default LK_CLUSTER_AUTO */
  int64_t cluster_refresh_ms; /* topology re-read period on a cluster, default 5000 */
  /* The most cluster nodes the client keeps (each with its connections,
   * docs/client.md "Redis Cluster"), and the most nodes one slot-map reply
   * may list: 1..65534, default 2000. */
  size_t cluster_max_nodes;
  /* One connection URL (docs/client.md, "Connection URL"): redis://,
   * rediss://, redis+sentinel://, unix:// or host:port. When set, what it
   * names replaces host, port, unix_path, username, password, db, tls.enable,
   * sentinels and sentinel_master; a malformed URL makes lk_client_new
   * return LK_EINVAL. NULL: the fields are used as they are. */
  const char *url;
  lk_tls_opts_t tls;
  /* Sentinel (docs/sentinel.md): "host:port,host:port,..." of the sentinels
   * to ask where the master named sentinel_master is; host and port are then
   * not used. NULL: no sentinels. */
  const char *sentinels;
  const char *sentinel_master;
  const char *sentinel_username; /* AUTH towards the sentinels, or NULL */
  const char *sentinel_password;
  /* Replica sync (docs/replica-sync.md), off by default: after a grant,
   * wait until sync_replicas replicas acknowledged it (WAIT), or with
   * sync_aof also fsynced it (WAITAOF, where the server has it), for at most
   * sync_timeout_ms; sync_policy says what a shortfall does. An acquire's
   * own options can override sync_replicas. */
  int sync_replicas;       /* 0 = off (default) */
  int64_t sync_timeout_ms; /* default 1000 */
  int sync_aof;            /* 1: WAITAOF (servers 7.2+), else WAIT */
  int sync_policy;         /* lk_sync_policy_t, default LK_SYNC_GIVE_BACK */
  /* Waiting (docs/objects.md, "Waiting"): a channel whose last local waiter
   * left stays subscribed this long, so a busy name is subscribed once, not
   * once per wait (0: unsubscribe at once); at most pubsub_linger_max
   * channels linger, the oldest goes first (0: none linger). */
  int64_t pubsub_linger_ms; /* default 2000 */
  size_t pubsub_linger_max; /* default 1024 */
  /* Busy polling (docs/client.md, "Busy polling"), off by default: after
   * each command sent, while any reply is outstanding, the client keeps the
   * loop polling without sleeping for up to busy_poll_us microseconds (an
   * active uv_idle_t). Replies then land on a running process: lower
   * latency and less server CPU on hosts where waking a sleeping process
   * is dear (fan-outs such as RedLock's gain most), for client CPU spent
   * spinning. 0..1000000. */
  int64_t busy_poll_us; /* default 0 */
  /* Spin mode (docs/lock.md, "Spin mode"), off by default: 1 makes every
   * acquire that can spin (lock, read/write lock, semaphores) wait by
   * back-off with jitter instead of listening for releases, unless its own
   * spin option says otherwise. The back-off starts near spin_initial_ms
   * and doubles up to spin_max_ms (0: 1 and 128 ms, Redisson's RSpinLock
   * defaults; each 0..LK_SPIN_MAX_MS). */
  int spin;                /* 0 = off (default), 1 = on */
  int64_t spin_initial_ms; /* 0 = 1 ms */
  int64_t spin_max_ms;     /* 0 = 128 ms, or spin_initial_ms if larger;
                              else not below spin_initial_ms */
  /* Owner descriptions (docs/owners.md), off by default: 1 keeps a short
   * description of this client (host name, pid, program, client_name,
   * latchkey version, owner_note) in the hash latchkey_client:{ID} with a
   * TTL of default_lease_ms, rewritten every default_lease_ms / 3 and
   * deleted by a clean close, so inspection can name the process behind an
   * owner id (lk_client_describe_owner). Cost: one key per client, one
   * small write per period. */
  int describe_owner;
  const char *owner_note; /* free text kept with it (at most 256 bytes), or NULL */
  /* lk_pubsub_mode_t, default LK_PUBSUB_AUTO; another value makes
   * lk_client_new return LK_EINVAL. */
  int pubsub_mode;
  /* The layout of every lock object's data on the server, for objects this
   * client creates (lk_lock_set_layout overrides it per object):
   * LK_LOCK_LAYOUT_REDISSON (0, default) or LK_LOCK_LAYOUT_LEAN (lock.h);
   * another value makes lk_client_new return LK_EINVAL. */
  int lock_layout;
} lk_client_opts_t;

/* Buckets of the acquire wait-time histogram (docs/metrics.md): one per
 * upper bound lk_metrics_wait_bound_us(0..LK_WAIT_BUCKETS-2), 0.5 ms to
 * 60 s, and a last one for longer waits. */
#define LK_WAIT_BUCKETS 17

typedef struct lk_client_stats_s {
  uint64_t commands_sent;
  uint64_t replies;
  uint64_t noscript_reloads;
  uint64_t reconnects;
  uint64_t reply_timeouts;
  uint64_t unknown_outcomes;
  uint64_t pubsub_messages;
  uint64_t pubsub_reconnects;
  uint64_t acquires;
  uint64_t acquire_waits; /* acquires that had to wait at least once */
  uint64_t releases;
  uint64_t handoff_ns_total; /* release message to acquire, summed */
  uint64_t renewals;         /* leases renewed (entries sent) */
  uint64_t renewal_commands; /* renewal scripts sent (up to 100 leases each) */
  uint64_t leases_lost;      /* lost-lease notifications */
  /* Replies that were not their command's own (a reply the server did not
   * owe, or one out of step): each dropped the connection, and every command
   * in flight on it ended with LK_EUNKNOWN. */
  uint64_t unattributable_replies;
  /* Redis Cluster (docs/client.md): redirections followed, commands sent
   * again after TRYAGAIN or CLUSTERDOWN, topology reads, and reads that
   * found a slot with a new master. */
  uint64_t moved_redirects;
  uint64_t ask_redirects;
  uint64_t cluster_retries;
  uint64_t topology_refreshes;
  uint64_t topology_changes;
  /* TLS handshakes completed / failed (docs/tls.md). */
  uint64_t tls_handshakes;
  uint64_t tls_failures;
  /* Sentinel (docs/sentinel.md): master addresses asked for, and switches
   * to a new master address. */
  uint64_t sentinel_queries;
  uint64_t sentinel_switches;
  /* Replica sync (docs/replica-sync.md): grants waited for, and grants
   * fewer replicas than asked acknowledged in time. */
  uint64_t sync_waits;
  uint64_t sync_shortfalls;
  /* Metrics (docs/metrics.md). Acquires that ended LK_ETIMEDOUT. */
  uint64_t acquire_timeouts;
  /* How long the acquires counted in acquire_waits waited, from the call
   * to the grant: the sum (ns), and the count per bucket (not cumulative:
   * bucket i counts waits above bound i-1 up to bound i, the last one
   * those above 60 s). The buckets add up to acquire_waits. */
  uint64_t wait_ns_total;
  uint64_t wait_buckets[LK_WAIT_BUCKETS];
  /* leases_lost by reason; they add up to it. A renewal found the key
   * gone, or held by another owner; the local deadline passed with no
   * renewal confirmed; a renewal found it gone after the server restarted
   * or the client moved to another master; a RedLock lost its quorum. */
  uint64_t leases_lost_gone;
  uint64_t leases_lost_taken;
  uint64_t leases_lost_deadline;
  uint64_t leases_lost_restart;
  uint64_t leases_lost_quorum;
  /* Renewal scripts that got no usable answer (connection lost, reply
   * timeout, error reply): their leases go again with the next tick. */
  uint64_t renewal_failures;
  /* Give-backs sent for what an acquire may have been granted after its
   * caller stopped waiting for it (an unknown outcome, a timeout, cancel or
   * close with an attempt in flight). */
  uint64_t give_backs;
  /* Owner descriptions written (describe_owner; docs/owners.md). */
  uint64_t owner_writes;
  /* Health (docs/objects.md, "Health"): holds that became at risk (a
   * renewal failed, or their connection dropped), and holds a later renewal
   * confirmed again. Losses told without warning count an at-risk too. */
  uint64_t holds_at_risk;
  uint64_t holds_safe_again;
} lk_client_stats_t;

LK_EXTERN void lk_client_opts_init(lk_client_opts_t *opts);

/* Checks url (the forms of lk_client_opts_t.url) and, when it is well
 * formed, sets opts->url to it (not copied: it must live until
 * lk_client_new). Returns 0, LK_EINVAL (a NULL argument, or a URL that is
 * not one of the forms: a program prints its usage line) or LK_ENOMEM. */
LK_EXTERN int lk_client_opts_set_url(lk_client_opts_t *opts, const char *url);

/* Applies url to *opts at once, as lk_client_new applies opts->url, for a
 * program that needs the parts itself (to print where it connects, or to
 * open its own connections to the same server). The strings it sets point
 * into *storage, which stays valid until lk_client_opts_free_url(*storage);
 * lk_client_new copies them, so it may be freed once the client exists.
 * opts->url becomes NULL (applied). Returns 0, LK_EINVAL (a NULL argument or
 * a malformed URL: *opts unchanged, *storage NULL) or LK_ENOMEM. */
LK_EXTERN int lk_client_opts_apply_url(lk_client_opts_t *opts, const char *url,
                                       char **storage);
LK_EXTERN void lk_client_opts_free_url(char *storage);

/* Creates a client on loop and starts connecting. opts is copied (strings
 * included); NULL means defaults. *out is set only on success. The client must
 * be used from the thread that runs loop. Returns 0, LK_EINVAL (a NULL loop or
 * out, an option out of range: docs/client.md) or LK_ENOMEM. */
LK_EXTERN int lk_client_new(uv_loop_t *loop, const lk_client_opts_t *opts,
                            lk_client_t **out);

/* LK_EBUSY while objects made from this client are still open (close them
 * first, as libuv asks of handles, or all at once with lk_client_close_all
 * below). Otherwise every handle is closed and
 * close_cb (may be NULL) runs once all of them are; the memory is freed after
 * it returns. Returns 0, LK_EINVAL (NULL), LK_EWRONGTHREAD, LK_ECLOSED
 * (already closing), LK_EBUSY, or LK_EFORKED (in a forked child, where only
 * the memory is freed and no callback runs). */
LK_EXTERN int lk_client_close(lk_client_t *client, lk_client_close_cb close_cb);

/* Closes every object still open on the client, then the client: each
 * object as its own lk_X_close would (its pending operation's callback runs
 * with LK_ECANCELED, or its own status when already on its way; its holds
 * are given back, best effort), MultiLocks and RedLocks before their
 * members; then close_cb (may be NULL) runs once, after every one of those
 * callbacks, and the memory is freed when it returns (docs/client.md,
 * "Closing"). The objects it closes get no close callback of their own; one
 * already closing keeps the callback its close was given. From the return
 * of 0, every call on the client's objects, lk_client_close and the
 * creation of objects on the client return LK_ECLOSED. Returns 0,
 * LK_EINVAL (NULL), LK_EWRONGTHREAD, LK_ECLOSED (the client or this call
 * already under way), LK_EBUSY (an object of this client is a member of a
 * MultiLock or RedLock made from another client that is not closing: close
 * that first; nothing was done), or LK_EFORKED (in a forked child: the
 * memory of the objects and of the client is freed, nothing else). */
LK_EXTERN int lk_client_close_all(lk_client_t *client, lk_client_close_cb close_cb);

LK_EXTERN uv_loop_t *lk_client_loop(const lk_client_t *client);
/* The client id (UUID) part of every owner id; borrowed, lives as long as the
 * client. */
LK_EXTERN const char *lk_client_id(const lk_client_t *client);
LK_EXTERN int lk_client_is_connected(const lk_client_t *client);
/* Why the last connection attempt failed, as text (a TLS verification
 * reason from OpenSSL, a refused handshake, a sentinel that had no master),
 * or "" when the connections are fine. Also why the last lk_X_new refused
 * a name with LK_EINVAL (its keys would not share one cluster slot:
 * docs/objects.md, "Names and cluster slots"), until a connection attempt
 * replaces it. Borrowed, valid until the next callback of this client. */
LK_EXTERN const char *lk_client_error_text(const lk_client_t *client);
LK_EXTERN void lk_client_get_stats(const lk_client_t *client,
                                   lk_client_stats_t *out);
LK_EXTERN void *lk_client_get_data(const lk_client_t *client);
LK_EXTERN void lk_client_set_data(lk_client_t *client, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_CLIENT_H */
