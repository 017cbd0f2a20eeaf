/* blocking_basic: a pool of threads shares one latchkey lock through the
 * blocking API (docs/blocking.md): no loop to run, no callbacks.
 *   blocking_basic [URL]   a connection URL or host:port; else
 *              $LATCHKEY_REDIS, else redis://127.0.0.1:6379
 * Each thread takes the lock, works while watching its lost-lease
 * descriptor, and gives the lock back; the threads exclude each other as
 * two processes would. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <latchkey.h>

#define THREADS 4
#define ROUNDS 5

static lk_blocking_t *blk;
static lk_blocking_lock_t *lock;
static int counter; /* guarded by the distributed lock alone */
static _Atomic int failures;

static void worker(void *arg) {
  (void)arg;
  int lost_fd = lk_blocking_lost_fd(blk); /* this thread's own */
  for (int i = 0; i < ROUNDS; i++) {
    int rc = lk_blocking_lock_acquire(lock, NULL); /* waits as long as it takes */
    if (rc < 0) {
      fprintf(stderr, "acquire: %s\n", lk_strerror(rc));
      failures++;
      return;
    }
    /* The critical section. A real one polls lost_fd beside its own work
     * and stops when it turns readable: the lease is gone. */
    struct pollfd p = {.fd = lost_fd, .events = POLLIN};
    if (poll(&p, 1, 1) == 1) {
      fprintf(stderr, "lease lost: abandoning the work\n");
      lk_blocking_lost_clear(blk);
    } else {
      counter++;
    }
    rc = lk_blocking_lock_release(lock);
    if (rc < 0) {
      fprintf(stderr, "release: %s\n", lk_strerror(rc));
      failures++;
    }
  }
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  if (url == NULL || *url == '\0') url = "redis://127.0.0.1:6379";
  lk_client_opts_t opts;
  lk_client_opts_init(&opts);
  if (lk_client_opts_set_url(&opts, url) < 0) {
    fprintf(stderr, "usage: %s [URL]\n", argv[0]);
    return 2;
  }

  /* One blocking client per process: it runs its own loop thread. */
  int rc = lk_blocking_new(&opts, &blk);
  if (rc < 0) {
    fprintf(stderr, "lk_blocking_new: %s\n", lk_strerror(rc));
    return 1;
  }
  rc = lk_blocking_lock_new(blk, "blocking-demo", &lock);
  if (rc < 0) {
    fprintf(stderr, "lk_blocking_lock_new: %s\n", lk_strerror(rc));
    lk_blocking_close(blk);
    return 1;
  }

  uv_thread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) uv_thread_create(&threads[i], worker, NULL);
  for (int i = 0; i < THREADS; i++) uv_thread_join(&threads[i]);
  printf("%d threads, %d critical sections\n", THREADS, counter);

  lk_blocking_lock_close(lock);
  lk_blocking_close(blk); /* closes the client and its thread */
  return failures == 0 && counter == THREADS * ROUNDS ? 0 : 1;
}
