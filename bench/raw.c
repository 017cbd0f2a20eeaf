/* bench/raw: the library-efficiency limit (bench/README.md).
 *
 * A bare loop on latchkey's OWN connection layer: one lk_client_t, and the
 * lock's exact script sequence sent through lk__script_call, with no lock
 * object in between (no entry checks, wait engine, timers, hold counting,
 * lease keeping or subscriptions):
 *
 *   EVALSHA lock/acquire 1 NAME 30000 OWNER 0 TAG
 *   EVALSHA lock/release 2 NAME redisson_lock__channel:{NAME} 30000 OWNER PUBLISH -1 1 TAG
 *
 * the same KEYS/ARGV bytes lk_lock_acquire (wait 0, lease 30000) and
 * lk_lock_release send for an uncontended pair, formatted once up front
 * (PUBLISH becomes SPUBLISH on a cluster, as the lock's does:
 * lk__publish_cmd). Pointed at a cluster node, the client finds the
 * cluster and lk__script_call routes each script to its name's master, so
 * on a cluster this is the routed limit (bench/cluster.sh).
 * TAG is the request tag lk__script_call appends to every script call and
 * checks in its reply (docs/design.md, "Replies are attributable"), as it
 * does for the lock: that check is part of the connection layer, so the
 * limit pays it too.
 *
 * Sequential (default): the acquire's reply callback sends the release, the
 * release's callback the next acquire. --pipelined K: K lanes on distinct
 * names, each running that loop, all at once on the one client (what
 * lock_seq --pipelined K does with K lock objects). Replies are checked as
 * the lock checks them: acquired = {1}, released = 1.
 *
 * --minimal: the least work a lock pair can be, on the same connection
 * layer: SET NAME OWNER NX PX 30000, then a compare-DEL script (if GET ==
 * OWNER then DEL) as a plain EVALSHA, both through lk__cmd_argv: untagged,
 * as redis-benchmark sends them. This is the minimal-work ceiling without
 * redis-benchmark's own client costs.
 *
 * Prints one JSON line (bench_common.h) with impl "raw" (or "raw-minimal"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "core/internal.h"
#include "core/router.h"

#include "bench_common.h"

#define ACQ_N 4 /* KEYS + ARGV of lock/acquire */
#define REL_N 7 /* KEYS + ARGV of lock/release */

typedef struct raw_s raw_t;

typedef struct lane_s {
  raw_t *r;
  char name[64], channel[96], owner[96];
  const char *acq[ACQ_N], *rel[REL_N];
  size_t acq_len[ACQ_N], rel_len[REL_N];
  const char *set[6], *cdel[5]; /* --minimal */
  size_t set_len[6], cdel_len[5];
  uint64_t t0, t_acq;
} lane_t;

struct raw_s {
  bench_args_t args;
  uv_loop_t loop;
  lk_client_t *client;
  const lk__script_t *s_acq, *s_rel;
  int minimal;
  char cdel_sha1[41]; /* --minimal: from SCRIPT LOAD */
  lane_t *lanes;
  size_t nlanes;
  int measuring;
  uint64_t target, started, done;
  size_t busy;
  uint64_t t_start, t_end, t_cap;
  uint64_t cpu_start, cpu_end, cmds_start, cmds_end;
  uint64_t *pair_ns, *acq_ns, *rel_ns;
  int failed;
};

static void lane_next(lane_t *ln);

static void fail(raw_t *r, const char *what, int status, const redisReply *rep) {
  if (!r->failed)
    fprintf(stderr, "raw: %s failed: %s%s%.*s\n", what,
            status != 0 ? lk_err_name(status) : "unexpected reply",
            rep != NULL && rep->type == REDIS_REPLY_ERROR ? " - " : "",
            rep != NULL && rep->type == REDIS_REPLY_ERROR ? (int)rep->len : 0,
            rep != NULL && rep->type == REDIS_REPLY_ERROR ? rep->str : "");
  r->failed = 1;
}

static uint64_t commands_sent(const raw_t *r) {
  lk_client_stats_t st;
  lk_client_get_stats(r->client, &st);
  return st.commands_sent;
}

static void start_phase(raw_t *r, int measuring) {
  size_t i;
  r->measuring = measuring;
  r->started = r->done = 0;
  r->target = measuring ? r->args.pairs : r->args.warmup;
  if (measuring) {
    r->cmds_start = commands_sent(r);
    r->cpu_start = bench_cpu_ns();
    r->t_start = uv_hrtime();
    if (r->args.seconds > 0)
      r->t_cap = r->t_start + (uint64_t)(r->args.seconds * 1e9);
  }
  r->busy = r->nlanes;
  for (i = 0; i < r->nlanes; i++)
    lane_next(&r->lanes[i]);
}

