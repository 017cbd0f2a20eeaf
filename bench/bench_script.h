/* For bench programs that drive latchkey's embedded scripts by hand on
 * blocking hiredis (their raw loops). Every embedded script is wrapped
 * (cmake/EmbedScripts.cmake; docs/design.md, "Replies are attributable"): a
 * call ends with a request tag, its LAST argument, which the wrapper takes
 * off ARGV before the script's own text runs, and the reply is {tag} (the
 * script returned nil) or {tag, result}. A raw loop therefore appends
 * BENCH_TAG to every script call, as the library appends its own tag, and
 * reads the script's result with bench_script_reply. Header-only. */
#ifndef LK_BENCH_SCRIPT_H
#define LK_BENCH_SCRIPT_H

#include <string.h>

#include <hiredis/hiredis.h>

/* A tag as long as the library's own in a run of a few million commands. */
#define BENCH_TAG "1000000"
#define BENCH_TAG_LEN 7

/* The script's own result inside r, a reply to a wrapped script: a nil
 * reply for {tag}. r itself when it is not wrapped (an error reply, or a
 * script text of the program's own): the caller's checks then apply to it
 * as they are. Borrowed from r: free r, never the result. */
static inline redisReply *bench_script_reply(redisReply *r) {
  static redisReply nil = {.type = REDIS_REPLY_NIL};
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len != BENCH_TAG_LEN ||
      memcmp(r->element[0]->str, BENCH_TAG, BENCH_TAG_LEN) != 0)
    return r;
  return r->elements == 2 ? r->element[1] : &nil;
}

#endif /* LK_BENCH_SCRIPT_H */
