/* watchdog_scale: what keeping many locks alive costs.
 *
 *   watchdog_scale [--host H] [--port P] [--locks N] [--lease MS] [--periods K]
 *                  [--cluster-compare] [--one-tick]
 *
 * One client acquires N locks (default 100 000) with the watchdog's lease
 * (default 3000 ms, so one period = lease/3 = 1 s), spread evenly over one
 * period, then holds them for K periods (default 5) and measures, per
 * period: top-level renewal commands seen by the server (INFO commandstats,
 * evalsha + eval), the client's own renewal_commands stat, and the client's
 * CPU time (getrusage, user + system). Bytes per held lock come from an
 * allocator wrapper installed with lk_replace_allocator: latchkey's live
 * bytes after the acquisitions, minus before, over N. The goal (issue 3):
 * <= 1 renewal command per 100 locks per period (+ a constant), < 1% of one
 * core. Prints JSON lines; the limit for commands is ceil(N / 100).
 *
 * --cluster-compare: the renewal grouping of a Redis Cluster, where a script
 * may not cross slots, so a chunk holds one slot's holds. The same holds are
 * measured twice in one process: K periods standalone (variant
 * "standalone"), then, with the client's cluster_on forced to 1 on the same
 * standalone server (linked from latchkey_testing) and a period to settle,
 * K periods grouped by slot (variant "cluster_on, 1 server"): scripts per
 * period, holds (keys) per script, ticks that renewed, client CPU, each with
 * its ratio to the standalone phase. One server runs every script, so this
 * measures the client's cost and the script count, not a real cluster's
 * fan-out over its masters.
 * Pointed at a node of a real cluster, the client finds the cluster and
 * routes each script to its slot's master; the server count is then that
 * one node's, client_counted the whole. Lost holds and their causes (reply
 * timeouts, unknown outcomes, redirections) go to stderr.
 *
 * --one-tick (with --cluster-compare): before each measured phase, every
 * hold is renewed at once (as after a server restart), so all of them fall
 * due in the same tick of every period, the case with the most holds per
 * script. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "latchkey.h"
#include "core/internal.h"
#include "core/slot.h"
#include "core/watchdog.h"

/* --- counting allocator: a size header in front of every block --- */

static size_t live_bytes;

typedef union {
  size_t size;
  max_align_t align;
} hdr_t;

static void *count_malloc(size_t n) {
  hdr_t *h = malloc(sizeof(hdr_t) + n);
  if (h == NULL)
    return NULL;
  h->size = n;
  live_bytes += n;
  return h + 1;
}

static void count_free(void *p) {
  hdr_t *h;
  if (p == NULL)
    return;
  h = (hdr_t *)p - 1;
  live_bytes -= h->size;
  free(h);
}

static void *count_realloc(void *p, size_t n) {
  hdr_t *h;
  if (p == NULL)
    return count_malloc(n);
  h = (hdr_t *)p - 1;
  live_bytes -= h->size;
  h = realloc(h, sizeof(hdr_t) + n);
  if (h == NULL)
    return NULL;
  h->size = n;
  live_bytes += n;
  return h + 1;
}

static void *count_calloc(size_t c, size_t n) {
  void *p = count_malloc(c * n);
  if (p != NULL)
    memset(p, 0, c * n);
  return p;
}

/* --- the run --- */

typedef struct {
  const char *host;
  int port;
  long locks, lease_ms, periods;
  int cluster_compare, one_tick;
} args_t;

static uv_loop_t loop;
static lk_client_t *client;
static lk_lock_t **locks;
static args_t A;
static long issued, acquired, failed, closed;
static uv_timer_t wave_timer, stop_timer;
static int measuring_done;

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  if (status == 0)
    acquired++;
  else
    failed++;
}

/* Ten waves over one period: acquisitions spread like a real workload's. */
static void on_wave(uv_timer_t *t) {
  long per_wave = (A.locks + 9) / 10, i;
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 5000;
  for (i = 0; i < per_wave && issued < A.locks; i++, issued++)
    if (lk_lock_acquire(locks[issued], &o, on_acquired, NULL) != 0)
      failed++;
  if (issued >= A.locks)
    uv_timer_stop(t);
}

static void on_stop(uv_timer_t *t) { measuring_done = 1; }

