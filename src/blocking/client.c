/* The blocking client (docs/blocking.md): a queue of call records that
 * callers fill under a mutex and the loop thread drains on a uv_async_t
 * wake-up, the loop thread itself (owned or attached), cancel, close, fork
 * and the lost-lease descriptors. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/eventfd.h>
#endif
#include <fcntl.h>

#include "blocking/blocking_internal.h"
#include "core/alloc.h"
#include "core/internal.h"

/* A thread's lost-lease descriptor. */
typedef struct bl_fd_s {
  struct bl_fd_s *next;
  uint64_t tid;
  int rfd, wfd; /* the same eventfd twice on Linux */
} bl_fd_t;

struct lk_blocking_s {
  uv_loop_t own_loop;
  uv_loop_t *loop;
  int owned;
  uv_thread_t thread;      /* the owned loop thread */
  uv_thread_t loop_thread; /* whichever runs the loop */
  lk_client_t *client;
  uv_async_t async;
  unsigned fork_gen;

  uv_mutex_t mu; /* guards the queue, closing, handles, lost_cb, fds */
  lk__bl_call_t *q_head, *q_tail;
  _Atomic int closing;
  lk__bl_handle_t *handles;
  lk_blocking_lost_cb lost_cb;
  void *lost_arg;
  bl_fd_t *fds;

  /* loop thread only */
  lk__bl_call_t *inflight;
  lk__bl_call_t *closer;
  int close_pending; /* handles whose objects are still closing */

  /* fork (bl_before_fork): the loop thread parks between two callbacks so
   * the child's copy of the loop's memory is whole; under mu. */
  struct lk_blocking_s *reg_prev, *reg_next; /* bl_reg, under bl_reg_mu */
  int park;                 /* BL_PARK_* */
  uv_cond_t park_cond;
  int child_whole;          /* in a child: the fork found the loop parked */

  /* start-up of the owned thread */
  const lk_client_opts_t *start_opts;
  int start_rc;
  uv_sem_t started;
};

/* ---- fork and thread ids ---------------------------------------------------- */

/* Bumped in every child (pthread_atfork), compared per call without a lock:
 * in a child the loop thread is gone and any mutex may be held forever. */
static _Atomic unsigned bl_fork_gen;
static pthread_once_t bl_fork_once = PTHREAD_ONCE_INIT;

/* A fork copies the loop thread's memory wherever that thread is: halfway
 * through a callback, a list of the client's may be half relinked, and the
 * child's lk_blocking_close, which frees that memory, would walk it. So
 * around a fork every registered client's loop thread parks on entry to its
 * async callback (between two callbacks, where the core's state is whole)
 * and the forking thread holds each client's mutex (the call queue and the
 * handle list are whole too). A loop thread that does not park in time (a
 * callback of the program's blocked, or the fork made from that very loop
 * thread) leaves its client "not whole": the child then frees nothing of it. */
enum { BL_PARK_NONE, BL_PARK_ASKED, BL_PARK_PARKED };
#define BL_PARK_WAIT_NS ((uint64_t)2 * 1000 * 1000 * 1000)
static uv_mutex_t bl_reg_mu;
static lk_blocking_t *bl_reg;

static void bl_before_fork(void) {
  lk_blocking_t *b;
  uv_mutex_lock(&bl_reg_mu);
  for (b = bl_reg; b != NULL; b = b->reg_next) {
    uint64_t end = uv_hrtime() + BL_PARK_WAIT_NS, now;
    uv_thread_t self = uv_thread_self();
    uv_mutex_lock(&b->mu); /* held until after the fork */
    /* Closing: the async handle may be closed already. */
    if (atomic_load_explicit(&b->closing, memory_order_relaxed) ||
        uv_thread_equal(&self, &b->loop_thread))
      continue;
    b->park = BL_PARK_ASKED;
    uv_async_send(&b->async);
    while (b->park != BL_PARK_PARKED && (now = uv_hrtime()) < end)
      (void)uv_cond_timedwait(&b->park_cond, &b->mu, end - now);
  }
}

