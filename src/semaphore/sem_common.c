/* Shared by both semaphores (sem_internal.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore/sem_internal.h"

/* Sends of a clean-up command left to the client by a close that stopped
 * waiting for it (owner-less) before it is given up. */
#define LK__SEM_BACKGROUND_TRIES 5

const lk__script_t *lk__sem_script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

const char *lk__sem_i64(char *buf, int64_t n) {
  snprintf(buf, 24, "%" PRId64, n);
  return buf;
}

int lk__sem_status(int status, const redisReply *r) {
  if (status == LK_EREDIS && r != NULL && r->type == REDIS_REPLY_ERROR && r->len >= 6 &&
      memcmp(r->str, "ERANGE", 6) == 0)
    return LK_EINVAL;
  return status;
}

int lk__sem_int_of(const redisReply *r, int64_t *out) {
  char *end;
  long long v;
  if (r == NULL)
    return 0;
  switch (r->type) {
  case REDIS_REPLY_INTEGER:
    *out = r->integer;
    return 1;
  case REDIS_REPLY_NIL:
    *out = 0;
    return 1;
  case REDIS_REPLY_STRING:
    if (r->len == 0 || r->len > 20)
      return 0;
    v = strtoll(r->str, &end, 10);
    if (end != r->str + r->len)
      return 0;
    *out = v;
    return 1;
  default:
    return 0;
  }
}

int lk__sem_worth_waking(lk__obj_t *o, const char *msg, size_t len, int64_t need) {
  char buf[24], *end;
  int64_t v;
  if (len == 0 || len >= sizeof(buf))
    return 1;
  memcpy(buf, msg, len);
  buf[len] = '\0';
  v = strtoll(buf, &end, 10);
  if (end != buf + len)
    return 1;
  if (v < need)
    return LK__WAKE_NONE;
  if (v < 2 * need)
    return LK__WAKE_ONE; /* one waiter of this size fits: the core picks it
                          * (and thins it across processes, core/object.c) */
  return (int64_t)lk__sub_ration(lk__obj_sub(o)) <= v;
}

int lk__sem_elem(const redisReply *r, size_t i, int64_t *out) {
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
      r->element[i]->type != REDIS_REPLY_INTEGER)
    return 0;
  *out = r->element[i]->integer;
  return 1;
}

int lk__sem_always(int status, const redisReply *r) {
  (void)status;
  (void)r;
  return 1;
}

int lk__sem_took_or_unknown(int status, const redisReply *r) {
  int64_t took;
  if (status != 0)
    return status == LK_EUNKNOWN;
  if (r->type == REDIS_REPLY_INTEGER)
    return 0; /* not enough permits */
  if (lk__sem_elem(r, 0, &took))
    return took == 1;
  return 1; /* a shape the script never sends: whether it ran is unknown */
}

int lk__sem_unconfirmed(int status, const redisReply *r) {
  int64_t v;
  return !(status == 0 && lk__sem_elem(r, 0, &v)) && status != LK_ECANCELED &&
         status != LK_EREDIS;
}

/* --- background clean-up --- */

/* A paused resend (loading or busy server, too many commands in flight)
 * waits this long. */
#define LK__SEM_PAUSE_MS 100

typedef struct lk__sem_job_s {
  lk_client_t *client;
  lk__sem_owner_t *owner; /* NULL: left behind by a close, a few tries */
  lk__queue_t node;       /* in owner->jobs */
  const lk__script_t *script;
  lk__sem_pred pred;
  int nkeys, nargs, tries;
  int paused;              /* waits for owner->timer */
  int valid_from_outcome;  /* valid_until_ns is set once `after` has an outcome */
  int64_t valid_ms;
  uint64_t valid_until_ns; /* owned: resent until then */
  const char **argv;
  size_t *lens;
  /* argument bytes follow */
} lk__sem_job_t;

static void owner_maybe_done(lk__sem_owner_t *w);

static void job_free(lk__sem_job_t *j) {
  lk__sem_owner_t *w = j->owner;
  if (w != NULL)
    lk__queue_remove(&j->node);
  lk__free(j);
  if (w != NULL)
    owner_maybe_done(w);
}

static void on_job_reply(void *data, int status, redisReply *r);

static void job_pause(lk__sem_job_t *j);

static void job_send(lk__sem_job_t *j) {
  int err = 0;
  j->tries++;
  j->paused = 0;
  if (lk__script_call(j->client, j->script, j->nkeys, j->nargs, j->argv, j->lens, on_job_reply, j,
                      &err) != NULL)
    return;
  if (j->owner != NULL && (err == LK_EAGAIN || err == LK_ENOMEM)) {
    job_pause(j);
    return;
  }
  if (err != LK_ECLOSED)
    lk__log(j->client, LK_LOG_WARN,
            "semaphore clean-up could not be sent (%s); permits it was to give "
            "back stay taken",
            lk_err_name(err));
  job_free(j);
}

