#ifndef LATCHKEY_BLOCKING_H
#define LATCHKEY_BLOCKING_H

#include "errno.h"
#include "fair.h"
#include "latch.h"
#include "leader.h"
#include "lock.h"
#include "multilock.h"
#include "ratelimiter.h"
#include "rwlock.h"
#include "semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The blocking API for threaded programs (docs/blocking.md). Each verb is a
 * plain function that blocks its calling thread until the asynchronous
 * operation behind it ends, and returns what that operation's callback
 * would have got (0 or a negative LK_ code: the same codes as the verb's
 * asynchronous twin, at once or from its callback alike). Every function
 * may be called from any number of threads at once, except from the loop
 * thread itself, where a verb would wait for the thread it blocks: there it
 * returns LK_EWRONGTHREAD.
 *
 * Owners are per thread, as in Redisson: the owner of a blocking call is
 * "client id:thread id" of the calling thread, so two threads locking one
 * name exclude each other and a thread re-entering a lock it holds counts
 * one more hold. A handle (lk_blocking_lock_t...) is shared by every
 * thread; behind it each thread that uses it gets an asynchronous object
 * of its own, made on first use and kept until the handle closes.
 *
 * Entry codes of every verb: LK_EINVAL (a NULL handle or argument),
 * LK_EWRONGTHREAD (called on the loop thread), LK_EFORKED (in a forked
 * child: nothing is sent, docs/blocking.md "Fork"), LK_ECLOSED (the handle
 * or the blocking client is closing or closed), LK_ENOMEM. */

typedef struct lk_blocking_s lk_blocking_t;

/* Creates a blocking client that owns a loop thread: a new thread runs a
 * uv loop with an asynchronous client made from opts (NULL: defaults) on
 * it. Returns 0 once the client exists (it connects in the background, as
 * lk_client_new), LK_EINVAL (a NULL out, an option lk_client_new refuses),
 * LK_ENOMEM, or a libuv error (-errno) when the thread cannot start. */
LK_EXTERN int lk_blocking_new(const lk_client_opts_t *opts, lk_blocking_t **out);

/* Creates a blocking client on an asynchronous client the caller runs: the
 * caller's loop thread serves the blocking calls of every other thread.
 * Must be called on that loop thread (else LK_EWRONGTHREAD). The client
 * must outlive the blocking client: never lk_client_close_all (nor
 * lk_client_close) it before lk_blocking_close returned, which would close
 * the objects behind the handles under the loop thread's feet. Returns 0,
 * the entry codes, LK_ENOMEM or a libuv error. */
LK_EXTERN int lk_blocking_attach(lk_client_t *client, lk_blocking_t **out);

/* Closes every handle still open (threads blocked in them return
 * LK_ECANCELED; holds are given back, best effort), then the client (its
 * own one, from lk_blocking_new; an attached one is left open) and the loop
 * thread, and frees everything. Waits for all of that. From the call on,
 * new calls (and lk_blocking_<kind>_new) return LK_ECLOSED; no call may
 * start after it returned (the memory is gone). Close the client this way
 * only: calling lk_client_close_all on lk_blocking_client(b), owned or
 * attached, before this returned is a bug. Returns 0, LK_EINVAL, LK_EWRONGTHREAD (on the loop
 * thread: an attached client's owner closes it from another thread),
 * LK_ECLOSED (already closing), or LK_EFORKED (in a forked child: only the
 * memory is freed, nothing is sent). */
LK_EXTERN int lk_blocking_close(lk_blocking_t *b);

/* The asynchronous client underneath, for what only it offers (stats,
 * events). Its functions must run on the loop thread. Not to be closed
 * before lk_blocking_close(b) returned (see there). */
LK_EXTERN lk_client_t *lk_blocking_client(const lk_blocking_t *b);

/* The calling thread's id in owner ids ("client id:thread id"): a number
 * fixed for the thread's life and never reused by another thread of this
 * process. */
LK_EXTERN uint64_t lk_blocking_thread_id(void);

