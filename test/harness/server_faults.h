/* Server-side faults and probes over the side channel of rt_server_t
 * (redis_server.h): killing clients, pausing clients, wiping the script
 * cache, memory limits, restricted ACL users, command statistics.
 *
 * Same thread rules as redis_server.h (the test's main thread). Every
 * function fails the test when the server refuses the command, except where
 * a return value says otherwise. */
#ifndef LK_TEST_HARNESS_SERVER_FAULTS_H
#define LK_TEST_HARNESS_SERVER_FAULTS_H

#include "redis_server.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CLIENT KILL TYPE type ("normal", "pubsub", ...) SKIPME yes: the side
 * channel survives. Returns how many were killed. */
long long rt_server_kill_clients_of_type(rt_server_t *s, const char *type);
/* Kills every client whose CLIENT SETNAME name is `name` (Redis 7.0 has no
 * NAME filter: CLIENT LIST, then CLIENT KILL ID each). Returns the count. */
long long rt_server_kill_clients_named(rt_server_t *s, const char *name);
/* Client ids with that name, at most max of them, into ids; returns count. */
int rt_server_client_ids_named(rt_server_t *s, const char *name, long long *ids, int max);

/* CLIENT PAUSE ms mode ("ALL" or "WRITE"); CLIENT UNPAUSE. */
void rt_server_client_pause(rt_server_t *s, long long ms, const char *mode);
void rt_server_client_unpause(rt_server_t *s);

/* SCRIPT FLUSH: every cached script is gone (the next EVALSHA: NOSCRIPT). */
void rt_server_script_flush(rt_server_t *s);

/* CONFIG SET maxmemory bytes and maxmemory-policy policy ("noeviction",
 * "volatile-lru", ...). bytes 0 removes the limit. */
void rt_server_maxmemory(rt_server_t *s, long long bytes, const char *policy);

/* ACL SETUSER name reset on >password <rules...> (rules: space-separated,
 * e.g. "~* &* +@all -eval -evalsha"). */
void rt_server_acl_user(rt_server_t *s, const char *name, const char *password,
                        const char *rules);

/* calls= of `INFO commandstats` for cmd (lower case, subcommands as
 * "script|kill"); 0 when the command never ran; fails the test when the
 * field does not read calls=<n>. */
long long rt_server_cmd_calls(rt_server_t *s, const char *cmd);
/* CONFIG RESETSTAT (command statistics start from zero). */
void rt_server_reset_stats(rt_server_t *s);

/* An integer field of INFO (e.g. "stats", "evicted_keys"); -1 if absent. */
long long rt_server_info_int(rt_server_t *s, const char *section, const char *field);

/* A command given as argv (lens NULL: C strings) whose reply must be an
 * integer: that integer. The test fails on any other reply. */
long long rt_cmd_argv_int(rt_server_t *s, int argc, const char **argv, const size_t *lens);
/* A command whose reply is a number as a bulk string (HGET, ZSCORE) or nil:
 * the number, or if_nil. The test fails on any other reply. */
long long rt_cmd_argv_num(rt_server_t *s, int argc, const char **argv, const size_t *lens,
                          long long if_nil);

/* PUBSUB NUMSUB channel. */
long long rt_server_numsub(rt_server_t *s, const char *channel);
/* The same for a shard channel (PUBSUB SHARDNUMSUB, Redis 7). */
long long rt_server_shardnumsub(rt_server_t *s, const char *channel);
/* Waits up to 2 s (scaled) until no channel matching pattern has a
 * subscriber (PUBSUB CHANNELS pattern is empty): what a test checks once
 * its waiters are gone. Fails at the caller's line, naming one left. */
void rt_server_wait_channels_gone_at(const char *file, int line, rt_server_t *s,
                                     const char *pattern);
#define rt_server_wait_channels_gone(s, pattern)                                                  \
  rt_server_wait_channels_gone_at(__FILE__, __LINE__, (s), (pattern))

/* Keys matching pattern (KEYS; tests only). Only keys that exist now:
 * DBSIZE also counts keys whose TTL ran out but which the server has not
 * reaped yet (it reaps lazily and by sampling, later on a loaded machine),
 * so "nothing left" is rt_server_count_keys(s, "*") == 0, never DBSIZE. */
long long rt_server_count_keys(rt_server_t *s, const char *pattern);

/* Makes the server at 127.0.0.1:port BUSY: on a connection of its own, a
 * script that spins for busy_ms of server time. With mark_key (or NULL) it
 * first SETs that key to its start in server time ("seconds micros"),
 * which also makes it unkillable (SCRIPT KILL refuses a script that
 * wrote). Blocks for the script's length: call it from a forked worker.
 * 0, or -1 when the connection or the reply failed. */
int rt_busy_script(int port, long long busy_ms, const char *mark_key);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_SERVER_FAULTS_H */
