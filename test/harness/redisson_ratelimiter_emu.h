/* The Redisson emulator's rate limiter (test only): a blocking client that
 * behaves on the wire like a Redisson RRateLimiter user, so interop tests
 * have the other side of a shared limiter without a JVM.
 *
 * It is OUR READING of Redisson's RRateLimiter (docs/ratelimiter.md, "Data
 * in Redis"): config hash NAME (rate, interval, type, keepAliveTime);
 * {NAME}:value and {NAME}:permits for OVERALL, the same with ":<client id>"
 * appended for PER_CLIENT; every grant a zset member "id length byte, 16
 * random bytes, permits as 4 bytes" scored by the CALLER'S wall clock in ms,
 * as Redisson passes System.currentTimeMillis(); a denial answers 3 ms plus
 * the time until the oldest grant leaves the window. The scripts were
 * written from that description, not copied from Redisson; if the spec is
 * wrong, so is this emulator. Connections come from rt_rlock_connect
 * (redisson_emu.h); transport errors fail the test. */
#ifndef LK_TEST_HARNESS_REDISSON_RATELIMITER_EMU_H
#define LK_TEST_HARNESS_REDISSON_RATELIMITER_EMU_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RateType ordinals. */
#define RT_RRL_OVERALL 0
#define RT_RRL_PER_CLIENT 1

/* rt_rrl_try_acquire results besides a wait >= 0. */
#define RT_RRL_ACQUIRED (-1)
/* Redisson raises these as script errors (assert); kept apart here. */
#define RT_RRL_EXCEEDS_RATE (-2) /* "Requested permits amount cannot exceed defined rate" */
#define RT_RRL_NOT_SET (-3)      /* "RateLimiter is not initialized" */

/* trySetRate(type, rate, interval[, keepAlive]): 1 set, 0 already set. */
int rt_rrl_try_set_rate(redisContext *ctx, const char *name, int type, long long rate,
                        long long interval_ms, long long keep_alive_ms);
/* setRate(type, rate, interval[, keepAlive]) on behalf of client_id (the
 * PER_CLIENT window it resets is that client's). */
void rt_rrl_set_rate(redisContext *ctx, const char *name, const char *client_id, int type,
                     long long rate, long long interval_ms, long long keep_alive_ms);
/* tryAcquire(permits) once, as client client_id: RT_RRL_ACQUIRED (and
 * *now_ms, when not NULL, gets the time the grant was scored with), the
 * wait in ms Redisson would sleep, or one of the codes above. */
long long rt_rrl_try_acquire(redisContext *ctx, const char *name, const char *client_id,
                             long long permits, int64_t *now_ms);
/* tryAcquire(permits, timeout) as Redisson's loop does it: try; when
 * denied, sleep the wait and try again, but when less budget remains than
 * the wait, sleep what remains and give up. 1 acquired (*now_ms as above),
 * 0 not within timeout_ms (unscaled), or a code above. */
int rt_rrl_acquire_timeout(redisContext *ctx, const char *name, const char *client_id,
                           long long permits, int64_t timeout_ms, int64_t *now_ms);
/* availablePermits(), as client client_id; RT_RRL_NOT_SET when no rate. */
long long rt_rrl_available(redisContext *ctx, const char *name, const char *client_id);
/* The wall clock in ms since the epoch (what Redisson scores grants with). */
int64_t rt_rrl_wall_ms(void);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_RATELIMITER_EMU_H */
