#ifndef LK_CORE_ADDR_INDEX_H
#define LK_CORE_ADDR_INDEX_H

/* A hash table of small indexes keyed by bytes and a number (host and port,
 * or a node id and 0), so that looking a cluster node up costs O(1) instead
 * of a walk over every node: a slot map of N nodes is built, and a client's
 * node list matched against it, in O(N) rather than O(N^2) (a reply listing
 * thousands of masters once stalled the loop for seconds).
 *
 * The table keeps only (hash, index) pairs; the keys stay with their owner,
 * which says through eq whether the entry at an index is the key sought.
 * Linear probing at most half full; grows by doubling. */

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t *cells; /* hash << 32 | (index + 1); 0 = empty */
  size_t cap, n;   /* cap: 0 or a power of two */
} lk__addr_index_t;

/* The hash of (key[0..len), num). */
uint32_t lk__addr_hash(const char *key, size_t len, int num);

/* The first index with this hash for which eq(ctx, index) is 1, or -1. */
long lk__addr_index_find(const lk__addr_index_t *x, uint32_t hash,
                         int (*eq)(const void *ctx, uint32_t index), const void *ctx);

/* Adds index (< 0xFFFFFFFF) under hash: 0, or LK_ENOMEM (x unchanged). */
int lk__addr_index_add(lk__addr_index_t *x, uint32_t hash, uint32_t index);

/* Frees the cells; x is empty and reusable after. */
void lk__addr_index_free(lk__addr_index_t *x);

#endif /* LK_CORE_ADDR_INDEX_H */
