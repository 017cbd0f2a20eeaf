/* The slot-map parser (src/core/topology.h) on replies written by hand:
 * malformed ones end in a clear code and leak nothing (a counting allocator
 * replaces latchkey's own), every endpoint rule, the shapes a failover
 * leaves, the diff, and allocation failures at every step. The same parser
 * on a real cluster's replies is in fixture_test.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/topology.h"
#include "latchkey.h"
#include "test.h"

/* ---- a counting allocator that can fail one chosen allocation -------------------- */

#define CA_MAGIC 0x746f706f6c6f6779ULL
typedef struct {
  uint64_t magic;
  uint64_t size;
} ca_hdr_t;
static long long ca_live, ca_calls, ca_fail_at; /* fail_at 0: never */

static void *ca_malloc(size_t n) {
  if (ca_fail_at != 0 && ++ca_calls == ca_fail_at)
    return NULL;
  ca_hdr_t *h = malloc(sizeof *h + n);
  if (h == NULL)
    return NULL;
  h->magic = CA_MAGIC;
  h->size = n;
  ca_live++;
  return h + 1;
}

static void ca_free(void *p) {
  if (p == NULL)
    return;
  ca_hdr_t *h = (ca_hdr_t *)p - 1;
  if (h->magic != CA_MAGIC)
    FAIL("free of a block the counting allocator did not hand out");
  h->magic = 0;
  ca_live--;
  free(h);
}

static void *ca_calloc(size_t a, size_t b) {
  if (b != 0 && a > SIZE_MAX / b)
    return NULL;
  void *p = ca_malloc(a * b);
  if (p != NULL)
    memset(p, 0, a * b);
  return p;
}

static void *ca_realloc(void *p, size_t n) {
  if (p == NULL)
    return ca_malloc(n);
  void *q = ca_malloc(n);
  if (q == NULL)
    return NULL;
  ca_hdr_t *h = (ca_hdr_t *)p - 1;
  memcpy(q, p, h->size < n ? h->size : n);
  ca_free(p);
  return q;
}

static void ca_install(void) {
  ASSERT_OK(lk_replace_allocator(ca_malloc, ca_realloc, ca_calloc, ca_free));
}

#define ASSERT_NO_LEAK()                                                       \
  do {                                                                         \
    if (ca_live != 0)                                                          \
      FAIL("%lld blocks from latchkey's allocator still live", ca_live);       \
  } while (0)

/* ---- replies from a compact notation ------------------------------------------------ */

/* [ ... ] array, "text" bulk string (\0 a NUL, \" a quote), 123 integer,
 * nil, +WORD status, -WORD error (underscores become spaces). Turned into
 * RESP and read back with hiredis's own reader. */
typedef struct {
  char *buf;
  size_t len, cap;
} sb_t;

static void sb_put(sb_t *b, const char *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->buf = realloc(b->buf, b->cap);
    if (b->buf == NULL)
      FAIL("out of memory");
  }
  memcpy(b->buf + b->len, p, n);
  b->len += n;
  b->buf[b->len] = '\0';
}

static void sb_printf(sb_t *b, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_put(b, tmp, (size_t)n);
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == ',')
    p++;
  return p;
}

static const char *emit(const char *p, sb_t *out, int depth) {
  if (depth > 16)
    FAIL("notation nested too deep");
  p = skip_ws(p);
  if (*p == '[') {
    sb_t kids = {0};
    int n = 0;
    p = skip_ws(p + 1);
    for (int guard = 0; *p != ']'; guard++) {
      if (*p == '\0' || guard > 100000)
        FAIL("notation: unclosed [");
      p = skip_ws(emit(p, &kids, depth + 1));
      n++;
    }
    sb_printf(out, "*%d\r\n", n);
    if (kids.len > 0)
      sb_put(out, kids.buf, kids.len);
    free(kids.buf);
    return p + 1;
  }
  if (*p == '"') {
    sb_t s = {0};
    for (p++; *p != '"'; p++) {
      if (*p == '\0')
        FAIL("notation: unclosed string");
      if (*p == '\\' && p[1] == '0') {
        sb_put(&s, "", 1);
        p++;
      } else if (*p == '\\' && p[1] != '\0') {
        sb_put(&s, p + 1, 1);
        p++;
      } else {
        sb_put(&s, p, 1);
      }
    }
    sb_printf(out, "$%zu\r\n", s.len);
    if (s.len > 0)
      sb_put(out, s.buf, s.len);
    sb_put(out, "\r\n", 2);
    free(s.buf);
    return p + 1;
  }
  const char *end = p;
  while (*end != '\0' && *end != ' ' && *end != ']' && *end != '\n' && *end != ',')
    end++;
  size_t n = (size_t)(end - p);
  if (n == 3 && memcmp(p, "nil", 3) == 0) {
    sb_put(out, "$-1\r\n", 5);
  } else if (*p == '+' || (*p == '-' && !(p[1] >= '0' && p[1] <= '9'))) {
    for (size_t k = 0; k < n; k++)
      sb_put(out, p[k] == '_' ? " " : p + k, 1);
    sb_put(out, "\r\n", 2);
  } else if (n > 0) {
    sb_put(out, ":", 1);
    sb_put(out, p, n);
    sb_put(out, "\r\n", 2);
  } else {
    FAIL("notation: unexpected '%c'", *p);
  }
  return end;
}