static void bl_after_fork_parent(void) {
  lk_blocking_t *b;
  for (b = bl_reg; b != NULL; b = b->reg_next) {
    b->park = BL_PARK_NONE;
    uv_cond_signal(&b->park_cond);
    uv_mutex_unlock(&b->mu);
  }
  uv_mutex_unlock(&bl_reg_mu);
}

/* The parent's clients are forked ones here: none is registered in the
 * child (a fork made by the child must not wait for them). */
static void bl_after_fork_child(void) {
  lk_blocking_t *b, *next;
  atomic_fetch_add(&bl_fork_gen, 1);
  for (b = bl_reg; b != NULL; b = next) {
    next = b->reg_next;
    b->child_whole = b->park == BL_PARK_PARKED;
    b->reg_prev = b->reg_next = NULL;
  }
  bl_reg = NULL;
  /* The mutexes stay held: no blocking function takes one in a child. */
  uv_mutex_unlock(&bl_reg_mu);
}

static void bl_install_fork_hook(void) {
  if (uv_mutex_init(&bl_reg_mu) != 0)
    abort(); /* at the first client's creation: nothing to fall back to */
  pthread_atfork(bl_before_fork, bl_after_fork_parent, bl_after_fork_child);
}

/* On the loop thread, on entry to the async callback. */
static void bl_park_if_asked(lk_blocking_t *b) {
  if (b->park != BL_PARK_ASKED)
    return;
  b->park = BL_PARK_PARKED;
  uv_cond_signal(&b->park_cond);
  while (b->park == BL_PARK_PARKED)
    uv_cond_wait(&b->park_cond, &b->mu);
}

static void bl_register(lk_blocking_t *b) {
  uv_mutex_lock(&bl_reg_mu);
  b->reg_prev = NULL;
  b->reg_next = bl_reg;
  if (bl_reg != NULL)
    bl_reg->reg_prev = b;
  bl_reg = b;
  uv_mutex_unlock(&bl_reg_mu);
}

static void bl_unregister(lk_blocking_t *b) {
  uv_mutex_lock(&bl_reg_mu);
  if (b->reg_prev != NULL)
    b->reg_prev->reg_next = b->reg_next;
  else if (bl_reg == b)
    bl_reg = b->reg_next;
  if (b->reg_next != NULL)
    b->reg_next->reg_prev = b->reg_prev;
  b->reg_prev = b->reg_next = NULL;
  uv_mutex_unlock(&bl_reg_mu);
}

/* Thread ids start at 2^40: the asynchronous API numbers its objects' default
 * owners 1, 2, ... per client, and an attached client may have both. */
#define BL_TID_BASE ((uint64_t)1 << 40)
static _Atomic uint64_t bl_next_tid = BL_TID_BASE;
static _Thread_local uint64_t bl_my_tid;

uint64_t lk_blocking_thread_id(void) {
  if (bl_my_tid == 0)
    bl_my_tid = atomic_fetch_add(&bl_next_tid, 1);
  return bl_my_tid;
}

static int forked(const lk_blocking_t *b) {
  return b->fork_gen != atomic_load_explicit(&bl_fork_gen, memory_order_relaxed);
}

static int on_loop_thread(const lk_blocking_t *b) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &b->loop_thread);
}

int lk__bl_check(const lk_blocking_t *b) {
  if (b == NULL)
    return LK_EINVAL;
  if (forked(b))
    return LK_EFORKED;
  if (on_loop_thread(b))
    return LK_EWRONGTHREAD;
  if (atomic_load_explicit(&b->closing, memory_order_acquire))
    return LK_ECLOSED;
  return 0;
}

lk_client_t *lk__bl_client(const lk_blocking_t *b) { return b->client; }
lk_client_t *lk_blocking_client(const lk_blocking_t *b) { return b ? b->client : NULL; }