static void lane_stop(lane_t *ln) {
  raw_t *r = ln->r;
  if (--r->busy > 0)
    return;
  if (!r->failed && !r->measuring) {
    start_phase(r, 1);
    return;
  }
  if (r->measuring) {
    r->t_end = uv_hrtime();
    r->cpu_end = bench_cpu_ns();
    r->cmds_end = commands_sent(r);
  }
  lk_client_close(r->client, NULL);
}

static void on_released(void *data, int status, redisReply *rep) {
  lane_t *ln = data;
  raw_t *r = ln->r;
  uint64_t now = uv_hrtime();
  if (status != 0 || rep == NULL || rep->type != REDIS_REPLY_INTEGER || rep->integer != 1) {
    fail(r, "release", status, rep);
    lane_stop(ln);
    return;
  }
  if (r->measuring && r->done < r->args.pairs) {
    r->pair_ns[r->done] = now - ln->t0;
    r->acq_ns[r->done] = ln->t_acq - ln->t0;
    r->rel_ns[r->done] = now - ln->t_acq;
  }
  r->done++;
  lane_next(ln);
}

static void on_acquired(void *data, int status, redisReply *rep) {
  lane_t *ln = data;
  raw_t *r = ln->r;
  int err = 0;
  lk__op_t *op;
  ln->t_acq = uv_hrtime();
  if (r->minimal ? status != 0 || rep == NULL || rep->type != REDIS_REPLY_STATUS
                 : status != 0 || rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
                       rep->elements != 1 || rep->element[0]->type != REDIS_REPLY_INTEGER ||
                       rep->element[0]->integer != 1) {
    fail(r, "acquire", status, rep);
    lane_stop(ln);
    return;
  }
  if (r->minimal)
    op = lk__cmd_argv(r->client, 5, ln->cdel, ln->cdel_len, on_released, ln, &err);
  else {
    /* The lock's own choice: SPUBLISH once the client routes a cluster
     * (known only after the handshake), PUBLISH on a standalone server. */
    ln->rel[4] = lk__publish_cmd(r->client, &ln->rel_len[4]);
    op = lk__script_call(r->client, r->s_rel, 2, REL_N - 2, ln->rel, ln->rel_len, on_released,
                         ln, &err);
  }
  if (op == NULL) {
    fail(r, "release call", err, NULL);
    lane_stop(ln);
  }
}

static void lane_next(lane_t *ln) {
  raw_t *r = ln->r;
  uint64_t now = uv_hrtime();
  int err = 0;
  if (r->failed || r->started >= r->target ||
      (r->measuring && r->t_cap != 0 && now >= r->t_cap)) {
    lane_stop(ln);
    return;
  }
  lk__op_t *op;
  r->started++;
  ln->t0 = now;
  if (r->minimal)
    op = lk__cmd_argv(r->client, 6, ln->set, ln->set_len, on_acquired, ln, &err);
  else
    op = lk__script_call(r->client, r->s_acq, 1, ACQ_N - 1, ln->acq, ln->acq_len, on_acquired,
                         ln, &err);
  if (op == NULL) {
    fail(r, "acquire call", err, NULL);
    lane_stop(ln);
  }
}

/* The bytes lk_lock_new and the lock's scripts would use for lane i. */
static void lane_init(raw_t *r, lane_t *ln, size_t i) {
  size_t k;
  ln->r = r;
  snprintf(ln->name, sizeof(ln->name), "lkbench:raw:%ld:%zu", (long)getpid(), i);
  snprintf(ln->channel, sizeof(ln->channel), "redisson_lock__channel:{%s}", ln->name);
  snprintf(ln->owner, sizeof(ln->owner), "%s:%zu", lk_client_id(r->client), i + 1);
  ln->acq[0] = ln->name, ln->acq[1] = "30000", ln->acq[2] = ln->owner, ln->acq[3] = "0";
  ln->rel[0] = ln->name, ln->rel[1] = ln->channel, ln->rel[2] = "30000";
  ln->rel[3] = ln->owner, ln->rel[4] = "PUBLISH", ln->rel[5] = "-1", ln->rel[6] = "1";
  ln->set[0] = "SET", ln->set[1] = ln->name, ln->set[2] = ln->owner, ln->set[3] = "NX";
  ln->set[4] = "PX", ln->set[5] = "30000";
  ln->cdel[0] = "EVALSHA", ln->cdel[1] = r->cdel_sha1, ln->cdel[2] = "1";
  ln->cdel[3] = ln->name, ln->cdel[4] = ln->owner;
  for (k = 0; k < ACQ_N; k++)
    ln->acq_len[k] = strlen(ln->acq[k]);
  for (k = 0; k < REL_N; k++)
    ln->rel_len[k] = strlen(ln->rel[k]);
  for (k = 0; k < 6; k++)
    ln->set_len[k] = strlen(ln->set[k]);
  for (k = 0; k < 5; k++)
    ln->cdel_len[k] = k == 1 ? 40 : strlen(ln->cdel[k]); /* the SHA1 comes later */
}

