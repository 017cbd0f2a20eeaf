/* B3 for the fair lock: 8 processes contend for one fair lock name
 * (bench/contend.h has the harness and what it reports). Each acquire waits
 * up to 10 s with an explicit 30 s lease (no watchdog traffic), as
 * bench/contend.c does for the reentrant lock, so the two compare line by
 * line; ordered = 1 makes order violations a goal (docs/fair.md). */
#include "contend.h"

static void on_acquired(lk_fair_t *f, int status, void *arg) {
  (void)f;
  bench_contend_acquired(arg, status);
}

static void on_released(lk_fair_t *f, int status, void *arg) {
  (void)f;
  bench_contend_released(arg, status);
}

static void on_closed(lk_fair_t *f) { bench_contend_closed(lk_fair_get_data(f)); }

static int fair_open(bench_contend_t *w, lk_client_t *c, const char *name, void **obj) {
  lk_fair_t *f;
  int rc = lk_fair_new(c, name, &f);
  if (rc != 0)
    return rc;
  lk_fair_set_data(f, w);
  *obj = f;
  return 0;
}

static int fair_acquire(bench_contend_t *w, void *obj) {
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = 10000;
  o.lease_ms = 30000;
  return lk_fair_acquire(obj, &o, on_acquired, w);
}

static int fair_release(bench_contend_t *w, void *obj) {
  return lk_fair_release(obj, on_released, w);
}

static int fair_close(bench_contend_t *w, void *obj) {
  (void)w;
  return lk_fair_close(obj, on_closed);
}

static const bench_contend_impl_t fair_impl = {
    .impl = "latchkey",
    .variant = "fair lock",
    .ordered = 1,
    .open = fair_open,
    .acquire = fair_acquire,
    .release = fair_release,
    .close = fair_close,
};

int main(int argc, char **argv) { return bench_contend_main(argc, argv, &fair_impl); }
