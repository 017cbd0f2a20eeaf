/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "latchkey.h"
#include "core/alloc.h"

/* Replaced only while no client exists, so no lock is needed around reads
 * on the loop thread. */
static lk_malloc_func lk__malloc_fn = malloc;
static lk_realloc_func lk__realloc_fn = realloc;
static lk_calloc_func lk__calloc_fn = calloc;
static lk_free_func lk__free_fn = free;
static int lk__live_clients;

int lk_replace_allocator(lk_malloc_func malloc_func, lk_realloc_func realloc_func,
                         lk_calloc_func calloc_func, lk_free_func free_func) {
  if (malloc_func == NULL || realloc_func == NULL || calloc_func == NULL ||
      free_func == NULL)
    return LK_EINVAL;
  if (lk__live_clients > 0)
    return LK_EBUSY;
  lk__malloc_fn = malloc_func;
  lk__realloc_fn = realloc_func;
  lk__calloc_fn = calloc_func;
  lk__free_fn = free_func;
  return 0;
}

void lk__alloc_client_born(void) { lk__live_clients++; }
void lk__alloc_client_died(void) { lk__live_clients--; }

void *lk__malloc(size_t size) { return lk__malloc_fn(size ? size : 1); }

void *lk__calloc(size_t count, size_t size) {
  return lk__calloc_fn(count ? count : 1, size ? size : 1);
}

void *lk__realloc(void *ptr, size_t size) {
  return lk__realloc_fn(ptr, size ? size : 1);
}

void lk__free(void *ptr) {
  if (ptr != NULL)
    lk__free_fn(ptr);
}

char *lk__memdup0(const char *src, size_t len) {
  char *dst = lk__malloc(len + 1);
  if (dst == NULL)
    return NULL;
  memcpy(dst, src, len);
  dst[len] = '\0';
  return dst;
}

char *lk__strdup(const char *src) {
  return src == NULL ? NULL : lk__memdup0(src, strlen(src));
}

int lk__grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first) {
  size_t n = *cap != 0 ? *cap : first;
  void *q;
  if (need <= *cap)
    return 0;
  /* A size no size_t can count in bytes is refused rather than wrapped to a
   * small allocation the caller would then overrun. */
  if (elem == 0 || need > SIZE_MAX / elem)
    return LK_ENOMEM;
  if (n == 0)
    n = 1;
  /* Doubling stops short of overflow: past that, exactly what is needed. */
  while (n < need)
    n = n <= SIZE_MAX / elem / 2 ? n * 2 : need;
  q = lk__realloc(*buf, n * elem);
  if (q == NULL)
    return LK_ENOMEM;
  *buf = q;
  *cap = n;
  return 0;
}
