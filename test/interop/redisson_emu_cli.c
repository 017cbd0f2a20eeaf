/* The Redisson emulators (test/harness/redisson_*_emu.h) as a program, so
 * tests in other languages (bindings/node/test/redisson.test.js) can have a
 * Redisson user on the other side of a shared name without a JVM.
 *
 * Usage: rt_redisson_emu_cli PORT. One command per stdin line, one answer
 * per stdout line (flushed), so a test drives it step by step:
 *   lock NAME TIMEOUT_MS     RLock.lock() bounded: "ok" or "timeout"
 *   try NAME                 RLock.tryLock(): "ok" or "busy"
 *   unlock NAME              RLock.unlock(): 1 released, 0 decremented, -1 not owner
 *   psem-try NAME LEASE_MS   RPermitExpirableSemaphore.tryAcquire: the id, or "busy"
 *   psem-release NAME ID     release(id): 1, 0 (lease had ended) or -1 (no such permit)
 *   psem-available NAME      availablePermits()
 *   rate-try NAME PERMITS    RRateLimiter.tryAcquire: "ok", or the wait in ms
 *   rate-set NAME RATE MS    trySetRate(OVERALL, RATE, MS): 1 set, 0 already set
 * The owner is one random UUID with thread id 1; the rate limiter's client
 * id is that UUID. A transport error ends the program (exit 1, the
 * harness's failure message on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redisson_emu.h"
#include "redisson_ratelimiter_emu.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  int port = atoi(argv[1]);
  redisContext *ctx = rt_rlock_connect(port);
  redisContext *sub = rt_rlock_connect(port);
  char uuid[33];
  rt_emu_random_req(uuid); /* 32 hex: a UUID's digits, as good an owner id */
  char line[1024];
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin) != NULL) {
    char cmd[32], name[512], arg[128];
    int n = sscanf(line, "%31s %511s %127s", cmd, name, arg);
    if (n >= 1 && strcmp(cmd, "quit") == 0)
      break;
    if (n == 3 && strcmp(cmd, "lock") == 0) {
      int rc = rt_rlock_lock_blocking(ctx, sub, name, uuid, 1, RT_RLOCK_DEFAULT_LEASE_MS,
                                      atoll(arg));
      puts(rc == 0 ? "ok" : "timeout");
    } else if (n == 2 && strcmp(cmd, "try") == 0) {
      long long r = rt_rlock_try(ctx, name, uuid, 1, RT_RLOCK_DEFAULT_LEASE_MS);
      puts(r == RT_RLOCK_ACQUIRED ? "ok" : "busy");
    } else if (n == 2 && strcmp(cmd, "unlock") == 0) {
      printf("%d\n", rt_rlock_unlock(ctx, name, uuid, 1));
    } else if (n == 3 && strcmp(cmd, "psem-try") == 0) {
      char id[33];
      puts(rt_rpsem_try_acquire(ctx, name, atoll(arg), id) == 1 ? id : "busy");
    } else if (n == 3 && strcmp(cmd, "psem-release") == 0) {
      printf("%d\n", rt_rpsem_release(ctx, name, arg));
    } else if (n == 2 && strcmp(cmd, "psem-available") == 0) {
      printf("%lld\n", rt_rpsem_available(ctx, name));
    } else if (n == 3 && strcmp(cmd, "rate-try") == 0) {
      long long r = rt_rrl_try_acquire(ctx, name, uuid, atoll(arg), NULL);
      if (r == RT_RRL_ACQUIRED)
        puts("ok");
      else
        printf("%lld\n", r);
    } else if (n == 3 && strcmp(cmd, "rate-set") == 0) {
      char ms[64];
      if (sscanf(line, "%*s %*s %*s %63s", ms) != 1) {
        puts("error usage");
        continue;
      }
      printf("%d\n", rt_rrl_try_set_rate(ctx, name, 0, atoll(arg), atoll(ms), 0));
    } else {
      puts("error usage");
    }
  }
  redisFree(sub);
  redisFree(ctx);
  return 0;
}
