/* Owner descriptions (docs/owners.md): the key latchkey_client:{ID} appears
 * with its fields and TTL, is rewritten every lease / 3 (also after it
 * vanished), is gone after a clean close, is read back by
 * lk_client_describe_owner, and is not written unless asked for. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lk_fixture.h"

/* The clients' default lease, the description's TTL: rewritten every
 * third of it, so scaled with the machine's load. */
#define LEASE_MS rt_scaled_ms(1200)

static char *field(fx_t *fx, const char *key, const char *name) {
  return rt_cmd_str(fx->srv, "HGET %s %s", key, name);
}

static void expect_field(fx_t *fx, const char *key, const char *name, const char *want) {
  char *v = field(fx, key, name);
  ASSERT_STREQ(v, want);
  free(v);
}

static void start_described(fx_t *fx, char *key, size_t cap) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.describe_owner = 1;
  o.owner_note = "job 7: nightly \"report\"";
  o.client_name = "regtest";
  o.default_lease_ms = LEASE_MS;
  fx_start_with(fx, NULL, &o);
  snprintf(key, cap, "latchkey_client:{%s}", lk_client_id(fx->c));
}

static uint64_t writes(const lk_client_t *c) {
  lk_client_stats_t st;
  lk_client_get_stats(c, &st);
  return st.owner_writes;
}

TEST(registry_key_has_fields_and_ttl) {
  fx_t fx;
  char key[128], host[256], pid[24], lease[24], exe[4096], *v;
  const char *base;
  ssize_t n;
  long long ttl;
  start_described(&fx, key, sizeof(key));
  FX_EVENTUALLY(&fx, writes(fx.c) >= 1, 5000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  v = rt_cmd_str(fx.srv, "TYPE %s", key);
  ASSERT_STREQ(v, "hash");
  free(v);
  ttl = rt_cmd_int(fx.srv, "PTTL %s", key);
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, LEASE_MS);
  expect_field(&fx, key, "id", lk_client_id(fx.c));
  ASSERT_OK(gethostname(host, sizeof(host)));
  expect_field(&fx, key, "host", host);
  snprintf(pid, sizeof(pid), "%ld", (long)getpid());
  expect_field(&fx, key, "pid", pid);
  n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  base = strrchr(exe, '/');
  expect_field(&fx, key, "program", base != NULL ? base + 1 : exe);
  expect_field(&fx, key, "client_name", "regtest");
  expect_field(&fx, key, "version", lk_version_string());
  snprintf(lease, sizeof(lease), "%lld", (long long)LEASE_MS);
  expect_field(&fx, key, "lease_ms", lease);
  expect_field(&fx, key, "note", "job 7: nightly \"report\"");
  v = field(&fx, key, "started_ms");
  ASSERT_NOT_NULL(v);
  ASSERT_GT(atoll(v), 1600000000000LL); /* a Unix time in ms */
  free(v);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN %s", key), 9);
  fx_finish(&fx);
}

TEST(registry_is_renewed_and_comes_back) {
  fx_t fx;
  char key[128];
  uint64_t w0;
  int64_t end;
  start_described(&fx, key, sizeof(key));
  FX_EVENTUALLY(&fx, writes(fx.c) >= 1, 5000);
  /* Rewritten every lease / 3: two more writes, and for two whole leases
   * the key never expires (each write resets its TTL). */
  w0 = writes(fx.c);
  end = rt_now_ms() + 2 * LEASE_MS;
  while (rt_now_ms() < end) {
    if (rt_cmd_int(fx.srv, "EXISTS %s", key) != 1)
      FAIL("the description expired while its client lives");
    fx_spin(&fx, 20);
  }
  ASSERT_GE(writes(fx.c), w0 + 2);
  /* Gone behind its back (a flush, a restarted server): the next write
   * brings it back whole. */
  rt_cmd_int(fx.srv, "DEL %s", key);
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS %s", key) == 1, 3 * LEASE_MS);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN %s", key), 9);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL %s", key), 0);
  fx_finish(&fx);
}

TEST(registry_key_is_gone_after_close) {
  fx_t fx;
  char key[128];
  lk_lock_t *l;
  start_described(&fx, key, sizeof(key));
  l = fx_lock(&fx, "reg:lock");
  ASSERT_EQ(sx_acquire(&fx, l, 0, LK_LEASE_DEFAULT), 0);
  FX_EVENTUALLY(&fx, writes(fx.c) >= 1, 5000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  fx_close_lock(&fx, l);
  /* The close drains its delete before the close callback: gone at once. */
  lk_client_set_data(fx.c, &fx);
  ASSERT_OK(lk_client_close(fx.c, fx_on_client_closed));
  rt_run_until(&fx.loop, &fx.client_closed, 10000);
  fx.c = NULL;
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 0);
  fx_finish(&fx);
}

