#ifndef LK_SEMAPHORE_PSEM_INTERNAL_H
#define LK_SEMAPHORE_PSEM_INTERNAL_H

/* The permit-expirable semaphore's object (psem.c: operations and
 * lifecycle) and the set of permits it holds (psem_permits.c: ids, local
 * deadlines, the watchdog entry that renews them, losses). */

#include "core/watchdog.h"
#include "semaphore/sem_internal.h"

#define LK__PSEM_ID_BYTES 16

typedef struct lk__permit_s {
  unsigned char raw[LK__PSEM_ID_BYTES];
  char hex[LK_PSEM_ID_LEN + 1];
  int renewed;          /* its lease is kept by the watchdog */
  uint64_t deadline_ns; /* a fixed lease's local deadline */
} lk__permit_t;

struct lk_psem_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  char *zset; /* {NAME}:timeout */
  size_t zset_len;
  char *channel;
  size_t channel_len;
  lk__permit_t *permits; /* held, in the order they were taken */
  size_t count, cap;

  lk__wd_entry_t wd;
  unsigned char *wd_ids; /* the renewed permits' ids: the entry's "owner" */
  size_t wd_ids_cap;

  /* the pending operation (the rest is in base) */
  unsigned char *req_ids; /* ids it sends, back to back */
  size_t req_n, req_cap;
  int64_t req_lease_ms;
  int req_renew;
  /* The longest lease any command of this object gave a permit (acquire,
   * update, renewal): what the server may still have of a permit the
   * object gives back ends within it. */
  int64_t max_lease_ms;
  /* give-backs left to the background: resent while the object lives and
   * they are worth it, waited for by close (sem_internal.h) */
  lk__sem_owner_t jobs;
};

#define CLIENT(p) ((p)->base.client)

/* The watchdog class: one multi-key script renews every holder's permits,
 * KEYS NAME and {NAME}:timeout, ARGV the holder's ids back to back. */
extern const lk__wd_class_t lk__wd_psem_class;

/* --- ids --- */
void lk__psem_to_hex(const unsigned char *raw, char *hex);
/* LK_PSEM_ID_LEN hex characters (either case) to 16 bytes; LK_EINVAL. */
int lk__psem_from_hex(const char *hex, unsigned char *raw);

/* --- the held set --- */
/* Index of a held permit, or -1. */
long lk__psem_find(const lk_psem_t *p, const unsigned char *raw);
/* A permit is live by this object's reckoning (lk_psem_is_held). */
int lk__psem_held(const lk_psem_t *p);
void lk__psem_drop(lk_psem_t *p, size_t i);
/* Drops every held permit whose id is among the pending operation's. */
void lk__psem_drop_req(lk_psem_t *p);
/* Sizes the pending operation's id buffer for n ids and sets req_n. */
int lk__psem_set_req(lk_psem_t *p, size_t n);
/* Stages the ids a release, an update or close names: the one given (raw
 * bytes), or with NULL every permit this object holds. 0 or LK_ENOMEM. */
int lk__psem_stage_ids(lk_psem_t *p, const unsigned char *one);

/* --- leases --- */
/* A fixed lease's local deadline: send time + lease - drift. */
uint64_t lk__psem_deadline(uint64_t sent_ns, int64_t lease_ms);
/* The renewed permits changed; added_sent_ns: send time of the command
 * that gave a permit a renewed lease (0: none). */
void lk__psem_watch(lk_psem_t *p, uint64_t added_sent_ns);
/* Releases ids (n of them, back to back) in the background: now, or when
 * `after` turns out to satisfy pred. lease_ms: the longest lease a command
 * sent so far (`after` included) may have given any of them; the give-back
 * is resent across reconnects until such a lease could have ended on the
 * server (after that it would find nothing), and close waits for it. */
void lk__psem_give_back(lk_psem_t *p, const unsigned char *ids, size_t n, int64_t lease_ms,
                        lk__op_t *after, lk__sem_pred pred);
void lk__psem_on_wd_event(lk__wd_entry_t *e, int event);

#endif /* LK_SEMAPHORE_PSEM_INTERNAL_H */