/* ---- calls ------------------------------------------------------------------ */

void lk__bl_call_init(lk__bl_call_t *call, lk_blocking_t *b, lk__bl_slot_t *slot,
                      lk__bl_start_fn start, lk__bl_cancel_fn cancel) {
  memset(call, 0, sizeof(*call));
  call->b = b;
  call->slot = slot;
  call->start = start;
  call->cancel = cancel;
  call->tid = lk_blocking_thread_id();
  lk__bl_wait_init(&call->wait);
}

/* closing: NULL for a verb; a handle's close flag for its close. */
static int run_call(lk__bl_call_t *call, _Atomic int *closing) {
  lk_blocking_t *b = call->b;
  lk__bl_handle_t *h = call->slot != NULL ? call->slot->h : NULL;
  int rc = lk__bl_check(b), was_empty;
  if (rc != 0)
    goto out;
  uv_mutex_lock(&b->mu);
  /* The handle's flag is read under the mutex its close sets it under
   * (lk__bl_run_closing): a call either queues ahead of the close, so its
   * slot still exists when the loop starts it, or is refused here. */
  if (atomic_load_explicit(&b->closing, memory_order_relaxed) ||
      (h != NULL && atomic_load(&h->closing)) ||
      (closing != NULL && atomic_exchange(closing, 1))) {
    uv_mutex_unlock(&b->mu);
    rc = LK_ECLOSED;
    goto out;
  }
  was_empty = b->q_head == NULL;
  if (b->q_tail != NULL)
    b->q_tail->next = call;
  else
    b->q_head = call;
  b->q_tail = call;
  /* Sent under the mutex: a close (which needs it to begin) can then never
   * close the handle between our queueing and our send. Only the first call
   * of a batch sends: the loop takes the whole queue at once. */
  if (was_empty)
    uv_async_send(&b->async);
  uv_mutex_unlock(&b->mu);
  lk__bl_wait_block(&call->wait);
  rc = call->status;
out:
  lk__bl_wait_destroy(&call->wait);
  if (h != NULL) /* the last touch of the handle: its close may free it now */
    atomic_fetch_sub(&h->active, 1);
  return rc;
}

int lk__bl_run(lk__bl_call_t *call) { return run_call(call, NULL); }

int lk__bl_run_closing(lk__bl_call_t *call, _Atomic int *closing) {
  return run_call(call, closing);
}

void lk__bl_finish(lk__bl_call_t *call, int status, int64_t result) {
  lk_blocking_t *b = call->b;
  if (call->prev != NULL)
    call->prev->next = call->next;
  else if (b->inflight == call)
    b->inflight = call->next;
  if (call->next != NULL)
    call->next->prev = call->prev;
  call->status = status;
  call->result = result;
  lk__bl_wait_wake(&call->wait); /* the record may be gone after this */
}

static void start_call(lk_blocking_t *b, lk__bl_call_t *call) {
  int rc;
  call->prev = NULL;
  call->next = b->inflight;
  if (b->inflight != NULL)
    b->inflight->prev = call;
  b->inflight = call;
  rc = call->start(call);
  if (rc != 1)
    lk__bl_finish(call, rc, call->result);
}

static void on_async(uv_async_t *a) {
  lk_blocking_t *b = a->data;
  lk__bl_call_t *call, *next;
  uv_mutex_lock(&b->mu);
  bl_park_if_asked(b);
  call = b->q_head;
  b->q_head = b->q_tail = NULL;
  uv_mutex_unlock(&b->mu);
  for (; call != NULL; call = next) {
    next = call->next;
    start_call(b, call);
  }
}

/* ---- cancel ------------------------------------------------------------------- */

typedef struct {
  lk__bl_call_t call;
  uint64_t target;
} cancel_call_t;

