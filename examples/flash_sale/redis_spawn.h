/* flash_sale: finding a Redis server, or starting a private one. */
#ifndef FLASH_SALE_REDIS_SPAWN_H
#define FLASH_SALE_REDIS_SPAWN_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
  pid_t pid;      /* 0 when no server was started */
  int port;
  char dir[256];  /* mkdtemp directory, its --dir */
  char log[300];  /* its stdout/stderr */
} redis_server;

/* PING with a connect and reply timeout. 0 when the server answers PONG;
 * otherwise -1 and a reason in err. */
int redis_ping(const char *host, int port, int timeout_ms, char *err,
               size_t errlen);

/* The server binary redis_spawn runs: $LATCHKEY_SERVER (e.g. valkey-server)
 * when set, else redis-server. */
const char *redis_server_binary(void);

/* Starts the server binary on a free loopback port with a private temporary dir
 * and no persistence, and waits (about 5 s at most) until it answers PING.
 * Gives up early when *interrupted becomes nonzero. 0 on success; on failure
 * -1, a reason in err, and nothing left running. */
int redis_spawn(redis_server *srv, const volatile sig_atomic_t *interrupted,
                char *err, size_t errlen);

/* Stops the server by its PID (SIGTERM, then SIGKILL), reaps it and removes
 * its directory. Safe to call twice or on a server never started. */
void redis_stop(redis_server *srv);

#endif /* FLASH_SALE_REDIS_SPAWN_H */
