#ifndef LK_LEADER_INTERNAL_H
#define LK_LEADER_INTERNAL_H

/* Leader election (docs/leader.md): the object shared by leader.c (campaign,
 * lease, resign, lifecycle) and observe.c (following the current leader). */

#include "core/internal.h"
#include "core/hold.h"
#include "core/object.h"
#include "core/pubsub.h"

#include "latchkey/leader.h"

#define LK__LEADER_PREFIX "latchkey_leader"
#define LK__LEADER_TERM_PREFIX "latchkey_leader_term"
#define LK__LEADER_CHANNEL_PREFIX "latchkey_leader__channel"

/* The object's timers, made on first use and freed by their own close
 * callbacks (after the object may be gone): the lease timer (renewal and
 * local deadline) and the observer's re-poll timer. */
typedef struct lk__leader_timers_s {
  uv_timer_t lease;
  uv_timer_t obs;
  lk_leader_t *leader; /* NULL once the object closed them */
  int open;            /* handles not yet closed */
} lk__leader_timers_t;

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
  lk__hold_t hold;  /* count 1 while leading; deadline_ns: the local deadline */
  int64_t term;     /* of the last election won */
  int64_t req_lease_ms;
  lk__leader_timers_t *timers;

  /* leading: renewal */
  lk__op_t *renew_op; /* in flight, or NULL */
  uint64_t renew_sent_ns;
  uint64_t next_renew_ns;
  /* The leadership is at risk (docs/objects.md, "Health"): a renewal
   * failed, or none was confirmed by half the lease. */
  unsigned risky : 1;
  lk__defer_t lost_later; /* on_lost, from the loop, for a loss found in a call */

  /* observing */
  lk_leader_cb obs_cb;
  void *obs_arg;
  lk__sub_t obs_sub;
  lk__op_t *obs_op; /* poll in flight */
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
int lk__leader_want_timers(lk_leader_t *l);
/* A loss found by the local deadline goes first (before any other callback
 * of the object): 1 when the leadership was just found lost. */
int lk__leader_check_deadline(lk_leader_t *l);

/* observe.c */
void lk__leader_obs_timer(uv_timer_t *t);
/* Stops observing; the last call (LK_ECANCELED) comes from the loop. */
void lk__leader_obs_stop(lk_leader_t *l);
/* On close, from the loop (lk_client_close_all closes through the core, so
 * this is the one place every close passes): observing stops and its last
 * call is made now, before close_cb. */
void lk__leader_obs_close(lk_leader_t *l);
void lk__leader_obs_init(lk_leader_t *l);
void lk__leader_obs_free(lk_leader_t *l);

#endif /* LK_LEADER_INTERNAL_H */
