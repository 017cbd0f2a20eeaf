#ifndef LK_CORE_ARENA_H
#define LK_CORE_ARENA_H

#include <hiredis/read.h>
#include <stddef.h>

/* Replies parsed into a bump arena instead of one malloc per element: the
 * reader's object functions allocate here, and the connection resets the
 * arena once a complete reply has been handled (a reply is borrowed by its
 * callback, never kept). A partly parsed next reply only ever follows the
 * reset, so resetting between replies is safe. */
typedef struct lk__arena_chunk_s lk__arena_chunk_t;
typedef struct lk__arena_s {
  lk__arena_chunk_t *head; /* current chunk; older ones follow */
} lk__arena_t;

redisReader *lk__arena_reader_new(lk__arena_t *a);
void lk__arena_reset(lk__arena_t *a);
void lk__arena_free(lk__arena_t *a);

#endif /* LK_CORE_ARENA_H */