static int start_cancel(lk__bl_call_t *call) {
  cancel_call_t *cc = (cancel_call_t *)call;
  lk__bl_call_t *c;
  /* The target queued its call before blocking, so a cancel asked for while
   * it blocks is behind it in the queue: the target is in flight here. */
  for (c = call->b->inflight; c != NULL; c = c->next)
    if (c != call && c->tid == cc->target && c->cancel != NULL)
      return c->cancel(c);
  return LK_EINVAL;
}

int lk_blocking_cancel(lk_blocking_t *b, uint64_t thread_id) {
  cancel_call_t cc;
  lk__bl_call_init(&cc.call, b, NULL, start_cancel, NULL);
  cc.target = thread_id;
  return lk__bl_run(&cc.call);
}

/* ---- a thread done with the client ---------------------------------------------- */

struct lk__bl_forget_s {
  lk__bl_call_t call;
  int pending;
};

void lk__bl_forget_count(lk__bl_forget_t *f) { f->pending++; }

void lk__bl_forget_step(lk__bl_forget_t *f) {
  if (--f->pending == 0)
    lk__bl_finish(&f->call, 0, 0);
}

static void close_fd(bl_fd_t *f);

static int start_thread_done(lk__bl_call_t *call) {
  lk__bl_forget_t *f = (lk__bl_forget_t *)call;
  lk_blocking_t *b = call->b;
  lk__bl_handle_t *h;
  bl_fd_t **pp, *fd = NULL;
  uv_mutex_lock(&b->mu);
  h = b->handles;
  for (pp = &b->fds; *pp != NULL; pp = &(*pp)->next)
    if ((*pp)->tid == call->tid) {
      fd = *pp;
      *pp = fd->next;
      break;
    }
  uv_mutex_unlock(&b->mu);
  if (fd != NULL) {
    close_fd(fd);
    lk__free(fd);
  }
  /* Only this thread removes handles: the list can be walked unlocked. */
  f->pending = 1;
  for (; h != NULL; h = h->next)
    lk__bl_handle_forget(h, call->tid, f);
  if (--f->pending == 0)
    return 0;
  return 1;
}

int lk_blocking_thread_done(lk_blocking_t *b) {
  lk__bl_forget_t f;
  lk__bl_call_init(&f.call, b, NULL, start_thread_done, NULL);
  return lk__bl_run(&f.call);
}

/* ---- handles ------------------------------------------------------------------ */

int lk__bl_register_handle(lk_blocking_t *b, lk__bl_handle_t *h) {
  uv_mutex_lock(&b->mu);
  /* Checked again under the mutex lk_blocking_close sets closing under: a
   * handle added after that would be freed by the close behind the back of
   * the _new that returned it. */
  if (atomic_load_explicit(&b->closing, memory_order_relaxed)) {
    uv_mutex_unlock(&b->mu);
    return LK_ECLOSED;
  }
  h->next = b->handles;
  b->handles = h;
  uv_mutex_unlock(&b->mu);
  return 0;
}

void lk__bl_unregister_handle(lk_blocking_t *b, lk__bl_handle_t *h) {
  lk__bl_handle_t **pp;
  uv_mutex_lock(&b->mu);
  for (pp = &b->handles; *pp != NULL; pp = &(*pp)->next)
    if (*pp == h) {
      *pp = h->next;
      break;
    }
  uv_mutex_unlock(&b->mu);
}

/* ---- lost leases ---------------------------------------------------------------- */

int lk_blocking_set_lost_cb(lk_blocking_t *b, lk_blocking_lost_cb cb, void *arg) {
  if (b == NULL)
    return LK_EINVAL;
  if (forked(b))
    return LK_EFORKED;
  uv_mutex_lock(&b->mu);
  b->lost_cb = cb;
  b->lost_arg = arg;
  uv_mutex_unlock(&b->mu);
  return 0;
}

static bl_fd_t *find_fd(lk_blocking_t *b, uint64_t tid) {
  bl_fd_t *f;
  for (f = b->fds; f != NULL; f = f->next)
    if (f->tid == tid)
      return f;
  return NULL;
}

