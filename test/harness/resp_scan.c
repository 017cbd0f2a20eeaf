/* Incremental RESP2 frame scanner (see resp_scan.h). */
#include "resp_scan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { S_TYPE = 0, S_LINE, S_BULK, S_INLINE };

void rt_resp_scan_init(rt_resp_scan_t *s, int inline_ok) {
  memset(s, 0, sizeof *s);
  s->state = S_TYPE;
  s->capture_slot = -1;
  s->top_count = -1;
  s->inline_ok = inline_ok;
}

static void frame_begin(rt_resp_scan_t *s) {
  s->in_frame = 1;
  s->top_count = -1;
  s->ncap = 0;
  s->cap_len[0] = s->cap_len[1] = 0;
  s->cap[0][0] = s->cap[1][0] = '\0';
  s->top_index = 0;
}

static int broken(rt_resp_scan_t *s) {
  s->broken = 1;
  return -1;
}

/* An element (scalar, bulk or whole array) ended. Returns 1 when that ended
 * the frame. */
static int element_done(rt_resp_scan_t *s) {
  while (s->depth > 0) {
    if (s->depth == 1)
      s->top_index++;
    if (--s->left[s->depth - 1] > 0)
      return 0;
    s->depth--; /* the array is complete: an element of its parent */
  }
  s->in_frame = 0;
  return 1;
}

static long long line_number(const rt_resp_scan_t *s, int *ok) {
  char buf[sizeof s->line + 1];
  char *end = NULL;
  memcpy(buf, s->line, s->line_len);
  buf[s->line_len] = '\0';
  long long v = strtoll(buf, &end, 10);
  *ok = s->line_len > 0 && end != NULL && *end == '\0';
  return v;
}

/* A header or simple line ended. Returns 1 when the frame ended, 0 to go
 * on, -1 on garbage. */
static int line_done(rt_resp_scan_t *s) {
  int ok = 1;
  switch (s->type) {
  case '*': {
    long long count = line_number(s, &ok);
    if (!ok)
      return broken(s);
    if (s->depth == 0)
      s->top_count = count;
    s->state = S_TYPE;
    if (count <= 0)
      return element_done(s); /* empty or nil array */
    if (s->depth >= RT_RESP_DEPTH)
      return broken(s);
    s->left[s->depth++] = count;
    return 0;
  }
  case '$': {
    long long len = line_number(s, &ok);
    if (!ok || len < -1)
      return broken(s);
    if (len == -1) {
      s->state = S_TYPE;
      return element_done(s);
    }
    s->capture_slot = -1;
    if (s->depth == 1 && s->top_index < 2 && s->ncap == s->top_index) {
      s->capture_slot = s->top_index;
      s->cap_len[s->capture_slot] = 0;
      s->ncap++;
    }
    s->bulk_left = len + 2;
    s->state = S_BULK;
    return 0;
  }
  default: /* + - : */
    s->state = S_TYPE;
    return element_done(s);
  }
}

static void capture(rt_resp_scan_t *s, int slot, const char *p, size_t n) {
  size_t room = RT_RESP_CAP - s->cap_len[slot];
  if (n > room)
    n = room;
  memcpy(s->cap[slot] + s->cap_len[slot], p, n);
  s->cap_len[slot] += n;
  s->cap[slot][s->cap_len[slot]] = '\0';
}

long rt_resp_scan(rt_resp_scan_t *s, const char *p, size_t n, int *frame_done) {
  size_t i = 0;
  *frame_done = 0;
  if (s->broken)
    return -1;
  while (i < n) {
    char ch = p[i];
    switch (s->state) {
    case S_TYPE:
      if (!s->in_frame)
        frame_begin(s);
      if (ch == '*' || ch == '$' || ch == ':' || ch == '+' || ch == '-') {
        s->type = ch;
        s->line_len = 0;
        s->state = S_LINE;
        i++;
        break;
      }
      if (s->depth == 0 && s->inline_ok && ch != '\r' && ch != '\n') {
        s->state = S_INLINE;
        s->top_index = 0; /* counts words */
        s->ncap = 0;
        s->capture_slot = -1;
        break; /* the byte is read by S_INLINE */
      }
      return broken(s);
    case S_LINE:
      i++;
      if (ch == '\r')
        break;
      if (ch == '\n') {
        int r = line_done(s);
        if (r < 0)
          return -1;
        if (r == 1) {
          *frame_done = 1;
          return (long)i;
        }
        break;
      }
      /* Only numbers are kept; status and error texts are skipped. */
      if (s->type == '*' || s->type == '$') {
        if (s->line_len >= sizeof s->line)
          return broken(s);
        s->line[s->line_len++] = ch;
      }
      break;
    case S_BULK: {
      size_t take = n - i;
      if ((long long)take > s->bulk_left)
        take = (size_t)s->bulk_left;
      if (s->capture_slot >= 0) {
        /* The data part only, not the trailing CRLF. */
        long long data_left = s->bulk_left - 2;
        size_t data = data_left > 0 ? (size_t)data_left : 0;
        capture(s, s->capture_slot, p + i, take < data ? take : data);
      }
      s->bulk_left -= (long long)take;
      i += take;
      if (s->bulk_left == 0) {
        s->capture_slot = -1;
        s->state = S_TYPE;
        if (element_done(s)) {
          *frame_done = 1;
          return (long)i;
        }
      }
      break;
    }
    case S_INLINE:
      i++;
      if (ch == '\n') {
        s->state = S_TYPE;
        s->in_frame = 0;
        s->top_count = s->top_index; /* words */
        *frame_done = 1;
        return (long)i;
      }
      if (ch == '\r')
        break;
      if (ch == ' ' || ch == '\t') {
        s->capture_slot = -1; /* between words */
        break;
      }
      if (s->capture_slot < 0) { /* a word starts */
        s->capture_slot = s->top_index++;
        if (s->capture_slot < 2)
          s->ncap = s->capture_slot + 1;
      }
      if (s->capture_slot < 2)
        capture(s, s->capture_slot, &ch, 1);
      break;
    }
  }
  return (long)i;
}

int rt_resp_cap_is(const rt_resp_scan_t *s, int i, const char *w, size_t wlen) {
  if (i < 0 || i >= s->ncap || s->cap_len[i] != wlen)
    return 0;
  for (size_t k = 0; k < wlen; k++)
    if (tolower((unsigned char)s->cap[i][k]) != tolower((unsigned char)w[k]))
      return 0;
  return 1;
}
