#ifndef LK_CORE_HOLD_H
#define LK_CORE_HOLD_H

/* One hold record and one grant routine for every object that holds
 * (lock, fair lock, both sides of the read/write lock, and what comes
 * later): how many holds the owner has, how their lease is kept (by the
 * watchdog, or a local deadline of their own), and what a granting reply
 * means (docs/design.md, "Leases and the watchdog"; docs/watchdog.md; the
 * give-backs: docs/objects.md, "Outcomes").
 *
 * A primitive keeps one lk__hold_t per side it can hold, points h->wd at
 * its watchdog entry when it has one, and gives the object two verbs in its
 * ops table: give_back (a best-effort release of n holds of a side,
 * optionally conditional on the owner's count) and lose (the holds are
 * gone: stop renewing, give back, tell the holder, set o->lost). */

#include "core/object.h"
#include "core/watchdog.h"

typedef struct lk__hold_s {
  uint32_t count;
  int64_t lease_ms;     /* of the current holding: re-applied by a partial release */
  uint64_t deadline_ns; /* explicit leases: the local deadline */
  lk__wd_entry_t *wd;   /* the watchdog's entry for this side, or NULL */
} lk__hold_t;

/* What a granting reply says, and what the acquire asked for. */
typedef struct lk__grant_s {
  lk__hold_t *hold;  /* the side granted */
  long long count;   /* the owner's count on that side, as the server reports it */
  lk__hold_t *other; /* the owner's other side (read/write lock), or NULL */
  long long other_count;
  int64_t lease_ms;
  unsigned watchdog : 1; /* the lease is the watchdog's, renewed */
  unsigned earliest : 1; /* explicit leases: the side's deadline is its earliest hold's */
  unsigned fenced : 1;   /* the reply carries a token */
  int64_t token;
  int regressed;  /* the counter was below a token seen before (set back) */
  int64_t *token_out;
  const char *name; /* the name tokens are tracked by (lk__token_seen) */
  size_t name_len;
} lk__grant_t;

/* A fenced grant's token: every granting script that fences answers the
 * token and whether the counter went backwards as its elements at and at + 1
 * (docs/lock.md, "Fencing tokens"). Sets g->fenced; tokens are tracked by
 * name (lk__token_seen) and the token kept in *token_out. */
void lk__grant_token(lk__grant_t *g, const redisReply *r, size_t at, int64_t *token_out,
                     const char *name, size_t name_len);

/* The side's local deadline (monotonic ns): the watchdog's when it renews
 * the lease, else its own. 0 when nothing is held. */
uint64_t lk__hold_deadline(const lk_client_t *c, const lk__hold_t *h);
/* Held, as far as the object knows without a round trip. */
int lk__hold_is_held(const lk_client_t *c, const lk__hold_t *h);
int lk__hold_watched(const lk__hold_t *h);
/* Stops renewing the side (a renewal in flight is forgotten). */
void lk__hold_unwatch(lk_client_t *c, lk__hold_t *h);
/* Forgets n holds of the side; with none left, its renewal stops. */
void lk__hold_drop(lk_client_t *c, lk__hold_t *h, uint32_t n);

/* Reading a release's reply for side h. Nil: the server has no hold of
 * this owner's there (the lease ran out, or the lock was forced), so
 * nothing is held and the release ends with LK_ENOTOWNER; 1 then, else 0
 * (the kind reads its own answers). */
int lk__hold_release_nil(lk__hold_t *h, const redisReply *r, int *status);
/* The release was applied: side h holds one fewer than when it was sent
 * (before), or none when the server's answer says none is left (the
 * server's count is the truth then). *status 0; gives 1 (answered). */
int lk__hold_released(lk__hold_t *h, uint32_t before, int none_left, int *status);
/* The reply callback of a holding object's one give-back on close (data:
 * the object): lk__obj_close_release_reply for a release of the lock. */
void lk__hold_close_reply(void *data, int status, redisReply *r);
/* An acquire of an object whose holds were lost and the holder told
 * (on_lost) starts afresh: every one of its sides (o->sides) forgets them. */
void lk__hold_afresh(lk__obj_t *o);
/* A release's checks before it starts, the same for every object that
 * holds: side h holds nothing (LK_ENOTHELD); or the holds were lost and the
 * holder told (on_lost), so every one of the object's sides forgets them
 * and the object starts afresh (LK_ELEASELOST); else 0. */
int lk__hold_release_check(lk__obj_t *o, const lk__hold_t *h);
/* A release of side h, after the entry checks: the checks above, then
 * *before gets the side's count (what the release's first attempt saw, so
 * a resend is not applied twice) and lk__obj_release_begin starts the
 * release `kind` (after an unanswered give-back it waits, the hold renewed
 * meanwhile). 0 or a code. */
int lk__hold_release_begin(lk__obj_t *o, const lk__hold_t *h, uint32_t *before, int kind,
                           lk__fn_t cb, void *arg);
