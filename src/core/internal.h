/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#ifndef LK_CORE_INTERNAL_H
#define LK_CORE_INTERNAL_H

/* The core's shared picture: client, connection, operation records.
 * Primitives use only the functions declared here and in the other core
 * headers; they never touch a connection directly (docs/design.md,
 * "Layers"). */

#include <hiredis/hiredis.h>
#include <uv.h>

#include "latchkey.h"
#include "core/addr_index.h"
#include "core/alloc.h"
#include "core/arena.h"
#include "core/defer.h"
#include "core/queue.h"
#include "core/scripts.h"

typedef struct lk__conn_s lk__conn_t;
typedef struct lk__op_s lk__op_t;
typedef struct lk__chan_s lk__chan_t;
typedef struct lk__node_s lk__node_t;
typedef struct lk__tls_s lk__tls_t; /* core/tls.h */
typedef struct lk__owner_s lk__owner_t;
struct lk__obj_s;  /* core/object.h */
struct lk__topo_s; /* core/topology.h */

/* status: 0 with a reply (which may be an error reply: then status is its
 * mapped code and reply carries the text), LK_ECONN (never sent), LK_EUNKNOWN
 * (sent, connection lost before the reply), LK_ECANCELED (client closing),
 * LK_EAGAIN... reply is borrowed and NULL unless a reply arrived. */
typedef void (*lk__op_cb)(void *data, int status, redisReply *reply);

/* LK__CONN_SENTINEL: a connection to a sentinel (core/sentinel.h). */
enum { LK__CONN_CMD = 0, LK__CONN_PUBSUB = 1, LK__CONN_SENTINEL = 2 };

/* A request tag's text: up to 20 decimal digits (a uint64_t) and a NUL. */
#define LK__TAG_MAX 21

enum lk__conn_state {
  LK__CONN_IDLE = 0,    /* not started (pub/sub before its first use) */
  LK__CONN_CONNECTING,  /* resolving or TCP/unix connect in progress */
  LK__CONN_HANDSHAKE,   /* AUTH/SELECT/SETNAME/INFO sent */
  LK__CONN_READY,
  LK__CONN_BACKOFF,     /* waiting to reconnect */
  LK__CONN_CLOSED       /* client closing */
};

struct lk__op_s {
  lk__queue_t node; /* in conn->unsent or conn->sent */
  lk__conn_t *conn;
  lk__op_cb cb;
  void *data;
  char *cmd; /* RESP, owned; kept for a NOSCRIPT retry */
  size_t cmd_len, cmd_cap;
  lk_client_t *client;
  const lk__script_t *script; /* EVALSHA op: may be resent as EVAL once */
  /* A SCRIPT LOAD of this script (sent just before the first call of it on
   * a connection): its reply must be the script's SHA1. */
  const lk__script_t *loads;
  /* A handshake command's reply type (REDIS_REPLY_STATUS for CLIENT
   * SETNAME, _STRING for INFO; 0: any): a reply of another type that is not
   * an error is not its own, so a shifted reply stream is caught before any
   * user command is sent (lk__reply_unwrap). */
  unsigned char expect_type;
  uint64_t sent_ns;
  /* A script op's request tag, the last ARGV it was sent with, as decimal
   * text: its reply must carry it back (lk__reply_unwrap). tag_len 0 for
   * commands that are not script calls. */
  char tag[LK__TAG_MAX];
  unsigned char tag_len;
  /* Routing (core/router.h): the slot of the command's key on a cluster
   * (LK__NO_SLOT: none, or not a cluster), how often it was redirected, and
   * when it was first sent (TRYAGAIN/CLUSTERDOWN retries stay within the
   * reply timeout from then) and is due again. */
  int slot;
  uint8_t redirects;
  uint64_t first_sent_ns, retry_at_ns;
  unsigned retried : 1;
  unsigned internal : 1; /* handshake / heartbeat: not user work */
  unsigned asking : 1;   /* ASKING: admits the command sent right after it */
  /* Sent right after an ASKING (an ASK redirection): a resend to the same
   * node (NOSCRIPT) needs an ASKING of its own, or the importing node
   * answers MOVED. */
  unsigned asked : 1;
  /* A TRYAGAIN ends it at once (LK_ECLUSTER) instead of being retried: its
   * sender sends its parts apart (a renewal batch whose keys a slot
   * migration split, core/watchdog.c). */
  unsigned tryagain_ends : 1;
};