TEST(registry_off_by_default) {
  fx_t fx;
  lk_lock_t *l;
  lk_client_stats_t st;
  redisReply *r;
  lk_client_opts_t o;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "reg:off");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  fx_close_lock(&fx, l);
  r = rt_cmd(fx.srv, "KEYS latchkey_client:*");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->elements, 0);
  freeReplyObject(r);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.owner_writes, 0);
  /* Bad options are refused. */
  fx_client_opts(&fx, &o);
  lk_client_t *bad = NULL;
  o.describe_owner = 2;
  ASSERT_EQ(lk_client_new(&fx.loop, &o, &bad), LK_EINVAL);
  o.describe_owner = 1;
  char note[300];
  memset(note, 'n', sizeof(note) - 1);
  note[sizeof(note) - 1] = '\0';
  o.owner_note = note;
  ASSERT_EQ(lk_client_new(&fx.loop, &o, &bad), LK_EINVAL);
  note[256] = '\0'; /* 256 bytes: the most accepted */
  ASSERT_OK(lk_client_new(&fx.loop, &o, &bad));
  fx_close_direct_client(&fx, bad);
  fx_finish(&fx);
}

/* --- reading a description --- */

typedef struct {
  int done, calls, status, found;
  char id[80], host[256], program[256], name[160], version[32], note[300];
  int64_t pid, started_ms, lease_ms, ttl_ms;
} desc_t;

static void on_desc(lk_client_t *c, int status, const lk_owner_desc_t *d, void *arg) {
  desc_t *s = arg;
  (void)c;
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
  s->found = d != NULL;
  if (d == NULL)
    return;
  ASSERT_EQ(status, 0);
  snprintf(s->id, sizeof(s->id), "%s", d->id);
  snprintf(s->host, sizeof(s->host), "%s", d->host);
  snprintf(s->program, sizeof(s->program), "%s", d->program);
  snprintf(s->name, sizeof(s->name), "%s", d->client_name);
  snprintf(s->version, sizeof(s->version), "%s", d->version);
  snprintf(s->note, sizeof(s->note), "%s", d->note);
  s->pid = d->pid, s->started_ms = d->started_ms, s->lease_ms = d->lease_ms;
  s->ttl_ms = d->ttl_ms;
}

static void describe(fx_t *fx, lk_client_t *c, const char *owner, desc_t *s) {
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_client_describe_owner(c, owner, on_desc, s));
  rt_run_until(&fx->loop, &s->done, 10000);
}

TEST(describe_owner_reads_it_back) {
  fx_t fx;
  char key[128], owner[128], host[256], big[80];
  lk_client_t *reader;
  lk_lock_t *l;
  desc_t s;
  start_described(&fx, key, sizeof(key));
  FX_EVENTUALLY(&fx, writes(fx.c) >= 1, 5000);
  reader = fx_direct_client(&fx); /* not described itself */

  /* By the owner id a lock shows (ID:TID) and by the bare id. */
  l = fx_lock(&fx, "reg:who");
  ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), 0);
  snprintf(owner, sizeof(owner), "%s", lk_lock_owner(l));
  ASSERT_NOT_NULL(strchr(owner, ':'));
  describe(&fx, reader, owner, &s);
  ASSERT_EQ(s.status, 0);
  ASSERT_EQ(s.found, 1);
  ASSERT_STREQ(s.id, lk_client_id(fx.c));
  ASSERT_OK(gethostname(host, sizeof(host)));
  ASSERT_STREQ(s.host, host);
  ASSERT_EQ(s.pid, getpid());
  ASSERT(s.program[0] != '\0');
  ASSERT_STREQ(s.name, "regtest");
  ASSERT_STREQ(s.version, lk_version_string());
  ASSERT_STREQ(s.note, "job 7: nightly \"report\"");
  ASSERT_EQ(s.lease_ms, LEASE_MS);
  ASSERT_GT(s.started_ms, 1600000000000LL);
  ASSERT(s.ttl_ms > 0 && s.ttl_ms <= LEASE_MS);
  describe(&fx, reader, lk_client_id(fx.c), &s);
  ASSERT_EQ(s.found, 1);
  ASSERT_STREQ(s.id, lk_client_id(fx.c));
  /* A client that keeps none: found nothing, status 0. */
  describe(&fx, fx.c, lk_client_id(reader), &s);
  ASSERT_EQ(s.status, 0);
  ASSERT_EQ(s.found, 0);
  /* Something else under that name: the server's refusal. */
  rt_cmd_int(fx.srv, "RPUSH latchkey_client:{not-a-client} x");
  describe(&fx, reader, "not-a-client:1", &s);
  ASSERT_EQ(s.status, LK_EWRONGTYPE);
  ASSERT_EQ(s.found, 0);
  /* Bad input at once, no callback. */
  memset(big, 'a', 65);
  big[65] = '\0';
  ASSERT_EQ(lk_client_describe_owner(NULL, "x", on_desc, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, NULL, on_desc, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, "x", NULL, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, "", on_desc, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, ":1", on_desc, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, "a b:1", on_desc, &s), LK_EINVAL);
  ASSERT_EQ(lk_client_describe_owner(reader, big, on_desc, &s), LK_EINVAL);
  big[64] = '\0'; /* 64 bytes: a valid id, nobody's */
  describe(&fx, reader, big, &s);
  ASSERT_EQ(s.status, 0);
  ASSERT_EQ(s.found, 0);

  fx_close_lock(&fx, l);
  fx_close_direct_client(&fx, reader);
  fx_finish(&fx);
}
