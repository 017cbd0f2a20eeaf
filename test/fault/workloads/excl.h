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

/* The glue every lock-like workload has, for a primitive of type T whose
 * functions are named P_new, P_set_lost_cb, P_set_data, P_get_data and
 * P_close (issue 29: each workload file spelled it out with the type
 * renamed): on_acquired, on_released, on_lost and on_closed, which only hand
 * over to the engine; create() (the object on key, its lost-lease callback
 * set, w as its data) and close_obj() for wl_excl_ops_t. */
#define WL_EXCL_GLUE(T, P)                                                     \
  static void on_acquired(T *o, int status, void *arg) {                       \
    (void)o;                                                                   \
    wl_excl_acquired(arg, status);                                             \
  }                                                                            \
  static void on_released(T *o, int status, void *arg) {                       \
    (void)o;                                                                   \
    wl_excl_released(arg, status);                                             \
  }                                                                            \
  static void on_lost(T *o, int status, void *arg) {                           \
    (void)o;                                                                   \
    (void)status;                                                              \
    wl_excl_lost(arg);                                                         \
  }                                                                            \
  static void on_closed(T *o) { wl_excl_closed(P##_get_data(o)); }            \
  static void *create(nem_ctx_t *ctx, const char *key, wl_excl_t *w) {         \
    T *o = NULL;                                                               \
    if (P##_new(ctx->client, key, &o) != 0)                                    \
      return NULL;                                                             \
    P##_set_lost_cb(o, on_lost, w);                                            \
    P##_set_data(o, w);                                                        \
    return o;                                                                  \
  }                                                                            \
  static int close_obj(void *o, wl_excl_t *w) {                                \
    (void)w;                                                                   \
    return P##_close(o, on_closed);                                            \
  }

/* For an exclusive primitive (no sides), P_release, P_is_held and P_token
 * as wl_excl_ops_t's release(), is_held() and token(). */
#define WL_EXCL_SIDELESS(P)                                                    \
  static int release(void *o, int side, wl_excl_t *w) {                        \
    (void)side;                                                                \
    return P##_release(o, on_released, w);                                     \
  }                                                                            \
  static int is_held(const void *o, int side) {                                \
    (void)side;                                                                \
    return P##_is_held(o);                                                     \
  }                                                                            \
  static int64_t token(const void *o) { return P##_token(o); }

/* Registers the workload var (name and key as in OPS, a wl_excl_ops_t) on
 * this engine: started, stopped, checked and dumped by it, wipes allowed. */
#define WL_EXCL_WORKLOAD(var, OPS, NAME, KEY)                                  \
  static void *var##_start(nem_ctx_t *ctx, uint16_t obj) {                     \
    return wl_excl_start(&OPS, ctx, obj);                                      \
  }                                                                            \
  static size_t var##_check(const rt_recs_t *h, uint16_t obj, rt_server_t *srv) { \
    return wl_excl_check(h, obj, srv, OPS.name, OPS.key, OPS.read_write);      \
  }                                                                            \
  static nem_workload_t var = {.name = NAME, .start = var##_start, .stop = wl_excl_stop, \
                               .check = var##_check, .dump = wl_excl_dump, .wipe_ok = 1, \
                               .key = KEY};                                    \
  NEM_WORKLOAD(var)

#endif /* LK_TEST_FAULT_WORKLOADS_EXCL_H */
