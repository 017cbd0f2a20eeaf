#ifndef LATCHKEY_OWNERS_H
#define LATCHKEY_OWNERS_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Who is an owner id? (docs/owners.md). A client made with
 * lk_client_opts_t.describe_owner = 1 keeps a description of itself in the
 * hash latchkey_client:{ID} (ID: its client id, the part of every owner id
 * before the first ':'), with the TTL of its default lease, rewritten every
 * lease / 3, deleted by a clean close. Any client can read it. */

typedef struct lk_owner_desc_s {
  const char *id;          /* the client id */
  const char *host;        /* host name */
  int64_t pid;             /* process id; -1 when not given */
  const char *program;     /* executable's base name */
  const char *client_name; /* its lk_client_opts_t.client_name */
  const char *version;     /* latchkey version of the describing client */
  int64_t started_ms;      /* Unix time (ms) the client was made; 0 unknown */
  int64_t lease_ms;        /* the TTL it keeps the description with; 0 unknown */
  const char *note;        /* its owner_note; "" when none */
  int64_t ttl_ms;          /* remaining TTL of the description; -1 none */
} lk_owner_desc_t;

/* status 0: desc is the description (borrowed, valid inside the callback;
 * missing text fields are ""), or NULL when that client keeps none (not
 * opted in, closed, gone for longer than its lease, a Redisson client).
 * Else desc is NULL and status is LK_ECONN, LK_EUNKNOWN, LK_ECANCELED (the
 * client closed), LK_EPROTOCOL (a key of that name that is not a
 * description) or a server code (LK_ENOPERM...). */
typedef void (*lk_owner_cb)(lk_client_t *client, int status, const lk_owner_desc_t *desc,
                            void *arg);

/* Reads the description of the client behind owner: an owner id as
 * inspection shows it ("ID:TID", a writer's ":write" suffix or not) or a
 * bare client id. One round trip (on a cluster, to the master of the key's
 * slot). Returns 0 (cb runs exactly once, from the loop), or at once
 * LK_EINVAL (a NULL argument; an id part that is empty, longer than 64
 * bytes or not printable ASCII), LK_EWRONGTHREAD, LK_EFORKED, LK_ECLOSED,
 * LK_EAGAIN (max_inflight reached) or LK_ENOMEM. */
LK_EXTERN int lk_client_describe_owner(lk_client_t *client, const char *owner, lk_owner_cb cb,
                                       void *arg);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_OWNERS_H */