#define LK__READ_BUF 16384

/* Every entry point that takes an options struct reads NULL as its
 * defaults, those its _opts_init sets (include/latchkey/): `defaults` is the
 * caller's storage for them. Gives the options to use. */
#define LK__OPTS_OR_DEFAULTS(opts, defaults, init)                                     \
  ((opts) != NULL ? (opts) : (init(&(defaults)), &(defaults)))

struct lk__conn_s {
  lk_client_t *client;
  lk__node_t *node; /* the server this connection talks to */
  int kind;
  enum lk__conn_state state;
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } io;
  int io_open;    /* io initialised and not yet closed */
  int io_closing; /* uv_close called, close callback pending */
  uv_connect_t connect_req;
  uv_getaddrinfo_t gai_req;
  int gai_pending;
  uv_timer_t timer; /* connect timeout, reply timeout or backoff */
  int timer_closing;
  redisReader *reader;
  lk__arena_t arena; /* the reader's replies live here until handled */
  lk__queue_t unsent; /* waiting for READY */
  lk__queue_t sent;   /* FIFO matched with replies */
  size_t handshake_left;
  int handshake_err;
  /* Scripts this connection has loaded on its server (bit i: lk__scripts[i]):
   * the first call of each is preceded by its SCRIPT LOAD, in the same
   * write. Cleared at every connect: a restarted or promoted server has
   * none (core/conn_scripts.c). */
  uint64_t scripts_loaded[LK__SCRIPT_MAX / 64];
  /* The server refused SCRIPT LOAD (an ACL without it): scripts are then
   * sent as EVALSHA alone and a NOSCRIPT answered with EVAL, as always. */
  unsigned script_load_denied : 1;
  /* The last command written here was ASKING (lk__op_t.asking). */
  unsigned after_asking : 1;
  /* Output double buffer: appended while a write is in flight, so commands
   * issued in one loop pass leave in one write. */
  char *out;
  size_t out_len, out_cap;
  char *wbuf;
  size_t wbuf_cap;
  uv_write_t write_req;
  int writing;
  int64_t backoff_ms;
  uint64_t connected_once;
  /* LK__READ_BUF bytes, allocated at the first read: a cluster client keeps
   * a connection pair per node, most never opened, so the record stays
   * small (16 KiB inline per connection made a 5,000-master map cost
   * 170 MB and a long stall). */
  char *read_buf;
  lk__defer_t fail_defer; /* a write error found inside a call */
  lk__tls_t *tls; /* this attempt's TLS session; NULL: plaintext (core/tls.h) */
  /* Replica sync: the WAIT in flight on this connection (NULL: none). It
   * covers every grant whose reply arrives before its own (core/sync.c). */
  struct lk__sync_batch_s *sync;
};

typedef struct lk__opts_s {
  char *host;
  int port;
  char *unix_path;
  char *username;
  char *password;
  int db;
  char *client_name;
  int64_t connect_timeout_ms, reply_timeout_ms;
  int64_t reconnect_min_ms, reconnect_max_ms;
  int64_t max_repoll_ms, heartbeat_ms, default_lease_ms;
  size_t max_inflight, max_name_len;
  int cluster; /* lk_cluster_mode_t */
  int64_t cluster_refresh_ms;
  size_t cluster_max_nodes;
  /* TLS (core/tls.c): strings copied, NULL when not given. */
  int tls_enable, tls_verify_peer, tls_min_version;
  char *tls_ca_file, *tls_ca_dir, *tls_server_name, *tls_cert_file, *tls_key_file;
  /* Sentinel (core/sentinel.c): the list as given, NULL when not used. */
  char *sentinels, *sentinel_master, *sentinel_username, *sentinel_password;
  /* Replica sync (docs/replica-sync.md). */
  int sync_replicas, sync_aof, sync_policy;
  int64_t sync_timeout_ms;
  /* Waiting channels' linger (core/pubsub.c). */
  int64_t pubsub_linger_ms;
  size_t pubsub_linger_max;
  int64_t busy_poll_us;
  int pubsub_mode; /* lk_pubsub_mode_t */
  int lock_layout; /* LK_LOCK_LAYOUT_* (lock.h) */
  /* Spin mode's defaults (core/spin.h): on, and the back-off's bounds (0:
   * the built-in ones). */
  int spin;
  int64_t spin_initial_ms, spin_max_ms;
  /* Owner descriptions (core/registry.h): on, and the note (NULL: none). */
  int describe_owner;
  char *owner_note;
} lk__opts_t;