/* The calling thread is done with b: its objects behind every handle are
 * closed (its holds given back, best effort) and freed, and its lost
 * descriptor closed. A program whose threads come and go (one per request)
 * calls it before a thread ends; without it, what a thread used stays until
 * its handle or the client closes. The thread may use b again later: it
 * starts afresh. Returns 0 or the entry codes. */
LK_EXTERN int lk_blocking_thread_done(lk_blocking_t *b);

/* Cancels the blocked acquire (or await) of thread thread_id: it returns
 * LK_ECANCELED (a hold the server may have granted meanwhile is given
 * back). Returns 0, the entry codes, or LK_EINVAL when that thread is not
 * blocked in a call that can be canceled. */
LK_EXTERN int lk_blocking_cancel(lk_blocking_t *b, uint64_t thread_id);

/* ---- lost leases ----------------------------------------------------------
 *
 * A hold renewed by the watchdog can be lost (docs/watchdog.md). The
 * owning thread learns it three ways: the handle's is_held turns 0 (no
 * round trip); the lost callback runs on the loop thread; and the thread's
 * lost descriptor becomes readable. */

/* Called on the loop thread when a hold of thread thread_id on the handle
 * named name is lost. It must not block nor call blocking verbs (they
 * return LK_EWRONGTHREAD there); in particular it must not take a lock
 * that a worker may hold while it is in a blocking verb: the worker waits
 * for the loop thread, which would wait for the worker (a deadlock). */
typedef void (*lk_blocking_lost_cb)(lk_blocking_t *b, const char *name,
                                    uint64_t thread_id, void *arg);
/* Sets (NULL: removes) the lost callback. The callback it replaces may
 * still run once after this returned (the loop thread may have read it
 * just before): free what its arg points to only after lk_blocking_close
 * returned. Returns 0 or LK_EINVAL. */
LK_EXTERN int lk_blocking_set_lost_cb(lk_blocking_t *b, lk_blocking_lost_cb cb,
                                      void *arg);
/* A descriptor of the calling thread (an eventfd on Linux, a pipe's read
 * end elsewhere) that becomes readable when any hold of this thread on this
 * client is lost after this first call made it (a loss before that is
 * not counted: check is_held after taking the descriptor); poll it beside
 * the work of a critical section to abort it. It stays readable until
 * lk_blocking_lost_clear. Owned by the
 * blocking client: closed by lk_blocking_close or the thread's
 * lk_blocking_thread_done, never by the caller.
 * Returns the descriptor (>= 0), the entry codes or -errno. */
LK_EXTERN int lk_blocking_lost_fd(lk_blocking_t *b);
/* Makes the calling thread's descriptor unreadable again. Returns how many
 * losses it had counted (0 when none, or no descriptor), or the entry
 * codes. */
LK_EXTERN int lk_blocking_lost_clear(lk_blocking_t *b);

/* ---- one handle for every kind ----------------------------------------------
 *
 * Every blocking handle below (lk_blocking_lock_t, ..._semaphore_t, ...) is
 * also an lk_blocking_handle_t, as every asynchronous object is an
 * lk_handle_t (latchkey/handle.h): lk_blocking_<kind>_handle(x) converts
 * (a cast: NULL stays NULL, valid as long as x), and the verbs here work on
 * every kind alike, each as the kind's own typed verb named beside it.
 * A kind without such a verb answers LK_EINVAL, as a NULL handle does. */

typedef struct lk_blocking_handle_s lk_blocking_handle_t;

/* The kind of the objects behind it (an lk_kind_t: LK_KIND_LOCK...), or
 * LK_EINVAL for NULL. */
LK_EXTERN int lk_blocking_handle_kind(const lk_blocking_handle_t *h);
/* The name given to new (a MultiLock's first member's, a leader's role);
 * NULL for NULL. Borrowed for the handle's life. */
