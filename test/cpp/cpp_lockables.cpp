// include/latchkey.hpp (docs/cpp.md): the standard lock types work on
// latchkey's mutex, shared_mutex, redlock and counting_semaphore, threads exclude
// each other, timed tries are bounded, errors carry latchkey's category.
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "latchkey.hpp"
#include "redis_server.h"
#include "test.h"

namespace {

struct server {
  rt_server_t *srv = rt_server_start(nullptr);
  ~server() { rt_server_stop(srv); }
  lk_client_opts_t opts() const {
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    o.port = rt_server_port(srv);
    return o;
  }
};

// Runs f on another thread and waits for it.
template <class F> void on_thread(F f) { std::thread(f).join(); }

} // namespace

TEST(mutex_works_with_standard_locks) {
  server s;
  lk_client_opts_t o = s.opts();
  latchkey::client c(&o);
  latchkey::mutex m(c, "cpp_mutex");
  latchkey::mutex other(c, "cpp_mutex_2");
  {
    std::lock_guard<latchkey::mutex> g(m);
    ASSERT(m.is_held());
    // Another thread is another owner: its tries fail, the timed one in
    // about its time.
    on_thread([&] {
      ASSERT(!m.try_lock());
      auto t0 = std::chrono::steady_clock::now();
      ASSERT(!m.try_lock_for(std::chrono::milliseconds(200)));
      auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
      ASSERT_GE(took, 190);
      ASSERT_LE(took, rt_scaled_ms(3000));
      ASSERT(!m.try_lock_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    });
    // Re-entry by the owner counts.
    std::unique_lock<latchkey::mutex> again(m, std::try_to_lock);
    ASSERT(again.owns_lock());
    ASSERT_EQ(m.hold_count(), 2u);
  }
  ASSERT(!m.is_held());
  ASSERT_EQ(m.last_unlock_error(), 0);
  {
    std::scoped_lock both(m, other);
    ASSERT(m.is_held());
    ASSERT(other.is_held());
  }
  on_thread([&] {
    std::unique_lock<latchkey::mutex> l(m, std::chrono::milliseconds(100));
    ASSERT(l.owns_lock());
  });
}

TEST(shared_mutex_works_with_shared_lock) {
  server s;
  lk_client_opts_t o = s.opts();
  latchkey::client c(&o);
  latchkey::shared_mutex rw(c, "cpp_rw");
  {
    std::shared_lock<latchkey::shared_mutex> r(rw);
    ASSERT(rw.is_held(LK_RW_READ));
    on_thread([&] {
      {
        std::shared_lock<latchkey::shared_mutex> r2(rw, std::try_to_lock);
        ASSERT(r2.owns_lock()); // readers share
      }
      ASSERT(!rw.try_lock_for(std::chrono::milliseconds(50))); // a reader holds
    });
  }
  {
    std::unique_lock<latchkey::shared_mutex> w(rw);
    on_thread([&] {
      ASSERT(!rw.try_lock_shared());
      ASSERT(!rw.try_lock_shared_for(std::chrono::milliseconds(50)));
    });
  }
  ASSERT_EQ(rw.last_unlock_error(), 0);
  // Asking for the write side while holding the read side is an error
  // (LK_EUPGRADE), not a wait that could never end.
  {
    std::shared_lock<latchkey::shared_mutex> r(rw);
    int code = 0;
    try {
      rw.lock();
    } catch (const latchkey::error &e) {
      code = e.code_value();
    }
    ASSERT_EQ(code, LK_EUPGRADE);
  }
}

TEST(counting_semaphore_acquire_release) {
  server s;
  lk_client_opts_t o = s.opts();
  latchkey::client c(&o);
  latchkey::counting_semaphore sem(c, "cpp_sem");
  ASSERT(sem.try_set_permits(1));
  ASSERT(!sem.try_set_permits(5));
  sem.acquire();
  ASSERT_EQ(sem.held(), 1);
  on_thread([&] { ASSERT(!sem.try_acquire_for(std::chrono::milliseconds(50))); });
  sem.release();
  on_thread([&] {
    ASSERT(sem.try_acquire());
    sem.release();
  });
  ASSERT_EQ(sem.available(), 1);
}

TEST(redlock_works_with_standard_locks) {
  server s[3];
  std::vector<lk_client_opts_t> masters;
  for (auto &one : s)
    masters.push_back(one.opts());
  latchkey::client c(&masters[0]);
  latchkey::redlock r(c, masters, "cpp_redlock");
  {
    std::lock_guard<latchkey::redlock> g(r);
    ASSERT(r.is_held());
    // The acquire ends once a quorum granted: the third master's answer may
    // still be on its way (it is kept when it comes), so two of three here.
    int holding = 0;
    for (auto &one : s)
      holding += rt_cmd_int(one.srv, "EXISTS cpp_redlock") == 1;
    ASSERT(holding >= 2);
    on_thread([&] { ASSERT(!r.try_lock_for(std::chrono::milliseconds(100))); });
    std::unique_lock<latchkey::redlock> again(r, std::try_to_lock);
    ASSERT(again.owns_lock());
    ASSERT_EQ(r.hold_count(), 2u);
    // A second acquire starts only once every master of the first answered,
    // and asks all three: now each one holds it.
    for (auto &one : s)
      ASSERT_EQ(rt_cmd_int(one.srv, "EXISTS cpp_redlock"), 1);
  }
  ASSERT(!r.is_held());
  // A master that answers the release after the RedLock's node timeout (a
  // loaded machine) gives its key back in the background: bounded wait.
  auto keys_left = [&] {
    int n = 0;
    for (auto &one : s)
      n += rt_cmd_int(one.srv, "EXISTS cpp_redlock") == 1;
    return n;
  };
  int64_t gone_by = rt_now_ms() + rt_scaled_ms(5000);
  while (keys_left() != 0 && rt_now_ms() < gone_by)
    rt_sleep_ms(5);
  ASSERT_EQ(keys_left(), 0);
  on_thread([&] {
    std::unique_lock<latchkey::redlock> u(r, std::chrono::seconds(5));
    ASSERT(u.owns_lock());
  });
}

TEST(errors_carry_latchkey_category) {
  server s;
  lk_client_opts_t o = s.opts();
  latchkey::client c(&o);
  ASSERT(std::strcmp(latchkey::category().name(), "latchkey") == 0);
  int code = 0;
  try {
    latchkey::mutex bad(c, "");
  } catch (const latchkey::error &e) {
    code = e.code_value();
    ASSERT(e.code().category() == latchkey::category());
    ASSERT(e.code().message() == lk_strerror(LK_EINVAL));
  }
  ASSERT_EQ(code, LK_EINVAL);
  latchkey::mutex m(c, "cpp_err");
  code = 0;
  try {
    m.unlock_checked(); // not held
  } catch (const std::system_error &e) {
    code = e.code().value();
  }
  ASSERT_EQ(code, LK_ENOTHELD);
  m.unlock(); // never throws; the failure is kept
  ASSERT_EQ(m.last_unlock_error(), LK_ENOTHELD);
}

// The objects share the blocking client: one may outlive the client
// object, whose destructor then leaves the close to the last object (before,
// the mutex's destructor used a freed client: a crash under ASan).
TEST(objects_may_outlive_the_client_object) {
  server s;
  lk_client_opts_t o = s.opts();
  std::unique_ptr<latchkey::mutex> m;
  {
    latchkey::client c(&o);
    m = std::make_unique<latchkey::mutex>(c, "cpp_outlive");
  } // the client object goes first
  m->lock();
  ASSERT(m->is_held());
  m->unlock();
  ASSERT_EQ(m->last_unlock_error(), 0);
  m.reset(); // closes the handle, then the blocking client
  ASSERT_EQ(rt_cmd_int(s.srv, "EXISTS cpp_outlive"), 0);
}

// Durations beyond LK_MAX_TIME_MS are clamped, not overflowed: a try "for
// ever" on a free lock takes it at once (before, hours::max() wrapped to a
// negative wait: a try that never waited, or undefined behaviour).
TEST(huge_durations_are_clamped) {
  server s;
  lk_client_opts_t o = s.opts();
  latchkey::client c(&o);
  latchkey::mutex m(c, "cpp_huge");
  ASSERT(m.try_lock_for(std::chrono::hours::max()));
  m.unlock();
  ASSERT(m.try_lock_for(std::chrono::duration<double>(std::numeric_limits<double>::infinity())));
  m.unlock();
  // Held by this thread: another thread's clamped try waits, and a cancel
  // ends it (the wait was long, not wrapped to nothing).
  m.lock();
  std::atomic<uint64_t> tid{0};
  std::atomic<int> code{0};
  std::thread t([&] {
    tid = latchkey::client::thread_id();
    try {
      ASSERT(!m.try_lock_for(std::chrono::hours::max()));
    } catch (const latchkey::error &e) {
      code = e.code_value();
    }
  });
  int64_t deadline = rt_now_ms() + rt_scaled_ms(5000);
  bool canceled = false;
  while (!canceled && rt_now_ms() < deadline) {
    if (tid != 0)
      canceled = c.cancel(tid); // false until the thread is blocked in it
    if (!canceled)
      rt_sleep_ms(5);
  }
  t.join();
  ASSERT(canceled);
  ASSERT_EQ(code.load(), LK_ECANCELED);
  m.unlock();
}

// The codes with a portable meaning compare equal to std::errc.
TEST(codes_map_to_portable_conditions) {
  ASSERT(latchkey::make_error_code(LK_ETIMEDOUT) == std::errc::timed_out);
  ASSERT(latchkey::make_error_code(LK_ECANCELED) == std::errc::operation_canceled);
  ASSERT(latchkey::make_error_code(LK_ENOMEM) == std::errc::not_enough_memory);
  ASSERT(latchkey::make_error_code(LK_ENOTHELD) != std::errc::timed_out);
  ASSERT(latchkey::make_error_code(LK_ENOTHELD).default_error_condition().category() ==
         latchkey::category());
}
