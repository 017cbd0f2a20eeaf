/* flash_sale worker: one forked process that serves its share of the buyers.
 * It owns its uv loop, lk_client and one lk_lock per lot (made after fork: a
 * client made before fork answers LK_EFORKED in the child) plus blocking
 * hiredis connections for the stock, the resource the locks protect. */
#ifndef FLASH_SALE_WORKER_H
#define FLASH_SALE_WORKER_H

#include <stdint.h>

#include <latchkey.h>

/* The stock is split into lots, each with its own stock key and the lock
 * that guards it. A lot's two keys share the hash tag {lotN}, so on a
 * Redis Cluster both live on one master; the demo picks lots whose slots
 * spread over every master. Nothing else on the server is touched. */
#define FS_MAX_LOTS 64
#define FS_LOCK_FMT "flash_sale:{lot%d}:lock"
#define FS_STOCK_FMT "flash_sale:{lot%d}:stock"

typedef struct {
  int id;         /* N in {lotN} */
  char lock[40];  /* FS_LOCK_FMT */
  char stock[40]; /* FS_STOCK_FMT */
} fs_lot;

typedef struct {
  int index;          /* 1-based, for messages */
  /* Where Redis is (client options from the connection URL): the lock
   * client starts from a copy, the stock connections use the address. */
  const lk_client_opts_t *addr;
  const fs_lot *lots; /* buyer k of worker i goes to lot (i + k) mod nlots */
  int nlots;
  int64_t buyers;     /* buyers this worker serves */
  int64_t wait_ms;    /* lock wait budget per buyer */
  unsigned jitter_us; /* random sleep of 0..jitter_us between GET and SET */
  int use_lock;       /* 0 (--no-lock) shows what the lock prevents */
  int go_fd;          /* read end of the start pipe: EOF means "start" */
  int report_fd;      /* write end of this worker's report pipe */
} worker_config;

/* Sent once through report_fd in a single write (below PIPE_BUF, so the
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
  int64_t redirects;    /* MOVED/ASK the lock client followed (cluster) */
  int64_t sold_in_lot[FS_MAX_LOTS];
} worker_report;
_Static_assert(sizeof(worker_report) <= 4096, "one write of at most PIPE_BUF");

/* Runs in the child; returns its exit status (0 when every buyer was served
 * without an error). Never returns to the caller's flow: _exit with it. */
int worker_run(const worker_config *cfg);

#endif /* FLASH_SALE_WORKER_H */
