/* A test-only "Redisson emulator": a blocking client (hiredis sync API) that
 * behaves on the wire like a Redisson RLock user, so interop tests have the
 * other side of a shared lock without a JVM.
 *
 * It is OUR READING of Redisson's RLock on the wire (docs/design.md, "Redisson
 * compatibility": hash
 * NAME with field "UUID:TID" -> hold count and a PEXPIRE lease; unlock with
 * the idempotency latch; "0" published on redisson_lock__channel on full
 * release; lock() subscribes after the first failed try and retries on a
 * message or when the holder's ttl ran out). The scripts were written from
 * that description, not copied from Redisson; if the spec is wrong, so is
 * this emulator.
 *
 * Every function takes connections the caller owns; one connection must be
 * used by one thread at a time. Transport or protocol errors fail the test
 * (rt_fail_at), also when called from another thread or a forked process. */
#ifndef LK_TEST_HARNESS_REDISSON_EMU_H
#define LK_TEST_HARNESS_REDISSON_EMU_H

#include <stdatomic.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Redisson's lockWatchdogTimeout: the lease a re-entrant unlock re-applies
 * when the caller does not say otherwise. */
#define RT_RLOCK_DEFAULT_LEASE_MS 30000
/* Time the unlock latch key lives (Redisson computes 16-20 s by default). */
#define RT_RLOCK_LATCH_TTL_MS 20000

/* rt_rlock_try results besides a ttl >= 0. */
#define RT_RLOCK_ACQUIRED (-1)
/* Held by another owner and the hash has no expiry (Redisson's script would
 * reply -1 there; it is kept apart here so that -1 only means "acquired"). */
#define RT_RLOCK_BUSY_NO_TTL (-3)

/* Sharded mode, as Redisson's shardedSubscriptionMode AUTO on a Redis 7+
 * cluster: every emulator's scripts then publish with SPUBLISH (their
 * publish-command argument) and every wait subscribes with SSUBSCRIBE
 * (confirmation "ssubscribe", messages "smessage"); off by default (PUBLISH,
 * SUBSCRIBE). Process-wide: set it from the test's main thread before any
 * emulator runs. The emulators follow no redirection: on a cluster each of
 * their connections must be to the master of the name's slot, where its
 * channel's slot lives too (prefixName keeps the name's hash tag). */
void rt_emu_set_sharded(int on);
int rt_emu_sharded(void);
/* "SPUBLISH" in sharded mode, else "PUBLISH". */
const char *rt_emu_publish_cmd(void);

/* A blocking connection to 127.0.0.1:port (connect and I/O timeouts about
 * 5 s scaled). Fails the test when it cannot connect. Free with redisFree. */
redisContext *rt_rlock_connect(int port);

/* prefixName(prefix, name): "prefix:name" when name contains '{', else
 * "prefix:{name}". malloc'd; free(). */
char *rt_rlock_prefix_name(const char *prefix, const char *name);

/* Shared by every emulator (lock, fair, semaphore, read/write, latch):
 * a formatted malloc'd string (fails the test without memory); a Redisson
 * request id (16 random bytes as 32 hex characters); a blocking command
 * (at most 16 arguments) that fails the test on a transport error or a
 * server error, naming `what`. */
char *rt_emu_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rt_emu_random_req(char out[33]);
redisReply *rt_emu_command(redisContext *ctx, int argc, const char **argv, const char *what);
/* The emulators' blocking waits: subscribed to channel on sub (after a
 * failed try, and trying again before sleeping: a release published before
 * the subscription took effect is not missed), asks done(arg, &sleep_ms)
 * again after each message or sleep (what a message says does not matter:
 * the state is read anew) until it says 1 or deadline (rt_now_ms clock)
 * passes; then unsubscribes. done may shorten the sleep it is given (the
 * holder's TTL); sleeps (or NULL) counts the sleeps. Whether done said 1. */
int rt_emu_wait_on_channel(redisContext *sub, const char *channel, int64_t deadline,
                           int (*done)(void *arg, int64_t *sleep_ms), void *arg,
                           atomic_int *sleeps);
/* One try of a lock kind's emulated tryLock (rt_rlock_try, the read/write
 * tries) as a done() of rt_emu_wait_on_channel: the sleep is cut to the
 * holder's TTL. */
