/* B3's same-run yardstick (issue 17): the minimal poll loop, standing for
 * redis-semaphore's default mutex, on bench/contend.h's harness so that
 * every line compares with the reentrant lock's (bench/contend.c) row by
 * row, from the same machine in the same run.
 *
 *   acquire: SET NAME OWNER NX PX 30000; on nil, again after --retry-ms
 *            (default 10, a uv timer), until the 10 s wait is spent
 *   release: EVALSHA of a compare-and-delete (if GET == OWNER then DEL),
 *            loaded once per worker with SCRIPT LOAD, as redis-semaphore
 *            sends its release through ioredis
 *
 * The commands go through latchkey's own connection layer (lk__cmd_argv on
 * the worker's lk_client_t, as bench/raw.c --minimal does), so the workers'
 * commands_sent counts compare with the lock's. impl "poll-<N>ms", variant
 * "lock": the lock's lines name "poll-10ms" as their limit_impl. */
#include "contend.h"

#include "core/internal.h"

#define POLL_SET_N 6
#define POLL_DEL_N 5
#define POLL_WAIT_MS 10000

typedef struct poll_s {
  bench_contend_t *w;
  lk_client_t *c;
  uv_timer_t retry;
  uint64_t deadline; /* uv_hrtime when the current acquire's wait ends */
  char owner[96];
  char sha1[41]; /* from SCRIPT LOAD */
  const char *set[POLL_SET_N], *del[POLL_DEL_N];
  size_t set_len[POLL_SET_N], del_len[POLL_DEL_N];
} poll_t;

static int retry_ms = 10;
static char impl_name[32];