static int open_fd(bl_fd_t *f) {
#ifdef __linux__
  f->rfd = f->wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return f->rfd < 0 ? -errno : 0;
#else
  int p[2];
  if (pipe(p) != 0)
    return -errno;
  for (int i = 0; i < 2; i++) {
    fcntl(p[i], F_SETFD, FD_CLOEXEC);
    fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK);
  }
  f->rfd = p[0];
  f->wfd = p[1];
  return 0;
#endif
}

static void close_fd(bl_fd_t *f) {
  close(f->rfd);
  if (f->wfd != f->rfd)
    close(f->wfd);
}

int lk_blocking_lost_fd(lk_blocking_t *b) {
  uint64_t tid = lk_blocking_thread_id();
  bl_fd_t *f;
  int rc = lk__bl_check(b);
  if (rc != 0)
    return rc;
  uv_mutex_lock(&b->mu);
  f = find_fd(b, tid);
  if (f == NULL) {
    f = lk__calloc(1, sizeof(*f));
    rc = f == NULL ? LK_ENOMEM : open_fd(f);
    if (rc != 0) {
      lk__free(f);
      f = NULL;
    } else {
      f->tid = tid;
      f->next = b->fds;
      b->fds = f;
    }
  }
  rc = f != NULL ? f->rfd : rc;
  uv_mutex_unlock(&b->mu);
  return rc;
}

int lk_blocking_lost_clear(lk_blocking_t *b) {
  uint64_t tid = lk_blocking_thread_id();
  bl_fd_t *f;
  int rc = lk__bl_check(b), n = 0;
  if (rc != 0)
    return rc;
  uv_mutex_lock(&b->mu);
  f = find_fd(b, tid);
  if (f != NULL) {
#ifdef __linux__
    uint64_t v;
    if (read(f->rfd, &v, sizeof(v)) == (ssize_t)sizeof(v))
      n = v > INT32_MAX ? INT32_MAX : (int)v;
#else
    char buf[64];
    ssize_t got;
    while ((got = read(f->rfd, buf, sizeof(buf))) > 0)
      n += (int)got;
#endif
  }
  uv_mutex_unlock(&b->mu);
  return n;
}

void lk__bl_notify_lost(lk__bl_slot_t *slot) {
  lk_blocking_t *b = slot->h->b;
  lk_blocking_lost_cb cb;
  void *arg;
  bl_fd_t *f;
  uv_mutex_lock(&b->mu);
  cb = b->lost_cb;
  arg = b->lost_arg;
  uv_mutex_unlock(&b->mu);
  /* The callback first: a thread woken by its descriptor finds the
   * callback's work done. */
  if (cb != NULL)
    cb(b, slot->h->name, slot->tid, arg);
  uv_mutex_lock(&b->mu);
  f = find_fd(b, slot->tid);
  if (f != NULL) {
#ifdef __linux__
    uint64_t one = 1;
    ssize_t w = write(f->wfd, &one, sizeof(one));
#else
    ssize_t w = write(f->wfd, "x", 1);
#endif
    (void)w; /* full: already readable, which is all it has to say */
  }
  uv_mutex_unlock(&b->mu);
}

/* ---- creation ------------------------------------------------------------------- */

static void destroy_sync(lk_blocking_t *b) {
  uv_cond_destroy(&b->park_cond);
  uv_mutex_destroy(&b->mu);
}

static lk_blocking_t *alloc_blocking(void) {
  lk_blocking_t *b;
  pthread_once(&bl_fork_once, bl_install_fork_hook);
  b = lk__calloc(1, sizeof(*b));
  if (b == NULL)
    return NULL;
  b->fork_gen = atomic_load(&bl_fork_gen);
  atomic_init(&b->closing, 0);
  if (uv_mutex_init(&b->mu) != 0) {
    lk__free(b);
    return NULL;
  }
  if (uv_cond_init(&b->park_cond) != 0) {
    uv_mutex_destroy(&b->mu);
    lk__free(b);
    return NULL;
  }
  return b;
}

