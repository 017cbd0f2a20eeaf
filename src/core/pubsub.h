#ifndef LK_CORE_PUBSUB_H
#define LK_CORE_PUBSUB_H

#include "core/internal.h"

/* A listener on one channel, embedded in the object that waits. Channels are
 * shared and reference counted: one SUBSCRIBE per channel per client, an
 * UNSUBSCRIBE when the last listener has been gone for the client's
 * pubsub_linger_ms (at once with 0; on a cluster SSUBSCRIBE and
 * SUNSUBSCRIBE on the master of the channel's slot: pubsub.c). Listeners
 * get messages in the order they started listening.
 *
 * Events:
 * - LK__SUB_POKE (from the loop, never inside lk__sub_start): "try now".
 *   status 0: the subscription is confirmed (first time, or again after a
 *   pub/sub reconnect or after its slot moved: messages may have been
 *   missed), or the server just ended it because its slot moved. LK_ENOPERM:
 *   the user may not subscribe; LK_ECONN: pub/sub is down; LK_ECLUSTER and
 *   other errors: the subscription waits for the next topology read. Any
 *   error means the waiter must rely on its re-poll timer until a later
 *   poke with status 0.
 * - LK__SUB_MESSAGE: a message; msg is borrowed for the callback's length.
 * - LK__SUB_UNTAKEN: after a message's delivery, to the first listener that
 *   skipped it (lk__sub_skip) when no listener took it (lk__sub_take): the
 *   one wake it carried would otherwise be lost.
 * Notifications are best effort: every waiter keeps a bounded re-poll. */
enum { LK__SUB_POKE = 1, LK__SUB_MESSAGE = 2, LK__SUB_UNTAKEN = 3 };

typedef struct lk__sub_s lk__sub_t;
typedef void (*lk__sub_cb)(lk__sub_t *s, int event, int status, const char *msg,
                           size_t len);

struct lk__sub_s {
  lk__queue_t node;
  lk__chan_t *chan;
  lk__sub_cb cb;
  lk_client_t *client;
  lk__defer_t poke;
  int poke_status;
};

/* channel is copied. LK_ENOMEM or LK_ECLOSED on failure. */
int lk__sub_start(lk_client_t *c, lk__sub_t *s, const char *channel,
                  size_t len, lk__sub_cb cb);
/* The same for a listener that knows the state as of since_ns (its try
 * was sent then): on a channel subscribed before that and silent since, it
 * gets no poke, as nothing it could use was missed (a busy name's channel
 * lingers subscribed, so a re-wait costs no extra try). */
int lk__sub_start_since(lk_client_t *c, lk__sub_t *s, const char *channel, size_t len,
                        lk__sub_cb cb, uint64_t since_ns);
void lk__sub_stop(lk__sub_t *s);
/* The same, without the linger: for a channel of the listener's own (the
 * fair lock's per-waiter channel), which nobody else will want. */
void lk__sub_stop_now(lk__sub_t *s);
/* A listener took the last message as a wake meant for one (lk__sub_take)
 * and will not use it (its wait ended without the grant): the message is
 * delivered again, from the loop, to the channel's listeners. */
void lk__sub_pass(lk__sub_t *s);
/* Inside an LK__SUB_MESSAGE callback: how many listeners of the channel took
 * this message before, counting this one as taking it too. A message meant
 * to wake one local waiter (or n) is acted on by the first one (or n) only. */
unsigned lk__sub_take(lk__sub_t *s);
/* Inside an LK__SUB_MESSAGE callback: how many listeners were given this
 * message under a count before (a release of n permits serves at most n + 1
 * waiters), counting this one. Kept apart from lk__sub_take, so a waiter
 * woken under the count never uses up the wake meant for one. */
unsigned lk__sub_ration(lk__sub_t *s);
/* Inside an LK__SUB_MESSAGE callback: this listener leaves a wake meant for
 * one to the others (its own try, made on an earlier wake, is still out),
 * but wants LK__SUB_UNTAKEN if none of them takes it: that try may predate
 * the release the message announces. */
void lk__sub_skip(lk__sub_t *s);
/* Contention as this process sees it (the channel's "heat"): how many more
 * tries made on a wake lost to another process than won, capped at
 * LK__SUB_HEAT_MAX. A waiter reports each such try (lk__sub_tried, with its
 * round trip); the wait engine thins a hot name's retries by it
 * (core/object.c, "thinning"). */
#define LK__SUB_HEAT_MAX 6
unsigned lk__sub_heat(const lk__sub_t *s);
uint64_t lk__sub_try_rtt_ns(const lk__sub_t *s);
void lk__sub_tried(lk__sub_t *s, int won, uint64_t rtt_ns);
/* What this client knows of a channel before listening on it: whether
 * local listeners with callback cb (waiters of the same engine) wait on it, whether it is subscribed (lingering
 * counts), its heat, last try round trip and last message time. Returns 0
 * (and zeros) when the client has no such channel. */
/* A release of the name heard by `heard` connections (the PUBLISH count
 * its script returns): the others, not this client's own, are the
 * processes a release of it wakes. Kept on the channel if the client has
 * one (lk__sub_others). */
void lk__sub_note_others(lk_client_t *c, const char *channel, size_t len, long long heard);
unsigned lk__sub_others(const lk__sub_t *s);
typedef struct {
  int listeners;
  int subscribed;
  unsigned heat;
  unsigned others;
  uint64_t try_rtt_ns;
  uint64_t last_msg_ns;
} lk__sub_peek_t;
int lk__sub_peek(lk_client_t *c, const char *channel, size_t len, lk__sub_cb cb,
                 lk__sub_peek_t *out);
static inline int lk__sub_active(const lk__sub_t *s) { return s->chan != NULL; }

#endif /* LK_CORE_PUBSUB_H */