LK_EXTERN const char *lk_blocking_handle_name(const lk_blocking_handle_t *h);
/* Takes one hold for the calling thread, waiting at most wait_ms (0: one
 * try, LK_WAIT_FOREVER: as long as it takes) with the kind's defaults:
 * lock, fair lock, MultiLock, RedLock: their try; read/write lock: the
 * write side; semaphore, rate limiter: one permit; permit semaphore: one
 * permit (its id not returned); leader: a campaign of that wait; latch:
 * await. Cancelable (lk_blocking_cancel). Codes: the typed verb's. */
LK_EXTERN int lk_blocking_handle_try(lk_blocking_handle_t *h, int64_t wait_ms);
/* lk_blocking_handle_try(h, LK_WAIT_FOREVER). */
LK_EXTERN int lk_blocking_handle_acquire(lk_blocking_handle_t *h);
/* Gives back what try took: one hold of a lock (the write side of a
 * read/write lock), one permit of a semaphore, every permit of the
 * thread's on a permit semaphore, a leader's leadership (resign).
 * LK_EINVAL for the latch and the rate limiter. Codes: the typed verb's. */
LK_EXTERN int lk_blocking_handle_release(lk_blocking_handle_t *h);
/* The calling thread's view, no round trip: 1 while it holds anything of
 * the handle (either side of a read/write lock, a permit, leadership) by
 * the loop thread's last knowledge, 0 when not; LK_EINVAL for NULL, the
 * latch and the rate limiter (test == 1). */
LK_EXTERN int lk_blocking_handle_is_held(lk_blocking_handle_t *h);
/* The same thread's count: a lock's holds (both sides of a read/write
 * lock added), a semaphore's permits, 1 while leading; 0 after a loss.
 * LK_EINVAL as is_held. */
LK_EXTERN int64_t lk_blocking_handle_hold_count(lk_blocking_handle_t *h);
/* The fencing token of the calling thread's last acquisition (a leader's
 * term), 0 before any; LK_EINVAL for NULL and the kinds without tokens
 * (semaphores, latch, MultiLock, rate limiter). */
LK_EXTERN int64_t lk_blocking_handle_token(lk_blocking_handle_t *h);
/* As the kind's close (lk_blocking_lock_close). */
LK_EXTERN int lk_blocking_handle_close(lk_blocking_handle_t *h);

/* ---- lock (docs/lock.md) -------------------------------------------------- */

typedef struct lk_blocking_lock_s lk_blocking_lock_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_lock_handle(lk_blocking_lock_t *x);

/* name is copied. Sends nothing. Returns 0 or the entry codes (LK_EINVAL
 * also for a NULL or empty name). A name the client refuses
 * (LK_ENAMETOOLONG...) is reported by the first call of each thread, where
 * its object is made; so for every kind below. */
LK_EXTERN int lk_blocking_lock_new(lk_blocking_t *b, const char *name,
                                   lk_blocking_lock_t **out);
/* Acquires or re-enters the lock for the calling thread, waiting as opts
 * says; opts NULL: wait forever, the default lease renewed by the watchdog
 * (Redisson's lock()). Codes: lk_lock_acquire's. */
LK_EXTERN int lk_blocking_lock_acquire(lk_blocking_lock_t *l,
                                       const lk_lock_opts_t *opts);
/* Waits at most wait_ms (0: one try) with the default lease: 0 or
 * LK_ETIMEDOUT, else as acquire. */
LK_EXTERN int lk_blocking_lock_try(lk_blocking_lock_t *l, int64_t wait_ms);
/* Drops one hold of the calling thread. Codes: lk_lock_release's (at once
 * or from its callback). */
LK_EXTERN int lk_blocking_lock_release(lk_blocking_lock_t *l);
/* 1 when the lock exists on the server (held by anyone), 0 when not, or a
 * negative code of lk_lock_is_locked. */
LK_EXTERN int lk_blocking_lock_is_locked(lk_blocking_lock_t *l);
/* The calling thread's view, no round trip: 1 while it holds the lock by
 * the loop thread's last knowledge (not lost, and a fixed lease not run
 * out); its hold count (0 after a loss). */
