/* Clients made from connection URLs against a real server (docs/client.md,
 * "Connection URL"): the database from the path, a unix socket, an ACL user
 * whose percent-encoded password holds URL delimiters, a wrong password
 * from the URL failing as it would from the fields, and rediss:// with its
 * TLS settings from query parameters. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "tls_certs.h"

/* Starts the fixture's client from url alone (every other field default). */
static void start_from_url(fx_t *fx, const char *url) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  ASSERT_OK(lk_client_opts_set_url(&o, url));
  fx_start_client(fx, &o);
}

/* EXISTS key in database db, over the side channel (which it leaves in
 * db 0, where the harness expects it). */
static long long exists_in_db(rt_server_t *s, int db, const char *key) {
  long long n;
  char *ok = rt_cmd_str(s, "SELECT %d", db);
  ASSERT_STREQ(ok, "OK");
  free(ok);
  n = rt_cmd_int(s, "EXISTS %s", key);
  ok = rt_cmd_str(s, "SELECT 0");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  return n;
}

/* Percent-encodes every byte but letters, digits and those in keep, so any
 * path or password goes into a URL as it is. */
static void encode(char *out, size_t cap, const char *s, const char *keep) {
  size_t n = 0;
  for (; *s != '\0'; s++) {
    unsigned char ch = (unsigned char)*s;
    ASSERT(n + 4 < cap);
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        strchr(keep, ch) != NULL)
      out[n++] = (char)ch;
    else
      n += (size_t)snprintf(out + n, cap - n, "%%%02X", ch);
  }
  out[n] = '\0';
}

/* Takes and gives back the lock name, checking it lands in database db. */
static void lock_lands_in_db(fx_t *fx, const char *name, int db) {
  lk_lock_t *l = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, l, 0, 30000));
  ASSERT_EQ(exists_in_db(fx->srv, db, name), 1);
  if (db != 0)
    ASSERT_EQ(exists_in_db(fx->srv, 0, name), 0);
  ASSERT_OK(sx_run(fx, lk_lock_release, l, NULL));
  ASSERT_EQ(exists_in_db(fx->srv, db, name), 0);
  fx_close_lock(fx, l);
}

/* A client from the URL before "127.0.0.1:<port>" after, whose lock on
 * name lands in db. */
static void url_lock_case(const char *before, const char *after, const char *name, int db) {
  fx_t fx;
  char url[128];
  fx_start_server(&fx, NULL);
  snprintf(url, sizeof(url), "%s127.0.0.1:%d%s", before, rt_server_port(fx.srv), after);
  start_from_url(&fx, url);
  lock_lands_in_db(&fx, name, db);
  fx_finish(&fx);
}

TEST(redis_url_with_db_2) { url_lock_case("redis://", "/2", "url:db2", 2); }

TEST(bare_host_port) { url_lock_case("", "", "url:bare", 0); }

/* The CLIENT LIST line of the connection named name ("" when none). */
static void client_line(rt_server_t *s, const char *name, char *out, size_t cap) {
  redisReply *r = rt_cmd(s, "CLIENT LIST");
  char needle[160];
  const char *line, *bol, *eol;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STRING);
  snprintf(needle, sizeof(needle), " name=%s ", name);
  out[0] = '\0';
  line = strstr(r->str, needle);
  if (line != NULL) {
    for (bol = line; bol > r->str && bol[-1] != '\n'; bol--) {
    }
    eol = strchr(line, '\n');
    snprintf(out, cap, "%.*s", (int)(eol != NULL ? eol - bol : (long)strlen(bol)), bol);
  }
  freeReplyObject(r);
}

TEST(unix_url_with_db_query) {
  fx_t fx;
  char path[512], url[700], line[1024];
  const char *flags;
  fx_start_server(&fx, NULL);
  /* The path percent-encoded but for its slashes: the parser decodes it. */
  encode(path, sizeof(path), rt_server_unix_path(fx.srv), "/");
  snprintf(url, sizeof(url), "unix://%s?db=1&client_name=lk-url-unix", path);
  start_from_url(&fx, url);
  lock_lands_in_db(&fx, "url:unix", 1);
  /* Our connection is a unix-socket client (flag U) with the URL's name. */
  client_line(fx.srv, "lk-url-unix", line, sizeof(line));
  flags = strstr(line, " flags=");
  if (flags == NULL || strcspn(flags + 7, " U") >= strcspn(flags + 7, " "))
    FAIL("no unix-socket client named lk-url-unix: \"%s\"", line);
  fx_finish(&fx);
}