static redisReply *R(const char *fmt, ...) {
  static char text[16384];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ASSERT_LT(n, (int)sizeof text);
  sb_t resp = {0};
  const char *rest = skip_ws(emit(text, &resp, 0));
  if (*rest != '\0')
    FAIL("notation: trailing text: %s", rest);
  redisReader *rd = redisReaderCreate();
  ASSERT_NOT_NULL(rd);
  void *reply = NULL;
  ASSERT_EQ(redisReaderFeed(rd, resp.buf, resp.len), REDIS_OK);
  ASSERT_EQ(redisReaderGetReply(rd, &reply), REDIS_OK);
  ASSERT_NOT_NULL(reply);
  redisReaderFree(rd);
  free(resp.buf);
  return reply;
}

/* A CLUSTER SHARDS node and shard, as Redis 7.0 and Valkey 8 send them. */
#define NODE(id, port, endpoint, role, health)                                                  \
  "[\"id\" \"" id "\" \"port\" " #port " \"ip\" \"127.0.0.1\" \"endpoint\" \"" endpoint          \
  "\" \"role\" \"" role "\" \"replication-offset\" 72 \"health\" \"" health "\"]"
#define SHARD(slots, nodes) "[\"slots\" " slots " \"nodes\" [" nodes "]]"
#define SHARDS3                                                                                 \
  "[" SHARD("[0 5460]", NODE("m1", 7000, "127.0.0.1", "master", "online") " " NODE(              \
      "r1", 7003, "127.0.0.1", "replica", "online")) " " SHARD("[5461 10922]",                  \
      NODE("m2", 7001, "127.0.0.1", "master", "online") " " NODE("r2", 7004, "127.0.0.1",       \
      "replica", "loading")) " " SHARD("[10923 16383]", NODE("m3", 7002, "127.0.0.1",            \
      "master", "online") " " NODE("r3", 7005, "127.0.0.1", "replica", "fail")) "]"
/* CLUSTER SLOTS: [start end [ip port id metadata] replicas...] */
#define SLOTS3                                                                                  \
  "[[0 5460 [\"127.0.0.1\" 7000 \"m1\" []] [\"127.0.0.1\" 7003 \"r1\" []]]"                     \
  " [5461 10922 [\"127.0.0.1\" 7001 \"m2\" []] [\"127.0.0.1\" 7004 \"r2\" []]]"                 \
  " [10923 16383 [\"127.0.0.1\" 7002 \"m3\" []] [\"127.0.0.1\" 7005 \"r3\" []]]]"

static int parse(int shards, redisReply *r, const char *origin, lk__topo_t **out) {
  int rc = shards ? lk__topo_from_shards(r, origin, out) : lk__topo_from_slots(r, origin, out);
  freeReplyObject(r);
  if (rc != 0)
    ASSERT_NULL(*out);
  return rc;
}

static lk__topo_t *parse_ok(int shards, redisReply *r, const char *origin) {
  lk__topo_t *t = NULL;
  ASSERT_OK(parse(shards, r, origin, &t));
  ASSERT_NOT_NULL(t);
  return t;
}

static void expect_code(int shards, const char *notation, int want, const char *origin) {
  lk__topo_t *t = (lk__topo_t *)&t; /* not NULL: the parser must clear it */
  int rc = parse(shards, R("%s", notation), origin, &t);
  if (rc != want)
    FAIL("%s %s: got %s, expected %s", shards ? "SHARDS" : "SLOTS", notation, lk_err_name(rc),
         lk_err_name(want));
  ASSERT_NO_LEAK();
}

static const lk__topo_node_t *node(const lk__topo_t *t, const char *id) {
  int i = lk__topo_find_id(t, id);
  if (i < 0)
    FAIL("no node %s", id);
  return &t->nodes[i];
}

/* ---- cases ---------------------------------------------------------------------- */

