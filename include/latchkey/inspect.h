#ifndef LATCHKEY_INSPECT_H
#define LATCHKEY_INSPECT_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inspection: what a name holds in Redis, read by name with one script and
 * no object, for operators and tools (docs/inspect.md). Works on structures
 * made by latchkey and by Redisson alike: the layout is the same. Nothing is
 * written. Every result is borrowed: valid inside the callback only. */

typedef enum {
  LK_INSPECT_NONE = 0,  /* nothing by that name */
  LK_INSPECT_LOCK = 1,  /* reentrant lock (RLock, RFencedLock): a hash of holders */
  LK_INSPECT_FAIR = 2,  /* fair lock: a lock hash with a queue (or a queue alone) */
  LK_INSPECT_RWLOCK = 3, /* read/write lock: a hash with a "mode" field */
  LK_INSPECT_COUNT = 4, /* a string count: a semaphore's permits or a latch's count
                           (the two layouts are the same string) */
  LK_INSPECT_PSEM = 5,  /* permit-expirable semaphore: a count and a zset of permits */
  LK_INSPECT_LATCH = 6, /* a latch known as one: latchkey's strict "opened" marker */
  LK_INSPECT_TOKEN = 7, /* only a fencing-token counter: a fenced lock that is free */
  LK_INSPECT_OTHER = 8  /* a key of another kind (redis_type says which) */
} lk_inspect_kind_t;

/* "none", "lock", "fair", "rwlock", "count", "psem", "latch", "token",
 * "other"; "?" for a value out of range. Static. */
LK_EXTERN const char *lk_inspect_kind_name(lk_inspect_kind_t kind);

typedef struct lk_inspect_holder_s {
  const char *owner; /* "UUID:TID" (a writer's ":write" suffix removed) */
  int64_t count;     /* hold count */
  int mode;          /* read/write lock: LK_RW_READ or LK_RW_WRITE; else 0 */
  /* Remaining lease in ms: a reader's longest hold key, otherwise the lock
   * key's (-1 no expiry, -2 a reader none of whose hold keys is left). */
  int64_t ttl_ms;
} lk_inspect_holder_t;

typedef struct lk_inspect_waiter_s {
  const char *owner;   /* "UUID:TID", in queue order (index 0 is next) */
  int64_t deadline_ms; /* ms until the others treat it as gone (negative:
                          passed); LK_INSPECT_NO_DEADLINE when it has none */
} lk_inspect_waiter_t;

#define LK_INSPECT_NO_DEADLINE INT64_MIN

typedef struct lk_inspect_permit_s {
  const char *id;   /* the permit id as lower-case hex (lk_psem_permit_id's form) */
  int64_t lease_ms; /* ms until its lease ends (negative: ended, not reclaimed
                       yet); -1 with no_lease set: it never ends */
  int no_lease;
} lk_inspect_permit_t;

typedef struct lk_inspect_s {
  const char *name;
  lk_inspect_kind_t kind;
  const char *redis_type; /* TYPE of the key NAME: "none", "hash", "string"... */
  int64_t ttl_ms;         /* PTTL of NAME: -2 absent, -1 no expiry */
  int64_t server_time_ms; /* the server's clock (TIME) when it was read */
  int mode;               /* read/write lock: LK_RW_READ / LK_RW_WRITE; else 0 */
  int has_count;          /* COUNT, PSEM, LATCH: count is set */
  int64_t count;          /* available permits, or the latch's count (0: open) */
  int64_t token;          /* last fencing token handed out; 0: no counter */
  /* Holders, queue and permits: at most LK_INSPECT_MAX_ENTRIES of each are
   * read; total_* says how many there are. */
  size_t n_holders, total_holders;
  const lk_inspect_holder_t *holders;
  size_t n_waiters, total_waiters;
  const lk_inspect_waiter_t *waiters;
  size_t n_permits, total_permits;
  const lk_inspect_permit_t *permits;
} lk_inspect_t;

#define LK_INSPECT_MAX_ENTRIES 1000

/* status 0: info is set (borrowed, valid inside the callback). Else info is
 * NULL and status is LK_ECONN, LK_EUNKNOWN (no answer), LK_ECANCELED (the
 * client closed), LK_EPROTOCOL (an answer the call cannot read) or a server
 * code (LK_ENOPERM for a user without EVALSHA, ...). */
typedef void (*lk_inspect_cb)(lk_client_t *client, int status, const lk_inspect_t *info,
                              void *arg);

/* Reads the structure called name (1..max_name_len bytes, binary-safe
 * except NUL) in one round trip; on a cluster, on the master of its slot.
 * Returns 0 (cb runs exactly once, from the loop), or at once LK_EINVAL (a
 * NULL argument, an empty name), LK_ENAMETOOLONG, LK_EWRONGTHREAD,
 * LK_ECLOSED, LK_EAGAIN (max_inflight reached), LK_ENOMEM. */