static void free_blocking(lk_blocking_t *b, int destroy_locks) {
  lk__bl_handle_t *h, *hn;
  bl_fd_t *f, *fn;
  if (destroy_locks)
    bl_unregister(b); /* its loop thread is gone: no fork may wait for it */
  for (h = b->handles; h != NULL; h = hn) {
    hn = h->next;
    /* Callers refused during the close may still be on their way out of
     * lk__bl_run (they no longer block); not in a forked child, where
     * threads of the parent never leave. */
    while (destroy_locks && atomic_load(&h->active) != 0)
      sched_yield();
    lk__bl_handle_free(h, destroy_locks);
  }
  for (f = b->fds; f != NULL; f = fn) {
    fn = f->next;
    close_fd(f);
    lk__free(f);
  }
  if (destroy_locks)
    destroy_sync(b);
  lk__free(b);
}

static void owned_thread(void *arg) {
  lk_blocking_t *b = arg;
  b->loop_thread = uv_thread_self();
  b->start_rc = lk_client_new(b->loop, b->start_opts, &b->client);
  if (b->start_rc != 0)
    uv_close((uv_handle_t *)&b->async, NULL);
  uv_sem_post(&b->started);
  /* Until the close: the async handle keeps the loop alive. */
  uv_run(b->loop, UV_RUN_DEFAULT);
}

int lk_blocking_new(const lk_client_opts_t *opts, lk_blocking_t **out) {
  lk_blocking_t *b;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  b = alloc_blocking();
  if (b == NULL)
    return LK_ENOMEM;
  b->owned = 1;
  b->loop = &b->own_loop;
  rc = uv_loop_init(b->loop);
  if (rc != 0)
    goto fail_mu;
  rc = uv_async_init(b->loop, &b->async, on_async);
  if (rc != 0)
    goto fail_loop;
  b->async.data = b;
  rc = uv_sem_init(&b->started, 0);
  if (rc != 0)
    goto fail_async;
  b->start_opts = opts;
  rc = uv_thread_create(&b->thread, owned_thread, b);
  if (rc != 0) {
    uv_sem_destroy(&b->started);
    goto fail_async;
  }
  uv_sem_wait(&b->started);
  uv_sem_destroy(&b->started);
  b->start_opts = NULL;
  if (b->start_rc != 0) {
    rc = b->start_rc;
    uv_thread_join(&b->thread); /* its loop ran the async handle's close */
    uv_loop_close(b->loop);
    destroy_sync(b);
    lk__free(b);
    return rc;
  }
  bl_register(b);
  *out = b;
  return 0;
fail_async:
  uv_close((uv_handle_t *)&b->async, NULL);
  uv_run(b->loop, UV_RUN_NOWAIT);
fail_loop:
  uv_loop_close(b->loop);
fail_mu:
  destroy_sync(b);
  lk__free(b);
  return rc == UV_ENOMEM ? LK_ENOMEM : rc;
}

int lk_blocking_attach(lk_client_t *client, lk_blocking_t **out) {
  lk_blocking_t *b;
  int rc;
  if (out == NULL)
    return LK_EINVAL;
  rc = lk__check_client(client);
  if (rc != 0)
    return rc;
  b = alloc_blocking();
  if (b == NULL)
    return LK_ENOMEM;
  b->loop = lk_client_loop(client);
  b->client = client;
  b->loop_thread = uv_thread_self();
  rc = uv_async_init(b->loop, &b->async, on_async);
  if (rc != 0) {
    destroy_sync(b);
    lk__free(b);
    return rc == UV_ENOMEM ? LK_ENOMEM : rc;
  }
  b->async.data = b;
  bl_register(b);
  *out = b;
  return 0;
}

