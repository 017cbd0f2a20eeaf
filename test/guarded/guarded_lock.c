/* Writes guarded by the lock (docs/guarded.md): a command of the list, or
 * a caller's script, applies only while this owner holds the lock and, for
 * a fenced hold, only while its token is the newest; refused with
 * LK_EGUARD otherwise, nothing written. Keys outside the lock's slot are
 * refused before sending (LK_ECROSSSLOT); bad input gets LK_EINVAL. */
#include <string.h>

#include "lk_fixture.h"

typedef struct gx_s {
  sx_t s;
  lk_guarded_reply_t reply; /* copied in the callback; str not kept */
  char str[64];
  int has_reply;
} gx_t;

static void gx_cb(lk_lock_t *l, int status, void *arg) {
  gx_t *g = arg;
  const lk_guarded_reply_t *r = lk_lock_guarded_reply(l);
  sx_cb(l, status, &g->s);
  g->has_reply = r != NULL;
  if (r != NULL) {
    g->reply = *r;
    if (r->type == LK_GUARDED_STRING && r->len < sizeof(g->str)) {
      memcpy(g->str, r->str, r->len);
      g->str[r->len] = '\0';
    }
    g->reply.str = NULL;
  }
}

/* Runs op to completion: the callback's status (a refusal at once fails). */
static int gx_run(fx_t *fx, lk_lock_t *l, const lk_guarded_op_t *op, gx_t *g) {
  memset(g, 0, sizeof(*g));
  ASSERT_OK(lk_lock_guarded(l, op, gx_cb, g));
  rt_run_until(&fx->loop, &g->s.done, 15000);
  /* The reply is readable only inside the callback. */
  ASSERT_NULL(lk_lock_guarded_reply(l));
  return g->s.status;
}

/* A command of the list, argv given as NUL-terminated strings. */
static int gx_cmd(fx_t *fx, lk_lock_t *l, gx_t *g, int argc, const char **argv) {
  lk_guarded_op_t op;
  memset(&op, 0, sizeof(op));
  op.argc = argc;
  op.argv = argv;
  return gx_run(fx, l, &op, g);
}

static char *get(fx_t *fx, const char *key) { return rt_cmd_str(fx->srv, "GET %s", key); }

/* Held: the write applies and its reply reaches the callback; before the
 * acquire and after the release the same write is refused, nothing written. */
TEST(write_applies_only_while_held) {
  fx_t fx;
  gx_t g;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "g-held");
  const char *set[] = {"SET", "{g-held}:v", "one"};
  const char *incr[] = {"incrby", "{g-held}:n", "5"};
  const char *hset[] = {"HSET", "{g-held}:h", "f", "x"};
  const char *del[] = {"DEL", "{g-held}:v", "{g-held}:h"};
  ASSERT_EQ(gx_cmd(&fx, l, &g, 3, set), LK_EGUARD);
  ASSERT_EQ(g.has_reply, 0);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(l), "not held by this owner"));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {g-held}:v"), 0);

  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_OK(gx_cmd(&fx, l, &g, 3, set));
  ASSERT_EQ(g.reply.type, LK_GUARDED_STRING);
  ASSERT_STREQ(g.str, "OK");
  char *v = get(&fx, "{g-held}:v");
  ASSERT_STREQ(v, "one");
  free(v);
  ASSERT_OK(gx_cmd(&fx, l, &g, 3, incr));
  ASSERT_OK(gx_cmd(&fx, l, &g, 3, incr));
  ASSERT_EQ(g.reply.type, LK_GUARDED_INTEGER);
  ASSERT_EQ(g.reply.integer, 10);
  ASSERT_EQ(g.s.result, 10);
  ASSERT_OK(gx_cmd(&fx, l, &g, 4, hset));
  ASSERT_EQ(g.reply.integer, 1);
  ASSERT_OK(gx_cmd(&fx, l, &g, 3, del));
  ASSERT_EQ(g.reply.integer, 2);
  ASSERT_OK(gx_cmd(&fx, l, &g, 3, set));

  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(gx_cmd(&fx, l, &g, 3, incr), LK_EGUARD);
  ASSERT_EQ(gx_cmd(&fx, l, &g, 3, del), LK_EGUARD);
  char *n = get(&fx, "{g-held}:n");
  ASSERT_STREQ(n, "10");
  free(n);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {g-held}:v"), 1);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* Another owner's hold does not let this one write; the holder's does. */