static int retryable(int status) {
  return status == LK_ECONN || status == LK_EUNKNOWN || status == LK_ELOADING ||
         status == LK_ESERVERBUSY;
}

static void on_job_reply(void *data, int status, redisReply *r) {
  lk__sem_job_t *j = data;
  (void)r;
  if (retryable(status) && !j->client->closing) {
    if (j->owner != NULL) {
      if (lk__now_ns() < j->valid_until_ns) {
        /* Idempotent: resend across any number of reconnects (the command
         * waits for the next connection); a loading or busy server after a
         * pause. */
        if (status == LK_ELOADING || status == LK_ESERVERBUSY)
          job_pause(j);
        else
          job_send(j);
        return;
      }
      lk__log(j->client, LK_LOG_ERROR,
              "semaphore clean-up given up (%s): the server stayed out of reach "
              "until it was no longer worth sending (its request mark, or the "
              "leases of the permits it gives back, could have ended); permits "
              "it was to give back may stay taken (expirable ones until their "
              "leases end)",
              lk_err_name(status));
      job_free(j);
      return;
    }
    if (j->tries < LK__SEM_BACKGROUND_TRIES) {
      job_send(j);
      return;
    }
  }
  if (status != 0 && status != LK_ECANCELED)
    lk__log(j->client, LK_LOG_WARN,
            "semaphore clean-up failed (%s); permits it was to give back may "
            "stay taken",
            lk_err_name(status));
  job_free(j);
}

/* The command the object left behind has its outcome: send the clean-up
 * when it is needed. */
static void on_after_reply(void *data, int status, redisReply *r) {
  lk__sem_job_t *j = data;
  if (j->pred(status, r)) {
    if (j->valid_from_outcome)
      j->valid_until_ns = lk__now_ns() + (uint64_t)j->valid_ms * 1000000u;
    job_send(j);
    return;
  }
  job_free(j);
}

static lk__sem_job_t *job_new(lk_client_t *c, const char *script, int nkeys, int nargs,
                              const char **argv, const size_t *lens, lk__sem_pred pred) {
  size_t bytes = 0, i, n = (size_t)(nkeys + nargs);
  lk__sem_job_t *j;
  char *p;
  for (i = 0; i < n; i++)
    bytes += lens[i];
  /* One block: the record, the argument vector, then the bytes. */
  j = lk__malloc(sizeof(*j) + n * (sizeof(char *) + sizeof(size_t)) + bytes + 1);
  if (j == NULL) {
    lk__log(c, LK_LOG_WARN,
            "semaphore clean-up: out of memory; permits it was "
            "to give back stay taken");
    return NULL;
  }
  j->client = c;
  j->owner = NULL;
  lk__queue_init(&j->node);
  j->script = lk__sem_script(script);
  j->pred = pred;
  j->nkeys = nkeys;
  j->nargs = nargs;
  j->tries = 0;
  j->paused = 0;
  j->valid_from_outcome = 0;
  j->valid_ms = 0;
  j->valid_until_ns = 0;
  j->argv = (const char **)(j + 1);
  j->lens = (size_t *)(j->argv + n);
  p = (char *)(j->lens + n);
  for (i = 0; i < n; i++) {
    memcpy(p, argv[i], lens[i]);
    j->argv[i] = p;
    j->lens[i] = lens[i];
    p += lens[i];
  }
  return j;
}

static void job_start(lk__sem_job_t *j, lk__op_t *after) {
  if (after != NULL) {
    lk__op_retarget(after, on_after_reply, j);
    return;
  }
  job_send(j);
}

static void background_owned(lk__sem_owner_t *w, int64_t valid_ms, int from_outcome,
                             const char *script, int nkeys, int nargs, const char **argv,
                             const size_t *lens, lk__op_t *after, lk__sem_pred pred) {
  lk__sem_job_t *j = job_new(w->client, script, nkeys, nargs, argv, lens, pred);
  if (j == NULL) {
    if (after != NULL)
      lk__op_retarget(after, NULL, NULL);
    return;
  }
  j->owner = w;
  j->valid_ms = valid_ms > 0 ? valid_ms : 0;
  j->valid_from_outcome = from_outcome && after != NULL;
  j->valid_until_ns = lk__now_ns() + (uint64_t)j->valid_ms * 1000000u;
  lk__queue_insert_tail(&w->jobs, &j->node);
  job_start(j, after);
}

