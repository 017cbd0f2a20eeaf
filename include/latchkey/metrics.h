#ifndef LATCHKEY_METRICS_H
#define LATCHKEY_METRICS_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metrics in the Prometheus text exposition format, version 0.0.4
 * (docs/metrics.md): the client's counters (lk_client_stats_t) as
 * latchkey_*_total counters, a few gauges, and the acquire wait-time
 * histogram latchkey_acquire_wait_seconds. Written into the caller's
 * buffer: the library serves nothing; the program answers its scraper
 * (docs/metrics.md, "Serving it"). */

/* Upper bound of wait-time bucket i in microseconds, for i in
 * 0..LK_WAIT_BUCKETS-2: 500, 1000, 2500, 5000, 10 000, 25 000, 50 000,
 * 100 000, 250 000, 500 000, 1 s, 2.5 s, 5 s, 10 s, 30 s, 60 s. -1 for the
 * last bucket (no bound: +Inf) and for an index out of range. */
LK_EXTERN int64_t lk_metrics_wait_bound_us(int i);

/* Writes the metrics of client into buf as snprintf would: at most len
 * bytes, the NUL included, and returns the length of the whole text (the
 * NUL excluded). A return >= len means it did not fit: then buf holds ""
 * (when len > 0) rather than a cut-off text a scraper would misread; call
 * again with a buffer of return + 1 bytes. buf may be NULL when len is 0,
 * to ask for the size.
 *
 * labels go on every sample: NULL means client="<client_name>"; otherwise
 * Prometheus label pairs without braces, e.g. "client=\"billing\",shard=\"2\""
 * ("" for none). A label name is [a-zA-Z_][a-zA-Z0-9_]*, not starting with
 * "__" and not one the library adds (le, reason, version); a value escapes
 * backslash, double quote and newline as \\, \" and \n.
 *
 * From the loop's thread. Returns the length, or at once LK_EINVAL (a NULL
 * client, buf NULL with len > 0, malformed labels), LK_EWRONGTHREAD,
 * LK_EFORKED or LK_ENOMEM (a text longer than INT_MAX). A closing client
 * still reports its counters. */
LK_EXTERN int lk_client_write_metrics(const lk_client_t *client, char *buf, size_t len,
                                      const char *labels);

/* The same for n clients (1..1024) in one exposition: each metric's HELP
 * and TYPE lines once, then one sample per client, as the format asks (a
 * text made by joining lk_client_write_metrics outputs would repeat them
 * and be refused). labels may be NULL (every client client="<client_name>")
 * or hold n entries (each NULL or as above); the label sets must differ
 * from client to client, or the samples collide. */
LK_EXTERN int lk_metrics_write(const lk_client_t *const *clients, const char *const *labels,
                               size_t n, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_METRICS_H */
