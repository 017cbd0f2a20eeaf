/* The replica harness (test/harness/redis_replica.h): a replica follows its
 * master, catches up, and reports its role; a master with a password is
 * followed through --masterauth. */
#include "redis_replica.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static void check_follows(rt_server_t *m, rt_server_t *r) {
  char *role = rt_server_role(r);
  ASSERT_STREQ(role, "slave");
  free(role);
  role = rt_server_role(m);
  ASSERT_STREQ(role, "master");
  free(role);
  char *ok = rt_cmd_str(m, "SET k v1");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  ASSERT_OK(rt_replica_wait_caught_up(m, r, 5000));
  char *v = rt_cmd_str(r, "GET k");
  ASSERT_STREQ(v, "v1");
  free(v);
}

TEST(replica_follows_its_master) {
  rt_server_t *m = rt_server_start(NULL);
  ASSERT_NOT_NULL(m);
  int64_t t0 = rt_now_ms();
  rt_server_t *r = rt_replica_start(m, NULL);
  ASSERT_NOT_NULL(r);
  /* The first sync starts at once (no diskless delay). */
  ASSERT_LT(rt_now_ms() - t0, rt_scaled_ms(4000));
  check_follows(m, r);
  /* A restarted replica follows the same master again. */
  ASSERT_OK(rt_server_restart(r));
  ASSERT_OK(rt_replica_wait_link_up(r, 10000));
  check_follows(m, r);
  rt_server_stop(r);
  rt_server_stop(m);
}

TEST(replica_of_a_master_with_a_password) {
  rt_server_opts_t mo;
  rt_server_opts_init(&mo);
  mo.requirepass = "sekrit";
  rt_server_t *m = rt_server_start(&mo);
  ASSERT_NOT_NULL(m);
  rt_server_opts_t ro;
  rt_server_opts_init(&ro);
  ro.requirepass = "sekrit";
  rt_replica_opts_t opts = {.server = &ro, .masterauth = "sekrit"};
  rt_server_t *r = rt_replica_start(m, &opts);
  ASSERT_NOT_NULL(r);
  check_follows(m, r);
  rt_server_stop(r);
  rt_server_stop(m);
}
