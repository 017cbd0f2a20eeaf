#ifndef LATCHKEY_LEADER_H
#define LATCHKEY_LEADER_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Leader election for a named role: at most one candidate leads a role at a
 * time, each leadership carries a term (a fencing token: strictly increasing
 * across leaders, across server restarts too), and any client can follow
 * the current leader. docs/leader.md; the object contract (lifecycle,
 * callbacks, close, outcomes) is docs/objects.md. One object is one
 * candidate (and/or one observer) with at most one operation pending;
 * observing does not count as one. */
typedef struct lk_leader_s lk_leader_t;
/* The leader as a handle (docs/objects.md, "Handles"), and back (NULL when
 * the handle is not a leader's). Its generic verbs below (close, cancel,
 * data, name...) are aliases of lk_handle_'s, kept for one release. */
LK_EXTERN lk_handle_t *lk_leader_handle(lk_leader_t *leader);
LK_EXTERN lk_leader_t *lk_handle_as_leader(lk_handle_t *handle);

/* status is 0 or a negative LK_ code. */
typedef void (*lk_leader_cb)(lk_leader_t *leader, int status, void *arg);
typedef void (*lk_leader_close_cb)(lk_leader_t *leader);

/* Bounds of a campaign's options. */
#define LK_LEADER_LEASE_MIN_MS 100
#define LK_LEADER_VALUE_MAX 1024

typedef struct lk_leader_opts_s {
  /* How long the server keeps a leadership without a renewal: a dead
   * leader is replaced within it. The object renews it every lease/3 while
   * it leads. -1 = the client's default_lease_ms (default), else
   * LK_LEADER_LEASE_MIN_MS..LK_MAX_TIME_MS. */
  int64_t lease_ms;
  /* What observers see while this candidate leads (its address, say): a C
   * string of 0..LK_LEADER_VALUE_MAX bytes, copied. NULL = "" (default). */
  const char *value;
  /* -1 = campaign until elected, canceled or closed (default); 0 = try
   * once; N ms = give up with LK_ETIMEDOUT after N ms. */
  int64_t wait_ms;
} lk_leader_opts_t;

LK_EXTERN void lk_leader_opts_init(lk_leader_opts_t *opts);

/* role is copied; 1..max_name_len bytes. Sends nothing. Returns 0, the
 * entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_leader_new(lk_client_t *client, const char *role,
                            lk_leader_t **out);

/* Campaigns for the role; the callback runs once, when elected (0, with
 * lk_leader_term the new term) or when the campaign ends otherwise.
 * opts may be NULL (defaults).
 * At once: the start codes (LK_EINVAL also for a lease, wait or value out of
 * range); LK_EBUSY also while this object leads.
 * Callback: 0; LK_ECANCELED (lk_leader_cancel, close); LK_ETIMEDOUT (a
 * wait budget ran out); LK_ECONN (a single try that could not be sent);
 * LK_EUNKNOWN (the outcome stayed unknown: a leadership it may have taken
 * was given back); LK_ELEASELOST (elected, but the reply came after the
 * lease had run out: given back); LK_ETOKEN (the term counter went
 * backwards: given back); the server codes. */
LK_EXTERN int lk_leader_campaign(lk_leader_t *leader, const lk_leader_opts_t *opts,
                                 lk_leader_cb cb, void *arg);

/* Ends the pending campaign with LK_ECANCELED. Returns 0 or the entry codes;
 * LK_EINVAL when no campaign is pending (or its callback is on its way). */
LK_EXTERN int lk_leader_cancel(lk_leader_t *leader);

/* Gives the leadership back at once (renewal stops, lk_leader_is_leader is
 * 0 from this call on) and wakes the other candidates.
 * At once: the start codes (LK_EAGAIN, LK_ENOMEM: not sent, yet the object
 * has stopped leading: the leadership expires with its lease); LK_ENOTHELD
 * (this object does not lead); LK_ELEASELOST (the leadership was lost: on_lost
 * told it, or is about to, from the loop; nothing to give back).
 * Callback: 0; LK_ENOTOWNER (the server no longer had this leadership);
 * LK_ECONN (not sent: it expires with its lease); LK_EUNKNOWN; the server
 * codes. */
