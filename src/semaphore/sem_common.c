/* Shared by both semaphores (sem_internal.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore/sem_internal.h"

/* Connection cycles a clean-up command survives before it is given up. */
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

int lk__sem_parse_msg(const char *msg, size_t len, int64_t *out) {
  char buf[24], *end;
  if (len == 0 || len >= sizeof(buf))
    return 0;
  memcpy(buf, msg, len);
  buf[len] = '\0';
  *out = strtoll(buf, &end, 10);
  return end == buf + len;
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
  if (status == LK_EUNKNOWN)
    return 1;
  return status == 0 && lk__sem_elem(r, 0, &took) && took == 1;
}

/* --- background clean-up --- */

typedef struct lk__sem_job_s {
  lk_client_t *client;
  const lk__script_t *script;
  lk__sem_pred pred;
  int nkeys, nargs, tries;
  const char **argv;
  size_t *lens;
  /* argument bytes follow */
} lk__sem_job_t;

static void job_free(lk__sem_job_t *j) { lk__free(j); }

static void on_job_reply(void *data, int status, redisReply *r);

static void job_send(lk__sem_job_t *j) {
  int err = 0;
  j->tries++;
  if (lk__script_call(j->client, j->script, j->nkeys, j->nargs, j->argv, j->lens, on_job_reply, j,
                      &err) != NULL)
    return;
  if (err != LK_ECLOSED)
    lk__log(j->client, LK_LOG_WARN,
            "semaphore clean-up could not be sent (%s); permits it was to give "
            "back stay taken",
            lk_err_name(err));
  job_free(j);
}

static void on_job_reply(void *data, int status, redisReply *r) {
  lk__sem_job_t *j = data;
  (void)r;
  if ((status == LK_ECONN || status == LK_EUNKNOWN || status == LK_ELOADING ||
       status == LK_ESERVERBUSY) &&
      j->tries < LK__SEM_BACKGROUND_TRIES && !j->client->closing) {
    /* Not sent, or its reply lost: the script is idempotent, send it again
     * (it waits for the next connection). */
    job_send(j);
    return;
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
    job_send(j);
    return;
  }
  job_free(j);
}

void lk__sem_background(lk_client_t *c, const char *script, int nkeys, int nargs, const char **argv,
                        const size_t *lens, lk__op_t *after, lk__sem_pred pred) {
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
    if (after != NULL)
      lk__op_retarget(after, NULL, NULL);
    return;
  }
  j->client = c;
  j->script = lk__sem_script(script);
  j->pred = pred;
  j->nkeys = nkeys;
  j->nargs = nargs;
  j->tries = 0;
  j->argv = (const char **)(j + 1);
  j->lens = (size_t *)(j->argv + n);
  p = (char *)(j->lens + n);
  for (i = 0; i < n; i++) {
    memcpy(p, argv[i], lens[i]);
    j->argv[i] = p;
    j->lens[i] = lens[i];
    p += lens[i];
  }
  if (after != NULL) {
    lk__op_retarget(after, on_after_reply, j);
    return;
  }
  job_send(j);
}
