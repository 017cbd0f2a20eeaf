// latchkey for C++17 (docs/cpp.md): a header-only layer over the blocking
// API (include/latchkey/blocking.h) in the standard library's idioms.
//
//   latchkey::client              RAII for lk_blocking_t (owns a loop thread)
//   latchkey::mutex               TimedLockable: std::unique_lock,
//                                 std::scoped_lock, std::lock_guard work
//   latchkey::shared_mutex        SharedTimedLockable (the read/write lock):
//                                 std::shared_lock works
//   latchkey::redlock             TimedLockable over several masters (RedLock)
//   latchkey::counting_semaphore  acquire / try_acquire_for / release, as
//                                 std::counting_semaphore
//   latchkey::error               std::system_error with latchkey's codes in
//                                 their own std::error_category
//
// Each object is one generic blocking handle (lk_blocking_handle_t) under a
// shared base, detail::handle_base: the lockables run on its generic verbs.
// Owners are threads, as in the C API: a mutex locked by one thread is
// locked for every other thread of the process and for other processes.
#ifndef LATCHKEY_HPP
#define LATCHKEY_HPP

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "latchkey.h"

namespace latchkey {

// ---- errors --------------------------------------------------------------------

// latchkey's codes (negative, include/latchkey/errno.h) as a category of
// their own: error_code(LK_ETIMEDOUT, latchkey::category()).
class error_category_impl final : public std::error_category {
public:
  const char *name() const noexcept override { return "latchkey"; }
  std::string message(int ev) const override { return lk_strerror(ev); }
  // The portable conditions the codes mean, so that ec == std::errc::timed_out
  // holds for LK_ETIMEDOUT; codes without a generic meaning stay latchkey's.
  std::error_condition default_error_condition(int ev) const noexcept override {
    switch (ev) {
    case LK_ETIMEDOUT:
      return std::make_error_condition(std::errc::timed_out);
    case LK_ECANCELED:
      return std::make_error_condition(std::errc::operation_canceled);
    case LK_ENOMEM:
      return std::make_error_condition(std::errc::not_enough_memory);
    default:
      return std::error_condition(ev, *this);
    }
  }
};

inline const std::error_category &category() noexcept {
  static const error_category_impl instance;
  return instance;
}

inline std::error_code make_error_code(int lk_code) noexcept {
  return std::error_code(lk_code, category());
}

// Thrown for every failure a function does not report by its return value.
class error : public std::system_error {
public:
  error(int lk_code, const char *what) : std::system_error(make_error_code(lk_code), what) {}
  // The latchkey code (LK_E...), negative.
  int code_value() const noexcept { return code().value(); }
};

namespace detail {

inline void check(int rc, const char *what) {
  if (rc < 0)
    throw error(rc, what);
}

// A timed try's outcome: true acquired, false the time ran out; anything
// else throws.
inline bool timed(int rc, const char *what) {
  if (rc == LK_ETIMEDOUT)
    return false;
  check(rc, what);
  return true;
}

// Whole milliseconds, rounded up, within 0..LK_MAX_TIME_MS. Compared in
// double milliseconds first: converting hours::max() (or a floating
// infinity) to integer milliseconds would overflow before any clamp.
template <class Rep, class Period>
inline int64_t to_ms(const std::chrono::duration<Rep, Period> &d) {
  const double ms = std::chrono::duration<double, std::milli>(d).count();
  if (!(ms > 0)) // negative, zero or NaN
    return 0;
  if (ms >= static_cast<double>(LK_MAX_TIME_MS))
    return LK_MAX_TIME_MS;
  if constexpr (std::is_floating_point_v<Rep>)
    return static_cast<int64_t>(std::ceil(ms));
  else // exact for integers, and in range now
    return static_cast<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
}

template <class Clock, class Duration>
inline int64_t until_ms(const std::chrono::time_point<Clock, Duration> &tp) {
  return to_ms(tp - Clock::now());
}

} // namespace detail

// ---- client --------------------------------------------------------------------

namespace detail {
// The blocking client, shared by the client object and every object made
// from it: lk_blocking_close runs when the last of them goes, so objects may
// outlive the client object (their destructors still close their handles).
using shared_blocking = std::shared_ptr<lk_blocking_t>;
struct blocking_closer {
  void operator()(lk_blocking_t *b) const noexcept { lk_blocking_close(b); }
};
inline shared_blocking make_blocking(const lk_client_opts_t *opts) {
  lk_blocking_t *b = nullptr;
  check(lk_blocking_new(opts, &b), "lk_blocking_new");
  try {
    return shared_blocking(b, blocking_closer());
  } catch (...) { // the control block's allocation failed: the deleter ran
    throw error(LK_ENOMEM, "lk_blocking_new");
  }
}
} // namespace detail

// One per process is enough: every thread shares it. Not copyable, not
// movable. Objects made from it share the blocking client underneath: it
// closes when the client object and every such object are gone, in any
// order; threads still blocked in its objects then get LK_ECANCELED.
class client {
public:
  // opts nullptr: defaults (127.0.0.1:6379).
  explicit client(const lk_client_opts_t *opts = nullptr) : b_(detail::make_blocking(opts)) {}
  // A connection URL (docs/client.md, "Connection URL") or host:port.
  explicit client(const std::string &url) {
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    detail::check(lk_client_opts_set_url(&o, url.c_str()), "lk_client_opts_set_url");
    b_ = detail::make_blocking(&o);
  }
  client(const client &) = delete;
  client &operator=(const client &) = delete;

