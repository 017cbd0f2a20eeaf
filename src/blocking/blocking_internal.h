/* The blocking API's machinery (docs/blocking.md): call records marshalled
 * onto the loop thread, per-thread waits, and handles whose threads each get
 * an asynchronous object of their own. Every thread's object is held as its
 * generic handle (lk_handle_t, latchkey/handle.h), so making, closing,
 * cancelling, the lost callback and running a verb (op.c) are written once;
 * a kind's file (lock.c, rwlock.c, semaphore.c...) only says how to make
 * its object, which verb each entry point starts and what the thread reads
 * afterwards (its lk__bl_kind_t). */
#ifndef LK_BLOCKING_INTERNAL_H
#define LK_BLOCKING_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "latchkey/blocking.h"
#include "latchkey/handle.h"

typedef struct lk__bl_call_s lk__bl_call_t;
/* The public lk_blocking_handle_t (latchkey/blocking.h) is this struct:
 * every kind's handle begins with it, so conversions are casts. */
typedef struct lk_blocking_handle_s lk__bl_handle_t;
typedef struct lk__bl_slot_s lk__bl_slot_t;

/* ---- waiting: one caller sleeps until the loop thread says done ----------- */

typedef struct lk__bl_wait_s {
  _Atomic int done; /* a futex word on Linux */
#ifndef __linux__
  uv_mutex_t mu;
  uv_cond_t cond;
#endif
} lk__bl_wait_t;

void lk__bl_wait_init(lk__bl_wait_t *w);
/* Blocks until lk__bl_wait_wake; then the record may go at once. */
void lk__bl_wait_block(lk__bl_wait_t *w);
/* On the loop thread: after this, w must not be touched (the waiter may
 * already have returned and its stack be reused). */
void lk__bl_wait_wake(lk__bl_wait_t *w);
void lk__bl_wait_destroy(lk__bl_wait_t *w);

/* ---- call records ----------------------------------------------------------- */

/* Runs on the loop thread: starts the asynchronous operation and returns 0
 * (lk__bl_finish follows from its callback) or a code (the call ends with
 * it at once). */
typedef int (*lk__bl_start_fn)(lk__bl_call_t *call);
/* Cancels the started operation (0), or LK_EINVAL when it cannot be. */
typedef int (*lk__bl_cancel_fn)(lk__bl_call_t *call);

/* Lives on the caller's stack, usually as the first member of a kind's own
 * record that adds the arguments. */
struct lk__bl_call_s {
  lk__bl_call_t *next, *prev; /* the queue, then the in-flight list */
  lk_blocking_t *b;
  lk__bl_start_fn start;
  lk__bl_cancel_fn cancel; /* NULL: not cancelable */
  lk__bl_slot_t *slot;     /* the calling thread's slot, or NULL */
  uint64_t tid;
  int status;
  int64_t result;
  lk__bl_wait_t wait;
};

void lk__bl_call_init(lk__bl_call_t *call, lk_blocking_t *b, lk__bl_slot_t *slot,
                      lk__bl_start_fn start, lk__bl_cancel_fn cancel);
/* Entry checks, queue, wake the loop, wait. Returns call->status. Refuses
 * (LK_ECLOSED) a call whose slot's handle is closing; counts the caller out
 * of the slot's handle (lk__bl_slot_get) on every return. */
int lk__bl_run(lk__bl_call_t *call);
/* For a handle's close: sets *closing and queues call in the critical
 * section that lk__bl_run's own check is in, so no call of the handle can be
 * queued behind it. LK_ECLOSED when *closing was set already or the client
 * is closing (then *closing is left as it was). */
int lk__bl_run_closing(lk__bl_call_t *call, _Atomic int *closing);
/* On the loop thread: the call ended; wakes its caller. */
void lk__bl_finish(lk__bl_call_t *call, int status, int64_t result);
/* The entry checks that need no lock: LK_EINVAL, LK_EFORKED,
 * LK_EWRONGTHREAD, LK_ECLOSED. */
int lk__bl_check(const lk_blocking_t *b);
lk_client_t *lk__bl_client(const lk_blocking_t *b);
/* The per-kind code reaches the loop thread's bookkeeping through these. */
/* 0, or LK_ECLOSED when the client is closing: then the caller frees h
 * (lk__bl_handle_free) and returns the code. */
