/* flash_sale: the demo's own blocking access to the stock, on one server or
 * on a Redis Cluster. The locks go through latchkey, which finds the right
 * node by itself; the stock keys are plain GET/SET over hiredis, so this
 * file does the little routing they need: commands go to the node a key was
 * last seen on (the seed at first) and follow MOVED to its master. */
#ifndef FLASH_SALE_NODES_H
#define FLASH_SALE_NODES_H

#include <stddef.h>

#include <hiredis/hiredis.h>
#include <latchkey.h>

#define FS_MAX_NODES 64

typedef struct {
  char host[64];
  int port;
  int master;        /* listed as a slot range's master (CLUSTER SLOTS) */
  redisContext *ctx; /* opened on first use */
} fs_node;

typedef struct {
  fs_node node[FS_MAX_NODES]; /* node[0] is the seed */
  int n;
  /* Where the seed is and how to log in, from the client options the
   * connection URL filled in (borrowed: they outlive the fs_redis). */
  const char *unix_path; /* the seed's socket, or NULL */
  const char *username, *password;
  int db;                /* SELECTed on a standalone server only */
  int cluster; /* the seed is a cluster node */
  int masters; /* how many nodes own slots */
  struct {
    int first, last, node;
  } range[FS_MAX_NODES * 8]; /* slot ranges and their masters */
  int nranges;
} fs_redis;

/* Connects to the seed named by addr (host and port, or unix_path; with
 * username, password and db: the options lk_client_opts_apply_url filled in
 * from the connection URL) and reads the slot map when it is a cluster node.
 * TLS and Sentinel are the lock client's only: hiredis 0.14 has neither.
 * 0, or -1 and a reason in err (nothing left open). */
int fs_open(fs_redis *r, const lk_client_opts_t *addr, char *err, size_t errlen);

/* "host:port", "[v6]:port" or the socket path, and "/db" when not 0: where
 * addr points, for messages. */
const char *fs_where(const lk_client_opts_t *addr, char *buf, size_t len);
void fs_close(fs_redis *r);

/* The node index of the master serving key's slot (CLUSTER KEYSLOT on the
 * seed); 0 on a standalone server; -1 on an error (message printed). */
int fs_master_of(fs_redis *r, const char *key);

/* Runs a command whose first argument after the verb is a key, on node
 * *at, following MOVED (and ASK) redirections; *at is then the node that
 * answered. Returns the reply (the caller frees it), or NULL on a
 * connection error (message printed). */
redisReply *fs_command(fs_redis *r, int *at, const char *fmt, ...);

/* "host:port" of a node, for messages. */
const char *fs_addr(const fs_redis *r, int node, char *buf, size_t len);

#endif /* FLASH_SALE_NODES_H */