/* One server: node 0 is the configured one (standalone, or a cluster's
 * seed) and uses the client's own two connections; a cluster's other nodes
 * are found through the topology and redirections (core/router.h). */
struct lk__node_s {
  lk_client_t *client;
  lk__conn_t *cmd, *ps;
  char *host; /* NULL for node 0: the client's options say where */
  int port;
  uint16_t idx; /* in client->nodes */
  char run_id[41];
  /* Its command connection dropped and has not been ready since: while a
   * node that owns slots is down, the slot map is read often
   * (core/router.c, watch_period). */
  unsigned down : 1;
};

/* What the layers below the client tell it, the way a libuv handle calls
 * its owner's callbacks: a lower layer calls these, never a higher one by
 * name (docs/design.md, "Layers"). client.c fills the table in and wires
 * each event to the layers above that want it. */
struct lk__owner_s {
  /* A libuv handle of the client closed; the client's close may go on. */
  void (*handle_closed)(lk_client_t *c);
  void (*maybe_finish_close)(lk_client_t *c);
  /* --- from connections (core/conn.c, core/handshake.c) --- */
  /* Before a connection fails its commands or hands out replies: leases
   * that ran out are reported lost first. */
  void (*check_leases)(lk_client_t *c);
  /* A ready command connection is dropping: the holds renewed through it
   * are at risk (a hold's health, core/object.h). */
  void (*conn_holds_at_risk)(lk__conn_t *conn);
  /* A connection done backing off: 1 to dial again, 0 to stay idle until a
   * command is queued for it. */
  int (*conn_redial)(const lk__conn_t *conn);
  /* Node 0 with sentinels: find where the master is, then lk__conn_dial. */
  void (*conn_resolve)(lk__conn_t *conn);
  /* Handshake: ROLE's reply (the status the handshake takes), the run_id
   * and the whole text of INFO server. */
  int (*conn_role)(lk__conn_t *conn, int status, const redisReply *r);
  void (*conn_run_id)(lk__conn_t *conn, const char *run_id, size_t len);
  void (*conn_info)(lk__conn_t *conn, const char *info, size_t len);
  /* The connection is ready (first: its first time), or went down. */
  void (*conn_ready)(lk__conn_t *conn, int first);
  void (*conn_down)(lk__conn_t *conn, int why, const char *what, int was_ready);
  /* A message that is no reply (pub/sub, sentinel); 1: it was one, taken. */
  int (*conn_push)(lk__conn_t *conn, redisReply *r);
  /* An error reply to a user command: 1 when it was taken to be sent again
   * (a redirection, core/router.h). */
  int (*conn_redirected)(lk__conn_t *conn, lk__op_t *op, redisReply *r);
  /* The last uncork flushed the nodes' connections: the others' turn. */
  void (*uncorked)(lk_client_t *c);
  /* --- from discovery (core/router.c, core/sentinel.c) --- */
  /* A slot map was read (subscriptions follow their slots); slots changed
   * master (changed: a bit per slot); node 0's master changed. */
  void (*topology_read)(lk_client_t *c);
  void (*slots_moved)(lk_client_t *c, const uint8_t *changed);
  /* A MOVED named new owners for these slots: as slots_moved, but a hold
   * whose renewal is in flight is left to it (it follows the redirection). */
  void (*slots_redirected)(lk_client_t *c, const uint8_t *changed);
  void (*master_changed)(lk_client_t *c);
  /* Whether a channel lives (or is to be subscribed) on a pub/sub conn. */
  int (*has_channels)(const lk__conn_t *conn);
  /* --- from the watchdog (core/watchdog.c) --- */
  /* A hold's health (docs/objects.md, "Health"): one of the object's sides
   * is at risk, or ok again (confirmed: by a renewal or grant; else it
   * stopped being watched); deadline_ns is the side's local deadline. */
  void (*hold_at_risk)(struct lk__obj_s *o, uint64_t deadline_ns);
  void (*hold_ok)(struct lk__obj_s *o, int confirmed, uint64_t deadline_ns);
};