static const char cdel_text[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

static void on_cdel_loaded(void *data, int status, redisReply *rep) {
  raw_t *r = data;
  if (status != 0 || rep == NULL || rep->type != REDIS_REPLY_STRING || rep->len != 40) {
    fail(r, "SCRIPT LOAD", status, rep);
    lk_client_close(r->client, NULL);
    return;
  }
  memcpy(r->cdel_sha1, rep->str, 40);
  r->cdel_sha1[40] = '\0';
  start_phase(r, r->args.warmup == 0);
}

int main(int argc, char **argv) {
  raw_t r;
  lk_client_opts_t co;
  bench_result_t res;
  size_t i;
  int rc;

  memset(&r, 0, sizeof(r));
  /* --minimal is this program's own; the rest is bench_common.h's. */
  for (i = 1; i < (size_t)argc; i++)
    if (strcmp(argv[i], "--minimal") == 0) {
      r.minimal = 1;
      memmove(&argv[i], &argv[i + 1], (size_t)(argc - (int)i) * sizeof(char *));
      argc--;
      break;
    }
  if (bench_parse_args(argc, argv, &r.args) != 0)
    return 2;
  r.s_acq = lk__script_find("lock/acquire");
  r.s_rel = lk__script_find("lock/release");
  if (r.s_acq == NULL || r.s_rel == NULL) {
    fprintf(stderr, "raw: the lock scripts are not embedded\n");
    return 1;
  }
  r.nlanes = r.args.inflight;
  r.lanes = calloc(r.nlanes, sizeof(*r.lanes));
  r.pair_ns = calloc(r.args.pairs, sizeof(uint64_t));
  r.acq_ns = calloc(r.args.pairs, sizeof(uint64_t));
  r.rel_ns = calloc(r.args.pairs, sizeof(uint64_t));
  if (r.lanes == NULL || r.pair_ns == NULL || r.acq_ns == NULL || r.rel_ns == NULL) {
    fprintf(stderr, "raw: out of memory\n");
    return 1;
  }
  uv_loop_init(&r.loop);
  lk_client_opts_init(&co);
  co.host = r.args.host;
  co.port = r.args.port;
  co.client_name = "latchkey-bench-raw";
  rc = lk_client_new(&r.loop, &co, &r.client);
  if (rc != 0) {
    fprintf(stderr, "raw: lk_client_new: %s\n", lk_strerror(rc));
    return 1;
  }
  for (i = 0; i < r.nlanes; i++)
    lane_init(&r, &r.lanes[i], i);
  /* The first commands queue until the connection is ready (the handshake
   * loads the scripts); the warm-up absorbs that. */
  if (r.minimal) {
    const char *argv_load[3] = {"SCRIPT", "LOAD", cdel_text};
    size_t lens_load[3] = {6, 4, sizeof(cdel_text) - 1};
    int err = 0;
    if (lk__cmd_argv(r.client, 3, argv_load, lens_load, on_cdel_loaded, &r, &err) == NULL) {
      fprintf(stderr, "raw: SCRIPT LOAD: %s\n", lk_strerror(err));
      return 1;
    }
  } else {
    start_phase(&r, r.args.warmup == 0);
  }
  uv_run(&r.loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&r.loop);
  if (rc != 0)
    fprintf(stderr, "raw: uv_loop_close: %s\n", uv_strerror(rc));

  if (!r.failed && r.done > 0 && (r.done == r.args.pairs || r.t_cap != 0)) {
    memset(&res, 0, sizeof(res));
    res.impl = r.minimal ? "raw-minimal" : "raw";
    res.args = &r.args;
    res.elapsed_ns = r.t_end - r.t_start;
    res.cpu_ns = r.cpu_end - r.cpu_start;
    res.pair_ns = r.pair_ns;
    res.acq_ns = r.acq_ns;
    res.rel_ns = r.rel_ns;
    res.n = (size_t)r.done;
    res.commands_per_pair = (double)(r.cmds_end - r.cmds_start) / (double)r.done;
    bench_print(&res);
  } else if (!r.failed) {
    fprintf(stderr, "raw: %" PRIu64 " of %" PRIu64 " pairs done\n", r.done, r.args.pairs);
    r.failed = 1;
  }
  free(r.lanes);
  free(r.pair_ns);
  free(r.acq_ns);
  free(r.rel_ns);
  return r.failed || rc != 0 ? 1 : 0;
}
