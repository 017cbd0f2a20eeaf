/* lk_inspect: what a name holds, read by one script (scripts/inspect/
 * state.lua) with no object, and turned into the documented lk_inspect_t
 * (docs/inspect.md). A one-shot op: the request record lives from the call
 * to its callback; an error at the call means no callback. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

const char *lk_inspect_kind_name(lk_inspect_kind_t kind) {
  static const char *const names[] = {"none",  "lock",  "fair",  "rwlock", "count",
                                      "psem",  "latch", "token", "other"};
  if ((int)kind < 0 || (size_t)kind >= sizeof(names) / sizeof(names[0]))
    return "?";
  return names[kind];
}

typedef struct insp_req_s {
  lk_client_t *c;
  lk_inspect_cb cb;
  void *arg;
  char name[]; /* NUL-terminated copy */
} insp_req_t;

/* Redisson's score of a permit without lease (it never ends). */
#define PSEM_NEVER 922337203685477LL

static int64_t str_i64(const redisReply *r, int *ok) {
  char buf[32], *end;
  long long v;
  *ok = 0;
  if (r == NULL)
    return 0;
  if (r->type == REDIS_REPLY_INTEGER) {
    *ok = 1;
    return r->integer;
  }
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len >= sizeof(buf))
    return 0;
  memcpy(buf, r->str, r->len);
  buf[r->len] = '\0';
  /* Scores come back as text ("1.7e12" for large ones in some versions). */
  v = strtoll(buf, &end, 10);
  if (*end == '.' || *end == 'e' || *end == 'E') {
    double d = strtod(buf, &end);
    if (*end != '\0')
      return 0;
    *ok = 1;
    return (int64_t)d;
  }
  if (*end != '\0')
    return 0;
  *ok = 1;
  return (int64_t)v;
}

static int is_str(const redisReply *r) { return r != NULL && r->type == REDIS_REPLY_STRING; }
static int is_arr(const redisReply *r) { return r != NULL && r->type == REDIS_REPLY_ARRAY; }

/* Parses the script's reply into *out with storage from one allocation
 * (*mem, freed by the caller after the callback). LK_EPROTOCOL on a reply
 * of another shape. */
