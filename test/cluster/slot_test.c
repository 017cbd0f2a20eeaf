/* lk__key_slot (src/core/slot.h): the CRC16 test vector, the hash tag rules,
 * binary keys, and agreement with a cluster node's CLUSTER KEYSLOT over many
 * random keys. */
#include <stdio.h>
#include <string.h>

#include "core/slot.h"
#include "redis_server.h"
#include "test.h"

static int slot_of(const char *key) { return lk__key_slot(key, strlen(key)); }

TEST(crc16_matches_the_published_test_vector) {
  ASSERT_EQ(lk__crc16("123456789", 9), 0x31C3);
  ASSERT_EQ(lk__crc16("", 0), 0);
  ASSERT_EQ(lk__crc16(NULL, 0), 0);
  ASSERT_EQ(slot_of("123456789"), 0x31C3 % 16384);
}

TEST(hash_tags_follow_the_cluster_rules) {
  ASSERT_EQ(slot_of("foo"), 12182);
  ASSERT_EQ(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
  ASSERT_EQ(slot_of("{user1000}.following"), slot_of("user1000"));
  /* "{}" is no tag: the whole key counts. */
  ASSERT_EQ(slot_of("foo{}{bar}"), lk__crc16("foo{}{bar}", 10) % 16384);
  ASSERT_NE(slot_of("foo{}{bar}"), slot_of("bar"));
  /* The tag ends at the first '}' after the first '{'. */
  ASSERT_EQ(slot_of("foo{{bar}}zap"), slot_of("{bar"));
  ASSERT_EQ(slot_of("foo{bar}{zap}"), slot_of("bar"));
  ASSERT_EQ(slot_of("}foo{bar}"), slot_of("bar"));
  /* An unclosed '{' is no tag. */
  ASSERT_EQ(slot_of("foo{bar"), lk__crc16("foo{bar", 7) % 16384);
  ASSERT_EQ(slot_of("{"), lk__crc16("{", 1) % 16384);
  ASSERT_EQ(slot_of("{}"), lk__crc16("{}", 2) % 16384);
  ASSERT_EQ(slot_of("{a}"), slot_of("a"));
  /* Redisson's names: every key of one object shares its tag. */
  ASSERT_EQ(slot_of("redisson_lock__channel:{orders:42}"), slot_of("orders:42"));
  ASSERT_EQ(slot_of(""), 0);
  ASSERT_EQ(lk__key_slot(NULL, 0), 0);
}

TEST(keys_are_binary_safe) {
  /* A NUL inside the tag, and before it. */
  ASSERT_EQ(lk__key_slot("x{a\0b}y", 7), lk__key_slot("a\0b", 3));
  ASSERT_NE(lk__key_slot("a\0b", 3), lk__key_slot("a", 1));
  ASSERT_EQ(lk__key_slot("\0{t}", 4), slot_of("t"));
  /* len bounds the search: a '}' past len does not close the tag. */
  ASSERT_EQ(lk__key_slot("ab{cd}", 5), lk__crc16("ab{cd", 5) % 16384);
  /* High bytes. */
  ASSERT_EQ(lk__key_slot("\xff\xfe{\x80}", 5), lk__key_slot("\x80", 1));
}

/* A cluster-enabled node answers CLUSTER KEYSLOT without any slots of its
 * own: random keys, braces and NULs included, must hash alike. */
TEST(key_slot_agrees_with_the_server_on_random_keys) {
  static const char *const args[] = {"--cluster-enabled", "yes", "--cluster-config-file",
                                     "nodes.conf", NULL};
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  so.extra_args = args;
  rt_server_t *s = rt_server_start(&so);
  ASSERT_NOT_NULL(s);
  static const char alphabet[] = "ab{}{}\0\xff:.x";
  uint64_t rng = 0x2545F4914F6CDD1DULL;
  for (int i = 0; i < 2000; i++) {
    char key[24];
    size_t len = (size_t)(rt_xorshift(&rng) % sizeof key);
    for (size_t k = 0; k < len; k++)
      key[k] = alphabet[rt_xorshift(&rng) % (sizeof alphabet - 1)];
    const char *argv[] = {"CLUSTER", "KEYSLOT", key};
    size_t lens[] = {7, 7, len};
    redisReply *r = rt_cmd_argv(s, 3, argv, lens);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    if (r->integer != lk__key_slot(key, len))
      FAIL("key #%d (%zu bytes): server %lld, lk__key_slot %d", i, len, r->integer,
           lk__key_slot(key, len));
    freeReplyObject(r);
  }
  rt_server_stop(s);
}
