/* A minimal incremental RESP2 scanner for the fault proxy: it finds where
 * each frame (one request, one reply, one pub/sub push) ends in a byte
 * stream that arrives in arbitrary pieces, and captures the first two bulk
 * strings of a top-level array (a request's verb and first argument, or a
 * push's "message" kind) without copying the frame.
 *
 * Requests may also be inline ("PING\r\n"): a top-level line that does not
 * start with a RESP type byte; its first two words are captured. Replies are
 * never inline. Nothing here allocates; a hostile header such as
 * "*100000000" is just a number to it. */
#ifndef LK_TEST_HARNESS_RESP_SCAN_H
#define LK_TEST_HARNESS_RESP_SCAN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_RESP_CAP 64    /* bytes kept of each captured word */
#define RT_RESP_DEPTH 16  /* nesting accepted before calling it garbage */

typedef struct rt_resp_scan_s {
  int state;
  char type;                  /* type byte of the line being read */
  char line[32];              /* its digits (length / count lines) */
  size_t line_len;
  long long bulk_left;        /* bulk bytes + CRLF still to come */
  int depth;                  /* open arrays */
  long long left[RT_RESP_DEPTH];
  int capture_slot;           /* -1: the current bulk is not captured */
  int top_index;              /* index of the current top-level element */
  /* Of the frame being scanned (valid once it completes): */
  int in_frame;
  long long top_count;        /* elements of a top-level array; -1 if none */
  char cap[2][RT_RESP_CAP + 1];
  size_t cap_len[2];
  int ncap;
  int broken;                 /* not RESP: the caller stops scanning */
  int inline_ok;              /* top-level inline commands allowed */
} rt_resp_scan_t;

void rt_resp_scan_init(rt_resp_scan_t *s, int inline_ok);

/* Consumes bytes of p[0..n) until the current frame ends or the bytes run
 * out. Returns how many were consumed and sets *frame_done to 1 when a frame
 * ended with the last consumed byte (its captures are then in s->cap until
 * the next call starts a new frame). Returns -1 (and sets s->broken) on bytes
 * that are not RESP. */
long rt_resp_scan(rt_resp_scan_t *s, const char *p, size_t n, int *frame_done);

/* 1 when word w (case-insensitive, exact length) equals capture i. */
int rt_resp_cap_is(const rt_resp_scan_t *s, int i, const char *w, size_t wlen);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_RESP_SCAN_H */
