/* Real Redis Sentinel processes for tests, on free loopback ports, each with
 * its own temporary directory and config file (a sentinel rewrites its
 * config, so it must own a writable one). Like redis_server.h: killed by PID
 * on every exit path of the process that started them (rt_child_track,
 * PR_SET_PDEATHSIG); start them from the test's main thread.
 *
 * The binary: $LK_REDIS_SENTINEL when set; else `$LK_REDIS_SERVER
 * --sentinel` when LK_REDIS_SERVER is set (valkey-server runs as a sentinel
 * the same way); else redis-sentinel from PATH (Debian's redis-sentinel
 * package), else `redis-server --sentinel`.
 *
 * Sentinels find each other through the monitored master (hello messages
 * every 2 s) and its replicas through its INFO: rt_sentinels_wait_ready
 * waits for that before a failover can work. Timings are scaled
 * (rt_scaled_ms): down-after and failover-timeout default to 1000 and
 * 3000 ms times LK_TEST_TIMING. */
#ifndef LK_TEST_HARNESS_REDIS_SENTINEL_H
#define LK_TEST_HARNESS_REDIS_SENTINEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_sentinel_opts_s {
  const char *master_name;    /* NULL: "mymaster" */
  const char *master_host;    /* NULL: "127.0.0.1" */
  int quorum;                 /* 0: 2 */
  int64_t down_after_ms;      /* 0: 1000, scaled */
  int64_t failover_timeout_ms; /* 0: 3000, scaled */
  const char *requirepass;    /* the sentinel's own password (also used
                                 towards the other sentinels), or NULL */
  const char *master_auth;    /* the monitored master's password, or NULL */
  /* TLS (tls_certs.h makes the files): the sentinel also listens with TLS
   * on a second free port (rt_sentinel_tls_port; the side channel stays
   * plaintext), and speaks TLS to the servers it monitors and to the other
   * sentinels (tls-replication yes), announcing its TLS port to them. Then
   * master_port must be the master's TLS port. NULL: no TLS. */
  const char *tls_cert_file, *tls_key_file, *tls_ca_file;
} rt_sentinel_opts_t;

typedef struct rt_sentinel_s rt_sentinel_t;

void rt_sentinel_opts_init(rt_sentinel_opts_t *opts);

/* Starts a sentinel monitoring the master at master_port (opts copied; NULL:
 * defaults) and waits (about 10 s scaled) until it answers PING and reports
 * our child's process_id. Returns NULL after printing why. */
rt_sentinel_t *rt_sentinel_start(int master_port, const rt_sentinel_opts_t *opts);

int rt_sentinel_port(const rt_sentinel_t *s);
int rt_sentinel_tls_port(const rt_sentinel_t *s); /* 0: no TLS */
pid_t rt_sentinel_pid(const rt_sentinel_t *s); /* 0 while down */
const char *rt_sentinel_dir(const rt_sentinel_t *s);

/* SIGKILL (or SIGTERM, escalated after about 10 s scaled), reaped. */
void rt_sentinel_kill(rt_sentinel_t *s, int sig);
/* SIGKILL, reap, remove the directory, free. NULL is a no-op. */
void rt_sentinel_stop(rt_sentinel_t *s);

/* Side channel (blocking hiredis, AUTHed when the sentinel has a password),
 * reconnected when broken. NULL on I/O error or timeout after printing. */
redisReply *rt_sentinel_cmd(rt_sentinel_t *s, const char *fmt, ...);

/* The port SENTINEL GET-MASTER-ADDR-BY-NAME names for the sentinel's master,
 * 0 for nil, -1 when it does not answer. */
int rt_sentinel_master_port(rt_sentinel_t *s);

/* Waits until every one of the n sentinels knows the n - 1 others and at
 * least `replicas` replicas of its master (SENTINEL SENTINELS / REPLICAS),
 * i.e. a failover can be agreed and has somewhere to go. timeout_ms is
 * scaled. Returns 0, or -1 after printing what was missing. */
int rt_sentinels_wait_ready(rt_sentinel_t *const *s, size_t n, int replicas,
                            int64_t timeout_ms);

/* Waits until every one of the n sentinels names port as its master's.
 * timeout_ms is scaled. 0, or -1 after printing what each said. */
int rt_sentinels_wait_master(rt_sentinel_t *const *s, size_t n, int port,
                             int64_t timeout_ms);

/* "127.0.0.1:p1,127.0.0.1:p2,..." (malloc'd) for lk_client_opts_t.sentinels. */
char *rt_sentinels_list(rt_sentinel_t *const *s, size_t n);
/* The same with their TLS ports. */
char *rt_sentinels_tls_list(rt_sentinel_t *const *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_REDIS_SENTINEL_H */