static long long server_script_calls(redisContext *rc) {
  redisReply *r = redisCommand(rc, "INFO commandstats");
  long long total = 0;
  const char *names[2] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
  int i;
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    fprintf(stderr, "INFO commandstats failed\n");
    exit(1);
  }
  for (i = 0; i < 2; i++) {
    const char *p = strstr(r->str, names[i]);
    if (p != NULL)
      total += atoll(p + strlen(names[i]));
  }
  freeReplyObject(r);
  return total;
}

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void on_lock_closed(lk_lock_t *l) { closed++; }

static void run_until(const long *counter, long target) {
  while (*counter < target && uv_run(&loop, UV_RUN_ONCE) != 0)
    ;
}

static int parse(int argc, char **argv) {
  int i;
  A.host = "127.0.0.1";
  A.port = 6379;
  A.locks = 100000;
  A.lease_ms = 3000;
  A.periods = 5;
  for (i = 1; i < argc; i += 2) {
    long v;
    if (strcmp(argv[i], "--cluster-compare") == 0) {
      A.cluster_compare = 1;
      i--;
      continue;
    }
    if (strcmp(argv[i], "--one-tick") == 0) {
      A.one_tick = 1;
      i--;
      continue;
    }
    if (i + 1 >= argc)
      return -1;
    v = atol(argv[i + 1]);
    if (strcmp(argv[i], "--host") == 0)
      A.host = argv[i + 1];
    else if (strcmp(argv[i], "--port") == 0 && v > 0 && v < 65536)
      A.port = (int)v;
    else if (strcmp(argv[i], "--locks") == 0 && v > 0)
      A.locks = v;
    else if (strcmp(argv[i], "--lease") == 0 && v >= 30)
      A.lease_ms = v;
    else if (strcmp(argv[i], "--periods") == 0 && v > 0)
      A.periods = v;
    else
      return -1;
  }
  return i == argc ? 0 : -1;
}

/* On stderr: what went wrong when locks were lost. */
static void diagnostics(const lk_client_stats_t *s) {
  fprintf(stderr,
          "# leases_lost %llu reply_timeouts %llu unknown_outcomes %llu reconnects %llu "
          "moved %llu ask %llu cluster_retries %llu topology_changes %llu\n",
          (unsigned long long)s->leases_lost, (unsigned long long)s->reply_timeouts,
          (unsigned long long)s->unknown_outcomes, (unsigned long long)s->reconnects,
          (unsigned long long)s->moved_redirects, (unsigned long long)s->ask_redirects,
          (unsigned long long)s->cluster_retries, (unsigned long long)s->topology_changes);
}

/* One measured phase: K whole periods after one period to settle. */
typedef struct {
  double scripts, own_scripts, renewals, ticks, cpu_ms; /* per period */
} phase_t;

static void run_for(double ms) {
  measuring_done = 0;
  uv_timer_start(&stop_timer, on_stop, (uint64_t)ms, 0);
  while (!measuring_done)
    uv_run(&loop, UV_RUN_ONCE);
}

/* Until every command sent has its reply: the server has run all the
 * scripts the client counted, so both counts cover the same scripts. */
static void drain(void) {
  lk_client_stats_t st;
  uint64_t end = uv_hrtime() + 5000000000u;
  for (;;) {
    lk_client_get_stats(client, &st);
    if (st.commands_sent == st.replies)
      return;
    if (uv_hrtime() > end) {
      fprintf(stderr, "commands still unanswered after 5 s\n");
      return;
    }
    /* the watchdog's timer keeps the loop alive meanwhile */
    uv_run(&loop, UV_RUN_ONCE);
  }
}