LK_EXTERN int lk_blocking_lock_is_held(lk_blocking_lock_t *l);
LK_EXTERN uint32_t lk_blocking_lock_hold_count(lk_blocking_lock_t *l);
/* Closes the handle: threads blocked in it return LK_ECANCELED, every
 * thread's holds are given back (best effort). Other threads may be
 * entering calls on it meanwhile: those return LK_ECLOSED, and the close
 * waits for them to leave, then frees the handle; no call on it may start
 * after it returned. The same for every kind's close. Returns 0 or the
 * entry codes. */
LK_EXTERN int lk_blocking_lock_close(lk_blocking_lock_t *l);

/* ---- read/write lock (docs/rwlock.md) -------------------------------------- */

typedef struct lk_blocking_rwlock_s lk_blocking_rwlock_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_rwlock_handle(lk_blocking_rwlock_t *x);

LK_EXTERN int lk_blocking_rwlock_new(lk_blocking_t *b, const char *name,
                                     lk_blocking_rwlock_t **out);
/* One hold of side for the calling thread; opts NULL: wait forever, default
 * lease. Codes: lk_rwlock_acquire's (LK_EUPGRADE: a thread holding the read
 * side asked for the write side). */
LK_EXTERN int lk_blocking_rwlock_acquire(lk_blocking_rwlock_t *rw,
                                         lk_rwlock_side_t side,
                                         const lk_rwlock_opts_t *opts);
LK_EXTERN int lk_blocking_rwlock_try(lk_blocking_rwlock_t *rw,
                                     lk_rwlock_side_t side, int64_t wait_ms);
LK_EXTERN int lk_blocking_rwlock_release(lk_blocking_rwlock_t *rw,
                                         lk_rwlock_side_t side);
LK_EXTERN int lk_blocking_rwlock_is_held(lk_blocking_rwlock_t *rw,
                                         lk_rwlock_side_t side);
LK_EXTERN uint32_t lk_blocking_rwlock_hold_count(lk_blocking_rwlock_t *rw,
                                                 lk_rwlock_side_t side);
LK_EXTERN int lk_blocking_rwlock_close(lk_blocking_rwlock_t *rw);

/* ---- counting semaphore (docs/semaphore.md) -------------------------------- */

typedef struct lk_blocking_semaphore_s lk_blocking_semaphore_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_semaphore_handle(lk_blocking_semaphore_t *x);

LK_EXTERN int lk_blocking_semaphore_new(lk_blocking_t *b, const char *name,
                                        lk_blocking_semaphore_t **out);
/* Takes permits for the calling thread (opts NULL: one permit, wait
 * forever). Codes: lk_semaphore_acquire's. */
LK_EXTERN int lk_blocking_semaphore_acquire(lk_blocking_semaphore_t *s,
                                            const lk_semaphore_opts_t *opts);
LK_EXTERN int lk_blocking_semaphore_try(lk_blocking_semaphore_t *s,
                                        int64_t permits, int64_t wait_ms);
/* Gives back permits the calling thread holds (LK_ENOTHELD: it holds
 * fewer). */
LK_EXTERN int lk_blocking_semaphore_release(lk_blocking_semaphore_t *s,
                                            int64_t permits);
/* Sets the count when the semaphore does not exist: 1 set, 0 it existed,
 * or a negative code. */
LK_EXTERN int lk_blocking_semaphore_try_set_permits(lk_blocking_semaphore_t *s,
                                                    int64_t permits);
/* Permits available now (>= 0), or a negative code. */
LK_EXTERN int64_t lk_blocking_semaphore_available(lk_blocking_semaphore_t *s);
/* Permits the calling thread holds (no round trip). */
LK_EXTERN int64_t lk_blocking_semaphore_held(lk_blocking_semaphore_t *s);
LK_EXTERN int lk_blocking_semaphore_close(lk_blocking_semaphore_t *s);

