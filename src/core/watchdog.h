#ifndef LK_CORE_WATCHDOG_H
#define LK_CORE_WATCHDOG_H

#include "core/internal.h"
#include "core/otimer.h"

/* The client's lease watchdog (docs/watchdog.md). Every entry shares one lease
 * (the client's default_lease_ms), so all renew on the same period,
 * lease/3. Entries are intrusive (embedded in the object that holds) and kept
 * in the order their last renewal was confirmed, which is also the order of
 * their local deadlines and of their next renewals: the ring is a timer wheel
 * whose slots are that order. One uv_timer ticks every lease/6 while the ring
 * is not empty; a tick renews every entry due within the next half tick in
 * chunks of at most LK__WD_CHUNK keys, one multi-key script per chunk and
 * class. A stalled loop is caught up by the same rule (everything overdue is
 * due). Nothing is allocated per entry; one small record per chunk.
 *
 * On a cluster (c->cluster_on) a script may not cross slots (CROSSSLOT), so a
 * chunk holds entries of one class AND one slot: the tick gathers the due
 * entries with their (class, slot) keys in an array, sorts it (radix), and
 * sends one script per run of at most LK__WD_CHUNK. The array is on the
 * stack up to 128 entries; a tick renewing more allocates one for that tick
 * (grown fourfold as needed; without memory, what was gathered so far goes
 * out and the walk goes on). An entry's slot (that of keys[0]: every key of
 * an entry carries the object's hash tag) is computed once, when it is
 * added on a cluster, or at its first cluster tick when the client turned
 * cluster mode on after it was added. Standalone ticks never look at
 * slots. */

#define LK__WD_CHUNK 100

typedef struct lk__wd_entry_s lk__wd_entry_t;
typedef struct lk__wd_batch_s lk__wd_batch_t;

enum {
  /* The lease is gone: renewal said so, or the local deadline passed
   * unconfirmed. The entry has left the ring. The handler must give back, on
   * the command connection, whatever the server may still have for the
   * owner: a renewal still in flight was sent before that give-back, so a
   * late success of it is undone by it on the server. (The watchdog itself
   * ignores such a late success: a second give-back sent when it arrives
   * could follow a new acquisition of the same owner and delete it.) */
  LK__WD_LOST = 1
};

/* A renewal script and its shape: each entry contributes keys_per_entry keys
 * and one owner argument; ARGV[1] is the lease, the last argument the
 * client's publish command (lk__publish_cmd). The script answers an array
 * of 1 (extended) / 0 (this owner no longer holds it: the key is gone) / -1
 * (no longer held by this owner: the key is another owner's), one per
 * entry; anything but 1 is a loss, the rest says why (docs/metrics.md). */
typedef struct lk__wd_class_s {
  const char *script;
  int keys_per_entry; /* 1 or 2 */
  /* Optional, for a class of two keys: renews one entry whose slot is split
   * by a migration (lk__wd_entry_t.split) naming only keys[split_key], with
   * the same arguments and reply; one key is served by the source or by
   * ASK on the target, where two split between them meet TRYAGAIN. NULL:
   * such an entry is sent alone with the class's script. */
  const char *split_script;
  int split_key;
} lk__wd_class_t;

typedef void (*lk__wd_event_fn)(lk__wd_entry_t *e, int event);
struct lk__obj_s; /* core/object.h */

