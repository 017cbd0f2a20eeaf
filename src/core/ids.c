/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Owner ids (docs/objects.md, "Lifecycle"; docs/design.md, "Redisson
 * compatibility"): a random UUID v4 per client from uv_random
 * (getrandom underneath: never a PRNG state a fork would share). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

int lk__uuid4(char out[37]) {
  unsigned char b[16];
  int rc = uv_random(NULL, NULL, b, sizeof(b), 0, NULL);
  if (rc != 0)
    return rc;
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(out, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
  return 0;
}

/* A client id set by the caller becomes part of every owner field, whose
 * ':' separates it from the thread id: keep it printable and colon-free. */
int lk__valid_client_id(const char *s) {
  size_t i, n = strlen(s);
  if (n == 0 || n > 64)
    return 0;
  for (i = 0; i < n; i++)
    if (s[i] <= ' ' || s[i] > '~' || s[i] == ':')
      return 0;
  return 1;
}

int lk__hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* xorshift64*: retries need spread, not secrecy, and a getrandom call per
 * retry would cost more than the retry's own bookkeeping. */
uint32_t lk__jitter(lk_client_t *c, uint32_t below) {
  uint64_t x = c->rng;
  if (below == 0)
    return 0;
  while (x == 0) {
    if (uv_random(NULL, NULL, &x, sizeof(x), 0, NULL) != 0)
      x = (uint64_t)(uintptr_t)c ^ lk__now_ns();
  }
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  c->rng = x;
  return (uint32_t)(((x * 0x2545F4914F6CDD1DULL) >> 32) % below);
}
