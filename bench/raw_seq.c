/* raw_seq: the same script sequence as bench/raw.c, on blocking hiredis
 * instead of latchkey's connection layer (impl "raw-hiredis", reported beside
 * the limit for reference; bench/raw.c is the limit, bench/README.md).
 *
 * It sends what latchkey sends for an uncontended acquire+release pair, and
 * nothing else: EVALSHA of the embedded lock/acquire script (KEYS name; ARGV
 * lease, owner, expected count 0, request tag), then EVALSHA of lock/release
 * (KEYS name, redisson_lock__channel:{name}; ARGV lease, owner, "PUBLISH", -1,
 * 1, request tag), on one blocking hiredis connection, with every argument
 * but the tag formatted once up front. The tag is a counter's decimal text,
 * new for every command, and each reply must bring it back ({tag, result}:
 * the embedded scripts are wrapped, docs/design.md "Replies are
 * attributable"), as latchkey's connection layer checks it.
 *
 * Sequential (default): redisCommandArgv, one command at a time.
 * --pipelined K: K lanes on distinct names, each sending its release after
 * its acquire's reply and its next acquire after the release's reply, so K
 * commands are always in flight (redisAppendCommandArgv / redisGetReply; the
 * output buffer goes out when no reply is left to read, in one write).
 *
 * Both scripts are loaded with SCRIPT LOAD first; the SHA1 the server returns
 * must match the embedded one. Replies are checked (acquired = {tag, {1}},
 * released = {tag, 1}), as the library checks them. Prints one JSON line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/scripts.h"

#include "bench_common.h"

#define ACQ_ARGC 8
#define REL_ARGC 11

typedef struct lane_s {
  char name[64], channel[96], owner[64];
  char tag[24]; /* the tag of this lane's command in flight */
  const char *acq[ACQ_ARGC], *rel[REL_ARGC];
  size_t acq_len[ACQ_ARGC], rel_len[REL_ARGC];
  uint64_t t0, t_acq;
  int releasing;
} lane_t;

static const lk__script_t *load(redisContext *c, const char *name) {
  const lk__script_t *s = lk__script_find(name);
  redisReply *r;
  if (s == NULL) {
    fprintf(stderr, "raw_seq: script %s is not embedded\n", name);
    return NULL;
  }
  r = redisCommand(c, "SCRIPT LOAD %b", s->text, s->len);
  if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40 ||
      memcmp(r->str, s->sha1, 40) != 0) {
    fprintf(stderr, "raw_seq: SCRIPT LOAD %s: %s\n", name,
            r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "SHA1 mismatch");
    if (r != NULL)
      freeReplyObject(r);
    return NULL;
  }
  freeReplyObject(r);
  return s;
}

static void lane_init(lane_t *ln, size_t i, const char *client_id,
                      const lk__script_t *acq, const lk__script_t *rel) {
  size_t k;
  snprintf(ln->name, sizeof(ln->name), "lkbench:raw:%ld:%zu", (long)getpid(), i);
  snprintf(ln->channel, sizeof(ln->channel), "redisson_lock__channel:{%s}", ln->name);
  snprintf(ln->owner, sizeof(ln->owner), "%s:%zu", client_id, i + 1);
  ln->acq[0] = "EVALSHA", ln->acq[1] = acq->sha1, ln->acq[2] = "1";
  ln->acq[3] = ln->name, ln->acq[4] = "30000", ln->acq[5] = ln->owner;
  ln->acq[6] = "0", ln->acq[7] = ln->tag;
  ln->rel[0] = "EVALSHA", ln->rel[1] = rel->sha1, ln->rel[2] = "2";
  ln->rel[3] = ln->name, ln->rel[4] = ln->channel, ln->rel[5] = "30000";
  ln->rel[6] = ln->owner, ln->rel[7] = "PUBLISH", ln->rel[8] = "-1";
  ln->rel[9] = "1", ln->rel[10] = ln->tag;
  for (k = 0; k < ACQ_ARGC; k++)
    ln->acq_len[k] = strlen(ln->acq[k]);
  for (k = 0; k < REL_ARGC; k++)
    ln->rel_len[k] = strlen(ln->rel[k]);
}

static uint64_t next_tag;

/* A new request tag for the lane's next command (both of its commands end
 * with ln->tag). */