int lk__bl_register_handle(lk_blocking_t *b, lk__bl_handle_t *h);
void lk__bl_unregister_handle(lk_blocking_t *b, lk__bl_handle_t *h);
/* On the loop thread: a hold of slot's thread was lost (callback, fd). */
void lk__bl_notify_lost(lk__bl_slot_t *slot);

/* ---- handles and per-thread slots --------------------------------------------- */

/* What one kind's file tells the shared code. Every hook runs on the loop
 * thread; obj is the slot's object as its generic handle. */
typedef struct lk__bl_kind_s {
  const char *what; /* "lock", for logs */
  int kind;         /* the objects' lk_kind_t */
  /* The object has a lost callback (lk_handle_set_lost_cb) / fencing
   * tokens (lk_handle_token): the kinds latchkey/handle.h names. */
  unsigned tells_lost : 1, has_token : 1;
  /* 2 when the slot counts two sides (the read/write lock: 0 read, 1
   * write), else 1. */
  unsigned sides : 2;
  /* Makes the calling slot's object: new on the blocking client, owner =
   * slot->tid where the kind has owners. On failure it returns the code and
   * leaves *out NULL, or the object made so far for lk_handle_close. The
   * shared code then sets its data (the slot) and lost callback. */
  int (*make)(lk__bl_slot_t *slot, lk_handle_t **out);
  /* NULL, or undoes make when the lost callback cannot be set (MultiLock:
   * its members go too); NULL: lk_handle_close(obj, NULL). */
  void (*unmake)(lk__bl_slot_t *slot, lk_handle_t *obj);
  /* NULL, or the slot's counts read again from obj after each verb. */
  void (*sync)(lk__bl_slot_t *slot, lk_handle_t *obj);
  /* NULL, or what a loss does to the slot before the thread is told;
   * NULL: every count 0 and lost set (is_held turns 0). */
  void (*lost)(lk__bl_slot_t *slot, lk_handle_t *obj);
  /* NULL, or runs once slot->obj is closed (or failed to start closing)
   * and calls lk__bl_slot_closed when all is gone (MultiLock: its members
   * after the group); NULL: lk__bl_slot_closed at once. */
  void (*closed)(lk__bl_slot_t *slot);
  /* The kind holds something a thread can be said to hold (not the latch,
   * nor the rate limiter): lk_blocking_handle_is_held and _hold_count. */
  unsigned holds : 1;
  /* The generic verbs of latchkey/blocking.h (lk_blocking_handle_try,
   * _release) as this kind's typed ones; NULL: LK_EINVAL. */
  int (*try_any)(lk__bl_handle_t *h, int64_t wait_ms);
  int (*release_any)(lk__bl_handle_t *h);
} lk__bl_kind_t;

/* What the owning thread reads without a round trip, written by the loop
 * thread. Index 0 for one-sided kinds; rwlock uses 0 = read, 1 = write. */
struct lk__bl_slot_s {
  lk__bl_slot_t *next;
  lk__bl_handle_t *h;
  uint64_t tid;
  lk_handle_t *obj; /* loop thread only */
  void *extra; /* loop thread only: a kind's own (MultiLock: its members) */
  /* loop thread only: its object is closing; the handle's close counts it
   * (h_counted); lk_blocking_thread_done waits for it (forget). */
  int closing, h_counted;
  struct lk__bl_forget_s *forget;
  _Atomic int64_t count[2];
  _Atomic int lost;
  /* Fixed lease: the hold ends at this uv_hrtime (0: renewed, no end). */
  _Atomic uint64_t until_ns[2];
  /* The object's last fencing token (lk_handle_token; a leader's term). */
  _Atomic int64_t token;
};

struct lk_blocking_handle_s {
  lk__bl_handle_t *next; /* the client's list */
  lk_blocking_t *b;
  const lk__bl_kind_t *kind;
  char *name;
  uv_mutex_t mu; /* guards slots (the list; a slot's fields are atomics) */
  lk__bl_slot_t *slots;
  int closing_objs; /* loop thread: object closes still to call back */
  lk__bl_call_t *closer; /* loop thread: the close call waiting for them */
  _Atomic int closing;
  /* Callers between lk__bl_slot_get and the end of their lk__bl_run: the
   * handle's close frees it only once none is left (they may hold a slot
   * pointer, or be about to queue a call naming one). */
  _Atomic int active;
  /* Optional, for a handle that owns more than its objects (RedLock: its
   * master clients). close_rest runs on the loop thread once every object
   * of the closing handle closed (the clients outlive the objects made on
   * them); it returns 1 when it calls lk__bl_handle_objs_closed(h) later, 0
   * when nothing is left. free_rest runs from lk__bl_handle_free in a
   * forked child, where nothing closes: it frees that memory. */
  int (*close_rest)(lk__bl_handle_t *h);
  void (*free_rest)(lk__bl_handle_t *h);
};

