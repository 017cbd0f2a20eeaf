/* The sentinel harness (test/harness/redis_sentinel.h): three sentinels
 * find each other and the replica, agree on the master, and carry out a
 * SENTINEL FAILOVER; a sentinel with a password refuses a wrong one. */
#include "redis_replica.h"
#include "redis_sentinel.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(three_sentinels_fail_over_to_the_replica) {
  rt_server_t *m = rt_server_start(NULL);
  ASSERT_NOT_NULL(m);
  rt_server_t *r = rt_replica_start(m, NULL);
  ASSERT_NOT_NULL(r);
  rt_sentinel_t *s[3];
  for (int i = 0; i < 3; i++) {
    s[i] = rt_sentinel_start(rt_server_port(m), NULL);
    ASSERT_NOT_NULL(s[i]);
  }
  int64_t t0 = rt_now_ms();
  ASSERT_OK(rt_sentinels_wait_ready(s, 3, 1, 15000));
  fprintf(stderr, "sentinels ready in %lld ms\n", (long long)(rt_now_ms() - t0));
  ASSERT_OK(rt_sentinels_wait_master(s, 3, rt_server_port(m), 1000));
  char *list = rt_sentinels_list(s, 3);
  ASSERT(strstr(list, "127.0.0.1:") == list);
  free(list);

  t0 = rt_now_ms();
  redisReply *rep = rt_sentinel_cmd(s[0], "SENTINEL FAILOVER mymaster");
  ASSERT_NOT_NULL(rep);
  ASSERT_EQ(rep->type, REDIS_REPLY_STATUS);
  freeReplyObject(rep);
  ASSERT_OK(rt_sentinels_wait_master(s, 3, rt_server_port(r), 15000));
  fprintf(stderr, "failover seen by all sentinels in %lld ms\n", (long long)(rt_now_ms() - t0));
  char *role = rt_server_role(r);
  ASSERT_STREQ(role, "master");
  free(role);
  for (int i = 0; i < 3; i++)
    rt_sentinel_stop(s[i]);
  rt_server_stop(r);
  rt_server_stop(m);
}

TEST(a_sentinel_with_a_password) {
  rt_server_t *m = rt_server_start(NULL);
  ASSERT_NOT_NULL(m);
  rt_sentinel_opts_t so;
  rt_sentinel_opts_init(&so);
  so.requirepass = "spw";
  rt_sentinel_t *s = rt_sentinel_start(rt_server_port(m), &so);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(rt_sentinel_master_port(s), rt_server_port(m));
  redisContext *c = redisConnect("127.0.0.1", rt_sentinel_port(s));
  ASSERT(c != NULL && c->err == 0);
  redisReply *rep = redisCommand(c, "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster");
  ASSERT(rep != NULL && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOAUTH", 6) == 0);
  freeReplyObject(rep);
  rep = redisCommand(c, "AUTH wrong");
  ASSERT(rep != NULL && rep->type == REDIS_REPLY_ERROR);
  freeReplyObject(rep);
  redisFree(c);
  rt_sentinel_stop(s);
  rt_server_stop(m);
}