/* ---- permit-expirable semaphore (docs/semaphore.md) --------------------------
 * Each thread's permits are its own, with their ids and leases (renewed by
 * the watchdog with the default lease); a permit lost is told as a lost
 * lease. */

typedef struct lk_blocking_psem_s lk_blocking_psem_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_psem_handle(lk_blocking_psem_t *x);

LK_EXTERN int lk_blocking_psem_new(lk_blocking_t *b, const char *name,
                                   lk_blocking_psem_t **out);
/* Takes opts->permits permits (opts NULL: one, default lease, waiting as
 * long as it takes); ids (may be NULL) gets their ids, room for
 * opts->permits. Codes: lk_psem_acquire's. Cancelable. */
LK_EXTERN int lk_blocking_psem_acquire(lk_blocking_psem_t *p,
                                       const lk_psem_opts_t *opts,
                                       char (*ids)[LK_PSEM_ID_LEN + 1]);
/* One permit, waiting at most wait_ms; id (may be NULL) gets its id. */
LK_EXTERN int lk_blocking_psem_try(lk_blocking_psem_t *p, int64_t wait_ms,
                                   char id[LK_PSEM_ID_LEN + 1]);
/* Releases the calling thread's permit id, or all of them (id NULL).
 * Codes: lk_psem_release's. */
LK_EXTERN int lk_blocking_psem_release(lk_blocking_psem_t *p, const char *id);
LK_EXTERN int lk_blocking_psem_try_set_permits(lk_blocking_psem_t *p,
                                               int64_t permits);
LK_EXTERN int64_t lk_blocking_psem_available(lk_blocking_psem_t *p);
/* Permits the calling thread holds (no round trip). */
LK_EXTERN int64_t lk_blocking_psem_held(lk_blocking_psem_t *p);
LK_EXTERN int lk_blocking_psem_close(lk_blocking_psem_t *p);

/* ---- MultiLock (docs/multilock.md) ----------------------------------------------
 * Several lock names taken all together or none, per thread: each thread's
 * group owns its member locks as that thread (so a thread holding one of
 * the names by lk_blocking_lock re-enters it). A member's hold lost is told
 * as a lost lease (the name given is the first member's). */

typedef struct lk_blocking_multilock_s lk_blocking_multilock_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_multilock_handle(lk_blocking_multilock_t *x);

/* names[0..n-1] are copied (1..LK_MULTILOCK_MAX_MEMBERS of them); the
 * checks of lk_multilock_new come with each thread's first call. */
LK_EXTERN int lk_blocking_multilock_new(lk_blocking_t *b,
                                        const char *const *names, size_t n,
                                        lk_blocking_multilock_t **out);
/* opts NULL: wait forever, default leases. Codes: lk_multilock_acquire's.
 * Cancelable. */
LK_EXTERN int lk_blocking_multilock_acquire(lk_blocking_multilock_t *g,
                                            const lk_multilock_opts_t *opts);
LK_EXTERN int lk_blocking_multilock_try(lk_blocking_multilock_t *g,
                                        int64_t wait_ms);
LK_EXTERN int lk_blocking_multilock_release(lk_blocking_multilock_t *g);
LK_EXTERN int lk_blocking_multilock_is_held(lk_blocking_multilock_t *g);
LK_EXTERN uint32_t lk_blocking_multilock_hold_count(lk_blocking_multilock_t *g);
LK_EXTERN int lk_blocking_multilock_close(lk_blocking_multilock_t *g);

/* ---- RedLock (docs/multilock.md, "RedLock") --------------------------------------
 * One name held by a quorum of independent masters, one client each, all on
 * the blocking client's loop. Each thread gets a RedLock object of its own
 * over those clients: two threads are two owners and exclude each other; a
 * thread's re-entry adds a hold as RedLock's re-entry does (the lean layout
 * refuses it: LK_EINVAL). A quorum lost is told as a lost lease. */

typedef struct lk_blocking_redlock_s lk_blocking_redlock_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_redlock_handle(lk_blocking_redlock_t *x);

