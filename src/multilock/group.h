#ifndef LK_MULTILOCK_GROUP_H
#define LK_MULTILOCK_GROUP_H

/* What MultiLock and RedLock share: telling servers apart, a little
 * randomness for retry jitter, and the rules of a group's holds. */

#include "core/object.h"

/* 1 when two clients are configured to reach the same server (same unix
 * socket, or same host string and port), or both know the server's run_id
 * and it is the same; with match_db, only if they also select the same db
 * (the same keys). Different spellings of one address ("localhost" vs
 * "127.0.0.1") are caught only by the run_id, once both have connected. */
int lk__group_same_server(const lk_client_t *a, const lk_client_t *b, int match_db);

/* 1 when every client runs on a's loop. */
int lk__group_same_loop(lk_client_t *const *clients, size_t n);

/* xorshift64*: seeded per object from the clock and its address. */
uint64_t lk__group_seed(const void *obj);
uint64_t lk__group_rand(uint64_t *state);
/* Uniform in [0, max_ms] (0 when max_ms <= 0). */
int64_t lk__group_jitter_ms(uint64_t *state, int64_t max_ms);

/* A group's release checks, the rule a single lock's release follows
 * (core/hold.h, lk__hold_release_check): nothing held (LK_ENOTHELD); or the
 * holds were lost and the holder told, so the group forgets them and starts
 * afresh (LK_ELEASELOST); else 0. */
int lk__group_release_check(uint32_t *holds, int *lost);
/* An acquire after the holds were lost and the holder told starts afresh
 * (what the members kept was given back then), as a single lock's does
 * (lk__hold_afresh). */
void lk__group_afresh(uint32_t *holds, int *lost);
/* A group's operation ends with status. Nothing held (no holds, none lost
 * and untold): no health episode goes on. Inside one of the group's API
 * calls (in_api) the callback comes from the loop. */
void lk__group_finish(lk__obj_t *o, uint32_t holds, int lost, int in_api, int status);
/* Gives back n of the group's holds on a member lock (*mine of them are the
 * group's: n at most those) without waiting; the member must have nothing
 * of the group's pending. */
void lk__group_give_back(lk_lock_t *lock, uint32_t *mine, uint32_t n);
/* A member lock answered a release of one of the group's holds (*mine of
 * them are the group's): one hold fewer, whatever it said. Done, or failed
 * with the hold still counted by the lock, which is then given back without
 * waiting; the server having no hold of this owner left (LK_ENOTOWNER,
 * LK_ELEASELOST) means all of them are gone. */
void lk__group_released(lk_lock_t *lock, uint32_t *mine, int status);

/* What a group's ops table (multilock.c, redlock_api.c) says the same way:
 * its close gives back through the static on_close_release, cancel ends the
 * acquire (OP_ACQUIRE), the holder is told of a loss, and held is the
 * static handle_is_held's answer. A table adds its free, kind, abandon and
 * member_health. */
#define LK__GROUP_OPS                                                                  \
  LK__OBJ_CALLED, .close_release = on_close_release, .cancel_kind = OP_ACQUIRE,        \
  .tells_lost = 1, .is_held = handle_is_held

#endif /* LK_MULTILOCK_GROUP_H */
