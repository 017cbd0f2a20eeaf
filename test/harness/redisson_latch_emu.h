/* The Redisson emulator's countdown latch (test only): a blocking client
 * that behaves on the wire like a Redisson RCountDownLatch user, so interop
 * tests have the other side of a shared latch without a JVM.
 *
 * It is OUR READING of Redisson's countdown latch (string NAME = remaining
 * count, absent = open; channel "redisson_countdownlatch__channel__{NAME}"
 * with "0" published by the countDown that reaches zero and "1" by
 * trySetCount and by a delete that removed the key). The scripts were
 * written from that description, not copied from Redisson; if the spec is
 * wrong, so is this emulator. Connections come from rt_rlock_connect
 * (redisson_emu.h); transport or protocol errors fail the test. */
#ifndef LK_TEST_HARNESS_REDISSON_LATCH_EMU_H
#define LK_TEST_HARNESS_REDISSON_LATCH_EMU_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "redisson_countdownlatch__channel__{" name "}", braces always. malloc'd;
 * free(). */
char *rt_rlatch_channel(const char *name);

/* trySetCount(count): 1 set (and "1" published), 0 the latch was armed. */
int rt_rlatch_try_set_count(redisContext *ctx, const char *name, long long count);
/* countDown(): DECR; at zero or below the key is deleted; "0" published
 * when it reached exactly zero. Redisson returns nothing; the remaining
 * count after the DECR is returned here for assertions. */
long long rt_rlatch_count_down(redisContext *ctx, const char *name);
/* getCount(): GET, nil read as 0. */
long long rt_rlatch_get_count(redisContext *ctx, const char *name);
/* delete(): 1 when the key existed (then "1" is published), else 0. */
int rt_rlatch_delete(redisContext *ctx, const char *name);

/* await(timeout): returns 1 at once when the count is 0; else SUBSCRIBEs
 * on sub (a second connection, subscribed to nothing), then repeatedly
 * reads the count and waits for a message for at most the time left,
 * until the count reads 0 (1) or timeout_ms passed (0). UNSUBSCRIBEs before
 * returning, leaving sub reusable. The bound is not scaled. */
int rt_rlatch_await(redisContext *ctx, redisContext *sub, const char *name,
                    int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDISSON_LATCH_EMU_H */
