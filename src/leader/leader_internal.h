#ifndef LK_LEADER_INTERNAL_H
#define LK_LEADER_INTERNAL_H

/* Leader election (docs/leader.md): the object shared by leader.c (campaign,
 * lease, resign, lifecycle) and observe.c (following the current leader). */

#include "core/internal.h"
#include "core/hold.h"
#include "core/object.h"
#include "core/pubsub.h"
#include "core/watchdog.h"

#include "latchkey/leader.h"

#define LK__LEADER_PREFIX "latchkey_leader"
#define LK__LEADER_TERM_PREFIX "latchkey_leader_term"
#define LK__LEADER_CHANNEL_PREFIX "latchkey_leader__channel"

struct lk_leader_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *role;     /* the rest of these strings follow the struct */
  size_t role_len;
  char *holder; /* latchkey_leader:{ROLE} */
  size_t holder_len;
  char *counter; /* latchkey_leader_term:{ROLE} */
  size_t counter_len;
  char *channel; /* latchkey_leader__channel:{ROLE} */
  size_t channel_len;
  char owner[96]; /* UUID:TID */
  size_t owner_len;

  char *value; /* the campaign's value, NUL-terminated (heap) */
  size_t value_len;
  lk__hold_t hold;  /* count 1 while leading (deadline_ns: the grant's) */
  int64_t term;     /* of the last election won */
  int64_t req_lease_ms;

  /* leading: the leadership's lease, kept from the election and renewed
   * every lease/3 (its local deadline: lk__wd_own_deadline) */
  lk__wd_own_t lease;
  uint64_t next_renew_ns;
  lk__defer_t lost_later; /* on_lost, from the loop, for a loss found in a call */

  /* observing */
  lk_leader_cb obs_cb;
  void *obs_arg;
  lk__sub_t obs_sub;
  lk__op_t *obs_op; /* poll in flight */
  lk__otimer_t *obs_timer; /* the re-poll timer, made by the first observe */
  lk__defer_t obs_end; /* the LK_ECANCELED call */
  int observing;
  int obs_again;    /* poll again as soon as the one in flight answers */
  int obs_reported; /* the first state was given */
  int obs_present;  /* a leader leads in what was seen */
  int64_t obs_term;
  char *obs_value; /* heap, NUL-terminated, or NULL */
};

#define LK__LEADER_CLIENT(l) ((l)->base.client)

/* leader.c */
/* A loss found by the local deadline goes first (before any other callback
 * of the object): 1 when the leadership was just found lost. */
int lk__leader_check_deadline(lk_leader_t *l);

/* observe.c */
/* Stops observing; the last call (LK_ECANCELED) comes from the loop. */
void lk__leader_obs_stop(lk_leader_t *l);
/* On close, from the loop (lk_client_close_all closes through the core, so
 * this is the one place every close passes): observing stops, its timer
 * closes and its last call is made now, before close_cb. */
void lk__leader_obs_close(lk_leader_t *l);
void lk__leader_obs_init(lk_leader_t *l);
void lk__leader_obs_free(lk_leader_t *l);

#endif /* LK_LEADER_INTERNAL_H */