/* Makes one client per master from masters[0..n-1] (1..LK_REDLOCK_MAX_NODES;
 * read during the call) on the loop thread; the handle owns them and closes
 * them with itself (or with b). They connect in the background, as
 * lk_blocking_new's client. name is copied, cfg (NULL: defaults) too. The
 * checks of lk_redlock_new run here: LK_EINVAL (also an option
 * lk_client_new refuses, the same server twice, a bad cfg),
 * LK_ENAMETOOLONG, the entry codes, LK_ENOMEM. */
LK_EXTERN int lk_blocking_redlock_new(lk_blocking_t *b,
                                      const lk_client_opts_t *masters, size_t n,
                                      const char *name,
                                      const lk_redlock_config_t *cfg,
                                      lk_blocking_redlock_t **out);
/* As above over clients the program made on b's loop (an attached
 * client's: LK_EINVAL for one on another loop); borrowed: they must stay
 * open until the handle (or b) is closed. */
LK_EXTERN int lk_blocking_redlock_new_on(lk_blocking_t *b,
                                         lk_client_t *const *clients, size_t n,
                                         const char *name,
                                         const lk_redlock_config_t *cfg,
                                         lk_blocking_redlock_t **out);
/* opts NULL: wait forever, the node clients' default lease renewed by their
 * watchdogs. Codes: lk_redlock_acquire's (LK_ENOQUORUM...). Cancelable. */
LK_EXTERN int lk_blocking_redlock_acquire(lk_blocking_redlock_t *r,
                                          const lk_redlock_opts_t *opts);
LK_EXTERN int lk_blocking_redlock_try(lk_blocking_redlock_t *r, int64_t wait_ms);
/* Codes: lk_redlock_release's. */
LK_EXTERN int lk_blocking_redlock_release(lk_blocking_redlock_t *r);
/* The calling thread's view, no round trip: 1 while its quorum holds by
 * the loop thread's last knowledge (not lost; a fixed lease: within the
 * validity the acquire reported). */
LK_EXTERN int lk_blocking_redlock_is_held(lk_blocking_redlock_t *r);
LK_EXTERN uint32_t lk_blocking_redlock_hold_count(lk_blocking_redlock_t *r);
/* Closes every thread's RedLock (blocked threads return LK_ECANCELED,
 * holds are given back, best effort), then the clients the handle made. */
LK_EXTERN int lk_blocking_redlock_close(lk_blocking_redlock_t *r);

/* ---- fair lock (docs/fair.md) ----------------------------------------------
 * As the lock, with the fair lock's options and codes: waiters of every
 * thread and process are served in order of arrival. */

typedef struct lk_blocking_fair_s lk_blocking_fair_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_fair_handle(lk_blocking_fair_t *x);

LK_EXTERN int lk_blocking_fair_new(lk_blocking_t *b, const char *name,
                                   lk_blocking_fair_t **out);
LK_EXTERN int lk_blocking_fair_acquire(lk_blocking_fair_t *f,
                                       const lk_fair_opts_t *opts);
LK_EXTERN int lk_blocking_fair_try(lk_blocking_fair_t *f, int64_t wait_ms);
LK_EXTERN int lk_blocking_fair_release(lk_blocking_fair_t *f);
LK_EXTERN int lk_blocking_fair_is_locked(lk_blocking_fair_t *f);
LK_EXTERN int lk_blocking_fair_is_held(lk_blocking_fair_t *f);
LK_EXTERN uint32_t lk_blocking_fair_hold_count(lk_blocking_fair_t *f);
LK_EXTERN int lk_blocking_fair_close(lk_blocking_fair_t *f);

/* ---- countdown latch (docs/latch.md) ------------------------------------------ */

typedef struct lk_blocking_latch_s lk_blocking_latch_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_latch_handle(lk_blocking_latch_t *x);

/* opts (NULL: interop mode) is copied; every thread's object uses it. */
LK_EXTERN int lk_blocking_latch_new(lk_blocking_t *b, const char *name,
                                    const lk_latch_opts_t *opts,
                                    lk_blocking_latch_t **out);
