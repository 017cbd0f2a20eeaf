/* The hostile-server catalogue: named faults on one reply, armed on the
 * fault proxy (proxy.h) for "the k-th EVALSHA of script X" from now on.
 *
 *   wrong_type  the reply is replaced by one of a type the verb never sends
 *               (a bulk string or an integer where an array is due...)
 *   garbled     the reply is replaced by bytes that are not RESP
 *   error       the reply is replaced by "-ERR injected"
 *   truncated   the first half of the real reply, then the connection is cut
 *   insert      an extra reply (one that looks like the verb's success)
 *               arrives just before the real one
 *   cut         the reply is withheld and the connection cut (the server ran
 *               the command: a lost reply)
 *
 * In every case the command itself reaches the server and runs: only what
 * comes back is hostile. Harness code: no latchkey needed, except
 * rt_hostile_arm_script below, which looks the script up in latchkey's
 * embedded table. */
#ifndef LK_TEST_HARNESS_HOSTILE_H
#define LK_TEST_HARNESS_HOSTILE_H

#include <stddef.h>

#include "proxy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RT_HF_WRONG_TYPE = 0,
  RT_HF_GARBLED,
  RT_HF_ERROR,
  RT_HF_TRUNCATED,
  RT_HF_INSERT,
  RT_HF_CUT,
  RT_HF_COUNT
} rt_hostile_fault_t;

/* "wrong_type", "garbled", "error", "truncated", "insert", "cut". */
const char *rt_hostile_fault_name(rt_hostile_fault_t f);
/* The fault of that name, or -1. */
int rt_hostile_fault_parse(const char *name);

/* The bytes sent for f when the caller gives none: wrong_type "$5\r\nwrong\r\n"
 * (a bulk string), garbled "?garbage\r\n", error "-ERR injected\r\n", insert
 * ":1\r\n"; NULL for the faults that send no bytes of their own. */
const char *rt_hostile_default_bytes(rt_hostile_fault_t f);

/* The proxy action behind f (REPLACE, TRUNCATE, INSERT or DROP_CUT). */
rt_proxy_action_t rt_hostile_action(rt_hostile_fault_t f);

/* Arms f on the reply to the k-th request "EVALSHA <sha1>" seen from now on
 * (over every connection of the proxy), replacing any rule armed before.
 * bytes (NUL-terminated) overrides the default bytes: a type the verb never
 * sends for wrong_type, a reply that looks like the verb's own success for
 * insert. Scripts must be cached on the server first (SCRIPT LOAD, see
 * rt_hostile_preload), or the first EVALSHA's reply is NOSCRIPT and the
 * script runs as EVAL, which the rule does not match. */
void rt_hostile_arm_sha(rt_proxy_t *p, rt_hostile_fault_t f, const char *sha1, int k,
                        const char *bytes);

/* 1 once the armed fault has acted on its reply. */
int rt_hostile_applied(rt_proxy_t *p);

#ifdef __cplusplus
}
#endif

/* With latchkey's script table: include "core/scripts.h" (tests linked with
 * latchkey_testing) before this header. */
#ifdef LK_CORE_SCRIPTS_H
#include "redis_server.h"
#include "test.h"

/* Arms f for the k-th EVALSHA of the embedded script name ("lock/acquire"). */
static inline void rt_hostile_arm_script(rt_proxy_t *p, rt_hostile_fault_t f, const char *name,
                                         int k, const char *bytes) {
  const lk__script_t *s = lk__script_find(name);
  if (s == NULL)
    FAIL("no embedded script named %s", name);
  rt_hostile_arm_sha(p, f, s->sha1, k, bytes);
}

/* SCRIPT LOAD every embedded script on srv, so the client's first EVALSHA
 * of each runs (and is the one a rule counts). */
static inline void rt_hostile_preload(rt_server_t *srv) {
  for (size_t i = 0; i < lk__script_count; i++) {
    const char *argv[3] = {"SCRIPT", "LOAD", lk__scripts[i].text};
    size_t lens[3] = {6, 4, lk__scripts[i].len};
    redisReply *r = rt_cmd_argv(srv, 3, argv, lens);
    if (r == NULL || r->type != REDIS_REPLY_STRING)
      FAIL("SCRIPT LOAD %s failed", lk__scripts[i].name);
    freeReplyObject(r);
  }
}
#endif

#endif /* LK_TEST_HARNESS_HOSTILE_H */
