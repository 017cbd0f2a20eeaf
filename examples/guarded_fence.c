/* guarded_fence: writes guarded by a latchkey lock (docs/guarded.md).
 *   guarded_fence [HOST:PORT]   else $LATCHKEY_REDIS, else 127.0.0.1:6379
 * 1. Data in the lock's own Redis: lk_lock_guarded writes only while this
 *    owner holds the lock (the server checks, in the same script).
 * 2. A resource outside the lock's Redis: the lock's fencing token goes
 *    with every write, and the store refuses a token not above the last
 *    one it accepted (if token <= last_seen: refuse). The store here is a
 *    stand-in reached with hiredis: a key per resource keeping last_seen,
 *    checked and updated atomically by the store's own script. Any store
 *    that can compare and record in one step (a database row's
 *    conditional UPDATE, a file under an exclusive lock) does the same.
 * The run: holder A writes with its token; A's lock is released (think: its
 * lease ran out while A was paused); B takes the lock, gets a newer token
 * and writes; A's late write is refused by both guards. Exit 0 when so. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

/* The store's write: last_seen and the data move together, or not at all. */
static const char *const fenced_write_lua =
    "local last = tonumber(redis.call('get', KEYS[1]) or '0') "
    "if tonumber(ARGV[1]) <= last then return 0 end "
    "redis.call('set', KEYS[1], ARGV[1]) "
    "redis.call('set', KEYS[2], ARGV[2]) return 1";

static redisContext *store;

/* 1 accepted, 0 refused (a token not above the last one), -1 error. */
static int store_write(const char *resource, int64_t token, const char *value) {
  char tok[24];
  snprintf(tok, sizeof tok, "%" PRId64, token);
  redisReply *r = redisCommand(store, "EVAL %s 2 fence:{%s} data:{%s} %s %s", fenced_write_lua,
                               resource, resource, tok, value);
  int ok = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
  if (r != NULL) freeReplyObject(r);
  return ok;
}

typedef struct step_s {
  uv_loop_t *loop;
  int done, status;
} step_t;

static void on_step(lk_lock_t *lock, int status, void *arg) {
  (void)lock;
  step_t *s = arg;
  s->done = 1;
  s->status = status;
}

/* Runs the loop until the operation just started calls back. */
static int wait_for(step_t *s, int rc) {
  if (rc != 0) return rc;
  while (!s->done) uv_run(s->loop, UV_RUN_ONCE);
  s->done = 0;
  return s->status;
}

static int acquire_fenced(lk_lock_t *lock, step_t *s) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.fenced = 1;
  o.wait_ms = 5000;
  return wait_for(s, lk_lock_acquire(lock, &o, on_step, s));
}

/* The in-Redis guarded write: SET {invoice-42}:status VALUE. The key
 * carries the lock's name as its hash tag: one cluster slot with the lock. */
static int guarded_set(lk_lock_t *lock, step_t *s, const char *value) {
  const char *argv[] = {"SET", "{invoice-42}:status", value};
  lk_guarded_op_t op = {0};
  op.argc = 3;
  op.argv = argv;
  return wait_for(s, lk_lock_guarded(lock, &op, on_step, s));
}

static int locks_open = 2;
static void on_closed(lk_lock_t *lock) { (void)lock; locks_open--; }

int main(int argc, char **argv) {
  const char *addr = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  if (addr == NULL || *addr == '\0') addr = "127.0.0.1:6379";
  char host[256];
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || (size_t)(colon - addr) >= sizeof host) {
    fprintf(stderr, "usage: guarded_fence [HOST:PORT]\n");
    return 2;
  }
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = '\0';
  store = redisConnect(host, atoi(colon + 1));
  if (store == NULL || store->err) {
    fprintf(stderr, "store: cannot connect to %s\n", addr);
    return 1;
  }

  uv_loop_t loop;
  uv_loop_init(&loop);
  lk_client_opts_t copts;
  lk_client_opts_init(&copts);
  lk_client_t *client = NULL;
  lk_lock_t *a = NULL, *b = NULL;
  step_t s = {&loop, 0, 0};
  int failed = 1;
  if (lk_client_opts_set_url(&copts, addr) != 0 || lk_client_new(&loop, &copts, &client) != 0 ||
      lk_lock_new(client, "invoice-42", &a) != 0 || lk_lock_new(client, "invoice-42", &b) != 0) {
    fprintf(stderr, "cannot make the client or the locks\n");
    return 1;
  }

  int rc = acquire_fenced(a, &s);
  int64_t token_a = lk_lock_token(a);
  if (rc != 0) { fprintf(stderr, "A: acquire: %s\n", lk_err_name(rc)); goto out; }
  printf("A holds invoice-42, token %" PRId64 "\n", token_a);
  printf("A: guarded SET in Redis: %s\n", lk_err_name(guarded_set(a, &s, "paid-by-A")));
  printf("A: store write: %s\n", store_write("invoice-42", token_a, "A") == 1 ? "accepted" : "refused");

  /* A's hold ends (a lease that ran out while A was paused ends the same
   * way); B takes the lock and gets a newer token. */
  wait_for(&s, lk_lock_release(a, on_step, &s));
  rc = acquire_fenced(b, &s);
  if (rc != 0) { fprintf(stderr, "B: acquire: %s\n", lk_err_name(rc)); goto out; }
  int64_t token_b = lk_lock_token(b);
  printf("B holds invoice-42, token %" PRId64 "\n", token_b);
  int b_redis = guarded_set(b, &s, "refunded-by-B");
  int b_store = store_write("invoice-42", token_b, "B");
  printf("B: guarded SET in Redis: %s; store write: %s\n", lk_err_name(b_redis),
         b_store == 1 ? "accepted" : "refused");

  /* A wakes up and writes with what it had. */
  int a_redis = guarded_set(a, &s, "paid-by-A-late");
  int a_store = store_write("invoice-42", token_a, "A-late");
  printf("A, late: guarded SET in Redis: %s (%s); store write with token %" PRId64 ": %s\n",
         lk_err_name(a_redis), lk_lock_error_text(a), token_a,
         a_store == 1 ? "accepted" : a_store == 0 ? "refused" : "error");
  failed = !(b_redis == 0 && b_store == 1 && a_redis == LK_EGUARD && a_store == 0);
  wait_for(&s, lk_lock_release(b, on_step, &s));
out:
  /* The client closes once its objects are gone. */
  lk_lock_close(a, on_closed);
  lk_lock_close(b, on_closed);
  while (locks_open > 0) uv_run(&loop, UV_RUN_ONCE);
  lk_client_close(client, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  redisFree(store);
  printf("%s\n", failed ? "FAILED" : "both late writes refused");
  return failed;
}
