#ifndef LATCHKEY_HANDLE_H
#define LATCHKEY_HANDLE_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One handle for every kind of object (docs/objects.md, "Handles"), as a
 * libuv uv_handle_t serves every libuv handle: the verbs every kind shares
 * (close, cancel, data, name, error text, lost callback, is_held, token...)
 * are here once, and work on a lock, a semaphore, a leader... alike. The
 * verbs of one kind (acquire, release, count_down...) stay typed.
 *
 * A handle is the object itself seen through its common part: converting
 * costs nothing and the pointer stays valid exactly as long as the object
 * (until its close callback returns). Each kind's header declares its two
 * conversions, lk_X_handle(obj) and lk_handle_as_X(handle) (NULL when the
 * handle is of another kind); LK_HANDLE(obj) below picks the right one.
 *
 * A verb a kind does not have answers LK_EINVAL (or NULL, "", as each says
 * below), never a crash; so does a NULL handle. */
typedef struct lk_handle_s lk_handle_t;

/* The kinds; new kinds are added at the end, values never change. */
typedef enum {
  LK_KIND_LOCK = 1,     /* lk_lock_t */
  LK_KIND_FAIR,         /* lk_fair_t */
  LK_KIND_RWLOCK,       /* lk_rwlock_t */
  LK_KIND_SEMAPHORE,    /* lk_semaphore_t */
  LK_KIND_PSEM,         /* lk_psem_t */
  LK_KIND_LATCH,        /* lk_latch_t */
  LK_KIND_MULTILOCK,    /* lk_multilock_t */
  LK_KIND_REDLOCK,      /* lk_redlock_t */
  LK_KIND_LEADER,       /* lk_leader_t */
  LK_KIND_RATELIMITER,  /* lk_ratelimiter_t */
  LK_KIND_BARRIER       /* lk_barrier_t */
} lk_kind_t;

/* The generic callbacks: the same shapes as every kind's own (object
 * first, status second, arg last), with the handle as the object. */
typedef void (*lk_handle_cb)(lk_handle_t *handle, int status, void *arg);
typedef void (*lk_handle_close_cb)(lk_handle_t *handle);

/* The handle's kind (an lk_kind_t), or LK_EINVAL for NULL. */
LK_EXTERN int lk_handle_kind(const lk_handle_t *handle);
/* The kind's name, its prefix in the API: "lock", "fair", "rwlock",
 * "semaphore", "psem", "latch", "multilock", "redlock", "leader",
 * "ratelimiter", "barrier". NULL for a kind it does not know. Static. */
LK_EXTERN const char *lk_kind_name(int kind);
/* lk_kind_name(lk_handle_kind(handle)): NULL for a NULL handle. */
LK_EXTERN const char *lk_handle_kind_name(const lk_handle_t *handle);

/* Closes the object, as its lk_X_close does (docs/objects.md, "Close"):
 * the pending operation ends with LK_ECANCELED, what the object holds is
 * given back, then close_cb (may be NULL) runs with this same handle and
 * the object is freed. Returns 0 or the entry codes (LK_ECLOSED: already
 * closing; LK_EFORKED: in a forked child, where only the memory is freed
 * and no callback runs); LK_EBUSY for a lock that is a MultiLock's member
 * or a RedLock's node. */
LK_EXTERN int lk_handle_close(lk_handle_t *handle, lk_handle_close_cb close_cb);

/* Cancels the kind's waiting operation, as its lk_X_cancel does: the
 * acquire (the leader's campaign, the latch's await, the barrier's enter
 * or leave). Its callback runs with LK_ECANCELED, from the loop. Returns 0
 * or the entry codes; LK_EINVAL when no such operation is pending (or its
 * callback is already on its way). */
LK_EXTERN int lk_handle_cancel(lk_handle_t *handle);

/* One user pointer, never touched by latchkey: the same one lk_X_get_data
 * and lk_X_set_data read and write. set_data returns 0, or LK_EINVAL for a
 * NULL handle; get_data gives NULL for it. */
LK_EXTERN void *lk_handle_get_data(const lk_handle_t *handle);
LK_EXTERN int lk_handle_set_data(lk_handle_t *handle, void *data);

/* The name as given to lk_X_new (the leader's role); borrowed for the
 * object's life. NULL for a NULL handle or a MultiLock (which has none). */
LK_EXTERN const char *lk_handle_name(const lk_handle_t *handle);

/* The client the object runs on (its thread and loop): the one it was made
 * from; a MultiLock's is its first member's client, a RedLock's its first
 * master's. NULL for a NULL handle. */
LK_EXTERN lk_client_t *lk_handle_client(const lk_handle_t *handle);

/* The server's error text of the last failed operation, or "" (also for a
 * NULL handle). Borrowed, valid until the next operation starts. */
LK_EXTERN const char *lk_handle_error_text(const lk_handle_t *handle);

/* The value the last operation left for its callback, what lk_X_result
 * reads (a query's answer, a release's 1/0...), into *out: 0, or LK_EINVAL
 * for a NULL handle or out. Kinds without lk_X_result (MultiLock, RedLock,
 * leader, barrier) read 0 or what their page says. */
LK_EXTERN int lk_handle_result(const lk_handle_t *handle, int64_t *out);