LK_EXTERN int lk_leader_resign(lk_leader_t *leader, lk_leader_cb cb, void *arg);

/* Called with LK_ELEASELOST when the leadership is lost: a renewal found it
 * gone or taken, or the local deadline (last confirmed renewal's send time
 * + lease - drift) passed without a confirmed renewal. The local deadline
 * comes before the server's expiry, so this runs before the server could
 * elect anyone else (unless the loop was stalled past it: then it runs
 * first thing, before any other callback of this object). NULL removes it.
 * Returns 0 or the entry codes. */
LK_EXTERN int lk_leader_set_lost_cb(lk_leader_t *leader, lk_leader_cb on_lost,
                                    void *arg);

/* Follows the role's current leader, candidate or not: change_cb(leader, 0,
 * arg) runs with the state found first, then once per change (a new term, or
 * the leadership ending), read with lk_leader_observed_term/_value inside
 * it. Woken by the role's channel and re-polled at least every
 * max_repoll_ms (and when the leader's lease runs out), so an expiry is seen
 * within one re-poll. Trouble reaching the server is retried, not reported.
 * change_cb runs once more, last, with LK_ECANCELED after
 * lk_leader_observe_stop or lk_leader_close: then arg may be freed.
 * Returns 0, the entry codes (LK_EINVAL also for a NULL change_cb), LK_EBUSY
 * (already observing) or LK_ENOMEM. */
LK_EXTERN int lk_leader_observe(lk_leader_t *leader, lk_leader_cb change_cb, void *arg);
/* Ends observing: change_cb's last call (LK_ECANCELED) comes from the loop.
 * Returns 0 or the entry codes; LK_EINVAL when not observing. */
LK_EXTERN int lk_leader_observe_stop(lk_leader_t *leader);
/* What the observer saw last: the current leader's term, or while nobody
 * leads, the last term handed out (0: none ever, or nothing seen yet). */
LK_EXTERN int64_t lk_leader_observed_term(const lk_leader_t *leader);
/* The current leader's value, or NULL while nobody leads (or nothing seen
 * yet). Borrowed: valid until the next change callback or close. */
LK_EXTERN const char *lk_leader_observed_value(const lk_leader_t *leader);

/* 1 while this object leads by its own reckoning: elected, not resigned,
 * not lost, and its local deadline not passed. No round trip. Check it
 * before acting as the leader. */
LK_EXTERN int lk_leader_is_leader(const lk_leader_t *leader);
/* The term of this object's last election (0 if none): pass it to the
 * resources the leader writes to, which refuse a term below one they saw. */
LK_EXTERN int64_t lk_leader_term(const lk_leader_t *leader);

/* A pending campaign or resign completes with LK_ECANCELED, observing ends
 * (change_cb gets LK_ECANCELED), the leadership is given back (best effort),
 * then close_cb (may be NULL) runs and the object is freed. Returns 0 or the
 * entry codes (LK_EFORKED in a forked child: only the memory is freed). */
LK_EXTERN int lk_leader_close(lk_leader_t *leader, lk_leader_close_cb close_cb);

/* Server error text of the last failed operation, or "". */
LK_EXTERN const char *lk_leader_error_text(const lk_leader_t *leader);
/* The role as given; borrowed for the object's life. */
LK_EXTERN const char *lk_leader_role(const lk_leader_t *leader);
LK_EXTERN lk_client_t *lk_leader_client(const lk_leader_t *leader);
LK_EXTERN void *lk_leader_get_data(const lk_leader_t *leader);
LK_EXTERN void lk_leader_set_data(lk_leader_t *leader, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_LEADER_H */