struct lk__wd_entry_s {
  lk__queue_t node; /* in the ring, ordered by confirmed_ns */
  const lk__wd_class_t *cls;
  const char *keys[2]; /* borrowed from the object */
  size_t key_lens[2];
  const char *owner;
  size_t owner_len;
  lk__wd_event_fn on_event;
  /* The object whose hold this is, told of the entry's health
   * (lk__obj_side_at_risk / lk__obj_side_ok); NULL: nobody is. */
  struct lk__obj_s *obj;
  uint64_t confirmed_ns; /* send time of the last confirmed acquire/renewal */
  lk__wd_batch_t *batch; /* renewal in flight, or NULL */
  int batch_idx;
  unsigned in_ring : 1;
  unsigned paused : 1; /* a release is in flight: do not renew */
  unsigned lost : 1;
  unsigned slot_known : 1;
  unsigned slot : 14; /* cluster slot of keys[0], once slot_known */
  /* A renewal is owed: its slot's master changed (lk__wd_verify_slots)
   * after its last renewal was sent. Sent as soon as none is in flight. */
  unsigned verify_due : 1;
  /* Its slot is being migrated and a batch naming it met TRYAGAIN (its keys
   * split between the two nodes): renewed alone, one key per script, which
   * the source serves or sends to the target by ASK. Cleared when the
   * slot's master changes (the migration's end, lk__wd_verify_slots). */
  unsigned split : 1;
  /* Its health (docs/objects.md, "Health"): a renewal failed or went
   * unconfirmed past the risk point (confirmed + lease/2), or its
   * connection dropped; cleared by the next confirmed renewal. */
  unsigned at_risk : 1;
};

extern const lk__wd_class_t lk__wd_lock_class;

void lk__wd_init(lk_client_t *c);
void lk__wd_close(lk_client_t *c);

/* Starts watching: the lease was set by a command sent at sent_ns (the
 * acquire's send time), so the local deadline is sent_ns + lease - drift.
 * The entry's keys and owner must stay valid while it is registered. */
void lk__wd_add(lk_client_t *c, lk__wd_entry_t *e, uint64_t sent_ns);
/* Stops watching; a renewal in flight is forgotten (its reply is ignored). */
void lk__wd_remove(lk_client_t *c, lk__wd_entry_t *e);
static inline int lk__wd_watching(const lk__wd_entry_t *e) {
  return e->in_ring || e->batch != NULL;
}
/* Local deadline of a watched entry (ns, monotonic). */
uint64_t lk__wd_deadline(const lk_client_t *c, const lk__wd_entry_t *e);
/* Drift kept off a lease: lease/100 + 2 ms, in ns. */
uint64_t lk__wd_drift_ns(int64_t lease_ms);
/* The local deadline of a lease of lease_ms set by a command sent at
 * sent_ns: sent_ns + lease - drift. */
uint64_t lk__wd_lease_deadline(uint64_t sent_ns, int64_t lease_ms);

/* A grant refreshed a watched entry's lease (a re-entry): as a confirmed
 * renewal, it ends the entry's at-risk state. Called before the entry is
 * re-added at sent_ns. */
void lk__wd_grant_confirms(lk_client_t *c, lk__wd_entry_t *e, uint64_t sent_ns);
/* Marks a watched entry at risk (its object is told from the loop). */
void lk__wd_mark_at_risk(lk_client_t *c, lk__wd_entry_t *e);
/* The command connection conn dropped: every watched entry whose renewals
 * go through it (all of them standalone; on a cluster those whose slot's
 * master it is) is at risk. */
void lk__wd_conn_down(lk_client_t *c, const struct lk__conn_s *conn);

/* Fires the lost events whose deadline has passed. Called first at every
 * loop entry point of the library, so a lost event precedes any other
 * callback of that object. Cheap when nothing is due (one clock read). */
void lk__wd_check(lk_client_t *c);
/* Renews every entry at once (the server restarted: verify, do not wait). */
void lk__wd_verify_all(lk_client_t *c);
/* Renews at once the entries whose slot's bit is set in changed (LK__SLOTS/8
 * bytes, bit slot % 8 of byte slot / 8, as lk__topo_diff fills it): the
 * router calls it when a slot's master changed (failover, migration), and a
 * hold the new master lacks is then reported lost by the renewal's reply. An
 * entry whose renewal is in flight is renewed again once that reply has come
 * (it may be the old master's answer); one whose release is in flight is
 * not (the release settles it). Corked: one write per node. */
void lk__wd_verify_slots(lk_client_t *c, const uint8_t *changed);
/* The same after a MOVED: holds whose renewal is in flight are left out,
 * since that renewal follows the redirection to the new owner and settles
 * them (marking them owed would renew them twice, and again on every hop
 * of a redirection loop). */
void lk__wd_verify_redirected(lk_client_t *c, const uint8_t *changed);