struct lk_client_s {
  uv_loop_t *loop;
  const lk__owner_t *owner; /* client.c's callbacks for the layers below it */
  uv_thread_t thread;
  unsigned fork_gen;
  lk__opts_t o;
  char id[37]; /* UUID */
  uint64_t next_tid;
  uint64_t next_tag; /* request tags of script calls (ops.c) */
  uint64_t rng;      /* lk__jitter's state: seeded from uv_random at first use */
  uint64_t busy_until_ns; /* busy polling: the loop spins until then (defer.c) */
  lk_client_event_cb on_event;
  void *event_arg;
  lk_log_cb log;
  void *log_arg;
  void *data;
  lk__conn_t cmd;
  lk__conn_t ps;
  uv_idle_t idle; /* drains the defer queue */
  uv_idle_cb idle_cb; /* client.c's pass over it; core/defer.c starts idle with it */
  lk__queue_t deferred;
  uv_timer_t hb_timer;
  size_t inflight;
  size_t objects; /* open primitive objects */
  /* The same objects, in the order they were made (lk__obj_t.client_node,
   * core/object.c), for lk_client_close_all (core/close_all.c), whose state
   * follows: set from its call until the client is freed. */
  lk__queue_t obj_list;
  int closing_all;
  lk_client_close_cb close_all_cb;
  lk__defer_t close_all_step;
  int closing;
  int handles_open;
  lk_client_close_cb close_cb;
  char run_id[41];
  /* When a run_id change, or on a cluster a slot's change of master
   * (src/core/router.c), was last seen (0: never). A restarted server, or a
   * replica promoted before it had every write, may have lost keys: RedLock
   * keeps such a member out of its quorums for a while
   * (src/multilock/redlock.c). */
  uint64_t restarted_ns;
  lk_client_stats_t stats;
  /* A Redis Cluster (core/router.h): keys are routed by slot, pub/sub is
   * sharded, renewal batches never cross a slot. */
  /* The guarded write whose callback runs now (core/guard.c): its object
   * and its reply's summary, NULL outside that callback. */
  const void *guard_obj;
  const lk_guarded_reply_t *guard_reply;
  int cluster_on;
  lk__node_t node0;
  lk__node_t **nodes; /* nodes[0] == &node0; node0_list until a second node */
  lk__node_t *node0_list[1];
  size_t n_nodes, nodes_cap;
  lk__addr_index_t node_index; /* nodes by host:port (core/router.c) */
  int node_cap_logged;         /* the cluster_max_nodes warning was given */
  uint16_t *slot_node; /* cluster: slot -> node index (LK__TOPO_NONE: unknown) */
  struct lk__topo_s *topo; /* the last topology read */
  /* Sentinel discovery (core/sentinel.h); NULL without sentinels. */
  struct lk__sentinel_s *sentinel;
  /* Owner description (core/registry.h); NULL unless describe_owner. */
  struct lk__registry_s *registry;
  uv_timer_t topo_timer, retry_timer;
  lk__queue_t retry_ops; /* TRYAGAIN / CLUSTERDOWN, due again later */
  uint64_t topo_last_ns;
  uint64_t topo_watch_ms; /* the next short re-read period; 0: none running */
  unsigned topo_dial_turn; /* whose backoff a map read cuts short next (router.c) */
  unsigned topo_inflight : 1, topo_again : 1, topo_wanted : 1, topo_asked_slots : 1;
  /* Slots a MOVED gave a new owner since the last pass of moved_defer, which
   * has their idle holds verified in one walk (core/router.c). */
  uint8_t moved_slots[16384 / 8];
  lk__defer_t moved_defer;
  unsigned ever_connected : 1;
  /* Why the last connection attempt failed (lk_client_error_text): set by
   * lk__client_set_error, cleared when the command connection is ready. */
  char error_text[256];
  /* pub/sub */
  struct lk__chan_s *chans; /* uthash table by channel name */
  size_t user_chans;        /* channels other than the heartbeat's */
  /* Channels without listeners kept for the linger, oldest first
   * (core/pubsub.c; initialised on first use). */
  lk__queue_t linger_chans;
  size_t lingering;
  char *hb_channel;
  size_t hb_channel_len;
  uint64_t hb_sent_ns;   /* when the PUBLISH in flight left */
  uint64_t hb_expect_ns; /* a heartbeat was delivered at this time and its
                            message has not arrived yet; 0 = none due */
  int hb_inflight;
  int hb_denied;
  int warned_nochannel;
  /* A cluster without sharded pub/sub (servers before 7.0): channels use
   * SUBSCRIBE on node 0 and scripts PUBLISH (core/pubsub.c). */
  unsigned ps_classic : 1;
  /* pubsub_mode SHARDED met a cluster without sharded pub/sub: said once. */
  unsigned ps_told_unsharded : 1;
  int restart_pending;
  lk__defer_t close_defer;
  struct lk__tls_ctx_s *tls; /* TLS context; NULL when TLS is off (core/tls.h) */
  /* When a reply's callback runs: the send time of its command (the moment
   * a lease it set began, for local deadlines). */
  uint64_t completing_sent_ns;
  /* ... and the connection it came back on (a grant's WAIT must go there:
   * core/sync.c). NULL outside a reply's callback. */
  lk__conn_t *completing_conn;
  /* Replica sync (core/sync.c): the server has no WAITAOF (WAIT is used),
   * and what was logged once per client. */
  unsigned sync_no_waitaof : 1, sync_told_aof : 1, sync_told_refused : 1;
  /* watchdog (watchdog.c) */
  lk__queue_t wd_ring;
  uv_timer_t wd_timer;
  uint64_t wd_next_tick_ns;
  int wd_checking;
  struct lk__token_s *tokens; /* highest fencing token seen per name */
  int corked; /* > 0: commands accumulate; written when it drops to 0 */
  /* Finished operation records (with their command buffers), reused so a
   * steady stream of commands allocates nothing. */
  lk__op_t *op_pool;
  size_t op_pool_len;
  /* Scratch space for names built on demand (lk__scratch_prefix_name). */
  char *scratch;
  size_t scratch_cap;
};

