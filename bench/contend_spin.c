/* B3 for the reentrant lock in spin mode (issue 17; docs/lock.md, "Spin
 * mode"): bench/contend.h's 8 processes on one name, each acquire spinning
 * (no SUBSCRIBE, back-off with jitter) with the same 10 s wait and explicit
 * 30 s lease as bench/contend.c, so the "spin lock" row compares with the
 * "lock" row line by line. --spin-max-ms N (default 0: the library's
 * 128 ms) sets the back-off cap, trading server commands for handoff time. */
#include "contend.h"

static int64_t spin_max_ms;
static char variant[32] = "spin lock";

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)l;
  bench_contend_acquired(arg, status);
}

static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)l;
  bench_contend_released(arg, status);
}

static void on_closed(lk_lock_t *l) { bench_contend_closed(lk_lock_get_data(l)); }

static int spin_open(bench_contend_t *w, lk_client_t *c, const char *name, void **obj) {
  lk_lock_t *l;
  int rc = lk_lock_new(c, name, &l);
  if (rc != 0)
    return rc;
  lk_lock_set_data(l, w);
  *obj = l;
  return 0;
}

static int spin_acquire(bench_contend_t *w, void *obj) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 10000;
  o.lease_ms = 30000;
  o.spin = 1;
  o.spin_max_ms = spin_max_ms;
  return lk_lock_acquire(obj, &o, on_acquired, w);
}

static int spin_release(bench_contend_t *w, void *obj) {
  return lk_lock_release(obj, on_released, w);
}

static int spin_close(bench_contend_t *w, void *obj) {
  (void)w;
  return lk_lock_close(obj, on_closed);
}

static const bench_contend_impl_t spin_impl = {
    .impl = "latchkey",
    .variant = variant,
    .ordered = 0,
    .open = spin_open,
    .acquire = spin_acquire,
    .release = spin_release,
    .close = spin_close,
};

int main(int argc, char **argv) {
  int i;
  /* --spin-max-ms is this program's own; the rest is contend.h's. */
  for (i = 1; i < argc; i++) {
    uint64_t v;
    if (strcmp(argv[i], "--spin-max-ms") != 0)
      continue;
    if (i + 1 >= argc || bench_parse_u64(argv[i + 1], &v) != 0 || v < 1 ||
        v > (uint64_t)LK_SPIN_MAX_MS) {
      fprintf(stderr, "%s: --spin-max-ms needs 1..%lld\n", argv[0], (long long)LK_SPIN_MAX_MS);
      return bench_contend_usage(argv[0]);
    }
    spin_max_ms = (int64_t)v;
    snprintf(variant, sizeof(variant), "spin lock max %dms", (int)v);
    memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof(char *));
    argc -= 2;
    break;
  }
  return bench_contend_main(argc, argv, &spin_impl);
}
