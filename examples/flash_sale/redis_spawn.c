/* flash_sale: finding a Redis server, or starting a private one. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "redis_spawn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <hiredis/hiredis.h>

#define SPAWN_ATTEMPTS 3
#define SPAWN_WAIT_MS 5000

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL); /* an early wake-up (signal) is fine here */
}

int redis_ping(const char *host, int port, int timeout_ms, char *err,
               size_t errlen) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext *c = redisConnectWithTimeout(host, port, tv);
  if (c == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (c->err) {
    snprintf(err, errlen, "%s", c->errstr);
    redisFree(c);
    return -1;
  }
  redisSetTimeout(c, tv);
  redisReply *r = redisCommand(c, "PING");
  int rc = -1;
  if (r == NULL)
    snprintf(err, errlen, "%s", c->errstr);
  else if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0)
    rc = 0;
  else
    snprintf(err, errlen, "PING answered %s",
             r->type == REDIS_REPLY_ERROR ? r->str : "something else");
  if (r != NULL) freeReplyObject(r);
  redisFree(c);
  return rc;
}

/* A port nobody listens on right now: bind 127.0.0.1:0 and ask. (Another
 * process may take it before redis-server does; the caller retries.) */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static void print_log_tail(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[1200];
  off_t size = lseek(fd, 0, SEEK_END);
  off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, from);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  fprintf(stderr, "flash_sale: end of the server's log:\n%s%s", buf,
          buf[n - 1] == '\n' ? "" : "\n");
}

const char *redis_server_binary(void) {
  const char *bin = getenv("LATCHKEY_SERVER");
  return bin != NULL && *bin != '\0' ? bin : "redis-server";
}

static pid_t start_server(const redis_server *srv) {
  const char *bin = redis_server_binary(); /* getenv: before fork */
  char port[16];
  snprintf(port, sizeof port, "%d", srv->port);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid; /* parent, or -1 */

  /* Child. Dies with the demo even if the demo is SIGKILLed. */
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
#else
  (void)parent;
#endif
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  int out = open(srv->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  int in = open("/dev/null", O_RDONLY);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    close(out);
  }
  if (in >= 0) {
    dup2(in, STDIN_FILENO);
    close(in);
  }
  execlp(bin, bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", srv->dir, (char *)NULL);
  fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
  _exit(127);
}

int redis_spawn(redis_server *srv, const volatile sig_atomic_t *interrupted,
                char *err, size_t errlen) {
  memset(srv, 0, sizeof *srv);
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
  int n = snprintf(srv->dir, sizeof srv->dir, "%s/flash_sale.XXXXXX", tmp);
  if (n < 0 || (size_t)n >= sizeof srv->dir || mkdtemp(srv->dir) == NULL) {
    snprintf(err, errlen, "cannot make a temporary directory in %s: %s", tmp,
             n > 0 && (size_t)n < sizeof srv->dir ? strerror(errno)
                                                  : "path too long");
    srv->dir[0] = '\0';
    return -1;
  }
  snprintf(srv->log, sizeof srv->log, "%s/redis.log", srv->dir);

  for (int attempt = 1; attempt <= SPAWN_ATTEMPTS; attempt++) {
    srv->port = free_port();
    if (srv->port < 0) {
      snprintf(err, errlen, "no free loopback port: %s", strerror(errno));
      break;
    }
    srv->pid = start_server(srv);
    if (srv->pid < 0) {
      snprintf(err, errlen, "fork: %s", strerror(errno));
      srv->pid = 0;
      break;
    }
    int64_t deadline = now_ms() + SPAWN_WAIT_MS;
    for (;;) {
      int status;
      char why[128];
      if (*interrupted) {
        snprintf(err, errlen, "interrupted while starting the server");
        redis_stop(srv);
        return -1;
      }
      if (waitpid(srv->pid, &status, WNOHANG) == srv->pid) {
        srv->pid = 0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
          snprintf(err, errlen, "cannot run %s (is it installed and on "
                   "PATH?); or pass --redis URL", redis_server_binary());
          attempt = SPAWN_ATTEMPTS; /* no point retrying */
        } else {
          snprintf(err, errlen, "%s exited at start (port %d)",
                   redis_server_binary(), srv->port);
        }
        break; /* maybe the port was taken meanwhile: try another */
      }
      if (redis_ping("127.0.0.1", srv->port, 200, why, sizeof why) == 0)
        return 0;
      if (now_ms() >= deadline) {
        snprintf(err, errlen, "%s did not answer PING within %d ms "
                 "(last: %s)", redis_server_binary(), SPAWN_WAIT_MS, why);
        attempt = SPAWN_ATTEMPTS;
        break;
      }
      sleep_ms(20);
    }
  }
  print_log_tail(srv->log);
  redis_stop(srv);
  return -1;
}

void redis_stop(redis_server *srv) {
  if (srv->pid > 0) {
    int reaped = 0;
    kill(srv->pid, SIGTERM);
    for (int i = 0; i < 300 && !reaped; i++) { /* 3 s to shut down */
      pid_t r = waitpid(srv->pid, NULL, WNOHANG);
      if (r == srv->pid || (r < 0 && errno == ECHILD))
        reaped = 1;
      else
        sleep_ms(10);
    }
    if (!reaped) {
      kill(srv->pid, SIGKILL);
      while (waitpid(srv->pid, NULL, 0) < 0 && errno == EINTR) {
      }
    }
    srv->pid = 0;
  }
  if (srv->dir[0] != '\0') {
    char path[320];
    unlink(srv->log);
    snprintf(path, sizeof path, "%s/dump.rdb", srv->dir); /* not expected */
    unlink(path);
    rmdir(srv->dir);
    srv->dir[0] = '\0';
  }
}