  lk_blocking_t *native_handle() const noexcept { return b_.get(); }
  // The blocking client's shared owner, for objects made from it.
  const detail::shared_blocking &shared_handle() const noexcept { return b_; }
  // The calling thread's owner number (lk_blocking_thread_id).
  static uint64_t thread_id() noexcept { return lk_blocking_thread_id(); }
  // Cancels what thread thread_id is blocked in acquiring: it throws (or a
  // try returns) with LK_ECANCELED. False when it was not blocked.
  bool cancel(uint64_t thread_id) {
    int rc = lk_blocking_cancel(b_.get(), thread_id);
    if (rc == LK_EINVAL)
      return false;
    detail::check(rc, "lk_blocking_cancel");
    return true;
  }
  // The calling thread's lost-lease descriptor (docs/blocking.md).
  int lost_fd() {
    int fd = lk_blocking_lost_fd(b_.get());
    detail::check(fd, "lk_blocking_lost_fd");
    return fd;
  }

private:
  detail::shared_blocking b_;
};

// ---- the one handle every object wraps ----------------------------------------------

namespace detail {

// What every object below shares: the blocking client (kept open while the
// object lives), its handle as the generic lk_blocking_handle_t
// (latchkey/blocking.h), closed by the destructor, and the generic verbs.
// Not copyable, not movable: other threads use it by reference.
class handle_base {
public:
  handle_base(const handle_base &) = delete;
  handle_base &operator=(const handle_base &) = delete;

  // The calling thread's view, no round trip.
  bool is_held() const noexcept { return lk_blocking_handle_is_held(h_) == 1; }
  lk_blocking_handle_t *generic_handle() const noexcept { return h_; }

protected:
  explicit handle_base(client &c) : b_(c.shared_handle()) {}
  ~handle_base() { lk_blocking_handle_close(h_); }
  // Keeps the handle lk_blocking_<kind>_new made, or throws its code.
  void adopt(int rc, lk_blocking_handle_t *h, const char *what) {
    check(rc, what);
    h_ = h;
  }
  lk_blocking_t *blocking() const noexcept { return b_.get(); }

  shared_blocking b_; // first: closed after the handle
  lk_blocking_handle_t *h_ = nullptr;
};

// TimedLockable over the generic verbs: lock() waits as long as it takes,
// the tries wait as long as given, unlock() gives one hold back and never
// throws (it runs in std::lock_guard's destructor): a failed release is
// kept for last_unlock_error(); unlock_checked() throws.
class timed_lockable : public handle_base {
public:
  void lock() { check(lk_blocking_handle_acquire(h_), "lk_blocking_handle_acquire"); }
  bool try_lock() { return try_for(0); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return try_for(to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_for(until_ms(tp));
  }
  void unlock() noexcept { last_unlock_error_ = lk_blocking_handle_release(h_); }
  void unlock_checked() { check(lk_blocking_handle_release(h_), "lk_blocking_handle_release"); }
  // The last unlock()'s failure (0 when it released; LK_ELEASELOST when
  // the lease had been lost while held). Per object, not per thread.
  int last_unlock_error() const noexcept { return last_unlock_error_.load(); }

protected:
  using handle_base::handle_base;
  bool try_for(int64_t ms) { return timed(lk_blocking_handle_try(h_, ms), "lk_blocking_handle_try"); }
  std::atomic<int> last_unlock_error_{0}; // readers unlock at once
};

} // namespace detail

// ---- mutex (the reentrant lock, docs/lock.md) -------------------------------------

// TimedLockable. Re-entry by the owning thread counts, as in Redisson.
// unlock() never throws (see detail::timed_lockable).
class mutex : public detail::timed_lockable {
public:
  mutex(client &c, const std::string &name) : timed_lockable(c) {
    int rc = lk_blocking_lock_new(blocking(), name.c_str(), &l_);
    adopt(rc, lk_blocking_lock_handle(l_), "lk_blocking_lock_new");
  }
  uint32_t hold_count() const noexcept { return lk_blocking_lock_hold_count(l_); }
  lk_blocking_lock_t *native_handle() const noexcept { return l_; }

private:
  lk_blocking_lock_t *l_ = nullptr;
};

// ---- redlock (a quorum of independent masters, docs/multilock.md) ------------------

// TimedLockable over masters.size() masters, one client each on the
// client's loop thread (made here, closed by the destructor). Re-entry by
// the owning thread counts, as RedLock's does (the lean layout throws
// LK_EINVAL). unlock() never throws, as mutex::unlock.
class redlock : public detail::timed_lockable {
public:
  redlock(client &c, const std::vector<lk_client_opts_t> &masters, const std::string &name,
          const lk_redlock_config_t *cfg = nullptr)
      : timed_lockable(c) {
    int rc = lk_blocking_redlock_new(blocking(), masters.data(), masters.size(), name.c_str(),
                                     cfg, &r_);
    adopt(rc, lk_blocking_redlock_handle(r_), "lk_blocking_redlock_new");
  }
  uint32_t hold_count() const noexcept { return lk_blocking_redlock_hold_count(r_); }
  lk_blocking_redlock_t *native_handle() const noexcept { return r_; }

private:
  lk_blocking_redlock_t *r_ = nullptr;
};

// ---- shared_mutex (the read/write lock, docs/rwlock.md) ------------------------------

// SharedTimedLockable: the write side is lock() (the generic verbs take
// it), the read side lock_shared(). unlock()/unlock_shared() never throw,
// as mutex::unlock.
class shared_mutex : public detail::timed_lockable {
public:
  shared_mutex(client &c, const std::string &name) : timed_lockable(c) {
    int rc = lk_blocking_rwlock_new(blocking(), name.c_str(), &rw_);
    adopt(rc, lk_blocking_rwlock_handle(rw_), "lk_blocking_rwlock_new");
  }

