#ifndef LK_CORE_METRICS_H
#define LK_CORE_METRICS_H

/* The counters behind lk_client_write_metrics that need more than an
 * increment where they happen (docs/metrics.md). */

#include "core/internal.h"

/* Why a lease was lost: lk_client_stats_t.leases_lost_<reason>. */
enum {
  LK__LOST_GONE = 0, /* a renewal or a re-entry found the key gone */
  LK__LOST_TAKEN,    /* a renewal found it held by another owner */
  LK__LOST_DEADLINE, /* the local deadline passed unconfirmed */
  LK__LOST_RESTART,  /* gone after a server restart or a master switch */
  LK__LOST_QUORUM    /* a RedLock lost its quorum */
};

/* Counts one loss under reason. Called where the reason is known (the
 * watchdog, the grant routine, RedLock), next to the leases_lost the
 * primitive counts, so the reasons add up to it. */
void lk__metrics_lost(lk_client_t *c, int reason);

/* An acquire that waited succeeded after ns: the wait-time histogram. */
void lk__metrics_wait(lk_client_t *c, uint64_t ns);

#endif /* LK_CORE_METRICS_H */
