#ifndef LK_CORE_SLOT_H
#define LK_CORE_SLOT_H

#include <stddef.h>
#include <stdint.h>

/* Redis Cluster divides the key space into 16384 hash slots. */
#define LK__SLOTS 16384
/* An operation that has no key (lk__op_t.slot), or not on a cluster. */
#define LK__NO_SLOT (-1)

/* The slot of a key, as a cluster computes it: CRC16 (the XMODEM variant:
 * polynomial 0x1021, initial value 0, no reflection, no final xor) of the
 * key's hash tag, modulo 16384. The hash tag is what lies between the first
 * '{' and the first '}' after it, when that is at least one byte; otherwise
 * the whole key is hashed. Binary-safe: len bytes of key are read, NULs
 * included; key may be NULL when len is 0. */
uint16_t lk__key_slot(const char *key, size_t len);

/* The bytes of key the slot is computed from: its hash tag (then *off > 0,
 * the tag's start) or, without one, all len bytes (*off = 0). Returns their
 * count. Two keys whose hashed bytes are equal share a slot whatever the
 * CRC: the name check (core/names.c) compares these. */
size_t lk__key_hashed(const char *key, size_t len, size_t *off);

/* Plain CRC16 (XMODEM) of len bytes, exposed for the tests' check of the
 * published test vector (CRC16("123456789") == 0x31C3). */
uint16_t lk__crc16(const char *buf, size_t len);

#endif /* LK_CORE_SLOT_H */
