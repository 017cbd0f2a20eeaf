/* A blocking client on a server of its own, for the blocking API's tests
 * (test/blocking/). */
#ifndef LK_TEST_HARNESS_BLOCKING_FIXTURE_H
#define LK_TEST_HARNESS_BLOCKING_FIXTURE_H

#include "latchkey.h"
#include "on_thread.h"
#include "redis_server.h"
#include "test.h"

typedef struct {
  rt_server_t *srv;
  lk_blocking_t *b;
} bx_t;

static inline void bx_start(bx_t *x) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  x->srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(x->srv);
  o.port = rt_server_port(x->srv);
  ASSERT_OK(lk_blocking_new(&o, &x->b));
}

static inline void bx_finish(bx_t *x) {
  ASSERT_OK(lk_blocking_close(x->b));
  rt_server_stop(x->srv);
}

#endif /* LK_TEST_HARNESS_BLOCKING_FIXTURE_H */