static void measure(redisContext *side, phase_t *out) {
  lk_client_stats_t s0, s1;
  long long calls0, calls1;
  double cpu0, cpu1, period_ms = A.lease_ms / 3.0;
  uint64_t seen;
  long ticks = 0;

  if (A.one_tick) {
    /* Everything renewed now, in one corked batch: from here on all holds
     * fall due in the same tick. */
    lk__client_cork(client);
    lk__wd_verify_all(client);
    lk__client_uncork(client);
  }
  run_for(period_ms);
  drain();
  lk_client_get_stats(client, &s0);
  calls0 = server_script_calls(side);
  cpu0 = cpu_ms();
  seen = s0.renewal_commands;
  measuring_done = 0;
  uv_timer_start(&stop_timer, on_stop, (uint64_t)(period_ms * A.periods), 0);
  while (!measuring_done) {
    lk_client_stats_t st;
    uv_run(&loop, UV_RUN_ONCE);
    /* A tick sends all its scripts from one timer callback. */
    lk_client_get_stats(client, &st);
    if (st.renewal_commands != seen) {
      seen = st.renewal_commands;
      ticks++;
    }
  }
  drain();
  cpu1 = cpu_ms();
  calls1 = server_script_calls(side);
  lk_client_get_stats(client, &s1);
  out->scripts = (double)(calls1 - calls0) / A.periods;
  out->own_scripts = (double)(s1.renewal_commands - s0.renewal_commands) / A.periods;
  out->renewals = (double)(s1.renewals - s0.renewals) / A.periods;
  out->ticks = (double)ticks / A.periods;
  out->cpu_ms = (cpu1 - cpu0) / A.periods;
}

static void print_phase(const char *variant, const phase_t *p, const phase_t *base,
                        long slots_used) {
  double period_ms = A.lease_ms / 3.0;
  printf("{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"variant\":\"%s\","
         "\"metric\":\"renewal_commands_per_period\",\"value\":%.1f,\"unit\":\"commands\","
         "\"client_counted\":%.1f,\"renewals_per_period\":%.1f,\"keys_per_script\":%.2f,"
         "\"renewing_ticks_per_period\":%.2f,\"slots_used\":%ld,\"one_tick\":%s,"
         "\"locks\":%ld,\"lease_ms\":%ld,\"periods\":%ld",
         variant, p->scripts, p->own_scripts, p->renewals,
         p->own_scripts > 0 ? p->renewals / p->own_scripts : 0.0, p->ticks, slots_used,
         A.one_tick ? "true" : "false", A.locks, A.lease_ms, A.periods);
  if (base != NULL && base->scripts > 0)
    printf(",\"ratio_to_standalone\":%.2f", p->scripts / base->scripts);
  printf("}\n");
  printf("{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"variant\":\"%s\","
         "\"metric\":\"client_cpu_ms_per_period\",\"value\":%.2f,\"unit\":\"ms\","
         "\"period_ms\":%.0f,\"core_fraction\":%.5f,\"us_per_renewal\":%.3f,"
         "\"locks\":%ld",
         variant, p->cpu_ms, period_ms, p->cpu_ms / period_ms,
         p->renewals > 0 ? p->cpu_ms * 1000.0 / p->renewals : 0.0, A.locks);
  if (base != NULL && base->cpu_ms > 0)
    printf(",\"ratio_to_standalone\":%.2f", p->cpu_ms / base->cpu_ms);
  printf("}\n");
}

/* The slots the lock names fall in (names without a hash tag: the whole
 * name is hashed, so sequential names spread like random ones). */
static long slots_used(void) {
  static unsigned char seen[LK__SLOTS];
  long i, n = 0;
  for (i = 0; i < A.locks; i++) {
    const char *name = lk_lock_name(locks[i]);
    unsigned s = lk__key_slot(name, strlen(name));
    if (!seen[s]++)
      n++;
  }
  return n;
}

/* --cluster-compare: both phases on the same holds, then done. */
static void cluster_compare(redisContext *side) {
  phase_t std, clu;
  long used = slots_used();
  measure(side, &std);
  print_phase("standalone", &std, NULL, used);
  client->cluster_on = 1; /* as the router's detection would set it */
  measure(side, &clu);
  print_phase("cluster_on, 1 server", &clu, &std, used);
  fflush(stdout);
}

