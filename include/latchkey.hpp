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

// ---- mutex (the reentrant lock, docs/lock.md) -------------------------------------

// TimedLockable. Re-entry by the owning thread counts, as in Redisson.
// unlock() never throws (it runs in std::lock_guard's destructor): a
// failed release is kept for last_unlock_error(); unlock_checked() throws.
class mutex {
public:
  mutex(client &c, const std::string &name) : b_(c.shared_handle()) {
    detail::check(lk_blocking_lock_new(b_.get(), name.c_str(), &l_),
                  "lk_blocking_lock_new");
  }
  ~mutex() { lk_blocking_lock_close(l_); }
  mutex(const mutex &) = delete;
  mutex &operator=(const mutex &) = delete;

  void lock() { detail::check(lk_blocking_lock_acquire(l_, nullptr), "lk_blocking_lock_acquire"); }
  bool try_lock() { return detail::timed(lk_blocking_lock_try(l_, 0), "lk_blocking_lock_try"); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return detail::timed(lk_blocking_lock_try(l_, detail::to_ms(d)), "lk_blocking_lock_try");
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return detail::timed(lk_blocking_lock_try(l_, detail::until_ms(tp)), "lk_blocking_lock_try");
  }
  void unlock() noexcept { last_unlock_error_ = lk_blocking_lock_release(l_); }
  void unlock_checked() { detail::check(lk_blocking_lock_release(l_), "lk_blocking_lock_release"); }
  // The last unlock()'s failure (0 when it released; LK_ELEASELOST when
  // the lease had been lost while held). Per object, not per thread.
  int last_unlock_error() const noexcept { return last_unlock_error_.load(); }

  // The calling thread's view, no round trip.
  bool is_held() const noexcept { return lk_blocking_lock_is_held(l_) == 1; }
  uint32_t hold_count() const noexcept { return lk_blocking_lock_hold_count(l_); }
  lk_blocking_lock_t *native_handle() const noexcept { return l_; }

private:
  detail::shared_blocking b_; // first: closed after the handle
  lk_blocking_lock_t *l_ = nullptr;
  std::atomic<int> last_unlock_error_{0};
};

// ---- redlock (a quorum of independent masters, docs/multilock.md) ------------------

// TimedLockable over masters.size() masters, one client each on the
// client's loop thread (made here, closed by the destructor). Re-entry by
// the owning thread counts, as RedLock's does (the lean layout throws
// LK_EINVAL). unlock() never throws, as mutex::unlock.
class redlock {
public:
  redlock(client &c, const std::vector<lk_client_opts_t> &masters, const std::string &name,
          const lk_redlock_config_t *cfg = nullptr)
      : b_(c.shared_handle()) {
    detail::check(lk_blocking_redlock_new(b_.get(), masters.data(), masters.size(),
                                          name.c_str(), cfg, &r_),
                  "lk_blocking_redlock_new");
  }
  ~redlock() { lk_blocking_redlock_close(r_); }
  redlock(const redlock &) = delete;
  redlock &operator=(const redlock &) = delete;

  void lock() {
    detail::check(lk_blocking_redlock_acquire(r_, nullptr), "lk_blocking_redlock_acquire");
  }
  bool try_lock() { return try_for(0); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return try_for(detail::to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_for(detail::until_ms(tp));
  }
  void unlock() noexcept { last_unlock_error_ = lk_blocking_redlock_release(r_); }
  void unlock_checked() {
    detail::check(lk_blocking_redlock_release(r_), "lk_blocking_redlock_release");
  }
  int last_unlock_error() const noexcept { return last_unlock_error_.load(); }

  // The calling thread's view, no round trip.
  bool is_held() const noexcept { return lk_blocking_redlock_is_held(r_) == 1; }
  uint32_t hold_count() const noexcept { return lk_blocking_redlock_hold_count(r_); }
  lk_blocking_redlock_t *native_handle() const noexcept { return r_; }

private:
  bool try_for(int64_t ms) {
    return detail::timed(lk_blocking_redlock_try(r_, ms), "lk_blocking_redlock_try");
  }
  detail::shared_blocking b_; // first: closed after the handle
  lk_blocking_redlock_t *r_ = nullptr;
  std::atomic<int> last_unlock_error_{0};
};

// ---- shared_mutex (the read/write lock, docs/rwlock.md) ------------------------------

// SharedTimedLockable: the write side is lock(), the read side
// lock_shared(). unlock()/unlock_shared() never throw, as mutex::unlock.
class shared_mutex {
public:
  shared_mutex(client &c, const std::string &name) : b_(c.shared_handle()) {
    detail::check(lk_blocking_rwlock_new(b_.get(), name.c_str(), &rw_),
                  "lk_blocking_rwlock_new");
  }
  ~shared_mutex() { lk_blocking_rwlock_close(rw_); }
  shared_mutex(const shared_mutex &) = delete;
  shared_mutex &operator=(const shared_mutex &) = delete;

