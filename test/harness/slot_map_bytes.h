/* Slot-map replies built by hand, as RESP bytes a fake node (or the fault
 * proxy's REPLACE rule, proxy.h) can serve: maps of any size, for checking
 * how a client copes with a cluster far larger than the harness can start.
 * Harness code: no latchkey needed. */
#ifndef LK_TEST_HARNESS_SLOT_MAP_BYTES_H
#define LK_TEST_HARNESS_SLOT_MAP_BYTES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A CLUSTER SHARDS reply (RESP2) listing n_masters shards of one master
 * each, no replicas: master i (0-based) owns slot i while i < 16384, the
 * rest own none. Master i is at 10.<i/65536>.<i/256%256>.<i%256>:6379
 * (addresses nothing listens on: a client must not need to dial them), with
 * a 40-hex-digit id derived from i. Returns malloc'd bytes (free them) and
 * their length in *len; NULL when out of memory. */
char *rt_shards_reply_bytes(int n_masters, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* LK_TEST_HARNESS_SLOT_MAP_BYTES_H */