static const char del_text[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

static int poll_send_set(poll_t *p);

static void on_loaded(void *data, int status, redisReply *rep) {
  poll_t *p = data;
  if (status != 0 || rep == NULL || rep->type != REDIS_REPLY_STRING || rep->len != 40) {
    bench_contend_fail(p->w, "SCRIPT LOAD", status != 0 ? status : LK_EPROTOCOL);
    return; /* the first release then fails and stops the worker */
  }
  memcpy(p->sha1, rep->str, 40);
  p->sha1[40] = '\0';
}

static void on_retry(uv_timer_t *t) {
  poll_t *p = t->data;
  int rc = poll_send_set(p);
  if (rc != 0)
    bench_contend_acquired(p->w, rc);
}

static void on_set(void *data, int status, redisReply *rep) {
  poll_t *p = data;
  if (status != 0 || rep == NULL) {
    bench_contend_acquired(p->w, status != 0 ? status : LK_EPROTOCOL);
    return;
  }
  if (rep->type == REDIS_REPLY_STATUS) { /* OK: held */
    bench_contend_acquired(p->w, 0);
    return;
  }
  if (rep->type != REDIS_REPLY_NIL) {
    bench_contend_acquired(p->w, rep->type == REDIS_REPLY_ERROR ? LK_EREDIS : LK_EPROTOCOL);
    return;
  }
  /* Held by another: try again after the retry interval, unless the wait
   * would end first (redis-semaphore gives up when its acquire timeout has
   * passed). */
  if (uv_hrtime() + (uint64_t)retry_ms * 1000000u > p->deadline) {
    bench_contend_acquired(p->w, LK_ETIMEDOUT);
    return;
  }
  uv_timer_start(&p->retry, on_retry, (uint64_t)retry_ms, 0);
}

static int poll_send_set(poll_t *p) {
  int err = 0;
  return lk__cmd_argv(p->c, POLL_SET_N, p->set, p->set_len, on_set, p, &err) != NULL ? 0 : err;
}

static void on_del(void *data, int status, redisReply *rep) {
  poll_t *p = data;
  if (status == 0 && (rep == NULL || rep->type != REDIS_REPLY_INTEGER))
    status = rep != NULL && rep->type == REDIS_REPLY_ERROR ? LK_EREDIS : LK_EPROTOCOL;
  else if (status == 0 && rep->integer != 1)
    status = LK_ENOTOWNER; /* the 30 s lease cannot run out here: a bug */
  bench_contend_released(p->w, status);
}

static int poll_open(bench_contend_t *w, lk_client_t *c, const char *name, void **obj) {
  const char *load[3] = {"SCRIPT", "LOAD", del_text};
  size_t load_len[3] = {6, 4, sizeof(del_text) - 1};
  poll_t *p = calloc(1, sizeof(*p));
  int err = 0, k;
  if (p == NULL)
    return LK_ENOMEM;
  p->w = w;
  p->c = c;
  /* Unique per process, as redis-semaphore's random identifier is. */
  snprintf(p->owner, sizeof(p->owner), "%s:%ld", lk_client_id(c), (long)getpid());
  p->set[0] = "SET", p->set[1] = name, p->set[2] = p->owner, p->set[3] = "NX";
  p->set[4] = "PX", p->set[5] = "30000";
  p->del[0] = "EVALSHA", p->del[1] = p->sha1, p->del[2] = "1";
  p->del[3] = name, p->del[4] = p->owner;
  for (k = 0; k < POLL_SET_N; k++)
    p->set_len[k] = strlen(p->set[k]);
  for (k = 0; k < POLL_DEL_N; k++)
    p->del_len[k] = k == 1 ? 40 : strlen(p->del[k]); /* the SHA1 comes later */
  /* One command connection answers in order: the script is loaded before
   * the first SET's reply, so before the first release. */
  if (lk__cmd_argv(c, 3, load, load_len, on_loaded, p, &err) == NULL) {
    free(p);
    return err;
  }
  uv_timer_init(&w->loop, &p->retry);
  p->retry.data = p;
  *obj = p;
  return 0;
}

static int poll_acquire(bench_contend_t *w, void *obj) {
  poll_t *p = obj;
  (void)w;
  p->deadline = uv_hrtime() + (uint64_t)POLL_WAIT_MS * 1000000u;
  return poll_send_set(p);
}

static int poll_release(bench_contend_t *w, void *obj) {
  poll_t *p = obj;
  int err = 0;
  (void)w;
  if (p->sha1[0] == '\0')
    return LK_EPROTOCOL; /* SCRIPT LOAD failed (its error is recorded) */
  return lk__cmd_argv(p->c, POLL_DEL_N, p->del, p->del_len, on_del, p, &err) != NULL ? 0 : err;
}

static void on_timer_closed(uv_handle_t *h) {
  poll_t *p = h->data;
  bench_contend_t *w = p->w;
  free(p);
  bench_contend_closed(w);
}

/* Called between cycles only (contend.h stops after a release), so no
 * command is out and the timer is idle. */
static int poll_close(bench_contend_t *w, void *obj) {
  poll_t *p = obj;
  (void)w;
  uv_close((uv_handle_t *)&p->retry, on_timer_closed);
  return 0;
}

static bench_contend_impl_t poll_impl = {
    .impl = impl_name,
    .variant = "lock",
    .ordered = 0,
    .open = poll_open,
    .acquire = poll_acquire,
    .release = poll_release,
    .close = poll_close,
};

int main(int argc, char **argv) {
  int i;
  /* --retry-ms is this program's own; the rest is contend.h's. */
  for (i = 1; i < argc; i++) {
    uint64_t v;
    if (strcmp(argv[i], "--retry-ms") != 0)
      continue;
    if (i + 1 >= argc || bench_parse_u64(argv[i + 1], &v) != 0 || v < 1 || v > 1000) {
      fprintf(stderr, "%s: --retry-ms needs 1..1000\n", argv[0]);
      return bench_contend_usage(argv[0]);
    }
    retry_ms = (int)v;
    memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof(char *));
    argc -= 2;
    break;
  }
  snprintf(impl_name, sizeof(impl_name), "poll-%dms", retry_ms);
  return bench_contend_main(argc, argv, &poll_impl);
}