typedef struct rt_emu_lock_try_s {
  long long (*try_fn)(redisContext *ctx, const char *name, const char *uuid, long long tid,
                      int64_t lease_ms);
  redisContext *ctx;
  const char *name, *uuid;
  long long tid;
  int64_t lease_ms;
} rt_emu_lock_try_t;
int rt_emu_lock_try(void *arg, int64_t *sleep_ms);

/* An integer reply's value, r freed; any other reply fails the test, naming
 * what. */
long long rt_emu_int(redisReply *r, const char *what);
/* A tryLock script's reply, r freed: nil is RT_RLOCK_ACQUIRED, an integer
 * the holder's PTTL (>= 0), -1 RT_RLOCK_BUSY_NO_TTL; anything else fails the
 * test, naming what. */
long long rt_emu_try_reply(redisReply *r, const char *what);
/* A fair lock's acquire script reply, r freed: 1 acquired (nil), 0 queued (an
 * integer, stored in *ttl unless NULL); anything else fails the test, naming
 * what. */
int rt_emu_fair_reply(redisReply *r, long long *ttl, const char *what);
/* The wall clock in ms, as Redisson's scripts are given it. */
long long rt_emu_wall_ms(void);
/* GET key read as a number (a semaphore's permits, a latch's count): 0 when
 * the key does not exist; anything but a string or nil fails the test. */
long long rt_emu_get_number(redisContext *ctx, const char *key, const char *what);
/* The lock's channel: rt_rlock_prefix_name("redisson_lock__channel", name). */
char *rt_rlock_channel(const char *name);

/* tryLock() once: RT_RLOCK_ACQUIRED (-1) when the owner "uuid:tid" now holds
 * (first hold or re-entry; the lease is (re)set to lease_ms), else the
 * holder's PTTL in ms (>= 0), or RT_RLOCK_BUSY_NO_TTL. */
long long rt_rlock_try(redisContext *ctx, const char *name, const char *uuid, long long tid,
                       int64_t lease_ms);

/* RFencedLock's tryLockAndGetToken() once (docs/lock.md, "Fencing tokens":
 * the lock hash as RLock's, and the counter prefixName("redisson_lock_token",
 * name), a plain INCR on every acquisition, created at 1 when absent). Returns
 * RT_RLOCK_ACQUIRED with *token set, else the holder's PTTL (>= 0). */
long long rt_rlock_try_fenced(redisContext *ctx, const char *name, const char *uuid,
                              long long tid, int64_t lease_ms, long long *token);

/* unlock(): a fresh random 32-hex request id, the unlock script, then DEL of
 * the latch key. Returns 1 released (and "0" published), 0 decremented (the
 * lease is re-applied: RT_RLOCK_DEFAULT_LEASE_MS, or lease_ms in the _lease
 * form), -1 not the owner (Redisson would throw IllegalMonitorStateException). */
int rt_rlock_unlock(redisContext *ctx, const char *name, const char *uuid, long long tid);
int rt_rlock_unlock_lease(redisContext *ctx, const char *name, const char *uuid,
                          long long tid, int64_t lease_ms);
/* The unlock script alone with a given request id (32 hex characters in
 * Redisson); the latch key is left in place unless del_latch, so a test can
 * replay a "retried" unlock. Same results as rt_rlock_unlock. */
int rt_rlock_unlock_req(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms, const char *req, int del_latch);
/* The latch key for a request id: prefixName("redisson_unlock_latch", name)
 * + ":" + req. malloc'd; free(). */
char *rt_rlock_latch_key(const char *name, const char *req);

/* lock() bounded by timeout_ms: one try; on failure (S)SUBSCRIBE to the
 * channel on sub (a second connection, not subscribed to anything), try
 * again, then repeatedly wait for a message on the channel for at most the
 * holder's ttl (or the time left when there is no ttl) and try again.
 * (S)UNSUBSCRIBEs before returning, leaving sub reusable. Returns 0 acquired,
 * -1 when timeout_ms passed first. The bound is not scaled. */
int rt_rlock_lock_blocking(redisContext *ctx, redisContext *sub, const char *name,
                           const char *uuid, long long tid, int64_t lease_ms, int64_t timeout_ms);
