#ifndef LK_CORE_SCRIPTS_H
#define LK_CORE_SCRIPTS_H

#include <stddef.h>

/* One embedded Lua script (scripts/<primitive>/<verb>.lua); the table is
 * generated at build time by cmake/EmbedScripts.cmake. */
typedef struct lk__script_s {
  const char *name; /* "lock/acquire" */
  const char *text;
  size_t len;
  char sha1[41];
} lk__script_t;

extern const lk__script_t lk__scripts[];
extern const size_t lk__script_count;
/* At most this many scripts: a connection keeps one bit per script for
 * "loaded on this server" (lk__conn_t.scripts_loaded); the generated table
 * fails to compile past it (cmake/EmbedScripts.cmake). */
#define LK__SCRIPT_MAX 128
/* Every text above is head + the .lua file's text + tail (after its "#!lua"
 * line, when it has one): the wrapper that takes the request tag off ARGV
 * and puts it in the reply (cmake/EmbedScripts.cmake). */
extern const char lk__script_wrap_head[];
extern const char lk__script_wrap_tail[];

/* Looks a script up by name; NULL when missing (a build error, really). */
const lk__script_t *lk__script_find(const char *name);

#endif /* LK_CORE_SCRIPTS_H */