/* The lock family's plain queries of the lock's key `name`, sent as o's
 * pending one-value command (lk__obj_value_sent): whether it exists
 * (EXISTS), its TTL in ms (PTTL), or the value of its hash field `field`
 * (HGET: an owner's hold count, the read/write lock's mode). 0 or a code. */
enum { LK__HOLD_EXISTS, LK__HOLD_TTL, LK__HOLD_FIELD };
int lk__hold_query(lk__obj_t *o, int what, const char *name, size_t name_len, const char *field,
                   size_t field_len);
/* A force release was answered: side h of o holds nothing any more, its
 * renewal stops, and a loss no longer stands. */
void lk__hold_forced(lk__obj_t *o, lk__hold_t *h);
/* An acquire's checks on its options, the same for every lock-like kind
 * (lock, fair lock, either side h of the read/write lock): the wait and the
 * lease in range, and room on side h for one more hold; else LK_EINVAL. */
int lk__hold_acquire_check(const lk__hold_t *h, int64_t wait_ms, int64_t lease_ms);
/* set_owner's checks, the same for every lock-like kind: the object usable
 * (lk__obj_check), and the client id, when one is given, one a client could
 * have (else LK_EINVAL). */
int lk__hold_set_owner_check(const lk__obj_t *o, const char *client_id);
/* A fenced acquire's token key (prefix, then the name), made by the first
 * one and kept in *key (*key_len its length): 0, or LK_ENOMEM. */
int lk__hold_token_key(char **key, size_t *key_len, const char *prefix, const char *name,
                       size_t name_len);

/* The grant routine: counts the hold, starts or refreshes its lease keeping,
 * checks the fencing token, and refuses a grant that cannot be used (the
 * loss was declared while it was in flight; a re-entry found the earlier
 * holds gone; the token went backwards; the reply came after the lease's
 * own local deadline), giving back what must be given back. Ends the
 * pending operation: 0, LK_ELEASELOST or LK_ETOKEN (unless on_lost already
 * canceled or closed it). */
void lk__hold_grant(lk__obj_t *o, const lk__grant_t *g);

/* Takes back a grant lk__hold_grant counted and reported (replica sync
 * refused it, core/sync.h): gives back that one hold of side h, applied
 * only while the owner's count on it is still `count`, and the side's count
 * returns to `before` (its renewal stops when that is 0). */
void lk__hold_take_back(lk__obj_t *o, lk__hold_t *h, long long count, uint32_t before);

/* --- the lock family's table (lock, fair lock, read/write lock) ---
 * Kinds that acquire and release like a lock give the same hooks, named
 * after their prefix P: the acquire's attempt and outcome verbs, its reply,
 * the release's, and the hold verbs. LK__LOCK_LIKE_DEFS(T, CB, CLOSE_CB)
 * defines what is the same code for each of them (the typed callbacks,
 * LK__OBJ_CALLS, and the handle's owner and token, read from T's fields of
 * those names); LK__LOCK_LIKE_OPS(P) names all of it in the kind's ops
 * table, which adds only what is its own (kinds, close, free, channel...). */
#define LK__LOCK_LIKE_DEFS(T, CB, CLOSE_CB)                                            \
  LK__OBJ_CALLS(T, CB, CLOSE_CB)                                                       \
  LK__HANDLE_FIELD(T, owner, const char *)                                             \
  LK__HANDLE_FIELD(T, token, int64_t)
#define LK__LOCK_LIKE_OPS(P)                                                           \
  LK__OBJ_CALLED, .attempt = P##_attempt, .counted = P##_counted, .undo = P##_undo,    \
  .is_grant = P##_is_grant, .read_attempt = P##_read_attempt,                          \
  .granted = P##_acquired, .read_release = P##_read_release,                           \
  .send_release = P##_send_release, .resend_release = P##_resend_release,              \
  .release_end = P##_release_end, .give_back = P##_give_back, .lose = P##_lose,        \
  .tells_lost = 1, .owner = handle_owner, .token = handle_token
/* The same hooks' declarations, for a kind that defines them in several
 * files (the fair lock, the read/write lock). */
#define LK__LOCK_LIKE_HOOKS(P)                                                         \
  int P##_attempt(lk__obj_t *o);                                                       \
  int P##_counted(lk__obj_t *o);                                                       \
  lk__op_t *P##_undo(lk__obj_t *o, int known_grant);                                   \
  int P##_is_grant(const redisReply *r);                                               \
  int P##_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v);                 \
  void P##_acquired(lk__obj_t *o, const redisReply *r);                                \
  int P##_read_release(lk__obj_t *o, const redisReply *r, int *status);                \
  int P##_send_release(lk__obj_t *o);                                                  \
  int P##_resend_release(lk__obj_t *o);                                                \
  void P##_release_end(lk__obj_t *o, int status);                                      \
  void P##_give_back(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n);           \
  void P##_lose(lk__obj_t *o)

#endif /* LK_CORE_HOLD_H */
