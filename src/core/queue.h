/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#ifndef LK_CORE_QUEUE_H
#define LK_CORE_QUEUE_H

#include <stddef.h>

/* An intrusive circular doubly-linked list: the node lives inside the
 * element, so queueing never allocates and removal is O(1). */
typedef struct lk__queue_s {
  struct lk__queue_s *next;
  struct lk__queue_s *prev;
} lk__queue_t;

#define lk__container_of(ptr, type, field)                                    \
  ((type *)((char *)(ptr) - offsetof(type, field)))

static inline void lk__queue_init(lk__queue_t *q) {
  q->next = q;
  q->prev = q;
}

static inline int lk__queue_empty(const lk__queue_t *q) {
  return q->next == q;
}

/* A node that was initialised and removed (or never inserted) reports 0. */
static inline int lk__queue_linked(const lk__queue_t *n) {
  return n->next != NULL && n->next != n;
}

static inline lk__queue_t *lk__queue_head(const lk__queue_t *q) {
  return q->next;
}

static inline void lk__queue_insert_tail(lk__queue_t *q, lk__queue_t *n) {
  n->next = q;
  n->prev = q->prev;
  n->prev->next = n;
  q->prev = n;
}

static inline void lk__queue_insert_head(lk__queue_t *q, lk__queue_t *n) {
  n->next = q->next;
  n->prev = q;
  n->next->prev = n;
  q->next = n;
}

static inline void lk__queue_remove(lk__queue_t *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n;
  n->prev = n;
}

/* Moves every node of from onto the tail of to; from ends empty. */
static inline void lk__queue_move(lk__queue_t *from, lk__queue_t *to) {
  if (lk__queue_empty(from))
    return;
  from->next->prev = to->prev;
  to->prev->next = from->next;
  from->prev->next = to;
  to->prev = from->prev;
  lk__queue_init(from);
}

#endif /* LK_CORE_QUEUE_H */