/* 1 armed by this call, 0 already armed, or a negative code. */
LK_EXTERN int lk_blocking_latch_try_set_count(lk_blocking_latch_t *l,
                                              int64_t count);
/* *left (may be NULL): the count left, 0 when this call opened the latch,
 * -1 when it was open already. Codes: lk_latch_count_down's. */
LK_EXTERN int lk_blocking_latch_count_down(lk_blocking_latch_t *l,
                                           int64_t *left);
LK_EXTERN int lk_blocking_latch_get_count(lk_blocking_latch_t *l,
                                          int64_t *count);
/* 0 once the latch is open; wait_ms as lk_latch_await (0 look once, -1
 * forever). Cancelable (lk_blocking_cancel). */
LK_EXTERN int lk_blocking_latch_await(lk_blocking_latch_t *l, int64_t wait_ms);
/* 1 something was deleted, 0 nothing was, or a negative code. */
LK_EXTERN int lk_blocking_latch_delete(lk_blocking_latch_t *l);
LK_EXTERN int lk_blocking_latch_close(lk_blocking_latch_t *l);

/* ---- leader election (docs/leader.md) ------------------------------------------
 * Each thread that campaigns is a candidate of its own. */

typedef struct lk_blocking_leader_s lk_blocking_leader_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_leader_handle(lk_blocking_leader_t *x);

LK_EXTERN int lk_blocking_leader_new(lk_blocking_t *b, const char *role,
                                     lk_blocking_leader_t **out);
/* Blocks until elected (0, *term set when term is not NULL) or the
 * campaign ends otherwise (opts NULL: campaign until elected). Codes:
 * lk_leader_campaign's. Cancelable. */
LK_EXTERN int lk_blocking_leader_campaign(lk_blocking_leader_t *l,
                                          const lk_leader_opts_t *opts,
                                          int64_t *term);
LK_EXTERN int lk_blocking_leader_resign(lk_blocking_leader_t *l);
/* The calling thread's view, no round trip: 1 while it leads (a lost
 * leadership turns it 0 and is told as a lost lease); its last term. */
LK_EXTERN int lk_blocking_leader_is_leader(lk_blocking_leader_t *l);
LK_EXTERN int64_t lk_blocking_leader_term(lk_blocking_leader_t *l);
LK_EXTERN int lk_blocking_leader_close(lk_blocking_leader_t *l);

/* ---- rate limiter (docs/ratelimiter.md) ------------------------------------------ */

typedef struct lk_blocking_ratelimiter_s lk_blocking_ratelimiter_t;
LK_EXTERN lk_blocking_handle_t *lk_blocking_ratelimiter_handle(lk_blocking_ratelimiter_t *x);

LK_EXTERN int lk_blocking_ratelimiter_new(lk_blocking_t *b, const char *name,
                                          lk_blocking_ratelimiter_t **out);
/* 1 set by this call, 0 a rate was set already, or a negative code. */
LK_EXTERN int lk_blocking_ratelimiter_try_set_rate(
    lk_blocking_ratelimiter_t *r, const lk_ratelimiter_config_t *cfg);
LK_EXTERN int lk_blocking_ratelimiter_set_rate(lk_blocking_ratelimiter_t *r,
                                               const lk_ratelimiter_config_t *cfg);
/* opts NULL: one permit, waiting as long as it takes. Cancelable. */
LK_EXTERN int lk_blocking_ratelimiter_acquire(lk_blocking_ratelimiter_t *r,
                                              const lk_ratelimiter_opts_t *opts);
LK_EXTERN int lk_blocking_ratelimiter_try(lk_blocking_ratelimiter_t *r,
                                          int64_t permits, int64_t wait_ms);
LK_EXTERN int lk_blocking_ratelimiter_available(lk_blocking_ratelimiter_t *r,
                                                int64_t *out);
LK_EXTERN int lk_blocking_ratelimiter_close(lk_blocking_ratelimiter_t *r);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_BLOCKING_H */
