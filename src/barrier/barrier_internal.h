#ifndef LK_BARRIER_INTERNAL_H
#define LK_BARRIER_INTERNAL_H

/* The double barrier (docs/barrier.md): the object shared by barrier.c
 * (lifecycle, the member's lease, accessors) and enter_leave.c (the two
 * waits and taking a member out). */

#include "core/internal.h"
#include "core/object.h"
#include "core/watchdog.h"

#include "latchkey/barrier.h"

#define LK__BARRIER_PREFIX "latchkey_barrier"
#define LK__BARRIER_MEMBERS_PREFIX "latchkey_barrier_members"
#define LK__BARRIER_DROPPED_PREFIX "latchkey_barrier_dropped"
#define LK__BARRIER_CHANNEL_PREFIX "latchkey_barrier__channel"
/* Every key of a barrier lives this long after its last write or renewal,
 * so a barrier nobody uses any more goes away. */
#define LK__BARRIER_KEEP_MS ((int64_t)24 * 3600 * 1000)

enum { BARRIER_OP_NONE = 0, BARRIER_OP_ENTER, BARRIER_OP_LEAVE };

struct lk_barrier_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;     /* follows the struct */
  size_t name_len;
  int n;
  /* keys[0] state, keys[1] members, keys[2] dropped, keys[3] channel */
  char *keys[4];
  size_t key_lens[4];
  char owner[96]; /* UUID:TID */
  size_t owner_len;
  char *member; /* this member's id (heap), or NULL: the owner id */
  size_t member_len;

  /* The member's lease (lease.lease_ms: the enter's), kept from its
   * registration and renewed every lease/3 while it is in; its timer is
   * made by the first enter. */
  lk__wd_own_t lease;
  int64_t round;  /* the round this member registered in, 0: not known */
  int in;         /* the server may have this member in a round */
  int entered;    /* the enter completed, no leave since */

  /* the last operation's dropped members: offsets into one buffer */
  char *drop_buf;
  size_t drop_len, drop_cap;
  size_t *drop_off;
  size_t drop_n, drop_off_cap;
};

#define LK__BARRIER_CLIENT(b) ((b)->base.client)

static inline const char *lk__barrier_member_id(const lk_barrier_t *b, size_t *len) {
  *len = b->member != NULL ? b->member_len : b->owner_len;
  return b->member != NULL ? b->member : b->owner;
}

const lk__script_t *lk__barrier_script(const char *name);

/* barrier.c: the member's lease, renewed every lease/3 while it is in
 * (lk__wd_own_stop ends it). */
void lk__barrier_renew_start(lk_barrier_t *b);
/* Keeps the ids of reply array r (strings) as the dropped list: 0, or 0
 * with the list cut short when memory runs out (logged). */
void lk__barrier_keep_dropped(lk_barrier_t *b, const redisReply *r);
void lk__barrier_clear_dropped(lk_barrier_t *b);

/* enter_leave.c */
int lk__barrier_attempt(lk__obj_t *o);
/* The enter's and leave's replies (ops->read_attempt, ops->own_answer). */
int lk__barrier_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v);
void lk__barrier_answer(lk__obj_t *o, const redisReply *r);
/* Takes this member out of its round, best effort (cb: its reply). NULL
 * when it could not be sent. */
lk__op_t *lk__barrier_take_out(lk_barrier_t *b, lk__op_cb cb, void *data);
void lk__barrier_complete(lk__obj_t *o, int kind, int status);
int lk__barrier_message(lk__obj_t *o, const char *msg, size_t len);

#endif /* LK_BARRIER_INTERNAL_H */