#define ACL_PASS "p@ss:w/rd?#%&"

TEST(acl_user_from_url_with_encoded_password) {
  fx_t fx;
  char enc[128], url[256];
  char *ok, line[1024];
  fx_start_server(&fx, NULL);
  ok = rt_cmd_str(fx.srv, "ACL SETUSER app on >%s ~* &* +@all", ACL_PASS);
  ASSERT_STREQ(ok, "OK");
  free(ok);
  encode(enc, sizeof(enc), ACL_PASS, "");
  snprintf(url, sizeof(url), "redis://app:%s@127.0.0.1:%d", enc, rt_server_port(fx.srv));
  start_from_url(&fx, url);
  lock_lands_in_db(&fx, "url:acl", 0);
  /* The server knows our connection as the ACL user. */
  client_line(fx.srv, "latchkey", line, sizeof(line));
  if (strstr(line, " user=app") == NULL)
    FAIL("our connection is not user app's: \"%s\"", line);
  fx_finish(&fx);
}

TEST(wrong_password_from_url_is_eauth) {
  fx_t fx;
  rt_server_opts_t so;
  char url[128];
  lk_lock_t *l;
  rt_server_opts_init(&so);
  so.requirepass = "right";
  fx_start_server(&fx, &so);
  snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", rt_server_port(fx.srv));
  start_from_url(&fx, url);
  l = fx_lock(&fx, "url:auth");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), LK_EAUTH);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS url:auth"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});

  /* The right one, and the URL's password replaces the field's. */
  {
    lk_client_opts_t o;
    fx_start_server(&fx, &so);
    lk_client_opts_init(&o);
    o.password = "wrong";
    snprintf(url, sizeof(url), "redis://:right@127.0.0.1:%d", rt_server_port(fx.srv));
    ASSERT_OK(lk_client_opts_set_url(&o, url));
    fx_start_client(&fx, &o);
    lock_lands_in_db(&fx, "url:auth", 0);
    fx_finish(&fx);
  }
}

/* Closes the fixture's client and waits for it; the server stays. */
static void close_client(fx_t *fx) {
  fx->client_closed = 0;
  lk_client_set_data(fx->c, fx);
  ASSERT_OK(lk_client_close(fx->c, fx_on_client_closed));
  rt_run_until(&fx->loop, &fx->client_closed, 10000);
  fx->c = NULL;
}

/* rediss:// with the CA from ca_file=: TLS, and the database from the
 * path; the wrong CA fails LK_ETLS; verify_peer=0 then accepts it. */
TEST(rediss_url_with_tls_query_parameters) {
  fx_t fx;
  rt_server_opts_t so;
  rt_tls_certs_t *t = rt_tls_certs_make();
  char ca[3 * RT_TLS_PATH_MAX], other[3 * RT_TLS_PATH_MAX], url[4096];
  lk_client_stats_t st;
  lk_lock_t *l;
  ASSERT_NOT_NULL(t);
  rt_server_opts_init(&so);
  so.tls_cert_file = t->server_cert;
  so.tls_key_file = t->server_key;
  so.tls_ca_file = t->ca;
  fx_start_server(&fx, &so);
  ASSERT_GT(rt_server_tls_port(fx.srv), 0);
  encode(ca, sizeof(ca), t->ca, "/");
  encode(other, sizeof(other), t->other_ca, "/");

  snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/3?ca_file=%s", rt_server_tls_port(fx.srv),
           ca);
  start_from_url(&fx, url);
  lock_lands_in_db(&fx, "url:tls", 3);
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.tls_handshakes, 1);
  ASSERT_EQ(st.tls_failures, 0);
  close_client(&fx);

  snprintf(url, sizeof(url), "rediss://127.0.0.1:%d?ca_file=%s", rt_server_tls_port(fx.srv),
           other);
  start_from_url(&fx, url);
  l = fx_lock(&fx, "url:tls");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), LK_ETLS);
  fx_close_lock(&fx, l);
  close_client(&fx);

  snprintf(url, sizeof(url), "rediss://127.0.0.1:%d?ca_file=%s&verify_peer=0",
           rt_server_tls_port(fx.srv), other);
  start_from_url(&fx, url);
  lock_lands_in_db(&fx, "url:tls", 0);
  fx_finish(&fx);
  rt_tls_certs_free(t);
}
