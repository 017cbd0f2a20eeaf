/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Hash table of node indexes (addr_index.h). */
#include "core/addr_index.h"

#include <string.h>

#include "core/alloc.h"
#include "latchkey/errno.h"

uint32_t lk__addr_hash(const char *key, size_t len, int num) {
  /* FNV-1a over the bytes, then the number: keys are short (a host, a
   * 40-digit id) and come from the network, so nothing fancier is needed
   * than a hash every byte feeds. */
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)key[i]) * 16777619u;
  for (int i = 0; i < 4; i++)
    h = (h ^ (((unsigned)num >> (8 * i)) & 0xFFu)) * 16777619u;
  return h;
}

static uint64_t cell_of(uint32_t hash, uint32_t index) {
  return ((uint64_t)hash << 32) | ((uint64_t)index + 1u);
}

long lk__addr_index_find(const lk__addr_index_t *x, uint32_t hash,
                         int (*eq)(const void *ctx, uint32_t index), const void *ctx) {
  if (x->cap == 0)
    return -1;
  for (size_t i = hash & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
    uint64_t cell = x->cells[i];
    if (cell == 0)
      return -1;
    if ((uint32_t)(cell >> 32) == hash) {
      uint32_t index = (uint32_t)(cell & 0xFFFFFFFFu) - 1u;
      if (eq(ctx, index))
        return (long)index;
    }
  }
}

static void put(uint64_t *cells, size_t cap, uint64_t cell) {
  size_t i = (size_t)(cell >> 32) & (cap - 1);
  while (cells[i] != 0)
    i = (i + 1) & (cap - 1);
  cells[i] = cell;
}

int lk__addr_index_add(lk__addr_index_t *x, uint32_t hash, uint32_t index) {
  if ((x->n + 1) * 2 > x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 16;
    uint64_t *cells = lk__calloc(cap, sizeof *cells);
    if (cells == NULL)
      return LK_ENOMEM;
    for (size_t i = 0; i < x->cap; i++)
      if (x->cells[i] != 0)
        put(cells, cap, x->cells[i]);
    lk__free(x->cells);
    x->cells = cells;
    x->cap = cap;
  }
  put(x->cells, x->cap, cell_of(hash, index));
  x->n++;
  return 0;
}

void lk__addr_index_free(lk__addr_index_t *x) {
  lk__free(x->cells);
  memset(x, 0, sizeof *x);
}