  void lock_shared() {
    detail::check(lk_blocking_rwlock_acquire(rw_, LK_RW_READ, nullptr),
                  "lk_blocking_rwlock_acquire");
  }
  bool try_lock_shared() { return try_shared_for(0); }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) {
    return try_shared_for(detail::to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_shared_for(detail::until_ms(tp));
  }
  void unlock_shared() noexcept { last_unlock_error_ = lk_blocking_rwlock_release(rw_, LK_RW_READ); }

  bool is_held(lk_rwlock_side_t side) const noexcept {
    return lk_blocking_rwlock_is_held(rw_, side) == 1;
  }
  lk_blocking_rwlock_t *native_handle() const noexcept { return rw_; }

private:
  bool try_shared_for(int64_t ms) {
    return detail::timed(lk_blocking_rwlock_try(rw_, LK_RW_READ, ms), "lk_blocking_rwlock_try");
  }
  lk_blocking_rwlock_t *rw_ = nullptr;
};

// ---- counting_semaphore (docs/semaphore.md) ------------------------------------------

// As std::counting_semaphore, but distributed and with its permits counted
// per thread: release() gives back permits the calling thread took (it
// throws error(LK_ENOTHELD) otherwise). The count is set once with
// try_set_permits (Redisson's trySetPermits).
class counting_semaphore : public detail::handle_base {
public:
  counting_semaphore(client &c, const std::string &name) : handle_base(c) {
    int rc = lk_blocking_semaphore_new(blocking(), name.c_str(), &s_);
    adopt(rc, lk_blocking_semaphore_handle(s_), "lk_blocking_semaphore_new");
  }

  // True when this call set the count, false when it was set already.
  bool try_set_permits(int64_t permits) {
    int rc = lk_blocking_semaphore_try_set_permits(s_, permits);
    detail::check(rc, "lk_blocking_semaphore_try_set_permits");
    return rc == 1;
  }
  void acquire() { detail::check(lk_blocking_handle_acquire(h_), "lk_blocking_handle_acquire"); }
  // Unlike std::counting_semaphore::try_acquire (noexcept), this may throw:
  // false only means no permit was free; a failure (LK_ECLOSED, a lost
  // connection...) throws latchkey::error rather than pass for "no permit".
  bool try_acquire() { return try_for(0); }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period> &d) {
    return try_for(detail::to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_for(detail::until_ms(tp));
  }
  void release(int64_t update = 1) {
    detail::check(lk_blocking_semaphore_release(s_, update), "lk_blocking_semaphore_release");
  }
  int64_t available() {
    int64_t n = lk_blocking_semaphore_available(s_);
    detail::check(n < 0 ? static_cast<int>(n) : 0, "lk_blocking_semaphore_available");
    return n;
  }
  // Permits the calling thread holds, no round trip.
  int64_t held() const noexcept { return lk_blocking_semaphore_held(s_); }
  lk_blocking_semaphore_t *native_handle() const noexcept { return s_; }

private:
  bool try_for(int64_t ms) {
    return detail::timed(lk_blocking_handle_try(h_, ms), "lk_blocking_handle_try");
  }
  lk_blocking_semaphore_t *s_ = nullptr;
};

} // namespace latchkey

#endif // LATCHKEY_HPP