int main(int argc, char **argv) {
  lk_client_opts_t o;
  lk_client_stats_t s0, s1;
  redisContext *side;
  size_t bytes_before;
  long long calls0, calls1;
  double cpu0, cpu1, period_ms, cmds, own_cmds, cpu_per_period;
  long i, limit;
  char name[32];

  if (parse(argc, argv) != 0) {
    fprintf(stderr, "usage: %s [--host H] [--port P] [--locks N] [--lease MS] "
                    "[--periods K] [--cluster-compare] [--one-tick]\n", argv[0]);
    return 2;
  }
  if (lk_replace_allocator(count_malloc, count_realloc, count_calloc, count_free) != 0)
    return 1;
  side = redisConnect(A.host, A.port);
  if (side == NULL || side->err) {
    fprintf(stderr, "cannot reach %s:%d\n", A.host, A.port);
    return 1;
  }
  uv_loop_init(&loop);
  lk_client_opts_init(&o);
  o.host = A.host;
  o.port = A.port;
  o.default_lease_ms = A.lease_ms;
  o.max_inflight = (size_t)A.locks + 1024;
  if (lk_client_new(&loop, &o, &client) != 0)
    return 1;
  locks = calloc((size_t)A.locks, sizeof(*locks));
  bytes_before = live_bytes;
  for (i = 0; i < A.locks; i++) {
    snprintf(name, sizeof(name), "wdbench:%ld", i);
    if (lk_lock_new(client, name, &locks[i]) != 0)
      return 1;
  }
  period_ms = A.lease_ms / 3.0;
  uv_timer_init(&loop, &wave_timer);
  uv_timer_start(&wave_timer, on_wave, 0, (uint64_t)(period_ms / 10));
  /* Until every acquisition has answered: failures count too. */
  while (acquired + failed < A.locks && uv_run(&loop, UV_RUN_ONCE) != 0)
    ;
  if (failed != 0) {
    fprintf(stderr, "%ld acquisitions failed\n", failed);
    return 1;
  }

  uv_timer_init(&loop, &stop_timer);
  if (A.cluster_compare) {
    cluster_compare(side);
    goto done;
  }
  /* Let the batches settle into their steady rhythm for a period, then
   * measure whole periods. */
  uv_timer_start(&stop_timer, on_stop, (uint64_t)period_ms, 0);
  while (!measuring_done)
    uv_run(&loop, UV_RUN_ONCE);
  measuring_done = 0;
  lk_client_get_stats(client, &s0);
  calls0 = server_script_calls(side);
  cpu0 = cpu_ms();
  uv_timer_start(&stop_timer, on_stop, (uint64_t)(period_ms * A.periods), 0);
  while (!measuring_done)
    uv_run(&loop, UV_RUN_ONCE);
  cpu1 = cpu_ms();
  calls1 = server_script_calls(side);
  lk_client_get_stats(client, &s1);

  for (i = 0; i < A.locks; i++)
    if (!lk_lock_is_held(locks[i]))
      failed++;
  diagnostics(&s1);
  cmds = (double)(calls1 - calls0) / A.periods;
  own_cmds = (double)(s1.renewal_commands - s0.renewal_commands) / A.periods;
  cpu_per_period = (cpu1 - cpu0) / A.periods;
  limit = (A.locks + 99) / 100;
  printf("{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"metric\":"
         "\"renewal_commands_per_period\",\"value\":%.1f,\"unit\":\"commands\","
         "\"limit\":%ld,\"ratio\":%.3f,\"client_counted\":%.1f,\"locks\":%ld,"
         "\"lease_ms\":%ld,\"periods\":%ld,\"not_held\":%ld}\n",
         cmds, limit, cmds / limit, own_cmds, A.locks, A.lease_ms, A.periods, failed);
  printf("{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"metric\":"
         "\"client_cpu_ms_per_period\",\"value\":%.2f,\"unit\":\"ms\",\"period_ms\":%.0f,"
         "\"core_fraction\":%.5f,\"locks\":%ld}\n",
         cpu_per_period, period_ms, cpu_per_period / period_ms, A.locks);
  printf("{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"metric\":"
         "\"bytes_per_held_lock\",\"value\":%.1f,\"unit\":\"bytes\",\"locks\":%ld}\n",
         (double)(live_bytes - bytes_before) / A.locks, A.locks);

done:
  if (A.cluster_compare) {
    lk_client_get_stats(client, &s1);
    diagnostics(&s1);
    for (i = 0; i < A.locks; i++)
      if (!lk_lock_is_held(locks[i]))
        failed++;
    if (failed != 0)
      fprintf(stderr, "%ld locks not held at the end\n", failed);
  }
  for (i = 0; i < A.locks; i++)
    lk_lock_close(locks[i], on_lock_closed);
  run_until(&closed, A.locks);
  uv_close((uv_handle_t *)&wave_timer, NULL);
  uv_close((uv_handle_t *)&stop_timer, NULL);
  lk_client_close(client, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  free(locks);
  redisFree(side);
  return failed != 0;
}