static int parse_state(const insp_req_t *q, redisReply *r, lk_inspect_t *out, void **mem) {
  redisReply *hs, *qs, *ps;
  size_t i, nh, nw, np, strbytes = 0, off;
  char *buf;
  lk_inspect_holder_t *holders;
  lk_inspect_waiter_t *waiters;
  lk_inspect_permit_t *permits;
  int ok, rw;
  int64_t token, marker, totals[3];
  const char *mode;

  if (!is_arr(r) || r->elements != 12 || !is_str(r->element[0]) || !is_str(r->element[5]) ||
      !is_arr(r->element[6]) || !is_arr(r->element[8]) || !is_arr(r->element[10]))
    return LK_EPROTOCOL;
  hs = r->element[6], qs = r->element[8], ps = r->element[10];
  if (hs->elements % 3 != 0 || qs->elements % 2 != 0 || ps->elements % 2 != 0)
    return LK_EPROTOCOL;
  memset(out, 0, sizeof(*out));
  out->name = q->name;
  out->redis_type = r->element[0]->str;
  out->ttl_ms = str_i64(r->element[1], &ok);
  if (!ok)
    return LK_EPROTOCOL;
  out->server_time_ms = str_i64(r->element[2], &ok);
  if (!ok)
    return LK_EPROTOCOL;
  token = str_i64(r->element[3], &ok);
  marker = str_i64(r->element[4], &ok);
  for (i = 0; i < 3; i++) {
    totals[i] = str_i64(r->element[7 + 2 * i], &ok);
    if (!ok || totals[i] < 0)
      return LK_EPROTOCOL;
  }
  out->token = token > 0 ? token : 0;
  nh = hs->elements / 3, nw = qs->elements / 2, np = ps->elements / 2;
  mode = r->element[5]->str;
  rw = strcmp(out->redis_type, "hash") == 0 && (!strcmp(mode, "read") || !strcmp(mode, "write"));

  /* Owners are copied (a writer's ":write" is cut off); permit ids are
   * hex-encoded (they are raw 16-byte strings on the server). */
  for (i = 0; i < nh; i++)
    if (is_str(hs->element[3 * i]))
      strbytes += hs->element[3 * i]->len + 1;
  for (i = 0; i < np; i++)
    if (is_str(ps->element[2 * i]))
      strbytes += 2 * ps->element[2 * i]->len + 1;
  *mem = lk__malloc(nh * sizeof(*holders) + nw * sizeof(*waiters) + np * sizeof(*permits) +
                    strbytes + 1);
  if (*mem == NULL)
    return LK_ENOMEM;
  holders = *mem;
  waiters = (lk_inspect_waiter_t *)(holders + nh);
  permits = (lk_inspect_permit_t *)(waiters + nw);
  buf = (char *)(permits + np);
  off = 0;

  for (i = 0; i < nh; i++) {
    redisReply *f = hs->element[3 * i];
    lk_inspect_holder_t *h = &holders[i];
    size_t len;
    if (!is_str(f))
      return LK_EPROTOCOL;
    len = f->len;
    h->mode = 0;
    if (rw) {
      h->mode = LK_RW_READ;
      if (len > 6 && memcmp(f->str + len - 6, ":write", 6) == 0) {
        h->mode = LK_RW_WRITE;
        len -= 6;
      }
    }
    memcpy(buf + off, f->str, len);
    buf[off + len] = '\0';
    h->owner = buf + off;
    off += f->len + 1;
    h->count = str_i64(hs->element[3 * i + 1], &ok);
    if (!ok)
      h->count = 0; /* a field that holds no count: shown as 0 */
    h->ttl_ms = str_i64(hs->element[3 * i + 2], &ok);
  }
  for (i = 0; i < nw; i++) {
    if (!is_str(qs->element[2 * i]))
      return LK_EPROTOCOL;
    waiters[i].owner = qs->element[2 * i]->str;
    waiters[i].deadline_ms = str_i64(qs->element[2 * i + 1], &ok);
    waiters[i].deadline_ms =
        ok ? waiters[i].deadline_ms - out->server_time_ms : LK_INSPECT_NO_DEADLINE;
  }
  for (i = 0; i < np; i++) {
    static const char hex[] = "0123456789abcdef";
    redisReply *id = ps->element[2 * i];
    int64_t score;
    size_t k;
    if (!is_str(id))
      return LK_EPROTOCOL;
    for (k = 0; k < id->len; k++) {
      buf[off + 2 * k] = hex[(unsigned char)id->str[k] >> 4];
      buf[off + 2 * k + 1] = hex[(unsigned char)id->str[k] & 15];
    }
    buf[off + 2 * id->len] = '\0';
    permits[i].id = buf + off;
    off += 2 * id->len + 1;
    score = str_i64(ps->element[2 * i + 1], &ok);
    permits[i].no_lease = ok && score >= PSEM_NEVER;
    permits[i].lease_ms = permits[i].no_lease ? -1 : score - out->server_time_ms;
  }
  out->holders = holders, out->n_holders = nh, out->total_holders = (size_t)totals[0];
  out->waiters = waiters, out->n_waiters = nw, out->total_waiters = (size_t)totals[1];
  out->permits = permits, out->n_permits = np, out->total_permits = (size_t)totals[2];

  /* What it is: the key's type first, then the parts around it. */
  if (strcmp(out->redis_type, "hash") == 0) {
    if (rw) {
      out->kind = LK_INSPECT_RWLOCK;
      out->mode = mode[0] == 'r' ? LK_RW_READ : LK_RW_WRITE;
    } else {
      out->kind = totals[1] > 0 ? LK_INSPECT_FAIR : LK_INSPECT_LOCK;
    }
  } else if (strcmp(out->redis_type, "string") == 0) {
    out->count = str_i64(r->element[5], &ok);
    out->has_count = ok;
    if (!ok)
      out->kind = LK_INSPECT_OTHER;
    else if (totals[2] > 0)
      out->kind = LK_INSPECT_PSEM;
    else
      out->kind = marker > 0 ? LK_INSPECT_LATCH : LK_INSPECT_COUNT;
  } else if (strcmp(out->redis_type, "none") == 0) {
    if (totals[1] > 0) {
      out->kind = LK_INSPECT_FAIR; /* free, with waiters queued */
    } else if (totals[2] > 0) {
      out->kind = LK_INSPECT_PSEM; /* every permit taken, count key gone */
      out->has_count = 1;
    } else if (marker > 0) {
      out->kind = LK_INSPECT_LATCH; /* opened: the strict marker stays */
      out->has_count = 1;
    } else if (out->token > 0) {
      out->kind = LK_INSPECT_TOKEN;
    } else {
      out->kind = LK_INSPECT_NONE;
    }
  } else {
    out->kind = LK_INSPECT_OTHER;
  }
  return 0;
}