/* --- a lease its object renews itself (watchdog_own.c) ---
 * Leader election's leadership and a barrier member's presence have leases
 * of their own length (often shorter than the client's, so that a dead
 * holder is replaced sooner), so they are not in the ring: their object
 * sends each renewal, on a timer of its own, and says when the lease is at
 * risk for want of an answer (src/leader/leader.c, src/barrier/barrier.c).
 * What is the watchdog's rule is kept here, as for a ring entry: the local
 * deadline (the last confirmed send + lease - drift), the side's health (at
 * risk once until a renewal confirms it, told through the owner's
 * hold_at_risk and hold_ok), what a renewal's reply means, and the timer
 * (core/otimer.h). */
typedef struct lk__wd_own_s lk__wd_own_t;
typedef void (*lk__wd_own_fn)(lk__wd_own_t *s);

struct lk__wd_own_s {
  lk_client_t *client;
  struct lk__obj_s *obj; /* told of the lease's health */
  const char *what;      /* the lease in log lines: "leadership" */
  int64_t lease_ms;      /* set by the object */
  uint64_t confirmed_ns; /* send time of the last confirmed grant or renewal; 0: not kept */
  lk__op_t *op;          /* the renewal in flight, or NULL */
  lk__wd_own_fn on_timer;
  lk__otimer_t *timer;   /* made by lk__wd_own_want_timer */
  unsigned at_risk : 1;
};

void lk__wd_own_init(lk__wd_own_t *s, lk_client_t *c, struct lk__obj_s *obj, const char *what);
/* Makes the timer on first use: 0 or LK_ENOMEM. */
int lk__wd_own_want_timer(lk__wd_own_t *s);
/* Keeps the lease (of s->lease_ms) from the grant or registration sent at
 * confirmed_ns. */
void lk__wd_own_keep(lk__wd_own_t *s, uint64_t confirmed_ns);
static inline int lk__wd_own_kept(const lk__wd_own_t *s) { return s->confirmed_ns != 0; }
static inline uint64_t lk__wd_own_deadline(const lk__wd_own_t *s) {
  return lk__wd_lease_deadline(s->confirmed_ns, s->lease_ms);
}
/* The risk point, as a ring entry's (docs/objects.md, "Health"): half the
 * lease after the last confirmed grant or renewal (one is sent every third),
 * so at most lease/2 - drift is left when it is at risk. */
static inline uint64_t lk__wd_own_risk_point(const lk__wd_own_t *s) {
  return s->confirmed_ns + (uint64_t)s->lease_ms * 1000000u / 2;
}
/* Runs fn(s) after ms, then every repeat_ms (0: once); nothing once the
 * object closed the timer (lk__wd_own_close). */
void lk__wd_own_arm(lk__wd_own_t *s, lk__wd_own_fn fn, uint64_t ms, uint64_t repeat_ms);
static inline int lk__wd_own_armed(const lk__wd_own_t *s) { return lk__otimer_active(s->timer); }
/* The lease is at risk (once: a kept lease not yet at risk). */
void lk__wd_own_at_risk(lk__wd_own_t *s);
/* A renewal was sent (op), or could not be (NULL, err: logged, at risk). */
void lk__wd_own_sent(lk__wd_own_t *s, lk__op_t *op, int err);
/* A renewal's reply (the script answers 1 renewed, 0 gone): 1 it confirmed
 * the lease (the deadline moves on from its send time, an at-risk episode
 * ends), 0 the lease is gone, -1 it failed (lost, refused or garbled:
 * logged, at risk; the next renewal tries again). */
int lk__wd_own_reply(lk__wd_own_t *s, int status, const redisReply *r);
/* Stops renewing: the lease is not kept any more (its at-risk episode, if
 * any, ends unconfirmed), a renewal in flight is forgotten, the timer
 * stopped. */
void lk__wd_own_stop(lk__wd_own_t *s);
/* The object closes (lk__otimer_close), or is freed without a close. */
static inline void lk__wd_own_close(lk__wd_own_t *s) { lk__otimer_close(&s->timer); }
static inline void lk__wd_own_free(lk__wd_own_t *s) { lk__otimer_free(&s->timer); }

#endif /* LK_CORE_WATCHDOG_H */