LK_EXTERN int lk_inspect(lk_client_t *client, const char *name, lk_inspect_cb cb, void *arg);

/* ---- listing ---------------------------------------------------------- */

typedef struct lk_list_entry_s {
  const char *name;
  lk_inspect_kind_t kind; /* LOCK, FAIR, RWLOCK, COUNT, PSEM or TOKEN */
} lk_list_entry_t;

/* status 0: entries[0..n) (borrowed) and next_cursor ("0" when the scan is
 * complete); otherwise as lk_inspect_cb. */
typedef void (*lk_list_cb)(lk_client_t *client, int status, const lk_list_entry_t *entries,
                           size_t n, const char *next_cursor, void *arg);

/* One SCAN step: cursor "0" starts, count is the SCAN COUNT (1..10000: the
 * work done per call), pattern a MATCH glob (NULL: "*"). Keys are classified
 * on the server in the same script; the parts of a structure (queues,
 * permit sets, read-hold keys, token counters of a lock that exists) are not
 * listed apart. A step may return no entries with a cursor other than "0":
 * call again with next_cursor until it is "0". On a cluster the walk visits
 * every master in turn; the cursor (opaque: "S:N", SCAN cursor N on the
 * master of slot S) says where it is (docs/inspect.md, "Listing"). Returns
 * 0, or at once as lk_inspect (LK_EINVAL also for a count out of range or a
 * cursor that is not one of lk_list's for this kind of server; LK_ECLUSTER
 * when no master owns a slot). */
LK_EXTERN int lk_list(lk_client_t *client, const char *pattern, const char *cursor,
                      int count, lk_list_cb cb, void *arg);

/* ---- watching: change notifications ------------------------------------ */

typedef struct lk_inspect_watch_s lk_inspect_watch_t;

/* At most this many fair-lock waiters' channels are followed. */
#define LK_INSPECT_WATCH_FOLLOW 8

/* From the loop:
 *   status 0, channel set:  a message on channel: NAME changed, read again;
 *   status 0, channel NULL: a subscription is (again) in place: messages
 *                           may have been missed before it, read again;
 *   status < 0:             a subscription cannot be made now (LK_ENOPERM:
 *                           the user may not subscribe; LK_ECONN: pub/sub is
 *                           down; LK_ECLUSTER...): rely on a timer until a
 *                           later call with status 0.
 * channel is borrowed. lk_inspect_watch_stop may be called from here. */
typedef void (*lk_inspect_watch_cb)(lk_inspect_watch_t *w, int status, const char *channel,
                                    void *arg);

/* Subscribes to the channels the structures called name announce changes
 * on: the lock's, the read/write lock's, the semaphores' and the latch's
 * (each page lists its own; on a cluster each on the master of its slot).
 * Notifications are best effort and say only "something changed": read
 * with lk_inspect, and keep a timer (acquires and expiries publish
 * nothing). Returns 0 with *out set, or at once LK_EINVAL, LK_ENAMETOOLONG,
 * LK_EWRONGTHREAD, LK_ECLOSED, LK_ENOMEM. */
LK_EXTERN int lk_inspect_watch(lk_client_t *client, const char *name, lk_inspect_watch_cb cb,
                               void *arg, lk_inspect_watch_t **out);
/* A fair lock's release is announced only on the next waiter's own
 * channel: given the latest reading of the name, follows the channels of
 * its first LK_INSPECT_WATCH_FOLLOW waiters (and leaves those no longer
 * among them). 0, or LK_EINVAL, LK_ECLOSED, LK_ENOMEM. */
LK_EXTERN int lk_inspect_watch_follow(lk_inspect_watch_t *w, const lk_inspect_t *info);
/* Unsubscribes and frees w; no callback after it. Call it once, before or
 * after closing the client (after: it only frees). NULL: no-op. */
LK_EXTERN void lk_inspect_watch_stop(lk_inspect_watch_t *w);

/* ---- ping --------------------------------------------------------------- */

typedef struct lk_ping_s {
  const char *server;  /* "redis" or "valkey" */
  const char *version; /* the server's version text */
  const char *mode;    /* "standalone" or "cluster" (the client's view) */
  int64_t rtt_us;      /* round trip of the INFO command, in microseconds */
} lk_ping_t;

typedef void (*lk_ping_cb)(lk_client_t *client, int status, const lk_ping_t *info, void *arg);

/* Asks the server (INFO server) and times the round trip. Returns as
 * lk_inspect. */
LK_EXTERN int lk_ping(lk_client_t *client, lk_ping_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_INSPECT_H */