static void on_state(void *data, int status, redisReply *r) {
  insp_req_t *q = data;
  lk_inspect_t info;
  void *mem = NULL;
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_ERROR)
    status = lk__status_of(r);
  if (status == 0)
    status = parse_state(q, r, &info, &mem);
  q->cb(q->c, status, status == 0 ? &info : NULL, q->arg);
  lk__free(mem);
  lk__free(q);
}

/* The keys state.lua reads, in its order. */
static int inspect_keys(const char *name, size_t len, char *keys[7], size_t lens[7]) {
  static const char *const prefixes[] = {"redisson_lock_queue", "redisson_lock_timeout"};
  int i;
  memset(keys, 0, 7 * sizeof(*keys));
  keys[0] = lk__malloc(len + 1);
  if (keys[0] != NULL) {
    memcpy(keys[0], name, len);
    keys[0][len] = '\0';
    lens[0] = len;
  }
  for (i = 0; i < 2; i++)
    keys[1 + i] = lk__prefix_name(prefixes[i], name, len, &lens[1 + i]);
  keys[3] = lk__suffix_name(name, len, "timeout", &lens[3]);
  keys[4] = lk__prefix_name("redisson_lock_token", name, len, &lens[4]);
  keys[5] = lk__prefix_name("latchkey_latch_open", name, len, &lens[5]);
  /* "{NAME}" (or NAME with a brace): the read holds' key prefix. */
  keys[6] = lk__suffix_name(name, len, "", &lens[6]);
  if (keys[6] != NULL)
    keys[6][--lens[6]] = '\0'; /* drop the ':' of the empty suffix */
  for (i = 0; i < 7; i++)
    if (keys[i] == NULL)
      return LK_ENOMEM;
  return 0;
}

int lk_inspect(lk_client_t *c, const char *name, lk_inspect_cb cb, void *arg) {
  size_t len, lens[8];
  char *keys[7];
  const char *argv[8];
  char cap[24];
  insp_req_t *q;
  int rc, i;
  if ((rc = lk__check_client(c)) != 0)
    return rc;
  if (cb == NULL)
    return LK_EINVAL;
  if ((rc = lk__check_name(c, name, &len)) != 0)
    return rc;
  q = lk__malloc(sizeof(*q) + len + 1);
  if (q == NULL)
    return LK_ENOMEM;
  q->c = c, q->cb = cb, q->arg = arg;
  memcpy(q->name, name, len);
  q->name[len] = '\0';
  rc = inspect_keys(name, len, keys, lens);
  if (rc == 0) {
    for (i = 0; i < 7; i++)
      argv[i] = keys[i];
    lens[7] = lk__i64_to_str(cap, LK_INSPECT_MAX_ENTRIES);
    argv[7] = cap;
    if (lk__script_call(c, lk__script_find("inspect/state"), 7, 1, argv, lens, on_state, q,
                        &rc) != NULL)
      rc = 0;
  }
  for (i = 0; i < 7; i++)
    lk__free(keys[i]);
  if (rc != 0)
    lk__free(q);
  return rc;
}