  void lock() { acquire(LK_RW_WRITE); }
  bool try_lock() { return try_for(LK_RW_WRITE, 0); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return try_for(LK_RW_WRITE, detail::to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_for(LK_RW_WRITE, detail::until_ms(tp));
  }
  void unlock() noexcept { last_unlock_error_ = lk_blocking_rwlock_release(rw_, LK_RW_WRITE); }

  void lock_shared() { acquire(LK_RW_READ); }
  bool try_lock_shared() { return try_for(LK_RW_READ, 0); }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) {
    return try_for(LK_RW_READ, detail::to_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &tp) {
    return try_for(LK_RW_READ, detail::until_ms(tp));
  }
  void unlock_shared() noexcept { last_unlock_error_ = lk_blocking_rwlock_release(rw_, LK_RW_READ); }

  int last_unlock_error() const noexcept { return last_unlock_error_.load(); }
  bool is_held(lk_rwlock_side_t side) const noexcept {
    return lk_blocking_rwlock_is_held(rw_, side) == 1;
  }
  lk_blocking_rwlock_t *native_handle() const noexcept { return rw_; }

private:
  void acquire(lk_rwlock_side_t side) {
    detail::check(lk_blocking_rwlock_acquire(rw_, side, nullptr), "lk_blocking_rwlock_acquire");
  }
  bool try_for(lk_rwlock_side_t side, int64_t ms) {
    return detail::timed(lk_blocking_rwlock_try(rw_, side, ms), "lk_blocking_rwlock_try");
  }
  detail::shared_blocking b_; // first: closed after the handle
  lk_blocking_rwlock_t *rw_ = nullptr;
  std::atomic<int> last_unlock_error_{0}; // readers unlock at once
};

// ---- counting_semaphore (docs/semaphore.md) ------------------------------------------

// As std::counting_semaphore, but distributed and with its permits counted
// per thread: release() gives back permits the calling thread took (it
// throws error(LK_ENOTHELD) otherwise). The count is set once with
// try_set_permits (Redisson's trySetPermits).
class counting_semaphore {
public:
  counting_semaphore(client &c, const std::string &name) : b_(c.shared_handle()) {
    detail::check(lk_blocking_semaphore_new(b_.get(), name.c_str(), &s_),
                  "lk_blocking_semaphore_new");
  }
  ~counting_semaphore() { lk_blocking_semaphore_close(s_); }
  counting_semaphore(const counting_semaphore &) = delete;
  counting_semaphore &operator=(const counting_semaphore &) = delete;

  // True when this call set the count, false when it was set already.
  bool try_set_permits(int64_t permits) {
    int rc = lk_blocking_semaphore_try_set_permits(s_, permits);
    detail::check(rc, "lk_blocking_semaphore_try_set_permits");
    return rc == 1;
  }
  void acquire() {
    detail::check(lk_blocking_semaphore_acquire(s_, nullptr), "lk_blocking_semaphore_acquire");
  }
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
    return detail::timed(lk_blocking_semaphore_try(s_, 1, ms), "lk_blocking_semaphore_try");
  }
  detail::shared_blocking b_; // first: closed after the handle
  lk_blocking_semaphore_t *s_ = nullptr;
};

} // namespace latchkey

#endif // LATCHKEY_HPP
