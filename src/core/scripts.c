/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#include <string.h>

#include "core/internal.h"

/* The generated table is sorted by name (cmake/EmbedScripts.cmake sorts the
 * file list), so a lookup is a binary search: it runs on every command. */
const lk__script_t *lk__script_find(const char *name) {
  size_t lo = 0, hi = lk__script_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(lk__scripts[mid].name, name);
    if (cmp == 0)
      return &lk__scripts[mid];
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}
