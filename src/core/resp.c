/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* RESP command encoding. hiredis 0.14's redisFormatCommandArgv formats each
 * length header with sprintf, which was most of the client's CPU per command
 * (bench/README.md); this writes the same bytes with a plain digit loop and
 * one exact-size allocation from latchkey's allocator. */
#include <string.h>

#include "core/internal.h"

static size_t digits(size_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

/* Writes "<prefix><v>\r\n" and returns the position after it. */
static char *put_header(char *p, char prefix, size_t v) {
  size_t n = digits(v), i;
  *p++ = prefix;
  for (i = n; i > 0; i--) {
    p[i - 1] = (char)('0' + v % 10);
    v /= 10;
  }
  p += n;
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

size_t lk__i64_to_str(char buf[24], int64_t v) {
  char tmp[24];
  size_t n = 0, i;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  i = 0;
  if (v < 0)
    buf[i++] = '-';
  while (n > 0)
    buf[i++] = tmp[--n];
  buf[i] = '\0';
  return i;
}

int lk__format_command(char **out, size_t *cap, int argc, const char **argv,
                       const size_t *lens) {
  size_t total = 1 + digits((size_t)argc) + 2, i;
  char *buf, *p;
  if (argc <= 0)
    return -1;
  for (i = 0; i < (size_t)argc; i++) {
    size_t len = lens != NULL ? lens[i] : strlen(argv[i]);
    total += 1 + digits(len) + 2 + len + 2;
  }
  buf = *out;
  if (buf == NULL || *cap < total) {
    /* Reused across commands by pooled operation records: grow only, with
     * room for a few more digits, so a number that gains one (a script
     * call's request tag past 9999, a sequence number) reuses the buffer
     * instead of growing it again. */
    size_t want = total + 16;
    buf = lk__realloc(*out, want);
    if (buf == NULL)
      return -1;
    *out = buf;
    *cap = want;
  }
  p = put_header(buf, '*', (size_t)argc);
  for (i = 0; i < (size_t)argc; i++) {
    size_t len = lens != NULL ? lens[i] : strlen(argv[i]);
    p = put_header(p, '$', len);
    memcpy(p, argv[i], len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
  }
  return (int)total;
}
