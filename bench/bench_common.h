/* Small helpers shared by the bench programs: argument parsing, latency
 * percentiles and the one-line JSON result. Header-only (static functions),
 * so each program stays a single translation unit. */
#ifndef LK_BENCH_COMMON_H
#define LK_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_args_s {
  const char *host;
  int port;
  uint64_t pairs;   /* measured pairs */
  uint64_t warmup;  /* pairs run first and not measured */
  size_t inflight;  /* 1 = sequential; K = --pipelined K */
  int pairs_given, warmup_given;
} bench_args_t;

static void bench_usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--host H] [--port P] [--pairs N] [--warmup W] "
          "[--pipelined [K]]\n"
          "       %s HOST PORT [...]\n"
          "  Sequential acquire+release pairs on one connection (default\n"
          "  20000 pairs after 2000 warm-up pairs), or with --pipelined K\n"
          "  (default 64) K lanes on distinct names looping concurrently\n"
          "  (default 200000 pairs after 20000 warm-up pairs).\n"
          "  Prints one JSON line on stdout.\n",
          prog, prog);
}

static int bench_parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  if (s == NULL || *s == '\0' || *s == '-')
    return -1;
  v = strtoull(s, &end, 10);
  if (*end != '\0')
    return -1;
  *out = (uint64_t)v;
  return 0;
}

/* Returns 0, or -1 after printing the usage. */
static int bench_parse_args(int argc, char **argv, bench_args_t *a) {
  int i, positional = 0;
  uint64_t v;
  memset(a, 0, sizeof(*a));
  a->host = "127.0.0.1";
  a->port = 6379;
  a->inflight = 1;
  for (i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "--host") == 0 && i + 1 < argc) {
      a->host = argv[++i];
    } else if (strcmp(s, "--port") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0 || v == 0 || v > 65535)
        goto bad;
      a->port = (int)v;
    } else if (strcmp(s, "--pairs") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0 || v == 0)
        goto bad;
      a->pairs = v;
      a->pairs_given = 1;
    } else if (strcmp(s, "--warmup") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0)
        goto bad;
      a->warmup = v;
      a->warmup_given = 1;
    } else if (strcmp(s, "--pipelined") == 0) {
      a->inflight = 64;
      if (i + 1 < argc && bench_parse_u64(argv[i + 1], &v) == 0) {
        if (v == 0 || v > 65536)
          goto bad;
        a->inflight = (size_t)v;
        i++;
      }
    } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      bench_usage(argv[0]);
      exit(0);
    } else if (s[0] != '-' && positional == 0) {
      a->host = s;
      positional++;
    } else if (s[0] != '-' && positional == 1) {
      if (bench_parse_u64(s, &v) != 0 || v == 0 || v > 65535)
        goto bad;
      a->port = (int)v;
      positional++;
    } else {
      goto bad;
    }
  }
  if (!a->pairs_given)
    a->pairs = a->inflight > 1 ? 200000 : 20000;
  if (!a->warmup_given)
    a->warmup = a->pairs / 10;
  return 0;
bad:
  bench_usage(argv[0]);
  return -1;
}

static int bench_cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double bench_pct_us(const uint64_t *sorted_ns, size_t n, double q) {
  size_t rank;
  if (n == 0)
    return 0;
  rank = (size_t)(q * (double)n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)sorted_ns[rank - 1] / 1000.0;
}

typedef struct bench_result_s {
  const char *impl;
  const bench_args_t *args;
  uint64_t elapsed_ns;
  uint64_t *pair_ns; /* sorted in place by bench_print */
  uint64_t *acq_ns;  /* NULL when not measured separately */
  uint64_t *rel_ns;
  size_t n;
  double commands_per_pair; /* < 0: unknown */
} bench_result_t;

static void bench_print(bench_result_t *r) {
  const bench_args_t *a = r->args;
  double secs = (double)r->elapsed_ns / 1e9;
  qsort(r->pair_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
  printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"mode\":\"%s\",\"inflight\":%zu,"
         "\"pairs\":%zu,\"warmup\":%llu,\"seconds\":%.4f,\"pairs_per_s\":%.1f,"
         "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f",
         a->inflight > 1 ? "lock_pipelined_pairs" : "lock_seq_pairs", r->impl,
         a->inflight > 1 ? "pipelined" : "sequential", a->inflight, r->n,
         (unsigned long long)a->warmup, secs, secs > 0 ? (double)r->n / secs : 0.0,
         bench_pct_us(r->pair_ns, r->n, 0.50), bench_pct_us(r->pair_ns, r->n, 0.90),
         bench_pct_us(r->pair_ns, r->n, 0.99), bench_pct_us(r->pair_ns, r->n, 1.0));
  if (r->acq_ns != NULL && r->rel_ns != NULL) {
    qsort(r->acq_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
    qsort(r->rel_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
    printf(",\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"rel_p50_us\":%.1f,"
           "\"rel_p99_us\":%.1f",
           bench_pct_us(r->acq_ns, r->n, 0.50), bench_pct_us(r->acq_ns, r->n, 0.99),
           bench_pct_us(r->rel_ns, r->n, 0.50), bench_pct_us(r->rel_ns, r->n, 0.99));
  }
  if (r->commands_per_pair >= 0)
    printf(",\"commands_per_pair\":%.3f", r->commands_per_pair);
  printf("}\n");
  fflush(stdout);
}

#endif /* LK_BENCH_COMMON_H */
