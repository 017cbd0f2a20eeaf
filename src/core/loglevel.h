/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#ifndef LK_CORE_LOGLEVEL_H
#define LK_CORE_LOGLEVEL_H

/* Which level a log line gets (docs/client.md, "Logging"). The default
 * logger (no log callback) prints WARN and ERROR only, so those say what
 * needs a person: a misconfiguration, a server refusing the client, data
 * loss nobody was told about. An event the program is told of through a
 * callback (on_lost, the client's event callback, an operation's status) is
 * the callback's: its line is INFO. */

#include "core/internal.h"

/* A connection event (lost connection, server restart, topology change):
 * the program hears of it through on_event when it set one. */
static inline lk_log_level_t lk__event_level(const lk_client_t *c) {
  return c->on_event != NULL ? LK_LOG_INFO : LK_LOG_WARN;
}

/* A command nobody waits for (a give-back, a release on close, a renewal)
 * failed with status. The server out of reach or loading, a cluster slot
 * moving, or the client closing, is said by the connection's own lines (or
 * events) and heals itself (what was to be given back expires with its
 * lease): INFO. An error reply (ACL, memory, a script error) needs a
 * person, and so does a server kept busy by a long script (BUSY blocks
 * every client): WARN. */
static inline lk_log_level_t lk__trouble_level(int status) {
  switch (status) {
  case LK_ECONN:
  case LK_EUNKNOWN:
  case LK_ETIMEDOUT:
  case LK_ELOADING:
  case LK_ECLUSTER:
  case LK_ECLOSED:
  case LK_ECANCELED:
  case LK_EAGAIN:
    return LK_LOG_INFO;
  default:
    return LK_LOG_WARN;
  }
}

#endif /* LK_CORE_LOGLEVEL_H */
