#ifndef LK_CORE_ALLOC_H
#define LK_CORE_ALLOC_H

#include <stddef.h>

void *lk__malloc(size_t size);
void *lk__calloc(size_t count, size_t size);
void *lk__realloc(void *ptr, size_t size);
void lk__free(void *ptr);
/* Copies len bytes and adds a NUL; NULL on allocation failure. */
char *lk__memdup0(const char *src, size_t len);
char *lk__strdup(const char *src);
/* Grows the array *buf (capacity *cap elements of elem bytes) to hold need
 * elements: the capacity doubles, from first when there is none yet. 0, or
 * LK_ENOMEM with *buf and *cap as they were (also when need elements of elem
 * bytes would not fit in a size_t). */
int lk__grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first);

/* Counts live clients so lk_replace_allocator can refuse once one exists. */
void lk__alloc_client_born(void);
void lk__alloc_client_died(void);

#endif /* LK_CORE_ALLOC_H */