TEST(other_owner_refused) {
  fx_t fx;
  gx_t g;
  fx_start(&fx, NULL);
  lk_lock_t *a = fx_lock(&fx, "g-other"), *b = fx_lock(&fx, "g-other");
  const char *set_b[] = {"SET", "{g-other}:v", "b"};
  const char *set_a[] = {"SET", "{g-other}:v", "a"};
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_EQ(gx_cmd(&fx, b, &g, 3, set_b), LK_EGUARD);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {g-other}:v"), 0);
  ASSERT_OK(gx_cmd(&fx, a, &g, 3, set_a));
  char *v = get(&fx, "{g-other}:v");
  ASSERT_STREQ(v, "a");
  free(v);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

static int fenced_acquire(fx_t *fx, lk_lock_t *l) {
  lk_lock_opts_t o;
  sx_t s;
  memset(&s, 0, sizeof(s));
  lk_lock_opts_init(&o);
  o.fenced = 1;
  o.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  rt_run_until(&fx->loop, &s.done, 15000);
  return s.status;
}

/* Fenced: once a newer token was issued for the name, a write with the
 * older one is refused although the owner field is still there (two
 * objects sharing one owner: the hash cannot tell them apart, the token
 * can). The newest token's write applies. */
TEST(fenced_older_token_refused) {
  fx_t fx;
  gx_t g;
  fx_start(&fx, NULL);
  lk_lock_t *a = fx_lock(&fx, "g-fence"), *b = fx_lock(&fx, "g-fence");
  const char *set_a[] = {"SET", "{g-fence}:v", "a"};
  const char *set_b[] = {"SET", "{g-fence}:v", "b"};
  ASSERT_OK(lk_lock_set_owner(a, NULL, 77));
  ASSERT_OK(lk_lock_set_owner(b, NULL, 77));
  ASSERT_OK(fenced_acquire(&fx, a));
  int64_t ta = lk_lock_token(a);
  ASSERT_GT(ta, 0);
  ASSERT_OK(gx_cmd(&fx, a, &g, 3, set_a));
  ASSERT_OK(fenced_acquire(&fx, b));
  ASSERT_GT(lk_lock_token(b), ta);
  ASSERT_EQ(gx_cmd(&fx, a, &g, 3, set_b), LK_EGUARD);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(a), "newer fencing token"));
  char *v = get(&fx, "{g-fence}:v");
  ASSERT_STREQ(v, "a");
  free(v);
  ASSERT_OK(gx_cmd(&fx, b, &g, 3, set_b));
  v = get(&fx, "{g-fence}:v");
  ASSERT_STREQ(v, "b");
  free(v);
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  /* An unfenced holding after a fenced one is checked by owner only: its
   * old token says nothing of it. */
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_OK(fenced_acquire(&fx, b));
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  ASSERT_OK(gx_cmd(&fx, a, &g, 3, set_a));
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* A caller's script runs behind the guard's check, with exactly its own
 * KEYS and ARGV; refused (nothing written) when not held. A "#!lua" line
 * stays first; the script's own error reaches the callback. */
TEST(script_runs_behind_the_check) {
  fx_t fx;
  gx_t g;
  lk_guarded_op_t op;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "g-eval");
  const char *argv[] = {"{g-eval}:a", "{g-eval}:b", "hello", "3"};
  memset(&op, 0, sizeof(op));
  op.script = "redis.call('set', KEYS[1], ARGV[1])\n"
              "return redis.call('incrby', KEYS[2], ARGV[2]) + #KEYS * 100 + #ARGV * 10";
  op.nkeys = 2;
  op.argc = 4;
  op.argv = argv;
  ASSERT_EQ(gx_run(&fx, l, &op, &g), LK_EGUARD);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {g-eval}:a {g-eval}:b"), 0);
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_OK(gx_run(&fx, l, &op, &g));
  /* 3 + 2 keys * 100 + 2 args * 10: the guard's own were taken off. */
  ASSERT_EQ(g.reply.type, LK_GUARDED_INTEGER);
  ASSERT_EQ(g.reply.integer, 223);
  char *v = get(&fx, "{g-eval}:a");
  ASSERT_STREQ(v, "hello");
  free(v);
  op.script = "#!lua flags=allow-oom\nreturn {KEYS[1], ARGV[1]}";
  ASSERT_OK(gx_run(&fx, l, &op, &g));
  ASSERT_EQ(g.reply.type, LK_GUARDED_ARRAY);
  ASSERT_EQ(g.reply.elements, 2);
  op.script = "return redis.call('get', KEYS[1])";
  ASSERT_OK(gx_run(&fx, l, &op, &g));
  ASSERT_STREQ(g.str, "hello");
  op.script = "return redis.error_reply('MYERR from the caller')";
  ASSERT_EQ(gx_run(&fx, l, &op, &g), LK_EREDIS);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(l), "MYERR"));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  op.script = "return redis.call('del', KEYS[1])";
  ASSERT_EQ(gx_run(&fx, l, &op, &g), LK_EGUARD);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {g-eval}:a"), 1);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* A key outside the lock's slot is refused at once, on every server, and
 * nothing is sent; the error text names the key. */