TEST(well_formed_replies_give_the_expected_map) {
  ca_install();
  for (int shards = 1; shards >= 0; shards--) {
    lk__topo_t *t = parse_ok(shards, R(shards ? SHARDS3 : SLOTS3), NULL);
    ASSERT_EQ(t->n_nodes, 6);
    ASSERT_EQ(t->n_masters, 3);
    ASSERT_EQ(t->covered, LK__SLOTS);
    ASSERT_STREQ(lk__topo_slot_master(t, 0)->id, "m1");
    ASSERT_STREQ(lk__topo_slot_master(t, 5460)->id, "m1");
    ASSERT_STREQ(lk__topo_slot_master(t, 5461)->id, "m2");
    ASSERT_STREQ(lk__topo_slot_master(t, 16383)->id, "m3");
    ASSERT_EQ(lk__topo_slot_master(t, lk__key_slot("foo", 3))->port, 7002); /* 12182 */
    ASSERT_EQ(node(t, "m1")->n_slots, 5461);
    ASSERT_EQ(node(t, "m1")->n_replicas, 1);
    ASSERT_EQ(node(t, "r1")->role, LK__TOPO_REPLICA);
    ASSERT_EQ(node(t, "r1")->master, lk__topo_find_id(t, "m1"));
    ASSERT_EQ(node(t, "r3")->master, lk__topo_find_id(t, "m3"));
    ASSERT_EQ(node(t, "m2")->master, LK__TOPO_NONE);
    ASSERT_STREQ(node(t, "r2")->host, "127.0.0.1");
    ASSERT_EQ(node(t, "r2")->health, shards ? LK__TOPO_LOADING : LK__TOPO_ONLINE);
    ASSERT_EQ(node(t, "r3")->health, shards ? LK__TOPO_FAILED : LK__TOPO_ONLINE);
    ASSERT_EQ(lk__topo_find(t, "127.0.0.1", 7004), lk__topo_find_id(t, "r2"));
    ASSERT_EQ(lk__topo_find(t, "127.0.0.2", 7004), -1);
    lk__topo_free(t);
    ASSERT_NO_LEAK();
  }
}

TEST(malformed_shards_replies_are_eprotocol) {
  ca_install();
  static const char *const bad[] = {
      "\"not an array\"",
      "42",
      "nil",
      "+OK",
      "[42]",
      "[\"shard\"]",
      /* a shard: odd key/value list, missing or mistyped slots / nodes */
      "[[\"slots\" [0 1] \"nodes\"]]",
      "[[\"slots\" [0 1]]]",
      "[[\"nodes\" [" NODE("m1", 7000, "h", "master", "online") "]]]",
      "[[\"slots\" 5 \"nodes\" []]]",
      "[[\"slots\" [0 1] \"nodes\" \"none\"]]",
      "[[7 [0 1] \"nodes\" []]]",
      /* slot ranges: odd count, not integers, out of range, reversed, overlapping */
      "[" SHARD("[0 1 2]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[\"0\" \"1\"]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[0 16384]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[-1 5]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[10 5]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[0 10 10 20]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[0 100]", NODE("m1", 7000, "h", "master", "online")) " " SHARD(
          "[100 200]", NODE("m2", 7001, "h", "master", "online")) "]",
      "[" SHARD("[0 16383]", NODE("m1", 7000, "h", "master", "online")) " " SHARD(
          "[0 16383]", NODE("m2", 7001, "h", "master", "online")) "]",
      /* nodes: not a key/value list, missing or mistyped fields */
      "[" SHARD("[0 1]", "\"node\"") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\"]") "]",
      "[" SHARD("[0 1]", "[\"port\" 7000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"\" \"port\" 7000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" 5 \"port\" 7000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m\\0x\" \"port\" 7000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" \"7000\" \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 70000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" -5 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 0 \"ip\" \"h\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" \"h\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" \"h\" \"role\" \"boss\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" \"h\" \"role\" 1]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" 1 \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"endpoint\" [] \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"endpoint\" \"h\\0\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" \"h\" \"role\" \"master\" \"health\" 3]") "]",
      "[" SHARD("[0 1]", "[[1] \"m1\" \"port\" 7000 \"ip\" \"h\" \"role\" \"master\"]") "]",
      /* no address at all: "?" with no ip, and no origin given */
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"endpoint\" \"?\" \"role\" \"master\"]") "]",
      "[" SHARD("[0 1]", "[\"id\" \"m1\" \"port\" 7000 \"ip\" \"\" \"endpoint\" \"\" \"role\" \"master\"]") "]",
      /* one node in two shards */
      "[" SHARD("[0 1]", NODE("m1", 7000, "h", "master", "online")) " " SHARD(
          "[2 3]", NODE("m1", 7000, "h", "master", "online")) "]",
      "[" SHARD("[0 1]", NODE("m1", 7000, "h", "master", "online") " " NODE(
          "m1", 7000, "h", "replica", "online")) "]",
      /* a malformed range wins over an ambiguous master */
      "[" SHARD("[0 16384]", NODE("r1", 7000, "h", "replica", "online")) "]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_code(1, bad[i], LK_EPROTOCOL, NULL);
}

