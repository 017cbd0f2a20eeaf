#ifndef LK_LATCH_INTERNAL_H
#define LK_LATCH_INTERNAL_H

/* The countdown latch's shared picture (docs/latch.md): the object, its
 * keys, and the split between reads (latch_state.c: await, get_count) and
 * writes (latch_write.c: try_set_count, count_down, delete). */

#include "core/internal.h"
#include "core/object.h"
#include "core/outcome.h"

/* Redisson's channel wraps the raw name in braces whatever it contains,
 * even a name with a {tag} of its own, which may then hash to another slot
 * than the latch's key (docs/latch.md, "Data layout"). */
#define LK__LATCH_CHANNEL_PREFIX "redisson_countdownlatch__channel__"
/* latchkey's private keys, all under the latch's hash tag and with a TTL. */
#define LK__LATCH_MARKER_PREFIX "latchkey_latch_open"
#define LK__LATCH_TOMB_PREFIX "latchkey_latch_deleted"
#define LK__LATCH_RECORD_PREFIX "latchkey_latch_req"

/* A write's request record lives this long; resends after a lost reply are
 * sent only within the first half of it, so the record they rely on is
 * still there. The record is one key per object (overwritten by each
 * request), so a long life costs nothing per operation. */
#define LK__LATCH_RECORD_TTL_MS ((int64_t)600000)
/* The deletion tombstone lives at least this long (longer on clients whose
 * re-poll interval is longer): pending awaiters must poll within it. */
#define LK__LATCH_TOMB_TTL_MIN_MS ((int64_t)300000)

enum lk__latch_op {
  LATCH_OP_NONE = 0,
  LATCH_OP_AWAIT,
  LATCH_OP_GET_COUNT,
  LATCH_OP_TRY_SET,
  LATCH_OP_COUNT_DOWN,
  LATCH_OP_DELETE
};

struct lk_latch_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  char *channel;
  size_t channel_len;
  char *marker; /* strict mode's "opened" marker */
  size_t marker_len;
  char *tomb; /* names the last latchkey deletion */
  size_t tomb_len;
  char *record; /* this object's request record */
  size_t record_len;
  char owner[96]; /* "UUID:TID": this object, in its record key and tombstones */
  size_t owner_len;
  int strict;
  int64_t marker_ttl_ms;

  /* writes */
  uint64_t seq;         /* sequence number of the latest write request */
  int record_written;   /* the server may hold this object's record */
  int record_unsettled; /* a write's outcome is open: its record must stay */
  uint64_t first_sent_ns;
  int64_t req_count;

  /* the await in progress: what it saw when the latch was armed */
  int armed_seen;
  int tomb_seen; /* a tombstone was present then */
  size_t tomb_seen_len;
  char tomb_seen_val[128];

};

#define LATCH_CLIENT(l) ((l)->base.client)

void lk__latch_begin(lk_latch_t *l, enum lk__latch_op kind, lk_latch_cb cb,
                     void *arg);
static inline void lk__latch_finish(lk_latch_t *l, int status) {
  lk__obj_finish(&l->base, status);
}
const lk__script_t *lk__latch_script(const char *name);

/* latch_state.c: the wait engine's attempt hook and the read paths. */
int lk__latch_attempt_state(lk__obj_t *o);
/* latch_write.c: an abandoned write's outcome is open. */
void lk__latch_write_abandoned(lk_latch_t *l);
int lk__latch_close_cleanup(lk__obj_t *o);

#endif /* LK_LATCH_INTERNAL_H */