TEST(key_in_another_slot_refused_before_sending) {
  fx_t fx;
  lk_guarded_op_t op;
  gx_t g;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "g-slot");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  const char *set[] = {"SET", "elsewhere", "x"};
  const char *del[] = {"DEL", "{g-slot}:a", "{other}:b"};
  const char *keys[] = {"{g-slot}:a", "plain", "arg"};
  long long calls = rt_cmd_int(fx.srv, "DBSIZE");
  memset(&op, 0, sizeof(op));
  op.argc = 3;
  op.argv = set;
  memset(&g, 0, sizeof(g));
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_ECROSSSLOT);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(l), "\"elsewhere\""));
  op.argv = del;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_ECROSSSLOT);
  op.script = "return 1";
  op.nkeys = 2;
  op.argv = keys;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_ECROSSSLOT);
  /* Only the keys are checked: an argument may be anything. */
  op.nkeys = 1;
  ASSERT_OK(gx_run(&fx, l, &op, &g));
  fx_spin(&fx, 20);
  ASSERT_EQ(g.s.calls, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DBSIZE"), calls);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS elsewhere"), 0);
  /* The lock's own name is in its slot: a hash-tagged lock name too. */
  lk_lock_t *t = fx_lock(&fx, "{g-tag}:lock");
  const char *set_t[] = {"SET", "{g-tag}:data", "x"};
  ASSERT_OK(sx_acquire(&fx, t, 0, 30000));
  ASSERT_OK(gx_cmd(&fx, t, &g, 3, set_t));
  ASSERT_OK(sx_run(&fx, lk_lock_release, t, NULL));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){t, l, NULL});
}

/* Bad input is refused at once with LK_EINVAL, no callback, no crash. */
TEST(bad_input_refused) {
  fx_t fx;
  lk_guarded_op_t op;
  gx_t g;
  fx_start(&fx, NULL);
  lk_lock_t *l = fx_lock(&fx, "g-bad");
  const char *set[] = {"SET", "{g-bad}:v", "x"};
  const char *flush[] = {"FLUSHALL"};
  const char *eval[] = {"EVAL", "return 1", "0"};
  const char *only[] = {"SET"};
  const char *hole[] = {"SET", NULL, "x"};
  memset(&g, 0, sizeof(g));
  memset(&op, 0, sizeof(op));
  op.argc = 3;
  op.argv = set;
  ASSERT_EQ(lk_lock_guarded(NULL, &op, gx_cb, &g), LK_EINVAL);
  ASSERT_EQ(lk_lock_guarded(l, NULL, gx_cb, &g), LK_EINVAL);
  ASSERT_EQ(lk_lock_guarded(l, &op, NULL, &g), LK_EINVAL);
  op.argc = 0;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argc = LK_GUARDED_MAX_ARGS + 1;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argc = 1, op.argv = flush;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argc = 3, op.argv = eval;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argc = 1, op.argv = only;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argc = 3, op.argv = hole;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argv = NULL;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.argv = set, op.script = "";
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.script = "return 1", op.nkeys = 4;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  op.nkeys = -1;
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g), LK_EINVAL);
  ASSERT_NULL(lk_lock_guarded_reply(NULL));
  fx_spin(&fx, 20);
  ASSERT_EQ(g.s.calls, 0);
  /* One pending at a time, as every operation of the object. */
  op.script = NULL, op.nkeys = 0;
  ASSERT_OK(lk_lock_guarded(l, &op, gx_cb, &g));
  gx_t g2;
  memset(&g2, 0, sizeof(g2));
  ASSERT_EQ(lk_lock_guarded(l, &op, gx_cb, &g2), LK_EBUSY);
  rt_run_until(&fx.loop, &g.s.done, 15000);
  ASSERT_EQ(g.s.status, LK_EGUARD);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}