/* ---- close ------------------------------------------------------------------------ */

static void on_async_closed(uv_handle_t *hd) {
  lk_blocking_t *b = hd->data;
  lk__bl_finish(b->closer, 0, 0); /* the last touch of b on this thread */
}

static void on_client_closed(lk_client_t *c) {
  lk_blocking_t *b = lk_client_get_data(c);
  uv_close((uv_handle_t *)&b->async, on_async_closed);
}

static void close_finish(lk_blocking_t *b) {
  if (b->owned) {
    lk_client_set_data(b->client, b);
    /* close_all: also objects the program made on lk_blocking_client(). */
    if (lk_client_close_all(b->client, on_client_closed) == 0)
      return;
  }
  uv_close((uv_handle_t *)&b->async, on_async_closed);
}

void lk__bl_handle_objs_closed(lk__bl_handle_t *h) {
  lk_blocking_t *b = h->b;
  if (h->closer != NULL) {
    lk__bl_call_t *c = h->closer;
    h->closer = NULL;
    lk__bl_unregister_handle(b, h);
    lk__bl_finish(c, 0, 0);
  }
  if (b->closer != NULL && --b->close_pending == 0)
    close_finish(b);
}

static int start_close(lk__bl_call_t *call) {
  lk_blocking_t *b = call->b;
  lk__bl_handle_t *h;
  b->closer = call;
  /* +1 so that no handle finishing during this walk ends the close early. */
  b->close_pending = 1;
  uv_mutex_lock(&b->mu);
  h = b->handles;
  uv_mutex_unlock(&b->mu);
  /* No handle is added once closing is set (lk__bl_register_handle checks
   * it under the mutex closing was set under), and only this thread
   * removes one: the list can be walked without the lock. */
  for (; h != NULL; h = h->next) {
    if (h->closer != NULL)
      b->close_pending++; /* a handle's own close is under way */
    else if (lk__bl_handle_close_objs(h))
      b->close_pending++;
  }
  if (--b->close_pending == 0)
    close_finish(b);
  return 1;
}

int lk_blocking_close(lk_blocking_t *b) {
  lk__bl_call_t call;
  int rc;
  if (b == NULL)
    return LK_EINVAL;
  if (forked(b)) {
    /* The loop thread does not exist here and any lock may be held forever:
     * free the memory, touch no mutex, send nothing; and only memory the
     * fork copied whole (bl_before_fork), else none. */
    if (!b->child_whole)
      return LK_EFORKED;
    if (b->owned && b->client != NULL)
      lk_client_close_all(b->client, NULL); /* frees its memory: LK_EFORKED */
    free_blocking(b, 0);
    return LK_EFORKED;
  }
  if (on_loop_thread(b))
    return LK_EWRONGTHREAD;
  uv_mutex_lock(&b->mu);
  if (atomic_load_explicit(&b->closing, memory_order_relaxed)) {
    uv_mutex_unlock(&b->mu);
    return LK_ECLOSED;
  }
  lk__bl_call_init(&call, b, NULL, start_close, NULL);
  /* Queued by hand: lk__bl_run would refuse it once closing is set, and
   * closing must be set in the same critical section as the queueing so no
   * call can slip in behind the close. */
  atomic_store_explicit(&b->closing, 1, memory_order_release);
  if (b->q_tail != NULL)
    b->q_tail->next = &call;
  else
    b->q_head = &call;
  b->q_tail = &call;
  uv_async_send(&b->async);
  uv_mutex_unlock(&b->mu);
  lk__bl_wait_block(&call.wait);
  rc = call.status;
  lk__bl_wait_destroy(&call.wait);
  if (b->owned) {
    uv_thread_join(&b->thread);
    rc = uv_loop_close(b->loop);
    if (rc != 0) /* a handle left open: a bug, said rather than leaked silently */
      rc = LK_EBUSY;
  }
  free_blocking(b, 1);
  return rc;
}
