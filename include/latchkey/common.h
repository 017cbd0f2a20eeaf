#ifndef LATCHKEY_COMMON_H
#define LATCHKEY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(LATCHKEY_BUILDING_SHARED)
#define LK_EXTERN __declspec(dllexport)
#elif defined(_WIN32) && defined(LATCHKEY_USING_SHARED)
#define LK_EXTERN __declspec(dllimport)
#elif defined(__GNUC__) && __GNUC__ >= 4
#define LK_EXTERN __attribute__((visibility("default")))
#else
#define LK_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Times are milliseconds. For waits: 0 = try once, -1 = forever.
 * For leases: -1 = the client's default lease, kept alive by the watchdog. */
#define LK_WAIT_FOREVER ((int64_t)-1)
#define LK_LEASE_DEFAULT ((int64_t)-1)

/* The longest wait or lease accepted, in ms (about 292 years would overflow
 * nanosecond arithmetic; a year is plenty and catches unit mistakes). */
#define LK_MAX_TIME_MS ((int64_t)366 * 24 * 3600 * 1000)

/* The longest spin-mode back-off accepted, in ms (docs/lock.md, "Spin
 * mode"): a minute; a waiter that may sleep longer between tries is better
 * served by waiting for release messages. */
#define LK_SPIN_MAX_MS ((int64_t)60000)

LK_EXTERN unsigned int lk_version(void);
LK_EXTERN const char *lk_version_string(void);

typedef void *(*lk_malloc_func)(size_t size);
typedef void *(*lk_realloc_func)(void *ptr, size_t size);
typedef void *(*lk_calloc_func)(size_t count, size_t size);
typedef void (*lk_free_func)(void *ptr);

/* Replaces the allocator latchkey uses for its own memory. Must be called
 * before any client exists; returns LK_EBUSY otherwise, LK_EINVAL on NULL. */
LK_EXTERN int lk_replace_allocator(lk_malloc_func malloc_func,
                                   lk_realloc_func realloc_func,
                                   lk_calloc_func calloc_func,
                                   lk_free_func free_func);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_COMMON_H */