void lk__sem_background_owned(lk__sem_owner_t *w, int64_t valid_ms, const char *script, int nkeys,
                              int nargs, const char **argv, const size_t *lens, lk__op_t *after,
                              lk__sem_pred pred) {
  background_owned(w, valid_ms, 0, script, nkeys, nargs, argv, lens, after, pred);
}

void lk__sem_give_back_owned(lk__sem_owner_t *w, int64_t valid_ms, const char *script, int nkeys,
                             int nargs, const char **argv, const size_t *lens, lk__op_t *after,
                             lk__sem_pred pred) {
  background_owned(w, valid_ms, 1, script, nkeys, nargs, argv, lens, after, pred);
}

/* --- owners --- */

static void on_owner_timer(uv_timer_t *t);

static void owner_arm_ms(lk__sem_owner_t *w, uint64_t ms) {
  if (w->timer_open)
    uv_timer_start(&w->timer, on_owner_timer, ms, 0);
}

static void job_pause(lk__sem_job_t *j) {
  j->paused = 1;
  owner_arm_ms(j->owner, LK__SEM_PAUSE_MS);
}

/* Close: the jobs left are handed to the client as owner-less clean-up (a
 * paused one is sent once more now). */
static void owner_orphan_all(lk__sem_owner_t *w) {
  while (!lk__queue_empty(&w->jobs)) {
    lk__sem_job_t *j = lk__container_of(lk__queue_head(&w->jobs), lk__sem_job_t, node);
    lk__queue_remove(&j->node);
    j->owner = NULL;
    j->tries = 0; /* a few more from here */
    lk__log(w->client, LK_LOG_INFO,
            "semaphore closed before its clean-up got through; it is left to "
            "the client (a few more tries)");
    if (j->paused)
      job_send(j);
  }
}

static void on_owner_timer(uv_timer_t *t) {
  lk__sem_owner_t *w = t->data;
  lk__queue_t *q, *next;
  if (w->closing && lk__now_ns() >= w->close_deadline_ns) {
    owner_orphan_all(w);
    owner_maybe_done(w);
    return;
  }
  /* job_send may unlink the job (job_free): walk with the next saved. */
  for (q = w->jobs.next; q != &w->jobs; q = next) {
    lk__sem_job_t *j = lk__container_of(q, lk__sem_job_t, node);
    next = q->next;
    if (j->paused)
      job_send(j);
  }
  if (w->closing && !lk__queue_empty(&w->jobs) && !uv_is_active((uv_handle_t *)&w->timer)) {
    uint64_t now = lk__now_ns();
    owner_arm_ms(w, w->close_deadline_ns > now ? (w->close_deadline_ns - now) / 1000000u + 1 : 0);
  }
}

static void on_owner_timer_closed(uv_handle_t *h) {
  lk__sem_owner_t *w = h->data;
  w->done(w);
}

static void owner_maybe_done(lk__sem_owner_t *w) {
  if (!w->closing || !lk__queue_empty(&w->jobs) || !w->timer_open)
    return;
  w->timer_open = 0;
  uv_timer_stop(&w->timer);
  uv_close((uv_handle_t *)&w->timer, on_owner_timer_closed);
}

void lk__sem_owner_init(lk__sem_owner_t *w, lk_client_t *c) {
  w->client = c;
  lk__queue_init(&w->jobs);
  uv_timer_init(c->loop, &w->timer);
  w->timer.data = w;
  w->timer_open = 1;
  w->closing = 0;
  w->done = NULL;
}

void lk__sem_owner_close(lk__sem_owner_t *w, int64_t wait_ms, void (*done)(lk__sem_owner_t *w)) {
  w->closing = 1;
  w->done = done;
  w->close_deadline_ns = lk__now_ns() + (uint64_t)wait_ms * 1000000u;
  if (lk__queue_empty(&w->jobs)) {
    owner_maybe_done(w);
    return;
  }
  if (!uv_is_active((uv_handle_t *)&w->timer))
    owner_arm_ms(w, (uint64_t)wait_ms + 1);
}

static void on_close_jobs_done(lk__sem_owner_t *w) { lk__obj_close_done(w->obj); }

void lk__sem_close_after_jobs(lk__sem_owner_t *w, lk__obj_t *o) {
  const lk__opts_t *c = &o->client->o;
  w->obj = o;
  lk__sem_owner_close(w, 2 * (c->connect_timeout_ms + c->reply_timeout_ms) + c->reconnect_max_ms,
                      on_close_jobs_done);
}