TEST(malformed_slots_replies_are_eprotocol) {
  ca_install();
  static const char *const bad[] = {
      "\"not an array\"",
      "7",
      "nil",
      "[5]",
      "[[0 5]]",
      "[[0 5 7]]",
      "[[\"0\" 5 [\"h\" 7000 \"m1\"]]]",
      "[[0 \"5\" [\"h\" 7000 \"m1\"]]]",
      "[[0 16384 [\"h\" 7000 \"m1\"]]]",
      "[[-1 5 [\"h\" 7000 \"m1\"]]]",
      "[[6 5 [\"h\" 7000 \"m1\"]]]",
      "[[0 10 [\"h\" 7000 \"m1\"]] [10 20 [\"h\" 7001 \"m2\"]]]",
      "[[0 10 [\"h\" 7000 \"m1\"]] [5 6 [\"h\" 7000 \"m1\"]]]",
      /* nodes */
      "[[0 5 \"h\"]]",
      "[[0 5 [\"h\"]]]",
      "[[0 5 [7 7000 \"m1\"]]]",
      "[[0 5 [\"h\" \"7000\" \"m1\"]]]",
      "[[0 5 [\"h\" 0 \"m1\"]]]",
      "[[0 5 [\"h\" 70000 \"m1\"]]]",
      "[[0 5 [\"h\" 7000 7]]]",
      "[[0 5 [\"h\" 7000 \"m\\0\"]]]",
      "[[0 5 [\"h\" 7000 \"m1\" \"meta\"]]]",
      "[[0 5 [\"h\" 7000 \"m1\" [\"ip\"]]]]",
      "[[0 5 [\"h\" 7000 \"m1\" [1 \"x\"]]]]",
      "[[0 5 [\"h\" 7000 \"m1\" [\"ip\" 1]]]]",
      "[[0 5 [\"h\" 7000 \"m1\"] \"replica\"]]",
      /* roles that contradict: a master listed as a replica, a replica of two masters */
      "[[0 5 [\"h\" 7000 \"m1\"] [\"h\" 7001 \"m2\"]] [6 9 [\"h\" 7001 \"m2\"]]]",
      "[[0 5 [\"h\" 7000 \"m1\"] [\"h\" 7003 \"r1\"]] [6 9 [\"h\" 7001 \"m2\"] [\"h\" 7003 \"r1\"]]]",
      /* no address: "?" without metadata ip, nil without it, no origin */
      "[[0 5 [\"?\" 7000 \"m1\"]]]",
      "[[0 5 [nil 7000 \"m1\" []]]]",
      "[[0 5 [\"\" 7000 \"m1\"]]]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_code(0, bad[i], LK_EPROTOCOL, NULL);
  /* A node with no id is fine (CLUSTER SLOTS before Redis 4 sent none). */
  lk__topo_t *t = parse_ok(0, R("[[0 5 [\"h\" 7000 \"m1\"] [\"h\" 7003]]]"), NULL);
  ASSERT_EQ(t->n_nodes, 2);
  ASSERT_STREQ(t->nodes[1].id, "");
  ASSERT_EQ(t->nodes[1].master, 0);
  ASSERT_EQ(lk__topo_find_id(t, ""), -1);
  lk__topo_free(t);
  ASSERT_NO_LEAK();
}

TEST(error_replies_are_eredis_and_null_arguments_einval) {
  ca_install();
  expect_code(1, "-ERR_unknown_subcommand_'shards'", LK_EREDIS, NULL);
  expect_code(0, "-ERR_This_instance_has_cluster_support_disabled", LK_EREDIS, NULL);
  lk__topo_t *t = NULL;
  redisReply *r = R("[]");
  ASSERT_EQ(lk__topo_from_shards(NULL, NULL, &t), LK_EINVAL);
  ASSERT_EQ(lk__topo_from_slots(NULL, NULL, &t), LK_EINVAL);
  ASSERT_EQ(lk__topo_from_shards(r, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk__topo_from_slots(r, NULL, NULL), LK_EINVAL);
  /* An empty reply is a cluster with no slots assigned: valid, empty. */
  ASSERT_OK(lk__topo_from_shards(r, NULL, &t));
  ASSERT_EQ(t->n_nodes, 0);
  ASSERT_EQ(t->covered, 0);
  ASSERT_NULL(lk__topo_slot_master(t, 0));
  lk__topo_free(t);
  freeReplyObject(r);
  ASSERT_NO_LEAK();
}

/* Well formed, but no single master can be named for a shard's slots:
 * LK_ECLUSTER, so a caller asks CLUSTER SLOTS instead. */
TEST(shards_without_one_best_master_are_ecluster) {
  ca_install();
  static const char *const amb[] = {
      "[" SHARD("[0 16383]", NODE("r1", 7003, "h", "replica", "online")) "]",
      "[" SHARD("[0 16383]", "") "]",
      "[" SHARD("[0 16383]", NODE("m1", 7000, "h", "master", "online") " " NODE(
          "m2", 7001, "h", "master", "online")) "]",
      "[" SHARD("[0 16383]", NODE("m1", 7000, "h", "master", "fail") " " NODE(
          "m2", 7001, "h", "master", "fail")) "]",
  };
  for (size_t i = 0; i < sizeof amb / sizeof amb[0]; i++)
    expect_code(1, amb[i], LK_ECLUSTER, NULL);
  /* With no slots, two masters in one shard are no question. */
  lk__topo_t *t = parse_ok(1, R("[" SHARD("[]", NODE("m1", 7000, "h", "master", "online") " " NODE(
                                   "m2", 7001, "h", "master", "online")) "]"), NULL);
  ASSERT_EQ(t->n_masters, 2);
  ASSERT_EQ(t->covered, 0);
  lk__topo_free(t);
  ASSERT_NO_LEAK();
}

/* Trees hiredis's reader cannot make: NULL elements. */
TEST(null_elements_in_hand_built_trees_are_eprotocol) {
  ca_install();
  redisReply top, shard, kid;
  redisReply *top_el[1], *shard_el[4], *kid_el[3];
  memset(&top, 0, sizeof top);
  memset(&shard, 0, sizeof shard);
  memset(&kid, 0, sizeof kid);
  top.type = REDIS_REPLY_ARRAY, top.elements = 1, top.element = top_el;
  lk__topo_t *t = NULL;

  top_el[0] = NULL;
  ASSERT_EQ(lk__topo_from_shards(&top, NULL, &t), LK_EPROTOCOL);
  ASSERT_EQ(lk__topo_from_slots(&top, NULL, &t), LK_EPROTOCOL);

  /* A shard whose keys and values are NULL. */
  top_el[0] = &shard;
  shard.type = REDIS_REPLY_ARRAY, shard.elements = 4, shard.element = shard_el;
  memset(shard_el, 0, sizeof shard_el);
  ASSERT_EQ(lk__topo_from_shards(&top, NULL, &t), LK_EPROTOCOL);

  /* A CLUSTER SLOTS entry [NULL NULL NULL], then [0 0 NULL]. */
  kid.type = REDIS_REPLY_ARRAY, kid.elements = 3, kid.element = kid_el;
  memset(kid_el, 0, sizeof kid_el);
  top_el[0] = &kid;
  ASSERT_EQ(lk__topo_from_slots(&top, NULL, &t), LK_EPROTOCOL);
  redisReply zero;
  memset(&zero, 0, sizeof zero);
  zero.type = REDIS_REPLY_INTEGER;
  kid_el[0] = kid_el[1] = &zero;
  ASSERT_EQ(lk__topo_from_slots(&top, NULL, &t), LK_EPROTOCOL);
  /* A string whose str is NULL with a length. */
  redisReply bad_str;
  memset(&bad_str, 0, sizeof bad_str);
  bad_str.type = REDIS_REPLY_STRING, bad_str.len = 5, bad_str.str = NULL;
  redisReply *node_el[2] = {&bad_str, &zero};
  redisReply nd;
  memset(&nd, 0, sizeof nd);
  nd.type = REDIS_REPLY_ARRAY, nd.elements = 2, nd.element = node_el;
  kid_el[2] = &nd;
  ASSERT_EQ(lk__topo_from_slots(&top, NULL, &t), LK_EPROTOCOL);
  ASSERT_NULL(t);
  ASSERT_NO_LEAK();
}

TEST(endpoints_resolve_to_a_host_to_connect_to) {
  ca_install();
  /* CLUSTER SHARDS: a hostname; "?" (hostname preferred, none set) -> ip;
   * "" (unknown-endpoint) -> the origin, or the ip without one; no
   * endpoint field (an early 7.0) -> ip. */
  static const char shards[] =
      "[" SHARD("[0 16383]",
                "[\"id\" \"a\" \"port\" 7000 \"ip\" \"10.0.0.1\" \"endpoint\" \"node-a.example\" "
                "\"hostname\" \"node-a.example\" \"role\" \"master\" \"health\" \"online\"] "
                "[\"id\" \"b\" \"port\" 7001 \"ip\" \"10.0.0.2\" \"endpoint\" \"?\" \"role\" "
                "\"replica\" \"availability-zone\" \"az-1\"] "
                "[\"id\" \"c\" \"port\" 7002 \"ip\" \"10.0.0.3\" \"endpoint\" \"\" \"role\" "
                "\"replica\"] "
                "[\"id\" \"d\" \"port\" 7003 \"ip\" \"10.0.0.4\" \"role\" \"slave\"] "
                "[\"id\" \"e\" \"tls-port\" 7443 \"ip\" \"10.0.0.5\" \"endpoint\" nil \"role\" "
                "\"replica\"]") "]";
  for (int with_origin = 0; with_origin < 2; with_origin++) {
    lk__topo_t *t = parse_ok(1, R(shards), with_origin ? "seed.example" : NULL);
    ASSERT_STREQ(node(t, "a")->host, "node-a.example");
    ASSERT_STREQ(node(t, "b")->host, "10.0.0.2");
    ASSERT_STREQ(node(t, "c")->host, with_origin ? "seed.example" : "10.0.0.3");
    ASSERT_STREQ(node(t, "d")->host, "10.0.0.4");
    ASSERT_STREQ(node(t, "e")->host, with_origin ? "seed.example" : "10.0.0.5");
    ASSERT_EQ(node(t, "e")->port, 0);
    ASSERT_EQ(node(t, "e")->tls_port, 7443);
    ASSERT_EQ(lk__topo_find(t, "10.0.0.5", 7443), with_origin ? -1 : lk__topo_find_id(t, "e"));
    ASSERT_EQ(node(t, "a")->n_replicas, 4);
    ASSERT_EQ(node(t, "d")->role, LK__TOPO_REPLICA);
    ASSERT_EQ(node(t, "b")->health, LK__TOPO_ONLINE); /* no health field */
    lk__topo_free(t);
  }
  /* CLUSTER SLOTS: "?" and nil carry the ip in the metadata. */
  static const char slots[] =
      "[[0 16383 [\"?\" 7000 \"a\" [\"ip\" \"10.0.0.1\"]] [nil 7001 \"b\" [\"ip\" \"10.0.0.2\"]] "
      "[\"node-c.example\" 7002 \"c\" [\"hostname\" \"node-c.example\" \"ip\" \"10.0.0.3\"]] "
      "[\"\" 7003 \"d\"]]]";
  lk__topo_t *t = parse_ok(0, R(slots), "seed.example");
  ASSERT_STREQ(node(t, "a")->host, "10.0.0.1");
  ASSERT_STREQ(node(t, "b")->host, "seed.example");
  ASSERT_STREQ(node(t, "c")->host, "node-c.example");
  ASSERT_STREQ(node(t, "d")->host, "seed.example");
  lk__topo_free(t);
  t = parse_ok(0, R("[[0 16383 [nil 7001 \"b\" [\"ip\" \"10.0.0.2\"]]]]"), "");
  ASSERT_STREQ(node(t, "b")->host, "10.0.0.2"); /* "" is no origin */
  lk__topo_free(t);
  expect_code(0, slots, LK_EPROTOCOL, NULL); /* d has no address then */
  ASSERT_NO_LEAK();
}

/* What CLUSTER SHARDS says after a replica replaced a dead master: Redis 7.0
 * lists the dead one as a shard of its own with no slots, Valkey 8 keeps it
 * in the shard beside the new master. Both map the slots to the new one. */
TEST(failover_shapes_of_redis_and_valkey_map_to_the_new_master) {
  ca_install();
  static const char redis70[] =
      "[" SHARD("[]", NODE("old", 7002, "h", "master", "fail")) " " SHARD(
          "[0 16383]", NODE("new", 7005, "h", "master", "online")) "]";
  static const char valkey8[] =
      "[" SHARD("[0 16383]", NODE("old", 7002, "h", "master", "fail") " " NODE(
          "new", 7005, "h", "master", "online") " " NODE("r", 7006, "h", "replica", "online")) "]";
  static const char loading[] =
      "[" SHARD("[0 16383]", NODE("old", 7002, "h", "master", "fail") " " NODE(
          "new", 7005, "h", "master", "loading")) "]";
  const char *const cases[] = {redis70, valkey8, loading};
  for (size_t i = 0; i < 3; i++) {
    lk__topo_t *t = parse_ok(1, R("%s", cases[i]), NULL);
    ASSERT_STREQ(lk__topo_slot_master(t, 0)->id, "new");
    ASSERT_EQ(t->covered, LK__SLOTS);
    ASSERT_EQ(node(t, "old")->n_slots, 0);
    ASSERT_EQ(node(t, "old")->health, LK__TOPO_FAILED);
    ASSERT_EQ(node(t, "old")->role, LK__TOPO_MASTER);
    if (i == 1)
      ASSERT_EQ(node(t, "r")->master, lk__topo_find_id(t, "new"));
    lk__topo_free(t);
  }
  /* The only master failed: still the owner (the cluster is down). */
  lk__topo_t *t = parse_ok(
      1, R("[" SHARD("[0 16383]", NODE("m", 7000, "h", "master", "fail") " " NODE(
               "r", 7003, "h", "replica", "online")) "]"), NULL);
  ASSERT_STREQ(lk__topo_slot_master(t, 9)->id, "m");
  lk__topo_free(t);
  ASSERT_NO_LEAK();
}

TEST(partial_coverage_and_fragmented_ranges) {
  ca_install();
  lk__topo_t *t = parse_ok(
      1, R("[" SHARD("[0 0 2 2 100 199]", NODE("m1", 7000, "h", "master", "online")) " " SHARD(
               "[16383 16383]", NODE("m2", 7001, "h", "master", "online")) "]"), NULL);
  ASSERT_EQ(t->covered, 103);
  ASSERT_EQ(node(t, "m1")->n_slots, 102);
  ASSERT_EQ(lk__topo_slot_index(t, 0), lk__topo_find_id(t, "m1"));
  ASSERT_EQ(lk__topo_slot_index(t, 1), -1);
  ASSERT_NULL(lk__topo_slot_master(t, 1));
  ASSERT_EQ(lk__topo_slot_index(t, 16383), lk__topo_find_id(t, "m2"));
  ASSERT_EQ(lk__topo_slot_index(t, 16384), -1);
  ASSERT_NULL(lk__topo_slot_master(t, 99999));
  ASSERT_NULL(lk__topo_slot_master(NULL, 0));
  ASSERT_EQ(lk__topo_find(t, NULL, 7000), -1);
  ASSERT_EQ(lk__topo_find(t, "h", 0), -1);
  ASSERT_EQ(lk__topo_find(NULL, "h", 7000), -1);
  ASSERT_EQ(lk__topo_find_id(t, NULL), -1);
  ASSERT_EQ(lk__topo_find_id(NULL, "m1"), -1);
  lk__topo_free(t);
  lk__topo_free(NULL);
  /* CLUSTER SLOTS lists a master once per range: one node, many ranges. */
  t = parse_ok(0, R("[[0 9 [\"h\" 7000 \"m1\"] [\"h\" 7003 \"r1\"]] [20 29 [\"h\" 7000 \"m1\"] "
                    "[\"h\" 7003 \"r1\"]] [10 19 [\"h\" 7001 \"m2\"]]]"), NULL);
  ASSERT_EQ(t->n_nodes, 3);
  ASSERT_EQ(node(t, "m1")->n_slots, 20);
  ASSERT_EQ(node(t, "m1")->n_replicas, 1);
  ASSERT_EQ(t->covered, 30);
  lk__topo_free(t);
  ASSERT_NO_LEAK();
}

TEST(diff_names_the_slots_whose_master_changed) {
  ca_install();
  static uint8_t changed[LK__SLOTS / 8];
  lk__topo_t *a = parse_ok(1, R(SHARDS3), NULL);
  /* The same owners, nodes listed in another order, from CLUSTER SLOTS. */
  lk__topo_t *b = parse_ok(
      0, R("[[10923 16383 [\"127.0.0.1\" 7002 \"m3\"]] [0 5460 [\"127.0.0.1\" 7000 \"m1\"]] "
           "[5461 10922 [\"127.0.0.1\" 7001 \"m2\"]]]"), NULL);
  ASSERT_EQ(lk__topo_diff(a, b, changed), 0);
  for (unsigned s = 0; s < LK__SLOTS; s++)
    ASSERT_EQ(lk__topo_bit(changed, s), 0);
  lk__topo_free(b);
  /* One slot migrated (5461 to m1), m3 failed over to r3 (a new id at a
   * new address). */
  b = parse_ok(1, R("[" SHARD("[0 5461]", NODE("m1", 7000, "127.0.0.1", "master", "online")) " "
                    SHARD("[5462 10922]", NODE("m2", 7001, "127.0.0.1", "master", "online")) " "
                    SHARD("[10923 16383]", NODE("r3", 7005, "127.0.0.1", "master", "online")) "]"),
               NULL);
  ASSERT_EQ(lk__topo_diff(a, b, changed), 1 + (16383 - 10923 + 1));
  ASSERT_EQ(lk__topo_bit(changed, 5461), 1);
  ASSERT_EQ(lk__topo_bit(changed, 5460), 0);
  ASSERT_EQ(lk__topo_bit(changed, 5462), 0);
  ASSERT_EQ(lk__topo_bit(changed, 10922), 0);
  ASSERT_EQ(lk__topo_bit(changed, 10923), 1);
  ASSERT_EQ(lk__topo_bit(changed, 16383), 1);
  ASSERT_EQ(lk__topo_diff(b, a, NULL), 1 + (16383 - 10923 + 1));
  lk__topo_free(b);
  /* Without ids (an old CLUSTER SLOTS), nodes compare by address. */
  lk__topo_t *x = parse_ok(0, R("[[0 16383 [\"h\" 7000]]]"), NULL);
  lk__topo_t *y = parse_ok(0, R("[[0 99 [\"h\" 7000]] [100 16383 [\"h\" 7001]]]"), NULL);
  ASSERT_EQ(lk__topo_diff(x, y, changed), 16284);
  ASSERT_EQ(lk__topo_bit(changed, 99), 0);
  ASSERT_EQ(lk__topo_bit(changed, 100), 1);
  /* An id on one side only: the address decides. */
  ASSERT_EQ(lk__topo_diff(a, x, NULL), LK__SLOTS);
  /* A NULL map owns nothing; a slot owned on one side only changed. */
  ASSERT_EQ(lk__topo_diff(NULL, a, NULL), LK__SLOTS);
  ASSERT_EQ(lk__topo_diff(a, NULL, NULL), LK__SLOTS);
  ASSERT_EQ(lk__topo_diff(NULL, NULL, changed), 0);
  lk__topo_t *part = parse_ok(0, R("[[0 9 [\"h\" 7000]]]"), NULL);
  ASSERT_EQ(lk__topo_diff(x, part, NULL), LK__SLOTS - 10);
  lk__topo_free(part);
  lk__topo_free(x);
  lk__topo_free(y);
  lk__topo_free(a);
  ASSERT_NO_LEAK();
}

/* Every allocation the parser makes fails once in turn: LK_ENOMEM, nothing
 * leaked, until the parse needs no more and succeeds. */
TEST(allocation_failures_give_enomem_and_leak_nothing) {
  ca_install();
  for (int shards = 1; shards >= 0; shards--) {
    int succeeded = 0;
    for (long long fail_at = 1; fail_at < 1000 && !succeeded; fail_at++) {
      redisReply *r = R(shards ? SHARDS3 : SLOTS3); /* hiredis's own malloc */
      lk__topo_t *t = NULL;
      ca_calls = 0;
      ca_fail_at = fail_at;
      int rc = parse(shards, r, NULL, &t);
      ca_fail_at = 0;
      if (rc == 0) {
        ASSERT_EQ(t->n_nodes, 6);
        ASSERT_GT(fail_at, 3); /* the map, its node array, one node's strings */
        lk__topo_free(t);
        succeeded = 1;
      } else {
        ASSERT_EQ(rc, LK_ENOMEM);
      }
      ASSERT_NO_LEAK();
    }
    ASSERT(succeeded);
  }
}

/* Issue 25: a host no server announces (a NUL cut the name short, and the
 * client then opened a node per reply), an overlong host or id, and a
 * reply listing more nodes than the caller allows are refused. */
TEST(bad_hosts_long_ids_and_replies_past_the_node_cap_are_eprotocol) {
  ca_install();
  static const char *const bad_hosts[] = {"127.0.0.1\x01", "127.0 .0.1", "127.0.0.1\x7f",
                                          "h\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
    char shards[512], slots[512];
    snprintf(shards, sizeof shards,
             "[[\"slots\" [0 1] \"nodes\" [[\"id\" \"m1\" \"port\" 7000 \"ip\" \"127.0.0.1\" "
             "\"endpoint\" \"%s\" \"role\" \"master\" \"health\" \"online\"]]]]",
             bad_hosts[i]);
    snprintf(slots, sizeof slots, "[[0 1 [\"%s\" 7000 \"m1\" []]]]", bad_hosts[i]);
    expect_code(1, shards, LK_EPROTOCOL, NULL);
    expect_code(0, slots, LK_EPROTOCOL, NULL);
  }
  char longer[300], notation[700];
  memset(longer, 'h', 256);
  longer[256] = '\0';
  snprintf(notation, sizeof notation, "[[0 1 [\"%s\" 7000 \"m1\" []]]]", longer);
  expect_code(0, notation, LK_EPROTOCOL, NULL);
  longer[255] = '\0'; /* 255 bytes: the longest accepted */
  snprintf(notation, sizeof notation, "[[0 1 [\"%s\" 7000 \"m1\" []]]]", longer);
  lk__topo_t *t = parse_ok(0, R("%s", notation), NULL);
  lk__topo_free(t);
  memset(longer, 'a', 129);
  longer[129] = '\0';
  snprintf(notation, sizeof notation, "[[0 1 [\"127.0.0.1\" 7000 \"%s\" []]]]", longer);
  expect_code(0, notation, LK_EPROTOCOL, NULL);

  /* The cap: SHARDS3 and SLOTS3 list 6 nodes in 3 shards / ranges. */
  int over = -1;
  for (int shards = 0; shards <= 1; shards++) {
    for (size_t cap = 1; cap <= 6; cap++) {
      redisReply *r = R("%s", shards ? SHARDS3 : SLOTS3);
      t = NULL;
      int rc = lk__topo_parse(r, !shards, NULL, cap, &t, &over);
      freeReplyObject(r);
      if (cap < 6) {
        if (rc != LK_EPROTOCOL || over != 1 || t != NULL)
          FAIL("%s under a cap of %zu: %s, over_cap %d", shards ? "SHARDS" : "SLOTS", cap,
               lk_err_name(rc), over);
      } else {
        ASSERT_OK(rc);
        ASSERT_EQ(over, 0);
        ASSERT_EQ(t->n_nodes, 6);
        lk__topo_free(t);
      }
      ASSERT_NO_LEAK();
    }
  }
}
