/* Hand-built slot-map replies (slot_map_bytes.h). */
#include "slot_map_bytes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *p;
  size_t len, cap;
  int failed;
} buf_t;

static void put(buf_t *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (b->failed || n < 0 || (size_t)n >= sizeof tmp) {
    b->failed = 1;
    return;
  }
  if (b->len + (size_t)n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + (size_t)n)
      cap *= 2;
    char *grown = realloc(b->p, cap);
    if (grown == NULL) {
      b->failed = 1;
      return;
    }
    b->p = grown;
    b->cap = cap;
  }
  memcpy(b->p + b->len, tmp, (size_t)n);
  b->len += (size_t)n;
}

/* A bulk string. */
static void bulk(buf_t *b, const char *s) { put(b, "$%zu\r\n%s\r\n", strlen(s), s); }

char *rt_shards_reply_bytes(int n_masters, size_t *len) {
  buf_t b = {0};
  char ip[32], id[48];
  put(&b, "*%d\r\n", n_masters);
  for (int i = 0; i < n_masters; i++) {
    snprintf(ip, sizeof ip, "10.%d.%d.%d", i / 65536, (i / 256) % 256, i % 256);
    snprintf(id, sizeof id, "%040x", (unsigned)i + 1u);
    put(&b, "*4\r\n");
    bulk(&b, "slots");
    if (i < 16384)
      put(&b, "*2\r\n:%d\r\n:%d\r\n", i, i);
    else
      put(&b, "*0\r\n");
    bulk(&b, "nodes");
    put(&b, "*1\r\n*14\r\n");
    bulk(&b, "id");
    bulk(&b, id);
    bulk(&b, "port");
    put(&b, ":6379\r\n");
    bulk(&b, "ip");
    bulk(&b, ip);
    bulk(&b, "endpoint");
    bulk(&b, ip);
    bulk(&b, "role");
    bulk(&b, "master");
    bulk(&b, "replication-offset");
    put(&b, ":0\r\n");
    bulk(&b, "health");
    bulk(&b, "online");
  }
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}
