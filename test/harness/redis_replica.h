/* Replicas of harness masters: a redis-server started by rt_server_start with
 * --replicaof pointing at another harness server, for tests that need a
 * master and its replica on loopback (failover, replica sync, Sentinel).
 *
 * A replica is an ordinary rt_server_t: stop it with rt_server_stop, kill or
 * pause it with rt_server_kill / rt_server_pause, query it with rt_cmd and
 * rt_server_info. rt_server_restart starts it again with the same
 * --replicaof, so a restarted replica resumes following the same master
 * (unless something, e.g. a sentinel, re-pointed it meanwhile and the caller
 * wants that: then use REPLICAOF through rt_cmd).
 *
 * Starting a replica sets repl-diskless-sync-delay 0 on the master (CONFIG
 * SET through the side channel), so the first full sync starts at once
 * instead of after Redis 7's default 5 s pause. Call from the test's main
 * thread, like the rest of redis_server.h. */
#ifndef LK_TEST_HARNESS_REDIS_REPLICA_H
#define LK_TEST_HARNESS_REDIS_REPLICA_H

#include <stdint.h>

#include "redis_server.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_replica_opts_s {
  /* The replica's own options (requirepass, appendonly, extra_args ...);
   * NULL fields and a NULL pointer mean defaults. --replicaof and
   * --masterauth are added by rt_replica_start. */
  const rt_server_opts_t *server;
  /* The master's password, when it has one (--masterauth). */
  const char *masterauth;
} rt_replica_opts_t;

/* Starts a replica of master (which must be running), then waits (about
 * 10 s scaled) until the replica reports master_link_status:up, i.e. the
 * first sync is done. Returns NULL after printing why. opts may be NULL. */
rt_server_t *rt_replica_start(rt_server_t *master, const rt_replica_opts_t *opts);

/* Waits until `INFO replication` on replica says master_link_status:up.
 * timeout_ms is scaled. Returns 0, or -1 after printing the last state. */
int rt_replica_wait_link_up(rt_server_t *replica, int64_t timeout_ms);

/* Waits until replica has applied everything master had written when this
 * was called (its slave_repl_offset reaches the master's
 * master_repl_offset). timeout_ms is scaled. Returns 0, or -1 after
 * printing both offsets. */
int rt_replica_wait_caught_up(rt_server_t *master, rt_server_t *replica, int64_t timeout_ms);

/* "master" or "slave" from ROLE's first element (malloc'd), or NULL when the
 * server does not answer. */
char *rt_server_role(rt_server_t *s);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDIS_REPLICA_H */
