/* The blocking API's machinery (docs/blocking.md): call records marshalled
 * onto the loop thread, per-thread waits, and handles whose threads each get
 * an asynchronous object of their own. The per-kind files (lock.c,
 * rwlock.c, semaphore.c) are thin: they only say how to open, run, cancel
 * and close their kind's object. */
#ifndef LK_BLOCKING_INTERNAL_H
#define LK_BLOCKING_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "latchkey/blocking.h"

typedef struct lk__bl_call_s lk__bl_call_t;
typedef struct lk__bl_handle_s lk__bl_handle_t;
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

typedef struct lk__bl_kind_s {
  const char *what; /* "lock", for logs */
  /* Makes slot->obj on the loop thread: new, owner = the slot's thread,
   * data = slot, lost callback. */
  int (*open)(lk__bl_slot_t *slot);
  /* Starts closing slot->obj; its close callback calls lk__bl_slot_closed. */
  void (*close)(lk__bl_slot_t *slot);
} lk__bl_kind_t;

/* What the owning thread reads without a round trip, written by the loop
 * thread. Index 0 for one-sided kinds; rwlock uses 0 = read, 1 = write. */
struct lk__bl_slot_s {
  lk__bl_slot_t *next;
  lk__bl_handle_t *h;
  uint64_t tid;
  void *obj;   /* loop thread only */
  void *extra; /* loop thread only: a kind's own (MultiLock: its members) */
  /* loop thread only: its object is closing; the handle's close counts it
   * (h_counted); lk_blocking_thread_done waits for it (forget). */
  int closing, h_counted;
  struct lk__bl_forget_s *forget;
  _Atomic int64_t count[2];
  _Atomic int lost;
  /* Fixed lease: the hold ends at this uv_hrtime (0: renewed, no end). */
  _Atomic uint64_t until_ns[2];
};

struct lk__bl_handle_s {
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

int lk__bl_handle_init(lk__bl_handle_t *h, lk_blocking_t *b, const lk__bl_kind_t *kind,
                       const char *name);
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

#endif /* LK_BLOCKING_INTERNAL_H */