/* The same, counting in *sleeps (when not NULL) each time it starts to wait
 * for a message, after a try made once its subscription was confirmed: a
 * test that releases only after the first count knows the release cannot
 * be seen by a try any more, only by a message or the sleep's end. */
int rt_rlock_lock_blocking_counted(redisContext *ctx, redisContext *sub, const char *name,
                                   const char *uuid, long long tid, int64_t lease_ms,
                                   int64_t timeout_ms, atomic_int *sleeps);

/* The next reply or push that arrives on a (subscribed) connection, waiting
 * at most timeout_ms (unscaled; 0 = only what is already readable). NULL on
 * timeout. Free with freeReplyObject. */
redisReply *rt_sub_next(redisContext *sub, int64_t timeout_ms);

/* Waits (up to timeout_ms) for a "message" or "smessage" push on sub and
 * returns it, or NULL; subscribe confirmations and other pushes are skipped.
 * The reply is an array {"message" or "smessage", channel, payload}. */
redisReply *rt_sub_next_message(redisContext *sub, int64_t timeout_ms);

/* ---- RFairLock (docs/fair.md), our reading ----------------------------------------------
 *
 * Keys: the lock hash NAME, the queue list redisson_lock_queue:{NAME}, the
 * deadline zset redisson_lock_timeout:{NAME}; every waiter listens on
 * redisson_lock__channel:{NAME}:UUID:TID. NOW is this process's wall clock
 * in epoch ms, as Redisson's client clock. `wait_ms` is Redisson's WAIT:
 * tryLock's waitTime when > 0, else fairLockWaitTimeout (300 000 unless
 * configured; lock() always uses it). Every grant (the waiting acquire's and
 * tryLock's without waiting alike) moves every deadline in the set WAIT
 * earlier, latchkey's waiters' included; acquireFailed moves those queued
 * behind the one giving up. */
#define RT_RFAIR_DEFAULT_WAIT_MS 300000

char *rt_rfair_queue_key(const char *name);
char *rt_rfair_timeout_key(const char *name);
/* The waiter channel of uuid:tid. malloc'd; free(). */
char *rt_rfair_channel(const char *name, const char *uuid, long long tid);

/* One attempt of the waiting acquire (which joins the queue when it cannot
 * take the lock). Returns 1 acquired, else 0 with *ttl set to the script's
 * estimate (may be 0 or negative). */
int rt_rfair_attempt(redisContext *ctx, const char *name, const char *uuid, long long tid,
                     int64_t lease_ms, int64_t wait_ms, long long *ttl);
/* tryLock() without waiting: never queues. 1 acquired, 0 not. */
int rt_rfair_try_nowait(redisContext *ctx, const char *name, const char *uuid, long long tid,
                        int64_t lease_ms, int64_t wait_ms);
/* acquireFailed: leaves the queue, shifting the deadlines of those behind. */
void rt_rfair_acquire_failed(redisContext *ctx, const char *name, const char *uuid,
                             long long tid, int64_t wait_ms);
/* unlock(): 1 released (next waiter told), 0 still held, -1 not the owner.
 * Quirk kept: when the lock hash is gone it replies 1 and wakes the head. */
int rt_rfair_unlock(redisContext *ctx, const char *name, const char *uuid, long long tid);
/* The waiting loop of tryLock(wait) and lock() below, for a fair kind's
 * attempt (1 acquired, 0 queued with *ttl set, any other value a refusal
 * returned as is): 0 acquired, -1 not within timeout_ms (acquireFailed run
 * first when gives_up), or the attempt's refusal. */
typedef int (*rt_emu_fair_attempt_fn)(redisContext *ctx, const char *name, const char *uuid,
                                      long long tid, int64_t lease_ms, int64_t wait_ms,
                                      long long *ttl);
int rt_emu_fair_wait(rt_emu_fair_attempt_fn attempt, redisContext *ctx, redisContext *sub,
                     const char *name, const char *uuid, long long tid, int64_t lease_ms,
                     int64_t wait_ms, int64_t timeout_ms, int gives_up);