static void new_tag(lane_t *ln) {
  size_t n = (size_t)snprintf(ln->tag, sizeof(ln->tag), "%" PRIu64, ++next_tag);
  ln->acq_len[ACQ_ARGC - 1] = ln->rel_len[REL_ARGC - 1] = n;
}

/* The script's own reply inside {tag, result}, or NULL when it is not this
 * lane's command's. */
static const redisReply *unwrap(const lane_t *ln, const redisReply *r) {
  size_t n = ln->acq_len[ACQ_ARGC - 1];
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len != n ||
      memcmp(r->element[0]->str, ln->tag, n) != 0)
    return NULL;
  return r->element[1];
}

static int check_acq(const lane_t *ln, const redisReply *r) {
  r = unwrap(ln, r);
  return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
         r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 1;
}

static int check_rel(const lane_t *ln, const redisReply *r) {
  r = unwrap(ln, r);
  return r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

static void bad_reply(redisContext *c, const char *what, const redisReply *r) {
  fprintf(stderr, "raw_seq: %s: %s\n", what,
          r == NULL                           ? c->errstr
          : r->type == REDIS_REPLY_ERROR      ? r->str
                                              : "unexpected reply");
}

typedef struct run_s {
  uint64_t *pair_ns, *acq_ns, *rel_ns; /* NULL: not recorded (warm-up) */
  uint64_t cap_ns; /* no new pair starts after this time; 0 = no cap */
  uint64_t done;
} run_t;

static int capped(const run_t *run) { return run->cap_ns != 0 && uv_hrtime() >= run->cap_ns; }

static void record(run_t *run, uint64_t i, const lane_t *ln, uint64_t now) {
  if (run->pair_ns == NULL)
    return;
  run->pair_ns[i] = now - ln->t0;
  run->acq_ns[i] = ln->t_acq - ln->t0;
  run->rel_ns[i] = now - ln->t_acq;
}

static int run_sequential(redisContext *c, lane_t *ln, uint64_t pairs, run_t *run) {
  uint64_t i;
  redisReply *r;
  for (i = 0; i < pairs && !capped(run); i++) {
    ln->t0 = uv_hrtime();
    new_tag(ln);
    r = redisCommandArgv(c, ACQ_ARGC, ln->acq, ln->acq_len);
    ln->t_acq = uv_hrtime();
    if (!check_acq(ln, r)) {
      bad_reply(c, "acquire", r);
      return -1;
    }
    freeReplyObject(r);
    new_tag(ln);
    r = redisCommandArgv(c, REL_ARGC, ln->rel, ln->rel_len);
    if (!check_rel(ln, r)) {
      bad_reply(c, "release", r);
      return -1;
    }
    freeReplyObject(r);
    record(run, i, ln, uv_hrtime());
    run->done = i + 1;
  }
  return 0;
}

static void append_acquire(redisContext *c, lane_t *ln) {
  ln->releasing = 0;
  ln->t0 = uv_hrtime();
  new_tag(ln);
  redisAppendCommandArgv(c, ACQ_ARGC, ln->acq, ln->acq_len);
}

/* K lanes, one command each in flight; replies come back in FIFO order, so a
 * ring of lane indices says whose reply is next. */
static int run_pipelined(redisContext *c, lane_t *lanes, size_t k, uint64_t pairs,
                         run_t *run) {
  size_t *ring = calloc(k, sizeof(size_t)), head = 0, tail = 0, inflight = 0;
  uint64_t started = 0, done = 0;
  size_t i;
  int rc = 0;
  if (ring == NULL)
    return -1;
  for (i = 0; i < k && started < pairs; i++, started++) {
    append_acquire(c, &lanes[i]);
    ring[tail] = i, tail = (tail + 1) % k, inflight++;
  }
  while (inflight > 0) {
    void *reply = NULL;
    redisReply *r;
    lane_t *ln;
    size_t li;
    if (redisGetReply(c, &reply) != REDIS_OK) {
      bad_reply(c, "pipelined read", NULL);
      rc = -1;
      break;
    }
    r = reply;
    li = ring[head], head = (head + 1) % k, inflight--;
    ln = &lanes[li];
    if (!ln->releasing) {
      ln->t_acq = uv_hrtime();
      if (!check_acq(ln, r)) {
        bad_reply(c, "acquire", r);
        rc = -1;
      }
      freeReplyObject(r);
      if (rc != 0)
        break;
      ln->releasing = 1;
      new_tag(ln);
      redisAppendCommandArgv(c, REL_ARGC, ln->rel, ln->rel_len);
      ring[tail] = li, tail = (tail + 1) % k, inflight++;
      continue;
    }
    if (!check_rel(ln, r)) {
      bad_reply(c, "release", r);
      rc = -1;
    }
    freeReplyObject(r);
    if (rc != 0)
      break;
    record(run, done, ln, uv_hrtime());
    done++;
    run->done = done;
    if (started < pairs && !capped(run)) {
      started++;
      append_acquire(c, ln);
      ring[tail] = li, tail = (tail + 1) % k, inflight++;
    }
  }
  free(ring);
  return rc;
}

int main(int argc, char **argv) {
  bench_args_t a;
  redisContext *c;
  const lk__script_t *acq, *rel;
  lane_t *lanes;
  run_t warm, meas;
  bench_result_t res;
  char client_id[40];
  uint64_t t0, t1, cpu0, cpu1, rnd;
  size_t i;
  int rc;
  struct timeval tv = {5, 0};

  if (bench_parse_args(argc, argv, &a) != 0)
    return 2;
  c = redisConnectWithTimeout(a.host, a.port, tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "raw_seq: connect %s:%d: %s\n", a.host, a.port,
            c != NULL ? c->errstr : "out of memory");
    return 1;
  }
  acq = load(c, "lock/acquire");
  rel = load(c, "lock/release");
  if (acq == NULL || rel == NULL)
    return 1;

  /* An owner id shaped like latchkey's ("UUID:TID"), so the bytes match. */
  rnd = uv_hrtime() ^ ((uint64_t)getpid() << 32);
  snprintf(client_id, sizeof(client_id), "%08x-%04x-4%03x-a%03x-%012" PRIx64,
           (unsigned)(rnd & 0xffffffffu), (unsigned)((rnd >> 8) & 0xffffu),
           (unsigned)((rnd >> 20) & 0xfffu), (unsigned)((rnd >> 40) & 0xfffu),
           (uint64_t)((rnd * 0x9e3779b97f4a7c15ull) & 0xffffffffffffull));
  memset(&warm, 0, sizeof(warm));
  memset(&meas, 0, sizeof(meas));
  lanes = calloc(a.inflight, sizeof(*lanes));
  meas.pair_ns = calloc(a.pairs, sizeof(uint64_t));
  meas.acq_ns = calloc(a.pairs, sizeof(uint64_t));
  meas.rel_ns = calloc(a.pairs, sizeof(uint64_t));
  if (lanes == NULL || meas.pair_ns == NULL || meas.acq_ns == NULL || meas.rel_ns == NULL) {
    fprintf(stderr, "raw_seq: out of memory\n");
    return 1;
  }
  for (i = 0; i < a.inflight; i++)
    lane_init(&lanes[i], i, client_id, acq, rel);

  if (a.inflight > 1) {
    rc = run_pipelined(c, lanes, a.inflight, a.warmup, &warm);
    cpu0 = bench_cpu_ns();
    t0 = uv_hrtime();
    meas.cap_ns = a.seconds > 0 ? t0 + (uint64_t)(a.seconds * 1e9) : 0;
    if (rc == 0)
      rc = run_pipelined(c, lanes, a.inflight, a.pairs, &meas);
  } else {
    rc = run_sequential(c, lanes, a.warmup, &warm);
    cpu0 = bench_cpu_ns();
    t0 = uv_hrtime();
    meas.cap_ns = a.seconds > 0 ? t0 + (uint64_t)(a.seconds * 1e9) : 0;
    if (rc == 0)
      rc = run_sequential(c, lanes, a.pairs, &meas);
  }
  t1 = uv_hrtime();
  cpu1 = bench_cpu_ns();
  if (rc == 0 && meas.done > 0) {
    memset(&res, 0, sizeof(res));
    res.impl = "raw-hiredis";
    res.args = &a;
    res.elapsed_ns = t1 - t0;
    res.cpu_ns = cpu1 - cpu0;
    res.pair_ns = meas.pair_ns;
    res.acq_ns = meas.acq_ns;
    res.rel_ns = meas.rel_ns;
    res.n = (size_t)meas.done;
    res.commands_per_pair = 2.0;
    bench_print(&res);
  }
  redisFree(c);
  free(lanes);
  free(meas.pair_ns);
  free(meas.acq_ns);
  free(meas.rel_ns);
  return rc == 0 ? 0 : 1;
}
