/* flash_sale worker: one forked process that serves its share of the buyers.
 * It owns its uv loop, lk_client and lk_lock (made after fork: a client made
 * before fork answers LK_EFORKED in the child) plus a blocking hiredis
 * connection for the stock, the resource the lock protects. */
#ifndef FLASH_SALE_WORKER_H
#define FLASH_SALE_WORKER_H

#include <stdint.h>

/* The demo's keys; nothing else on the server is touched. */
#define FS_STOCK_KEY "flash_sale:stock"
#define FS_LOCK_NAME "flash_sale:lock"

typedef struct {
  int index;          /* 1-based, for messages */
  const char *host;   /* Redis */
  int port;
  int64_t buyers;     /* buyers this worker serves */
  int64_t wait_ms;    /* lock wait budget per buyer */
  unsigned jitter_us; /* random sleep of 0..jitter_us between GET and SET */
  int use_lock;       /* 0 (--no-lock) shows what the lock prevents */
  int go_fd;          /* read end of the start pipe: EOF means "start" */
  int report_fd;      /* write end of this worker's report pipe */
} worker_config;

/* Sent once through report_fd in a single write (far below PIPE_BUF, so the
 * parent never sees half of it unless the worker died). */
typedef struct {
  int32_t index;
  int32_t pid;
  int64_t buyers;       /* assigned */
  int64_t sold;         /* stock was > 0: decremented */
  int64_t turned_away;  /* stock was 0 */
  int64_t acquisitions; /* successful lock acquisitions */
  int64_t waited;       /* acquisitions that had to wait (client stats) */
  int64_t errors;       /* the worker stops at its first error */
} worker_report;

/* Runs in the child; returns its exit status (0 when every buyer was served
 * without an error). Never returns to the caller's flow: _exit with it. */
int worker_run(const worker_config *cfg);

#endif /* FLASH_SALE_WORKER_H */
