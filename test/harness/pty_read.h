/* Reading what a pseudo-terminal shows (a non-blocking fd, as
 * test/cli/pty_util.h's pty_spawn gives) until it shows a needle. */
#ifndef LK_TEST_HARNESS_PTY_READ_H
#define LK_TEST_HARNESS_PTY_READ_H

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* Appends what fd shows to acc (*len bytes so far, NUL-terminated, cap
 * bytes) until acc holds needle: 1 found, 0 after timeout_ms (scaled) or a
 * read error. A long output keeps only its tail (the last cap / 4 bytes
 * once it passes cap / 2), so a screen redrawn for long is followed. */
static inline int rt_pty_read_until(int fd, char *acc, size_t cap, size_t *len,
                                    const char *needle, int64_t timeout_ms) {
  int64_t until = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (rt_now_ms() < until) {
    ssize_t n = read(fd, acc + *len, cap - 1 - *len);
    if (n > 0) {
      *len += (size_t)n;
      acc[*len] = '\0';
      if (strstr(acc, needle) != NULL)
        return 1;
      if (*len > cap / 2) { /* keep the tail */
        memmove(acc, acc + *len - cap / 4, cap / 4);
        *len = cap / 4;
        acc[*len] = '\0';
      }
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return 0;
    } else {
      rt_sleep_ms(10);
    }
  }
  return 0;
}

#endif
