#include <string.h>

#include "core/internal.h"

const lk__script_t *lk__script_find(const char *name) {
  size_t i;
  for (i = 0; i < lk__script_count; i++)
    if (strcmp(lk__scripts[i].name, name) == 0)
      return &lk__scripts[i];
  return NULL;
}
