/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/alloc.h"
#include "core/arena.h"

#define LK__ARENA_CHUNK 16384

struct lk__arena_chunk_s {
  lk__arena_chunk_t *next;
  size_t used, cap;
  max_align_t data[]; /* aligned storage */
};

static void *arena_alloc(lk__arena_t *a, size_t n) {
  lk__arena_chunk_t *c = a->head;
  n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  if (c == NULL || c->cap - c->used < n) {
    size_t cap = n > LK__ARENA_CHUNK ? n : LK__ARENA_CHUNK;
    c = lk__malloc(sizeof(*c) + cap);
    if (c == NULL)
      return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  c->used += n;
  return (char *)c->data + c->used - n;
}

static void *new_reply(const redisReadTask *task, int type) {
  lk__arena_t *a = task->privdata;
  redisReply *r = arena_alloc(a, sizeof(*r));
  if (r == NULL)
    return NULL;
  memset(r, 0, sizeof(*r));
  r->type = type;
  if (task->parent != NULL) {
    redisReply *parent = task->parent->obj;
    parent->element[task->idx] = r;
  }
  return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len) {
  redisReply *r = new_reply(task, task->type);
  char *copy;
  if (r == NULL)
    return NULL;
  copy = arena_alloc(task->privdata, len + 1);
  if (copy == NULL)
    return NULL;
  memcpy(copy, str, len);
  copy[len] = '\0';
  r->str = copy;
  r->len = len;
  return r;
}

/* No reply latchkey asks for has more elements than this (a renewal batch
 * has 100); a header announcing more is hostile or garbage. Refusing it makes
 * the reader fail, which drops the connection, instead of reserving memory
 * for the announced count (8 bytes each, before a single element arrives). */
#define LK__MAX_REPLY_ELEMENTS (1 << 20)

static void *create_array(const redisReadTask *task, int elements) {
  redisReply *r;
  if (elements > LK__MAX_REPLY_ELEMENTS)
    return NULL;
  r = new_reply(task, REDIS_REPLY_ARRAY);
  if (r == NULL)
    return NULL;
  if (elements > 0) {
    r->element = arena_alloc(task->privdata, sizeof(redisReply *) * (size_t)elements);
    if (r->element == NULL)
      return NULL;
    memset(r->element, 0, sizeof(redisReply *) * (size_t)elements);
  }
  r->elements = elements > 0 ? (size_t)elements : 0;
  return r;
}

static void *create_integer(const redisReadTask *task, long long value) {
  redisReply *r = new_reply(task, REDIS_REPLY_INTEGER);
  if (r != NULL)
    r->integer = value;
  return r;
}

static void *create_nil(const redisReadTask *task) {
  return new_reply(task, REDIS_REPLY_NIL);
}

/* The arena owns everything; a reader giving up on a reply frees nothing. */
static void free_object(void *obj) { (void)obj; }

static redisReplyObjectFunctions lk__arena_fns = {
    create_string, create_array, create_integer, create_nil, free_object,
};

redisReader *lk__arena_reader_new(lk__arena_t *a) {
  redisReader *r = redisReaderCreateWithFunctions(&lk__arena_fns);
  if (r != NULL)
    r->privdata = a;
  return r;
}

/* Keeps the newest chunk (the usual reply fits in it), frees the rest. */
void lk__arena_reset(lk__arena_t *a) {
  lk__arena_chunk_t *c = a->head, *next;
  if (c == NULL)
    return;
  for (next = c->next; next != NULL;) {
    lk__arena_chunk_t *n = next->next;
    lk__free(next);
    next = n;
  }
  c->next = NULL;
  if (c->cap > LK__ARENA_CHUNK) {
    lk__free(c); /* an outsized reply: do not keep its chunk */
    a->head = NULL;
    return;
  }
  c->used = 0;
}

void lk__arena_free(lk__arena_t *a) {
  while (a->head != NULL) {
    lk__arena_chunk_t *n = a->head->next;
    lk__free(a->head);
    a->head = n;
  }
}
