/* The connection URL parser (docs/client.md, "Connection URL"), without a
 * server: every form and what it sets, the query parameters, the replace
 * rule, and a table of malformed URLs that must each be LK_EINVAL from the
 * parser, from lk_client_opts_set_url and from lk_client_new. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/url.h"
#include "latchkey.h"
#include "test.h"

/* The options after applying url to defaults; storage freed by done(). */
typedef struct {
  lk_client_opts_t o;
  char *storage;
} parsed_t;

static int parse_into(parsed_t *p, const char *url) {
  lk_client_opts_init(&p->o);
  p->storage = NULL;
  return lk__url_apply(&p->o, url, &p->storage);
}

static void done(parsed_t *p) {
  lk_client_opts_free_url(p->storage);
  p->storage = NULL;
}

/* ---- the forms ------------------------------------------------------------------ */

typedef struct {
  const char *url;
  const char *host;
  int port;
  const char *unix_path;
  const char *username, *password;
  int db, tls;
  const char *sentinels, *master;
} good_t;

static const good_t goods[] = {
    /* bare host and host:port: the address only */
    {"localhost", "localhost", 6379, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"10.0.0.5:6380", "10.0.0.5", 6380, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis-1.example.com:1", "redis-1.example.com", 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"my_host:65535", "my_host", 65535, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"[::1]:6380", "::1", 6380, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"[::1]", "::1", 6379, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"[::ffff:127.0.0.1]:7000", "::ffff:127.0.0.1", 7000, NULL, NULL, NULL, 0, 0, NULL, NULL},
    /* redis:// */
    {"redis://127.0.0.1", "127.0.0.1", 6379, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis://127.0.0.1:6380", "127.0.0.1", 6380, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis://h:6380/", "h", 6380, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis://h/3", "h", 6379, NULL, NULL, NULL, 3, 0, NULL, NULL},
    {"redis://h:7/15", "h", 7, NULL, NULL, NULL, 15, 0, NULL, NULL},
    {"redis://h/2147483647", "h", 6379, NULL, NULL, NULL, 2147483647, 0, NULL, NULL},
    {"REDIS://H:1", "H", 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis://[::1]:6380/1", "::1", 6380, NULL, NULL, NULL, 1, 0, NULL, NULL},
    {"redis://[2001:db8::7]", "2001:db8::7", 6379, NULL, NULL, NULL, 0, 0, NULL, NULL},
    {"redis://:secret@h", "h", 6379, NULL, NULL, "secret", 0, 0, NULL, NULL},
    {"redis://app:secret@h:6390/4", "h", 6390, NULL, "app", "secret", 4, 0, NULL, NULL},
    {"redis://app:@h", "h", 6379, NULL, "app", "", 0, 0, NULL, NULL},
    /* percent-decoded userinfo; the last '@' ends it; ':' after the first is
     * the password's */
    {"redis://a%20b:p%40ss%3Aw%2Frd%25@h", "h", 6379, NULL, "a b", "p@ss:w/rd%", 0, 0, NULL, NULL},
    {"redis://u:p@ss@h", "h", 6379, NULL, "u", "p@ss", 0, 0, NULL, NULL},
    {"redis://u:a:b@h", "h", 6379, NULL, "u", "a:b", 0, 0, NULL, NULL},
    {"redis://%41:%c3%a9@h", "h", 6379, NULL, "A", "\xc3\xa9", 0, 0, NULL, NULL},
    {"redis://h?db=9", "h", 6379, NULL, NULL, NULL, 9, 0, NULL, NULL},
    {"redis://h?username=u&password=p", "h", 6379, NULL, "u", "p", 0, 0, NULL, NULL},
    {"redis://h?password=p", "h", 6379, NULL, NULL, "p", 0, 0, NULL, NULL},
    /* rediss:// */
    {"rediss://h", "h", 6379, NULL, NULL, NULL, 0, 1, NULL, NULL},
    {"rediss://u:p@cache.example.com:6380/1", "cache.example.com", 6380, NULL, "u", "p", 1, 1,
     NULL, NULL},
    {"Rediss://[::1]", "::1", 6379, NULL, NULL, NULL, 0, 1, NULL, NULL},
    /* sentinel forms: host and port go back to their defaults */
    {"redis+sentinel://s1:26380,s2,[::1]:5/mymaster", "127.0.0.1", 6379, NULL, NULL, NULL, 0, 0,
     "s1:26380,s2:26379,[::1]:5", "mymaster"},
    {"redis+sentinel://s1/mymaster/3", "127.0.0.1", 6379, NULL, NULL, NULL, 3, 0, "s1:26379",
     "mymaster"},
    {"redis+sentinel://:pw@s1:1,s2:2/m%2Fx", "127.0.0.1", 6379, NULL, NULL, "pw", 0, 0,
     "s1:1,s2:2", "m/x"},
    {"redis+sentinel://u:pw@s1/m?db=2", "127.0.0.1", 6379, NULL, "u", "pw", 2, 0, "s1:26379",
     "m"},
    {"rediss+sentinel://s1/m", "127.0.0.1", 6379, NULL, NULL, NULL, 0, 1, "s1:26379", "m"},
    /* unix:// */
    {"unix:///var/run/redis.sock", "127.0.0.1", 6379, "/var/run/redis.sock", NULL, NULL, 0, 0,
     NULL, NULL},
    {"unix:///tmp/r%20s.sock?db=3", "127.0.0.1", 6379, "/tmp/r s.sock", NULL, NULL, 3, 0, NULL,
     NULL},
    {"unix:///s?username=u&password=p&db=1", "127.0.0.1", 6379, "/s", "u", "p", 1, 0, NULL,
     NULL},
    {"UNIX:///s", "127.0.0.1", 6379, "/s", NULL, NULL, 0, 0, NULL, NULL},
};

TEST(every_form_sets_its_fields) {
  size_t i;
  for (i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
    const good_t *g = &goods[i];
    parsed_t p;
    int rc = parse_into(&p, g->url);
    if (rc != 0)
      FAIL("%s: got %d, want 0", g->url, rc);
    printf("%-50s host=%s port=%d\n", g->url, p.o.host, p.o.port);
    ASSERT_NOT_NULL(p.storage);
    ASSERT_STREQ(p.o.host, g->host);
    ASSERT_EQ(p.o.port, g->port);
    ASSERT_STREQ(p.o.unix_path, g->unix_path);
    ASSERT_STREQ(p.o.username, g->username);
    ASSERT_STREQ(p.o.password, g->password);
    ASSERT_EQ(p.o.db, g->db);
    ASSERT_EQ(p.o.tls.enable, g->tls);
    ASSERT_STREQ(p.o.sentinels, g->sentinels);
    ASSERT_STREQ(p.o.sentinel_master, g->master);
    /* lk_client_opts_set_url accepts it and keeps only the pointer. */
    {
      lk_client_opts_t o;
      lk_client_opts_init(&o);
      ASSERT_OK(lk_client_opts_set_url(&o, g->url));
      ASSERT(o.url == g->url);
      ASSERT_STREQ(o.host, "127.0.0.1");
      ASSERT_NULL(o.sentinels);
    }
    done(&p);
  }
}

TEST(query_parameters_set_tls_sentinel_and_client_name) {
  parsed_t p;
  ASSERT_OK(parse_into(&p, "rediss://h:6380?ca_file=%2Fetc%2Fca.pem&ca_dir=/etc/ssl/certs"
                           "&cert_file=/c.pem&key_file=/k.pem&server_name=redis.example.com"
                           "&verify_peer=0&client_name=svc-a&db=5"));
  ASSERT_EQ(p.o.tls.enable, 1);
  ASSERT_STREQ(p.o.tls.ca_file, "/etc/ca.pem");
  ASSERT_STREQ(p.o.tls.ca_dir, "/etc/ssl/certs");
  ASSERT_STREQ(p.o.tls.cert_file, "/c.pem");
  ASSERT_STREQ(p.o.tls.key_file, "/k.pem");
  ASSERT_STREQ(p.o.tls.server_name, "redis.example.com");
  ASSERT_EQ(p.o.tls.verify_peer, 0);
  ASSERT_STREQ(p.o.client_name, "svc-a");
  ASSERT_EQ(p.o.db, 5);
  done(&p);

  ASSERT_OK(parse_into(&p, "rediss://h?verify_peer=1"));
  ASSERT_EQ(p.o.tls.verify_peer, 1);
  ASSERT_NULL(p.o.tls.ca_file);
  done(&p);

  ASSERT_OK(parse_into(&p, "rediss+sentinel://u:pw@s1:26380,s2/m/1?sentinel_username=su"
                           "&sentinel_password=s%26p&ca_file=/ca.pem"));
  ASSERT_STREQ(p.o.sentinels, "s1:26380,s2:26379");
  ASSERT_STREQ(p.o.sentinel_master, "m");
  ASSERT_STREQ(p.o.username, "u");
  ASSERT_STREQ(p.o.password, "pw");
  ASSERT_STREQ(p.o.sentinel_username, "su");
  ASSERT_STREQ(p.o.sentinel_password, "s&p");
  ASSERT_STREQ(p.o.tls.ca_file, "/ca.pem");
  ASSERT_EQ(p.o.tls.enable, 1);
  ASSERT_EQ(p.o.db, 1);
  done(&p);

  ASSERT_OK(parse_into(&p, "redis+sentinel://s1/m?sentinel_password=sp"));
  ASSERT_NULL(p.o.sentinel_username);
  ASSERT_STREQ(p.o.sentinel_password, "sp");
  done(&p);
}

/* The options set in code (base) with url applied over them. */
static void apply_over(lk_client_opts_t *o, const lk_client_opts_t *base, const char *url,
                       char **st) {
  *o = *base;
  ASSERT_OK(lk__url_apply(o, url, st));
}

/* A URL naming a TCP address: that address, and nothing left of the socket
 * path or the sentinels set in code. */
static void expect_tcp_address(const lk_client_opts_t *o, const char *host, int port) {
  ASSERT_STREQ(o->host, host);
  ASSERT_EQ(o->port, port);
  ASSERT_NULL(o->unix_path);
  ASSERT_NULL(o->sentinels);
  ASSERT_NULL(o->sentinel_master);
}

/* A URL names the whole address: what it does not set goes back to the
 * default; a scheme also sets TLS and db; credentials and the other fields
 * are kept unless the URL names them. */
TEST(replace_rule) {
  lk_client_opts_t base, o;
  char *st = NULL;
  lk_client_opts_init(&base);
  base.host = "code-host";
  base.port = 7000;
  base.unix_path = "/code.sock";
  base.sentinels = "cs:1";
  base.sentinel_master = "cm";
  base.sentinel_username = "csu";
  base.sentinel_password = "csp";
  base.db = 5;
  base.tls.enable = 1;
  base.tls.ca_file = "/code-ca.pem";
  base.username = "code-user";
  base.password = "code-pass";
  base.client_name = "code-name";
  base.connect_timeout_ms = 1234;

  /* redis://: address, db and TLS from the URL; the rest kept. */
  apply_over(&o, &base, "redis://h:1", &st);
  expect_tcp_address(&o, "h", 1);
  ASSERT_EQ(o.db, 0);
  ASSERT_EQ(o.tls.enable, 0);
  ASSERT_STREQ(o.tls.ca_file, "/code-ca.pem");
  ASSERT_STREQ(o.username, "code-user");
  ASSERT_STREQ(o.password, "code-pass");
  ASSERT_STREQ(o.client_name, "code-name");
  ASSERT_STREQ(o.sentinel_username, "csu");
  ASSERT_EQ(o.connect_timeout_ms, 1234);
  lk_client_opts_free_url(st);

  /* Userinfo replaces both credentials: ":pw" drops the user set in code. */
  apply_over(&o, &base, "rediss://:pw@h", &st);
  ASSERT_NULL(o.username);
  ASSERT_STREQ(o.password, "pw");
  ASSERT_EQ(o.tls.enable, 1);
  lk_client_opts_free_url(st);

  /* A bare address names the address only: db, TLS and the rest kept. */
  apply_over(&o, &base, "h2", &st);
  expect_tcp_address(&o, "h2", 6379);
  ASSERT_EQ(o.db, 5);
  ASSERT_EQ(o.tls.enable, 1);
  ASSERT_STREQ(o.username, "code-user");
  lk_client_opts_free_url(st);

  /* unix://: the host set in code is gone (back to the default). */
  apply_over(&o, &base, "unix:///u.sock", &st);
  ASSERT_STREQ(o.unix_path, "/u.sock");
  ASSERT_STREQ(o.host, "127.0.0.1");
  ASSERT_EQ(o.port, 6379);
  ASSERT_NULL(o.sentinels);
  ASSERT_EQ(o.tls.enable, 0);
  ASSERT_EQ(o.db, 0);
  lk_client_opts_free_url(st);

  /* Sentinels replace the address; sentinel AUTH kept unless named. */
  apply_over(&o, &base, "redis+sentinel://s/m", &st);
  ASSERT_STREQ(o.sentinels, "s:26379");
  ASSERT_STREQ(o.sentinel_master, "m");
  ASSERT_STREQ(o.sentinel_username, "csu");
  ASSERT_NULL(o.unix_path);
  ASSERT_STREQ(o.host, "127.0.0.1");
  lk_client_opts_free_url(st);

  /* A refused URL changes nothing. */
  o = base;
  ASSERT_EQ(lk__url_apply(&o, "redis://h:0", &st), LK_EINVAL);
  ASSERT_NULL(st);
  ASSERT(memcmp(&o, &base, sizeof(o)) == 0);
}

/* ---- malformed ------------------------------------------------------------------ */

static const char *const bads[] = {
    "",
    /* unknown or broken schemes */
    "http://h", "redis:/h", "redis:h", "redis//h", "redis+cluster://h", "unix:/s", "://h",
    "rediss+unix:///s",
    /* ports */
    "h:0", "h:65536", "h:99999999999", "h:", "h:-1", "h:+1", "h:1x", "h:0x10", "redis://h:0",
    "redis://h:65536", "redis://h:abc", "redis://h:", "redis://[::1]:", "[::1]:0",
    /* hosts */
    "redis://", "redis://:1", "redis:///0", "redis://@h", ":6379", "::1", "::1:6379",
    "[::1", "[::1]x", "[]:1", "[zz::1]", "[::1]:1:2", "h h", "h%20", "redis://h%41",
    "redis://a/b:1", "redis://h:1:2", "redis://host!:1", "redis://[fe80::1%25eth0]",
    /* db */
    "redis://h/-1", "redis://h/x", "redis://h/1x", "redis://h/+1", "redis://h/1/2",
    "redis://h/2147483648", "redis://h/99999999999", "redis://h/1/", "redis://h?db=-1",
    "redis://h?db=x", "redis://h/1?db=1", "redis://h?db=", "redis://h//",
    /* userinfo */
    "redis://u@h", "redis://:@h", "redis://%zz:p@h", "redis://u:%4@h", "redis://u:%@h",
    "redis://u:p%00@h", "redis://u:p@h?password=q", "redis://u:p@h?username=v&password=q",
    "u:p@h", "@h",
    /* query */
    "redis://h?", "redis://h?&", "redis://h?db", "redis://h?db=1&", "redis://h?db=1&&x=2",
    "redis://h?dbb=1", "redis://h?DB=1", "redis://h?db=1&db=2", "redis://h?ca_file=/ca",
    "redis://h?verify_peer=0", "redis://h?sentinel_password=x", "rediss://h?verify_peer=2",
    "rediss://h?verify_peer=yes", "rediss://h?ca_file=", "redis://h?username=u",
    "redis://h?client_name=a%20b", "redis://h?client_name=a%0Ab", "redis://h?password=%00",
    "unix:///s?ca_file=/ca", "unix:///s?sentinel_password=x", "h?db=1", "h/1",
    "redis+sentinel://s/m?sentinel_username=u", "rediss://h?server_name=",
    "redis://h?pubsub_mode=Classic", "redis://h?pubsub_mode=off", "redis://h?pubsub_mode=",
    "redis://h?pubsub_mode=1", "h?pubsub_mode=classic",
    /* trailing garbage, fragments, spaces, control and non-ASCII bytes */
    "redis://h#frag", "redis://h/1#x", "redis://h ", " redis://h", "redis://h\n", "redis://h\t1",
    "redis://h\x7f", "redis://h\xc3\xa9",
    /* sentinels */
    "redis+sentinel://s", "redis+sentinel://s/", "redis+sentinel://s//1", "redis+sentinel:///m",
    "redis+sentinel://s,/m", "redis+sentinel://,s/m", "redis+sentinel://s,,t/m",
    "redis+sentinel://s:0/m", "redis+sentinel://s:x/m", "redis+sentinel://s/m/x",
    "redis+sentinel://s/m/1/2", "redis+sentinel://s/m%zz", "redis+sentinel://u@s/m",
    "redis+sentinel://s/m?db=1&db=2", "redis+sentinel://s/m/1?db=1",
    /* unix */
    "unix://", "unix:///", "unix://s", "unix://host/s", "unix:///s?", "unix:///s?db=x",
    "unix:///s%zz", "unix:///s%00x", "unix:///s?username=u",
};

static void expect_refused(const char *url) {
  parsed_t p;
  lk_client_opts_t o, before;
  int rc = parse_into(&p, url);
  if (rc != LK_EINVAL)
    FAIL("\"%s\": got %d (host=%s port=%d), want LK_EINVAL", url, rc, p.o.host, p.o.port);
  ASSERT_NULL(p.storage);
  lk_client_opts_init(&o);
  before = o;
  ASSERT_EQ(lk_client_opts_set_url(&o, url), LK_EINVAL);
  ASSERT(memcmp(&o, &before, sizeof(o)) == 0); /* o.url not set */
}

TEST(malformed_urls_are_einval) {
  size_t i;
  for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
    expect_refused(bads[i]);
  printf("%zu malformed URLs refused\n", sizeof(bads) / sizeof(bads[0]));
}

TEST(null_arguments_are_einval) {
  lk_client_opts_t o;
  char *st = (char *)"not touched";
  lk_client_opts_init(&o);
  ASSERT_EQ(lk__url_apply(&o, NULL, &st), LK_EINVAL);
  ASSERT_NULL(st);
  ASSERT_EQ(lk_client_opts_set_url(&o, NULL), LK_EINVAL);
  ASSERT_EQ(lk_client_opts_set_url(NULL, "h"), LK_EINVAL);
  ASSERT_EQ(lk_client_opts_apply_url(&o, "h", NULL), LK_EINVAL);
  ASSERT_EQ(lk_client_opts_apply_url(NULL, "h", &st), LK_EINVAL);
  ASSERT_EQ(lk_client_opts_apply_url(&o, NULL, &st), LK_EINVAL);
  lk_client_opts_free_url(NULL); /* a no-op */
}

/* Length cap: 4096 bytes parse (a worst case for the storage: every
 * sentinel entry gains its default port), 4097 do not. */
TEST(length_cap_4096) {
  char url[4100];
  parsed_t p;
  size_t n = (size_t)snprintf(url, sizeof(url), "redis+sentinel://a");
  while (n < 4096 - 2)
    n += (size_t)snprintf(url + n, sizeof(url) - n, ",a");
  n += (size_t)snprintf(url + n, sizeof(url) - n, "/m");
  ASSERT_EQ(n, 4096);
  ASSERT_OK(parse_into(&p, url));
  ASSERT_EQ(strlen(p.o.sentinels), (4096 - strlen("redis+sentinel://") - 2 + 1) / 2 * 8 - 1);
  ASSERT_EQ(strncmp(p.o.sentinels, "a:26379,a:26379,", 16), 0);
  done(&p);
  /* one byte more */
  memmove(url + strlen("redis+sentinel://") + 1, url + strlen("redis+sentinel://"),
          n - strlen("redis+sentinel://") + 1);
  url[strlen("redis+sentinel://")] = 'b';
  ASSERT_EQ(strlen(url), 4097);
  ASSERT_EQ(parse_into(&p, url), LK_EINVAL);
  /* a long password is fine within the cap */
  {
    char pw[3000];
    memset(pw, 'x', sizeof(pw) - 1);
    pw[sizeof(pw) - 1] = '\0';
    snprintf(url, sizeof(url), "redis://:%s@h", pw);
    ASSERT_OK(parse_into(&p, url));
    ASSERT_STREQ(p.o.password, pw);
    done(&p);
  }
  /* the unix path limit: 107 bytes */
  {
    char path[120];
    memset(path, 'p', sizeof(path));
    path[0] = '/';
    path[107] = '\0';
    snprintf(url, sizeof(url), "unix://%s", path);
    ASSERT_OK(parse_into(&p, url));
    ASSERT_EQ(strlen(p.o.unix_path), 107);
    done(&p);
    path[107] = 'p';
    path[108] = '\0';
    snprintf(url, sizeof(url), "unix://%s", path);
    ASSERT_EQ(parse_into(&p, url), LK_EINVAL);
  }
}

/* pubsub_mode=auto|sharded|classic, in every scheme; kept when not named. */
TEST(pubsub_mode_parameter_sets_the_mode) {
  static const struct {
    const char *url;
    int mode;
  } cases[] = {
      {"redis://h?pubsub_mode=classic", LK_PUBSUB_CLASSIC},
      {"rediss://h?pubsub_mode=sharded", LK_PUBSUB_SHARDED},
      {"redis+sentinel://s/m?pubsub_mode=classic", LK_PUBSUB_CLASSIC},
      {"unix:///s?pubsub_mode=auto", LK_PUBSUB_AUTO},
      {"redis://h", LK_PUBSUB_AUTO},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    parsed_t p;
    ASSERT_OK(parse_into(&p, cases[i].url));
    if (p.o.pubsub_mode != cases[i].mode)
      FAIL("\"%s\": pubsub_mode %d, want %d", cases[i].url, p.o.pubsub_mode, cases[i].mode);
    done(&p);
  }
}

/* ---- through the public API ------------------------------------------------------ */

TEST(lk_client_new_refuses_a_bad_url) {
  uv_loop_t loop;
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  ASSERT_OK(uv_loop_init(&loop));
  lk_client_opts_init(&o);
  o.url = "redis://h:99999";
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  /* A well-formed URL whose result the options check refuses (a cluster
   * has only db 0) is LK_EINVAL too. */
  o.url = "redis://h/1";
  o.cluster = LK_CLUSTER_ON;
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  /* A pubsub_mode outside lk_pubsub_mode_t, set in code. */
  o.url = NULL;
  o.cluster = LK_CLUSTER_AUTO;
  o.pubsub_mode = LK_PUBSUB_CLASSIC + 1;
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  o.pubsub_mode = -1;
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  ASSERT_OK(uv_loop_close(&loop));
}

TEST(apply_url_hands_the_parts_to_the_program) {
  lk_client_opts_t o;
  char *st = NULL;
  lk_client_opts_init(&o);
  o.url = "left over";
  ASSERT_OK(lk_client_opts_apply_url(&o, "redis://u:p@example.com:6390/2", &st));
  ASSERT_NOT_NULL(st);
  ASSERT_NULL(o.url); /* applied: lk_client_new does not apply it again */
  ASSERT_STREQ(o.host, "example.com");
  ASSERT_EQ(o.port, 6390);
  ASSERT_STREQ(o.username, "u");
  ASSERT_STREQ(o.password, "p");
  ASSERT_EQ(o.db, 2);
  lk_client_opts_free_url(st);

  lk_client_opts_init(&o);
  st = (char *)"not touched";
  ASSERT_EQ(lk_client_opts_apply_url(&o, "redis://u@h", &st), LK_EINVAL);
  ASSERT_NULL(st);
  ASSERT_STREQ(o.host, "127.0.0.1");
}

/* An allocation that fails is LK_ENOMEM, and nothing leaks or changes. */
static int g_fail_mallocs;
static void *failing_malloc(size_t n) { return g_fail_mallocs ? NULL : malloc(n); }

TEST(out_of_memory_is_enomem) {
  lk_client_opts_t o, before;
  char *st = (char *)"not touched";
  ASSERT_OK(lk_replace_allocator(failing_malloc, realloc, calloc, free));
  lk_client_opts_init(&o);
  before = o;
  g_fail_mallocs = 1;
  ASSERT_EQ(lk__url_apply(&o, "redis://h:1", &st), LK_ENOMEM);
  ASSERT_NULL(st);
  ASSERT(memcmp(&o, &before, sizeof(o)) == 0);
  ASSERT_EQ(lk_client_opts_set_url(&o, "redis://h:1"), LK_ENOMEM);
  ASSERT_NULL(o.url);
  g_fail_mallocs = 0;
  ASSERT_OK(lk_client_opts_set_url(&o, "redis://h:1"));
  ASSERT_OK(lk_replace_allocator(malloc, realloc, calloc, free));
}