/* Sets the lost-lease callback, as lk_X_set_lost_cb does (docs/objects.md,
 * "Callbacks"): on_lost(handle, LK_ELEASELOST, arg) when what the object
 * holds is lost (the lock's lease, the leader's leadership, the permit
 * semaphore's permits...). NULL removes it. The last one set, typed or
 * generic, is the one called. Returns 0 or the entry codes; LK_EINVAL for
 * the kinds that hold nothing that can be lost (the counting semaphore,
 * the latch, the rate limiter, the barrier). */
LK_EXTERN int lk_handle_set_lost_cb(lk_handle_t *handle, lk_handle_cb on_lost,
                                    void *arg);

/* A hold's health (docs/objects.md, "Health"): held → at risk → lost. The
 * object is AT RISK when a renewal of what it holds failed (an error
 * reply, a reply timeout, no answer within half the lease of the last
 * confirmed one) or the connection its hold lives on dropped: the server may
 * still have the hold, but latchkey can no longer vouch that it keeps it.
 * It is SAFE again when a later renewal confirms the hold. ms_left is the
 * time left (ms, >= 0) before the hold's local deadline: at AT_RISK, how long
 * the holder may go on before the hold is reported lost unless a renewal
 * gets through; at SAFE, how long the renewed lease runs. A RedLock is at
 * risk when fewer than its quorum of masters are held without risk, a
 * MultiLock when any member is. */
typedef enum {
  LK_HEALTH_AT_RISK = 1,
  LK_HEALTH_SAFE = 2
} lk_health_t;

typedef void (*lk_handle_health_cb)(lk_handle_t *handle, lk_health_t state, int64_t ms_left,
                                    void *arg);

/* Sets the health callback: on_health(handle, LK_HEALTH_AT_RISK, ms_left,
 * arg) when the hold becomes at risk, then either on_health(handle,
 * LK_HEALTH_SAFE, ms_left, arg) when a renewal confirms it again, or the
 * lost callback (lk_handle_set_lost_cb) as before. Rules: at most one
 * AT_RISK until the next SAFE or loss; the lost callback always comes after
 * an AT_RISK (one with ms_left 0 right before it when the loss came without
 * warning: a renewal that found the key gone or taken); nothing after the
 * loss, nor after a release that left nothing held (which ends an episode
 * without a callback), nor after close. Called from the loop, never inside
 * an lk_ call. NULL removes it. The barrier has it too, without a lost
 * callback: its member's lease is at risk when a renewal fails, and its
 * drop ends the enter or leave with LK_ELEASELOST after an AT_RISK.
 * Returns 0; LK_EINVAL for a NULL handle and for the kinds that hold
 * nothing that can be lost (the counting semaphore, the latch, the rate
 * limiter); LK_EWRONGTHREAD, LK_EFORKED; LK_ECLOSED once the object is
 * closing. */
LK_EXTERN int lk_handle_set_health_cb(lk_handle_t *handle, lk_handle_health_cb on_health,
                                      void *arg);

/* 1 while the object holds something by its own reckoning (no round trip),
 * 0 when it does not: a lock, fair lock, MultiLock or RedLock that is held;
 * a read/write lock holding either side; a semaphore with permits acquired
 * and not released; a permit semaphore with a live permit; a leader that
 * leads. LK_EINVAL for a NULL handle and for the kinds that never hold (the
 * latch, the rate limiter, the barrier): test `== 1`, not for non-zero. */
LK_EXTERN int lk_handle_is_held(const lk_handle_t *handle);

/* The fencing token of the last fenced acquisition (a leader's term), 0 when
 * none was taken yet; tokens are always > 0. LK_EINVAL for a NULL handle
 * and for the kinds without fencing tokens (semaphores, latch, MultiLock,
 * rate limiter, barrier). Kinds: lock, fair lock, read/write lock, RedLock,
 * leader. */
LK_EXTERN int64_t lk_handle_token(const lk_handle_t *handle);

/* The owner id "UUID:TID" of the kinds that are one owner (lock, fair lock,
 * read/write lock): a secret in effect, never log it. Borrowed as
 * lk_X_owner's. NULL for a NULL handle and the other kinds. */
LK_EXTERN const char *lk_handle_owner(const lk_handle_t *handle);

/* LK_HANDLE(obj): the handle of any kind's object, by its type (C11;
 * needs every kind's header: include <latchkey.h>). C++ has no macro: call
 * the kind's lk_X_handle. */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define LK_HANDLE(obj)                                                         \
  _Generic((obj),                                                             \
      lk_lock_t *: lk_lock_handle,                                            \
      lk_fair_t *: lk_fair_handle,                                            \
      lk_rwlock_t *: lk_rwlock_handle,                                        \
      lk_semaphore_t *: lk_semaphore_handle,                                  \
      lk_psem_t *: lk_psem_handle,                                            \
      lk_latch_t *: lk_latch_handle,                                          \
      lk_multilock_t *: lk_multilock_handle,                                  \
      lk_redlock_t *: lk_redlock_handle,                                      \
      lk_leader_t *: lk_leader_handle,                                        \
      lk_ratelimiter_t *: lk_ratelimiter_handle,                              \
      lk_barrier_t *: lk_barrier_handle)(obj)
#endif

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_HANDLE_H */
