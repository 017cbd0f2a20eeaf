/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Hash slots of keys, as Redis Cluster assigns them (see slot.h). Written
 * from the algorithm's definition: the router and the tests must agree with
 * the server's CLUSTER KEYSLOT byte for byte. */
#include "core/slot.h"

#include <string.h>

/* Bit by bit, most significant bit first: the key names a latchkey object
 * and is short, so a table would buy nothing worth its 512 bytes. */
uint16_t lk__crc16(const char *buf, size_t len) {
  const unsigned char *p = (const unsigned char *)buf;
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)((uint16_t)p[i] << 8);
    for (int bit = 0; bit < 8; bit++) {
      unsigned shifted = (unsigned)crc << 1;
      crc = (uint16_t)((crc & 0x8000u) ? shifted ^ 0x1021u : shifted);
    }
  }
  return crc;
}

size_t lk__key_hashed(const char *key, size_t len, size_t *off) {
  const char *open = len > 0 ? memchr(key, '{', len) : NULL;
  *off = 0;
  if (open != NULL) {
    size_t after = (size_t)(open - key) + 1;
    const char *close = memchr(open + 1, '}', len - after);
    /* "{}" is no tag: the whole key is hashed then, as the server does. */
    if (close != NULL && close > open + 1) {
      *off = after;
      return (size_t)(close - open - 1);
    }
  }
  return len;
}

uint16_t lk__key_slot(const char *key, size_t len) {
  size_t off, n = lk__key_hashed(key, len, &off);
  return lk__crc16(n > 0 ? key + off : NULL, n) & (LK__SLOTS - 1);
}
