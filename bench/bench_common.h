/* Small helpers shared by the bench programs: argument parsing, latency
 * percentiles, CPU time and the JSON lines of bench/README.md. Header-only
 * (static functions), so each program stays a single translation unit.
 *
 * Every bench program follows the suite convention (bench/README.md,
 * "Adding a benchmark"): it takes --host H --port P (and --ports P1,P2,...
 * when it needs several masters), prints one JSON object per line on
 * stdout, diagnostics on stderr, and exits non-zero when a run failed. */
#ifndef LK_BENCH_COMMON_H
#define LK_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define BENCH_MAX_PORTS 16

static inline int bench_parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  if (s == NULL || *s < '0' || *s > '9')
    return -1;
  v = strtoull(s, &end, 10);
  if (*end != '\0')
    return -1;
  *out = (uint64_t)v;
  return 0;
}

static inline int bench_parse_port(const char *s, int *out) {
  uint64_t v;
  if (bench_parse_u64(s, &v) != 0 || v == 0 || v > 65535)
    return -1;
  *out = (int)v;
  return 0;
}

/* "P1,P2,..." into ports[]; returns the count, or -1. */
static inline int bench_parse_ports(const char *s, int *ports, size_t max) {
  char buf[256], *tok, *save = NULL;
  size_t n = 0;
  if (s == NULL || strlen(s) >= sizeof(buf))
    return -1;
  strcpy(buf, s);
  for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    if (n == max || bench_parse_port(tok, &ports[n]) != 0)
      return -1;
    n++;
  }
  return n > 0 ? (int)n : -1;
}

/* --- the acquire+release pair benchmarks (lock_seq, raw, raw_seq) --- */

typedef struct bench_args_s {
  const char *host;
  int port;
  uint64_t pairs;  /* measured pairs */
  uint64_t warmup; /* pairs run first and not measured */
  size_t inflight; /* 1 = sequential; K = --pipelined K */
  double seconds;  /* cap on the measured phase; 0 = none */
  int pairs_given, warmup_given;
} bench_args_t;

static inline void bench_usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--host H] [--port P] [--pairs N] [--warmup W] "
          "[--pipelined [K]] [--seconds S]\n"
          "  Sequential acquire+release pairs on one connection (default\n"
          "  20000 pairs after 2000 warm-up pairs), or with --pipelined K\n"
          "  (default 64) K lanes on distinct names looping concurrently\n"
          "  (default 200000 pairs after 20000 warm-up pairs). --seconds caps\n"
          "  the measured phase (the pairs done by then are reported).\n"
          "  Prints one JSON line on stdout.\n",
          prog);
}