/* A new handle of kind's, size bytes (the kind's struct, lk__bl_handle_t
 * first), name copied; or NULL with *rc: LK_EINVAL (out, the _new's out
 * pointer, NULL; a NULL or empty name), the entry checks, LK_ENOMEM. Not
 * yet known to the client: fill in the kind's own fields, then publish. */
lk__bl_handle_t *lk__bl_handle_alloc(lk_blocking_t *b, const lk__bl_kind_t *kind,
                                     const char *name, size_t size, const void *out, int *rc);
/* Registers h with its client: 0, or LK_ECLOSED (the client began closing)
 * and h is freed. */
int lk__bl_handle_publish(lk__bl_handle_t *h);
/* Both, for a kind whose struct is the handle alone: out is its _new's
 * out (a pointer to the kind's pointer), set on success. */
int lk__bl_handle_new(lk_blocking_t *b, const lk__bl_kind_t *kind, const char *name,
                      size_t size, void *out);

/* The calling thread's slot, made on first use. NULL with *rc set. On
 * success the caller counts in h->active: it must pass the slot to
 * lk__bl_call_init and call lk__bl_run, which counts it out. */
lk__bl_slot_t *lk__bl_slot_get(lk__bl_handle_t *h, int *rc);
/* The calling thread's slot if it has one; no allocation. */
lk__bl_slot_t *lk__bl_slot_find(lk__bl_handle_t *h);
/* On the loop thread: slot->obj, opened when not yet. */
int lk__bl_slot_open(lk__bl_slot_t *slot);
/* On the loop thread, from a kind's close callback. */
void lk__bl_slot_closed(lk__bl_slot_t *slot);
/* Closes every slot's object and frees the handle (a blocking call). */
int lk__bl_handle_close(lk__bl_handle_t *h);
/* On the loop thread: starts closing every object of h. Returns 1 when
 * closes are still to call back (lk__bl_handle_objs_closed(h) follows once
 * none is left), 0 when nothing is left to wait for. */
int lk__bl_handle_close_objs(lk__bl_handle_t *h);
void lk__bl_handle_free(lk__bl_handle_t *h, int destroy_lock);
/* Set by the client's close: called on the loop thread once a handle's
 * objects are all closed. */
void lk__bl_handle_objs_closed(lk__bl_handle_t *h);
/* uv_hrtime deadline of a fixed lease (lease_ms > 0) taken now, else 0. */
uint64_t lk__bl_lease_until(int64_t lease_ms);
/* On the loop thread, for lk_blocking_thread_done: closes and frees the
 * slot of thread tid in h. When its close is to call lk__bl_forget_step(f)
 * it counts that in f's pending itself, before starting the close (which
 * may call back at once). */
typedef struct lk__bl_forget_s lk__bl_forget_t;
void lk__bl_forget_count(lk__bl_forget_t *f);
void lk__bl_handle_forget(lk__bl_handle_t *h, uint64_t tid, lk__bl_forget_t *f);
void lk__bl_forget_step(lk__bl_forget_t *f);
/* is_held of index i, from the atomics. */
int lk__bl_slot_held(const lk__bl_slot_t *slot, int i);

/* The calling thread's view of h, no round trip (0 for a NULL h or a
 * thread that never called): is_held of side i; its count[i], 0 after a
 * loss when unless_lost; its last token. */
int lk__bl_held(lk__bl_handle_t *h, int i);
int64_t lk__bl_count(lk__bl_handle_t *h, int i, int unless_lost);
int64_t lk__bl_token(lk__bl_handle_t *h);
/* A kind's struct as its handle, or back (NULL stays NULL). */
#define LK__BL_H(x) ((lk__bl_handle_t *)(void *)(x))

/* ---- verbs: the one path every blocking verb takes (op.c) ----------------------- */

typedef struct lk__bl_op_s lk__bl_op_t;

