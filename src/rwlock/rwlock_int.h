#ifndef LK_RWLOCK_INT_H
#define LK_RWLOCK_INT_H

/* The read/write lock's insides, shared by its three files: rwlock.c
 * (lifecycle, queries, accessors), acquire.c (taking holds, waiting) and
 * release.c (giving holds back, leases, losses). */

#include "core/internal.h"
#include "core/hold.h"
#include "core/object.h"
#include "core/outcome.h"
#include "core/watchdog.h"

#define LK__RW_CHANNEL_PREFIX "redisson_rwlock"
#define LK__RW_TOKEN_PREFIX "redisson_lock_token"

enum lk__rw_op {
  LK__RW_OP_NONE = 0,
  LK__RW_OP_ACQUIRE,
  LK__RW_OP_RELEASE,
  LK__RW_OP_FORCE,
  LK__RW_OP_QUERY_MODE,
  LK__RW_OP_QUERY_TTL,
  LK__RW_OP_QUERY_HOLDS
};

enum { LK__RW_R = 0, LK__RW_W = 1 }; /* index of a side in rw->side[] */

struct lk_rwlock_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  char *channel; /* redisson_rwlock:{NAME} */
  size_t channel_len;
  char *kp; /* the prefix of every owner's hold keys: {NAME}, or NAME */
  size_t kp_len;
  char *tp; /* this owner's hold keys: KP:UUID:TID:rwlock_timeout */
  size_t tp_len;
  char *token_key; /* fenced acquisitions only, made on first use */
  size_t token_key_len;
  char owner[96]; /* the reader field "UUID:TID" */
  size_t owner_len;
  char writer[104]; /* the writer field "UUID:TID:write" */
  size_t writer_len;
  int owner_shared;
  /* One hold record per side (core/hold.h): a side kept by the watchdog is
   * in the client's ring through side[s].wd = &wd[s]; a side taken with an
   * explicit lease keeps its own deadline (the read side's is its earliest
   * hold's: each read hold has its own key and expires on its own). */
  lk__hold_t side[2];
  lk__wd_entry_t wd[2];
  int64_t token;

  /* the pending operation (the rest is in base) */
  int req_side; /* LK__RW_R / LK__RW_W */
  int64_t req_lease_ms;
  int req_watchdog;
  int req_fenced;
  uint32_t release_before; /* holds before a release's first attempt */
  int close_left; /* give-back commands of close still unanswered */
};

#define LK__RW_CLIENT(rw) ((rw)->base.client)

static inline int lk__rw_side_index(lk_rwlock_side_t side) {
  return side == LK_RW_WRITE ? LK__RW_W : LK__RW_R;
}
static inline int lk__rw_valid_side(lk_rwlock_side_t side) {
  return side == LK_RW_READ || side == LK_RW_WRITE;
}

/* The lock family's hooks (core/hold.h): the acquire's attempt, outcome
 * verbs and reply (acquire.c); the release's reply and the hold verbs
 * (ops->give_back: n may be LK__RW_ALL; ops->lose: release.c). */
LK__LOCK_LIKE_HOOKS(lk__rw);
int lk__rw_on_message(lk__obj_t *o, const char *msg, size_t len);

/* release.c */
/* n for "every hold the owner has on the server" (the release scripts read
 * 0 so). */
#define LK__RW_ALL 0u
/* Formats a release of n holds of side s; sent now or prepared for later.
 * `before` (-1: none) is the count before a release's first attempt (a
 * resend: not applied twice) or, with exact, a give-back's condition
 * (applied only if the owner's count is exactly `before`). */
lk__op_t *lk__rw_release_op(lk_rwlock_t *rw, int s, int64_t before, uint32_t n, int exact,
                            lk__op_cb cb, void *data, int send, int *err);
void lk__rw_on_wd_event(lk__wd_entry_t *e, int event);
int lk__rw_close_release(lk__obj_t *o);
/* ops->deferred: sends a release that waited for an abandoned acquire's
 * give-back. */
void lk__rw_release_deferred(lk__obj_t *o);

extern const lk__wd_class_t lk__rw_wd_read_class;
extern const lk__wd_class_t lk__rw_wd_write_class;

#endif /* LK_RWLOCK_INT_H */
