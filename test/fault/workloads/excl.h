/* The engine behind the lock-like nemesis workloads (lock, fair lock,
 * read/write lock): acquire with a random budget, lease and side, hold for a
 * short or long section while polling is_held, release, repeat. A primitive
 * plugs in through wl_excl_ops_t; its callbacks call back into the engine
 * (wl_excl_acquired, wl_excl_released, wl_excl_lost, wl_excl_closed).
 *
 * A hold's observed section runs from the acquire callback to the last
 * moment the holder still knew it held the lock (is_held true, the clock
 * read before the call): a holder that was paused, cut off or starved
 * records only what it was entitled to, so an overlap between two workers'
 * sections is a real violation of S1/S3 (S6 for read/write). */
#ifndef LK_TEST_FAULT_WORKLOADS_EXCL_H
#define LK_TEST_FAULT_WORKLOADS_EXCL_H

#include "../nemesis.h"

enum { WL_SIDE_EXCL = 0, WL_SIDE_READ = 1, WL_SIDE_WRITE = 2 };

typedef struct wl_excl_s wl_excl_t;

typedef struct wl_excl_ops_s {
  const char *name; /* workload name, also the status prefix */
  const char *key;  /* the object's name on the server */
  int read_write;   /* 1: sides read (70%) and write; 0: exclusive */
  /* Creates the object and sets its lost-lease callback; NULL on failure. */
  void *(*create)(nem_ctx_t *ctx, const char *key, wl_excl_t *w);
  int (*acquire)(void *obj, int side, int64_t wait_ms, int64_t lease_ms, wl_excl_t *w);
  int (*release)(void *obj, int side, wl_excl_t *w);
  int (*is_held)(const void *obj, int side);
  int64_t (*token)(const void *obj);
  int (*close)(void *obj, wl_excl_t *w);
  /* Holds of side the object counts (may be NULL for exclusive ones). */
  uint32_t (*holds)(const void *obj, int side);
  /* Prints the primitive's own state for a stuck-worker report; may be NULL. */
  void (*dump)(const void *obj, FILE *out);
} wl_excl_ops_t;

void *wl_excl_start(const wl_excl_ops_t *ops, nem_ctx_t *ctx, uint16_t obj);
void wl_excl_stop(void *state);
void wl_excl_dump(void *state, FILE *out);
void wl_excl_acquired(wl_excl_t *w, int status);
void wl_excl_released(wl_excl_t *w, int status);
void wl_excl_lost(wl_excl_t *w);
void wl_excl_closed(wl_excl_t *w);
/* Exclusive primitives: exclusive sections, tokens (of the sections in
 * order, and of every grant across processes in real-time order),
 * lost-first, bounded waits, and the key gone at the end. Read/write: S6
 * instead of S1. Every workload of this engine survives wipes (history.h:
 * the exclusion checks end sections there; tokens must hold across them). */
size_t wl_excl_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv, const char *name,
                     const char *key, int read_write);

#endif /* LK_TEST_FAULT_WORKLOADS_EXCL_H */