/* Returns 0, or -1 after printing the usage. */
static inline int bench_parse_args(int argc, char **argv, bench_args_t *a) {
  int i;
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
      if (bench_parse_port(argv[++i], &a->port) != 0)
        goto bad;
    } else if (strcmp(s, "--pairs") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0 || v == 0 || v > 100000000)
        goto bad;
      a->pairs = v;
      a->pairs_given = 1;
    } else if (strcmp(s, "--warmup") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0 || v > 100000000)
        goto bad;
      a->warmup = v;
      a->warmup_given = 1;
    } else if (strcmp(s, "--seconds") == 0 && i + 1 < argc) {
      if (bench_parse_u64(argv[++i], &v) != 0 || v == 0 || v > 3600)
        goto bad;
      a->seconds = (double)v;
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

/* --- numbers --- */

static inline int bench_cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of a sorted array of nanoseconds, in µs. */
static inline double bench_pct_us(const uint64_t *sorted_ns, size_t n, double q) {
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

/* This process's CPU time (user + system), in nanoseconds. */
static inline uint64_t bench_cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* --- JSON lines (bench/README.md, "The JSON lines") ---
 * bench_json_begin prints {"bench","impl","metric","value","unit" and
 * optionally "variant" (what tells apart lines of one bench and metric:
 * the runner groups repetitions by bench + impl + metric + variant);
 * bench_json_num/int/str/bool add fields; bench_json_end closes the line. */

static inline void bench_json_str_body(const char *s) {
  putchar('"');
  for (; *s != '\0'; s++) {
    if (*s == '"' || *s == '\\')
      putchar('\\');
    if ((unsigned char)*s < 0x20)
      continue;
    putchar(*s);
  }
  putchar('"');
}

static inline void bench_json_str(const char *key, const char *v) {
  printf(",\"%s\":", key);
  bench_json_str_body(v);
}

static inline void bench_json_num(const char *key, double v) {
  if (v != v) /* NaN: JSON has none */
    printf(",\"%s\":null", key);
  else if (v == (double)(long long)v && v < 1e15 && v > -1e15)
    printf(",\"%s\":%lld", key, (long long)v);
  else if (v >= 1000 || v <= -1000)
    printf(",\"%s\":%.1f", key, v);
  else
    printf(",\"%s\":%.4g", key, v);
}

static inline void bench_json_int(const char *key, long long v) { printf(",\"%s\":%lld", key, v); }

static inline void bench_json_bool(const char *key, int v) {
  printf(",\"%s\":%s", key, v ? "true" : "false");
}

static inline void bench_json_begin(const char *bench, const char *impl, const char *variant,
                             const char *metric, double value, const char *unit) {
  printf("{\"bench\":");
  bench_json_str_body(bench);
  bench_json_str("impl", impl);
  if (variant != NULL)
    bench_json_str("variant", variant);
  bench_json_str("metric", metric);
  bench_json_num("value", value);
  bench_json_str("unit", unit);
}

static inline void bench_json_end(void) {
  printf("}\n");
  fflush(stdout);
}

/* --- the pair benchmarks' one line --- */

typedef struct bench_result_s {
  const char *impl;        /* "latchkey", "raw", "raw-hiredis" */
  const char *limit_impl;  /* the impl whose median is this line's limit, or NULL */
  const bench_args_t *args;
  uint64_t elapsed_ns;
  uint64_t cpu_ns;   /* this process's CPU over the measured phase */
  uint64_t *pair_ns; /* sorted in place by bench_print */
  uint64_t *acq_ns;  /* NULL when not measured separately */
  uint64_t *rel_ns;
  size_t n;
  double commands_per_pair; /* < 0: unknown */
} bench_result_t;

/* B1 (sequential) or B2 (K in flight): one JSON line, metric pairs_per_s. */
static inline void bench_print(bench_result_t *r) {
  const bench_args_t *a = r->args;
  double secs = (double)r->elapsed_ns / 1e9;
  char variant[48];
  if (a->inflight > 1)
    snprintf(variant, sizeof(variant), "%zu in flight", a->inflight);
  else
    snprintf(variant, sizeof(variant), "sequential");
  qsort(r->pair_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
  bench_json_begin(a->inflight > 1 ? "B2" : "B1", r->impl, variant, "pairs_per_s",
                   secs > 0 ? (double)r->n / secs : 0.0, "pairs/s");
  if (r->limit_impl != NULL)
    bench_json_str("limit_impl", r->limit_impl);
  bench_json_int("inflight", (long long)a->inflight);
  bench_json_int("connections", 1);
  bench_json_int("pairs", (long long)r->n);
  bench_json_num("seconds", secs);
  bench_json_num("p50_us", bench_pct_us(r->pair_ns, r->n, 0.50));
  bench_json_num("p90_us", bench_pct_us(r->pair_ns, r->n, 0.90));
  bench_json_num("p99_us", bench_pct_us(r->pair_ns, r->n, 0.99));
  bench_json_num("max_us", bench_pct_us(r->pair_ns, r->n, 1.0));
  if (r->acq_ns != NULL && r->rel_ns != NULL) {
    qsort(r->acq_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
    qsort(r->rel_ns, r->n, sizeof(uint64_t), bench_cmp_u64);
    bench_json_num("acq_p50_us", bench_pct_us(r->acq_ns, r->n, 0.50));
    bench_json_num("acq_p99_us", bench_pct_us(r->acq_ns, r->n, 0.99));
    bench_json_num("rel_p50_us", bench_pct_us(r->rel_ns, r->n, 0.50));
    bench_json_num("rel_p99_us", bench_pct_us(r->rel_ns, r->n, 0.99));
  }
  if (r->n > 0)
    bench_json_num("cpu_us_per_pair", (double)r->cpu_ns / 1000.0 / (double)r->n);
  if (r->commands_per_pair >= 0)
    bench_json_num("commands_per_pair", r->commands_per_pair);
  bench_json_end();
}

#endif /* LK_BENCH_COMMON_H */