/* --- entry checks (every public entry point) and open objects (entry.c) --- */
int lk__check_client(const lk_client_t *c);
/* lk__check_client for calls that make objects: also LK_ECLOSED once
 * lk_client_close_all began. */
int lk__check_client_new(const lk_client_t *c);
int lk__client_forked(const lk_client_t *c);
/* A new client notes the process it was made in (a fork is seen later). */
void lk__fork_watch(lk_client_t *c);
void lk__object_born(lk_client_t *c);
void lk__object_died(lk_client_t *c);
/* lk_client_close_all goes on, from the loop (core/close_all.c): an object
 * closed, or was let go by the MultiLock or RedLock it belonged to. Nothing
 * when no lk_client_close_all is under way. */
void lk__close_all_kick(lk_client_t *c);

/* --- logging and events (log.c) --- */
void lk__log(lk_client_t *c, lk_log_level_t level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void lk__emit(lk_client_t *c, lk_event_t ev);
/* Records why a connection attempt failed (lk_client_error_text); "" clears. */
void lk__client_set_error(lk_client_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --- options (opts.c) --- */
/* Checks s and copies it into d: LK_EINVAL or LK_ENOMEM (then
 * lk__opts_free frees what was copied). */
int lk__opts_copy(lk__opts_t *d, const lk_client_opts_t *s);
void lk__opts_free(lk__opts_t *o);

/* --- client --- */
void lk__client_handle_closed(lk_client_t *c);
void lk__client_maybe_finish_close(lk_client_t *c);
/* Starts closing the client (lk_client_close past its checks). */
void lk__client_begin_close(lk_client_t *c, lk_client_close_cb close_cb);

/* --- connection --- */
void lk__conn_init(lk_client_t *c, lk__conn_t *conn, int kind);
void lk__conn_start(lk__conn_t *conn);
/* A connection backing off dials now: what it waited out is gone (the
 * sentinels named a new master). */
void lk__conn_retry_now(lk__conn_t *conn);
/* A CONNECTING connection dials host:port (node 0 found through the
 * sentinels); lk__conn_flush writes what it gathered while corked. */
void lk__conn_dial(lk__conn_t *conn, const char *host, int port);
void lk__conn_flush(lk__conn_t *conn);
void lk__conn_close(lk__conn_t *conn);
void lk__conn_free_buffers(lk__conn_t *conn);
void lk__conn_drop(lk__conn_t *conn, int why, const char *what);
int lk__conn_is_busy(const lk__conn_t *conn);
/* While the library handles one batch of events (a read, deferred work, a
 * watchdog tick), the commands they issue are gathered and leave in one
 * write per connection at the end, instead of the first alone. */
void lk__client_cork(lk_client_t *c);
void lk__client_uncork(lk_client_t *c);
void lk__conn_enqueue(lk__conn_t *conn, lk__op_t *op);
/* Queues ASKING on conn, to go right before the next command queued there
 * (an ASK redirection's resend, or a NOSCRIPT resend of a command ASKING
 * let in): 0, or LK_ENOMEM. */
int lk__conn_asking(lk__conn_t *conn);
/* Pub/sub module (pubsub.c). */
int lk__pubsub_init(lk_client_t *c);
void lk__pubsub_shutdown(lk_client_t *c);
void lk__pubsub_free(lk_client_t *c);
/* Per pub/sub connection: it came up (its channels subscribe), it went down
 * (its channels wait), a reply or push arrived on it (1: a push, handled). */
void lk__pubsub_on_ready(lk__conn_t *conn);
void lk__pubsub_on_down(lk__conn_t *conn);
int lk__pubsub_on_push(lk__conn_t *conn, redisReply *r);
/* From the router: a topology was read (channels follow their slots), and
 * a node's handshake INFO (sharded pub/sub needs 7.0+). */
void lk__pubsub_on_topology(lk_client_t *c);
void lk__pubsub_on_info(lk__conn_t *conn, const char *info, size_t len);
/* Whether a channel lives (or is to be subscribed) on conn. */
int lk__pubsub_has_channels(const lk__conn_t *conn);
/* Hook for the command connection's handshake: INFO server text. */
void lk__client_on_run_id(lk__conn_t *conn, const char *run_id, size_t len);

/* --- operations --- */
/* Sends a command on the command connection. Returns NULL with *err set
 * (LK_EAGAIN, LK_ENOMEM, LK_ECLOSED); then cb never runs. */
lk__op_t *lk__cmd_argv(lk_client_t *c, int argc, const char **argv,
                       const size_t *lens, lk__op_cb cb, void *data, int *err);
/* The same, routed on a cluster by argv[key] instead of argv[1] (an EVAL
 * whose first key is argv[3]). */
lk__op_t *lk__cmd_argv_keyed(lk_client_t *c, int argc, const char **argv,
                             const size_t *lens, int key, lk__op_cb cb, void *data,
                             int *err);
/* EVALSHA script with keys and args (argv = keys then args). */
lk__op_t *lk__script_call(lk_client_t *c, const lk__script_t *s, int nkeys,
                          int nargs, const char **argv, const size_t *lens,
                          lk__op_cb cb, void *data, int *err);
/* Formats a script call without sending it (lk__op_submit sends it, or
 * lk__op_free drops it): for clean-up prepared while the object's data is
 * still at hand. */
lk__op_t *lk__script_prepare(lk_client_t *c, const lk__script_t *s, int nkeys,
                             int nargs, const char **argv, const size_t *lens,
                             lk__op_cb cb, void *data, int *err);
int lk__op_submit(lk_client_t *c, lk__op_t *op);
/* The callback for clean-up commands nobody waits for (data: the client):
 * logs a failure, nothing else. */
void lk__cleanup_cb(void *data, int status, redisReply *r);
/* When an object abandons an op in flight whose late success must be undone
 * (an acquire the server may still grant): next, prepared now, is sent when
 * the abandoned op's outcome makes pred(status, reply) true, else dropped. */
typedef int (*lk__follow_pred)(int status, const redisReply *r);
int lk__op_follow_up(lk_client_t *c, lk__op_t *abandoned, lk__op_t *next,
                     lk__follow_pred pred);
/* The same, then done(done_arg) once the abandoned op's outcome is known and
 * next was sent or dropped (also when the outcome is a lost connection or
 * the client closing; on LK_ENOMEM it is not called). Until then a new
 * command from the same owner must wait: sent earlier, it would reach the
 * server before next and could be undone by it. */
typedef void (*lk__follow_done)(void *done_arg);
int lk__op_follow_up_then(lk_client_t *c, lk__op_t *abandoned, lk__op_t *next,
                          lk__follow_pred pred, lk__follow_done done, void *done_arg);
/* Re-targets a pending op: its late outcome goes to cb (NULL: discarded).
 * Used when the object that sent it no longer waits for it. */
void lk__op_retarget(lk__op_t *op, lk__op_cb cb, void *data);
/* Forgets the op at *op (NULL: none): its late outcome is discarded, and
 * *op becomes NULL. For a holder that no longer waits for it. */
void lk__op_forget(lk__op_t **op);
lk__op_t *lk__op_new(lk_client_t *c, lk__op_cb cb, void *data, int *err);
/* The library's own command (handshake, pub/sub, topology, ASKING): not
 * user work, so outside the in-flight cap; formatted now and returned for
 * the caller to enqueue on the connection it belongs to. lens may be NULL
 * (C strings). NULL with *err set. */
lk__op_t *lk__op_internal(lk_client_t *c, int argc, const char **argv, const size_t *lens,
                          lk__op_cb cb, void *data, int *err);
void lk__op_free(lk__op_t *op);
void lk__op_pool_free(lk_client_t *c);
/* Runs an op's callback and frees it. */
void lk__op_complete(lk__op_t *op, int status, redisReply *reply);

/* --- RESP encoding (resp.c) --- */
/* Decimal text of v, NUL-terminated; returns its length. For the numbers
 * every command carries (leases, counts): snprintf costs far more. */
size_t lk__i64_to_str(char buf[24], int64_t v);
/* Encodes a command into *out (capacity *cap, grown when too small; NULL/0
 * to start; freed with lk__free). Returns its length, or -1 (allocation). */
int lk__format_command(char **out, size_t *cap, int argc, const char **argv,
                       const size_t *lens);

/* --- replies --- */
/* Maps an error reply's text to an LK_ code. */
int lk__status_from_error(const char *text, size_t len);
int lk__status_of(redisReply *r);
/* Whether r, a reply that arrived for op, is op's own. A script op's
 * non-error reply must be the wrapped form {tag} or {tag, result} with op's
 * tag (cmake/EmbedScripts.cmake); *inner is then what the script itself
 * returned (a nil reply for {tag}), so no reply parser sees the wrapper. A
 * SCRIPT LOAD's reply must be its script's SHA1, a handshake command's of
 * the type it expects (op->expect_type). Error replies and other commands'
 * replies are taken as they are (*inner = r). 0: the reply cannot
 * be op's, the reply stream is shifted. */
int lk__reply_unwrap(const lk__op_t *op, redisReply *r, redisReply **inner);
int lk__reply_is_int(const redisReply *r, long long *out);
/* r is an array (r->elements long: the callers check the length) whose
 * elements are all integers. */
int lk__reply_int_array(const redisReply *r);

/* --- ids --- */
int lk__uuid4(char out[37]);
int lk__valid_client_id(const char *s);
/* A hexadecimal digit's value (either case), or -1 for any other char: the
 * URL's percent escapes and the permit ids' text. */
int lk__hex_digit(char c);
/* A uniform number in [0, below) (0 when below is 0), for spreading retries
 * and back-offs: cheap (no system call after the first) and not for
 * anything secret. */
uint32_t lk__jitter(lk_client_t *c, uint32_t below);
/* A command went out: with busy_poll_us, keep the loop spinning for that
 * long while replies are outstanding (defer.c, the idle handle). */
void lk__client_busy_poll(lk_client_t *c);
/* The same for a window the caller chose, whatever busy_poll_us says: while
 * c has replies outstanding and until until_ns (a later window kept). For
 * a fan-out whose other answers are due (src/multilock/redlock.c). */
void lk__client_spin_until(lk_client_t *c, uint64_t until_ns);

/* --- keys: Redisson's prefixName/suffixName rules --- */
/* prefix:NAME if NAME contains '{', else prefix:{NAME}. Caller frees. */
char *lk__prefix_name(const char *prefix, const char *name, size_t name_len,
                      size_t *out_len);
/* The same, built in the client's scratch buffer instead of an allocation of
 * its own: valid until the next use of the scratch buffer, so for a command
 * formatted right away or a name copied at once (lk__sub_start copies).
 * Objects build names they need only now and then (a lock's channel) this
 * way rather than keep them. NULL: out of memory. */
const char *lk__scratch_prefix_name(lk_client_t *c, const char *prefix, const char *name,
                                    size_t name_len, size_t *out_len);
/* prefix{NAME}, braces always, whatever NAME holds (the latch's channel:
 * Redisson wraps the whole name; the latch and the watcher in inspect/ both
 * listen on it). Caller frees. */
char *lk__braced_name(const char *prefix, const char *name, size_t name_len, size_t *out_len);
/* NAME:suffix if NAME contains '{', else {NAME}:suffix. Caller frees. */
char *lk__suffix_name(const char *name, size_t name_len, const char *suffix,
                      size_t *out_len);
int lk__check_name(const lk_client_t *c, const char *name, size_t *len);

/* --- names: one cluster slot per object (core/names.c) --- */
/* A key or channel an object derives from its name, as the object's own
 * builder made it. open: the object appends more to it (an owner id, a
 * number), so its hash tag must lie in these len bytes. */
typedef struct lk__derived_s {
  const char *text;
  size_t len;
  int open;
} lk__derived_t;
/* Appends s (len bytes) to the NUL-terminated out (cap bytes), quoted, with
 * what is not printable ASCII escaped, cut after about max characters: how
 * error texts show names and keys. */
void lk__put_quoted(char *out, size_t cap, const char *s, size_t len, size_t max);
/* 0 when the n derived keys and channels all hash the same bytes (so one
 * slot on a cluster, whatever is appended to the open ones); else
 * LK_EINVAL, and the client's error text (lk_client_error_text) says which
 * two disagree. what names the primitive ("lock") in that text. Every _new
 * calls it with every key and channel its object will use. */
int lk__names_one_slot(lk_client_t *c, const char *what, const char *name, size_t name_len,
                       const lk__derived_t *d, int n);
/* The same, with d[n - 1] a key the object makes only later, from
 * later_prefix and the name (the fencing-token key, made by the first fenced
 * acquire): a name that could not fence in one slot fails at _new, not at
 * that acquire. d[n - 1] is built, checked and freed here; LK_ENOMEM when it
 * cannot be built. */
int lk__names_one_slot_later(lk_client_t *c, const char *what, const char *name,
                             size_t name_len, lk__derived_t *d, int n, const char *later_prefix);

/* --- time --- */
static inline uint64_t lk__now_ns(void) { return uv_hrtime(); }

#endif /* LK_CORE_INTERNAL_H */