/* tryLock(wait): attempt; subscribe to the own channel on sub; then attempt,
 * wait for a message at most the ttl (or what is left when ttl <= 0), and
 * so on until acquired or timeout_ms (unscaled) passed, when acquireFailed
 * runs. Unsubscribes before returning. 0 acquired, -1 timed out. */
int rt_rfair_lock_wait(redisContext *ctx, redisContext *sub, const char *name,
                       const char *uuid, long long tid, int64_t lease_ms, int64_t wait_ms,
                       int64_t timeout_ms);
/* lock() (no wait time): Redisson's WAIT is then fairLockWaitTimeout
 * (threadWaitTime; RT_RFAIR_DEFAULT_WAIT_MS unless configured), so every
 * grant to this waiter, like every other Redisson grant, moves all queued
 * deadlines thread_wait_ms earlier. Attempt; subscribe; then attempt and
 * wait for a message at most the returned ttl (a queued waiter is told the
 * holder's PTTL, never below 0: a free lock whose next waiter is someone
 * else is polled again at once) or, when the ttl is < 0, for a message
 * only. lock() never gives up and never runs acquireFailed: bound_ms
 * (unscaled) only ends the test's wait, leaving the entry in the queue as an
 * interrupted lock() does. Unsubscribes before returning. 0 acquired, -1
 * the bound passed. */
int rt_rfair_lock(redisContext *ctx, redisContext *sub, const char *name, const char *uuid,
                  long long tid, int64_t lease_ms, int64_t thread_wait_ms, int64_t bound_ms);
/* SUBSCRIBE / UNSUBSCRIBE one channel on sub (SSUBSCRIBE / SUNSUBSCRIBE in
 * sharded mode) and wait for the confirmation. */
void rt_sub_subscribe(redisContext *sub, const char *channel);
void rt_sub_unsubscribe(redisContext *sub, const char *channel);

/* ---- RSemaphore and RPermitExpirableSemaphore (docs/semaphore.md) ----
 *
 * Our reading of Redisson's semaphores: string NAME = available permits,
 * channel redisson_sc:{NAME} carrying the new count; the permit-expirable one
 * adds the zset {NAME}:timeout of raw 16-byte ids scored by expiry in epoch
 * ms of the CLIENT's clock (here: this machine's), reclaiming expired ids
 * first. Written from the spec's prose, like the RLock scripts above. */

/* The semaphore's channel: prefixName("redisson_sc", name). malloc'd. */
char *rt_rsem_channel(const char *name);
/* tryAcquire(n): 1 took n permits, 0 not enough. */
int rt_rsem_try_acquire(redisContext *ctx, const char *name, long long n);
/* release(n): adds n permits (no ownership, JDK semantics) and publishes the
 * new count; returns it. */
long long rt_rsem_release(redisContext *ctx, const char *name, long long n);
/* trySetPermits(n): 1 set (and published), 0 the semaphore existed. */
int rt_rsem_try_set_permits(redisContext *ctx, const char *name, long long n);
/* availablePermits(): GET, nil = 0. */
long long rt_rsem_available(redisContext *ctx, const char *name);
/* acquire(n) bounded by timeout_ms: try; SUBSCRIBE on sub; try again; then
 * wait for a message (Redisson waits with no bound; here the time left) and
 * try again. UNSUBSCRIBEs before returning. 0 acquired, -1 timed out. */
int rt_rsem_acquire_blocking(redisContext *ctx, redisContext *sub, const char *name,
                             long long n, int64_t timeout_ms);

/* Redisson's score for a permit without lease: it never expires. */
#define RT_RPSEM_NEVER 922337203685477LL
/* tryAcquire(1, lease): 1 acquired, id_hex (33 bytes) gets the new id's 32
 * hex characters; 0 none available. lease_ms <= 0: no lease (RT_RPSEM_NEVER). */
int rt_rpsem_try_acquire(redisContext *ctx, const char *name, int64_t lease_ms,
                         char id_hex[33]);
/* tryRelease(id): 1 released while its lease ran, 0 released after its lease
 * had ended, -1 no such permit (Redisson's release(id) would throw). */
int rt_rpsem_release(redisContext *ctx, const char *name, const char *id_hex);
/* availablePermits(): reclaims expired permits, then the count. */
long long rt_rpsem_available(redisContext *ctx, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_EMU_H */