/* Starts one asynchronous verb of the kind on obj (each entry point has its
 * own, next to it) with op as its callback's arg and the kind's LK__BL_DONE
 * trampoline as the callback; returns its code. */
typedef int (*lk__bl_op_start_fn)(lk_handle_t *obj, lk__bl_op_t *op);

enum {
  LK__BL_CANCELABLE = 1, /* lk_blocking_cancel ends it (lk_handle_cancel) */
  LK__BL_HOLDS = 2,      /* success: a hold of side `side` (its lease end, lost cleared) */
  LK__BL_RELEASES = 4    /* LK_ELEASELOST at once: the counts are 0 (told by on_lost) */
};

/* On the caller's stack; an entry point fills what its verb needs, with a
 * designated initializer (the rest is 0). */
struct lk__bl_op_s {
  lk__bl_call_t call; /* first; set by lk__bl_op_run */
  lk__bl_op_start_fn start;
  unsigned flags;
  int side;           /* LK__BL_HOLDS: the slot index the hold counts at */
  uint64_t until;     /* LK__BL_HOLDS: a fixed lease's end (lk__bl_lease_until) */
  const void *opts;   /* the verb's options (the caller's, alive while it blocks) */
  int64_t n;          /* a number argument */
  const void *arg;    /* another argument */
  /* NULL, or on the loop thread once the verb ended, before the kind's
   * sync: what the caller's *result gets; NULL: lk_handle_result(obj). */
  int64_t (*finish)(lk_handle_t *obj, int status, lk__bl_op_t *op);
};

/* A blocking acquire without options waits forever with the kind's other
 * defaults: when opts is NULL, fills o through init (the kind's
 * lk_X_opts_init) with wait_ms = LK_WAIT_FOREVER and points opts at it.
 * Every blocking kind's acquire starts this way. */
#define LK__BL_OPTS_OR_FOREVER(init, opts, o)                                  \
  do {                                                                         \
    if ((opts) == NULL) {                                                      \
      init(&(o));                                                              \
      (o).wait_ms = LK_WAIT_FOREVER;                                           \
      (opts) = &(o);                                                           \
    }                                                                          \
  } while (0)

/* Runs op on the calling thread's object of h and waits for it: the entry
 * checks, LK_ECLOSED, the verb's own codes. *result (may be NULL) is set
 * on success only. */
int lk__bl_op_run(lk__bl_handle_t *h, lk__bl_op_t *op, int64_t *result);
/* A query: runs op and returns its code on failure, else its answer
 * (lk__bl_answer) or whether that is non-zero (lk__bl_yes_no). */
int64_t lk__bl_answer(lk__bl_handle_t *h, lk__bl_op_t *op);
int lk__bl_yes_no(lk__bl_handle_t *h, lk__bl_op_t *op);
/* Runs the acquire `start` of a kind whose success is a hold of slot index
 * `side`, cancelable, with its options and their lease_ms: a fixed lease's
 * end is taken before the request leaves, so it never outlives it here. */
int lk__bl_hold_run(lk__bl_handle_t *h, lk__bl_op_start_fn start, int side, const void *opts,
                    int64_t lease_ms);
/* The verb's end, on the loop thread: bookkeeping, sync, wakes the caller. */
void lk__bl_op_done(lk_handle_t *obj, int status, void *op);
/* Reads the slot's counts and token from obj again (the kind's sync). */
void lk__bl_sync(lk__bl_slot_t *slot, lk_handle_t *obj);
/* The kind's make for objects made by lk_X_new(client, handle's name) alone. */
#define LK__BL_MAKE(X) LK__BL_MAKE_(X)
#define LK__BL_MAKE_(X)                                                        \
  static int make(lk__bl_slot_t *slot, lk_handle_t **out) {                    \
    lk_##X##_t *obj = NULL;                                                    \
    int rc = lk_##X##_new(lk__bl_client(slot->h->b), slot->h->name, &obj);     \
    *out = lk_##X##_handle(obj);                                               \
    return rc;                                                                 \
  }
/* The typed callback of kind X's verbs, onto lk__bl_op_done. */
#define LK__BL_DONE(X) LK__BL_DONE_(X) /* X expanded first */
#define LK__BL_DONE_(X)                                                        \
  static void bl_done(lk_##X##_t *obj, int status, void *op) {                 \
    lk__bl_op_done(lk_##X##_handle(obj), status, op);                          \
  }

#endif /* LK_BLOCKING_INTERNAL_H */
