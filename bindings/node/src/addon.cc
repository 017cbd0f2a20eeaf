// latchkey's N-API glue: clients and objects run on Node's own libuv loop
// (napi_get_uv_event_loop). Thin and generic on purpose: every kind goes
// through one Core (lifetime, pending operation, lost event, keep-alive) and
// a small table of per-kind functions; lib/index.js turns the callbacks into
// promises and EventEmitters.
//
// Lifetime. A Core belongs to the C object and to its JS wrapper, and is
// freed when both are gone: the wrapper's finalizer (GC) closes an open C
// object (lk_X_close: holds given back), and the C object's close callback,
// or the client's close_all, ends the C side. A pending operation holds a
// strong reference to the wrapper, so no object is collected mid-operation,
// and so does a hold (with the JS object events go to, and through it the
// client): an unreachable lock that is held is still a lock, so GC only
// ever closes objects that hold nothing.
//
// Keep-alive. Every handle the library opens is unreferenced at birth
// (src/unref_shim.h); one uv_async_t here is referenced while any object
// has an operation pending, holds something or is closing, or a client is
// closing, so Node exits once nothing is held or waited on. A fixed lease
// ends with no callback (its local deadline passes): a timer per object,
// armed by such a grant, looks again then.
#include <napi.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <uv.h>

#include <memory>
#include <string>
#include <unordered_set>

#include "latchkey/client.h"
#include "latchkey/errno.h"
#include "latchkey/fair.h"
#include "latchkey/latch.h"
#include "latchkey/lock.h"
#include "latchkey/rwlock.h"
#include "latchkey/semaphore.h"

namespace {

struct Core;
struct ClientCore;

// Per Node environment (the main thread, or one worker).
struct Instance {
  napi_env env = nullptr;
  uv_loop_t *loop = nullptr;
  uv_async_t keep;
  int64_t busy = 0;
  napi_async_context actx = nullptr;
  Napi::FunctionReference events; // events(target, name, code, text)
  Napi::ObjectReference resource; // the async resource of every callback
  // The environment's end (src: AsyncTeardown): no more calls into JS;
  // every client still open is closed before the loop goes away.
  bool tearing_down = false;
  napi_async_cleanup_hook_handle hook = nullptr;
  std::unordered_set<ClientCore *> clients; // every client core alive
  int64_t closes_pending = 0;                // lk_client_close_all under way
  // Freed when the last of these is gone: the teardown (1), every client
  // core and every object core (napi may finalize wrappers after the
  // teardown hook ended).
  int64_t refs = 1;
  // Live cores, for the tests' leak check (native.liveCounts()).
  int64_t live_clients = 0, live_objects = 0;
};

void Retain(Instance *in) { in->refs++; }
void Release(Instance *in) {
  if (--in->refs == 0)
    delete in;
}

void FinishTeardown(Instance *in);

void Busy(Instance *in, int delta) {
  int64_t before = in->busy;
  in->busy += delta;
  if (in->tearing_down)
    return; // the keep-alive handle is closing or closed
  if (before == 0 && in->busy > 0)
    uv_ref((uv_handle_t *)&in->keep);
  else if (before > 0 && in->busy == 0)
    uv_unref((uv_handle_t *)&in->keep);
}

// Runs fn inside a callback scope, so promises settled by it run their
// continuations when it returns (a bare call from a libuv callback would
// leave them queued); a throw becomes an uncaught exception.
template <typename F> void CallIntoJs(Napi::Env env, Instance *in, F fn) {
  if (in->tearing_down)
    return; // JavaScript is gone: nobody awaits these promises
  Napi::HandleScope hs(env);
  napi_callback_scope scope;
  if (napi_open_callback_scope(env, in->resource.Value(), in->actx, &scope) != napi_ok)
    return;
  fn();
  if (env.IsExceptionPending())
    napi_fatal_exception(env, env.GetAndClearPendingException().Value());
  napi_close_callback_scope(env, scope);
}

Napi::Value CodeValue(Napi::Env env, int status) {
  return status == 0 ? env.Null() : Napi::String::New(env, lk_err_name(status));
}

// ---- per-kind tables ------------------------------------------------------

using VerbFn = int (*)(Core *c, const Napi::CallbackInfo &info);

struct Verb {
  const char *name;
  VerbFn fn;
};

struct Kind {
  const char *name;
  int (*create)(lk_client_t *, const char *, void **);
  int (*close)(void *);
  int (*cancel)(void *);
  int (*is_held)(const void *);
  int64_t (*result)(const void *);
  const char *(*error_text)(const void *);
  int (*set_lost)(void *, bool on); // nullptr: the kind has no lease
  const Verb *verbs;
};

// ---- Core -----------------------------------------------------------------

struct ClientCore : std::enable_shared_from_this<ClientCore> {
  explicit ClientCore(Instance *i) : in(i) {
    Retain(in);
    in->live_clients++;
    in->clients.insert(this);
  }
  ~ClientCore() {
    if (in->tearing_down)
      closing_cb.SuppressDestruct(); // napi's env may be gone
    in->clients.erase(this);
    in->live_clients--;
    Release(in);
  }
  Instance *in;
  napi_env env;
  lk_client_t *c = nullptr;
  napi_ref self = nullptr;               // weak: the JS client, for events
  std::unordered_set<Core *> objects;    // open C objects of this client
  Napi::FunctionReference closing_cb;    // close()'s callback while closing
  bool closing = false;
  // Connecting is not counted in Instance::busy: a first connection that
  // never succeeds emits no event to stop counting on, and connect() keeps
  // the process alive with its own timer until it settles.
};

struct Core {
  const Kind *k;
  Instance *in;
  napi_env env;
  std::shared_ptr<ClientCore> client;
  void *h = nullptr;             // the C object; nullptr once closed
  bool c_alive = false;          // C object not yet freed
  bool wrapper_alive = true;
  bool counted = false;          // counted in Instance::busy
  bool pinned = false;           // self and target strong: something is held
  napi_ref self = nullptr;       // the native wrapper (strong while pending or held)
  napi_ref target = nullptr;     // the JS object events go to (strong while held)
  Napi::FunctionReference pending;
  int64_t acquire_lease = 0;     // the pending acquire's fixed lease (ms), or 0
  uv_timer_t *lease_timer = nullptr; // armed by a fixed-lease grant (unreferenced)
  uint64_t lease_retry_ms = 0;

  bool Held() const { return h != nullptr && k->is_held(h); }
  // Re-reads what this object holds and does: pins or unpins the JS side,
  // counts or uncounts it for keep-alive. Closing (C object alive, h gone)
  // counts until the close callback, so the hold is given back before the
  // loop may stop.
  void SyncBusy() {
    bool held = Held();
    if (held != pinned) {
      pinned = held;
      if (!in->tearing_down) { // else napi frees the references itself
        Napi::HandleScope hs(env); // may run from a libuv callback
        uint32_t n;
        for (napi_ref r : {self, target}) {
          if (r == nullptr)
            continue;
          if (held)
            napi_reference_ref(env, r, &n);
          else
            napi_reference_unref(env, r, &n);
        }
      }
    }
    bool want = !pending.IsEmpty() || held || (c_alive && h == nullptr);
    if (want != counted) {
      Busy(in, want ? 1 : -1);
      counted = want;
    }
  }
  // A fixed lease's hold ends at its local deadline, which is at or before
  // the grant's arrival + the lease: look again then. Later than that (the
  // loop's clock is coarser than the library's, or a later grant extended
  // the hold) it looks again at growing intervals, a bounded number of times;
  // a later fixed-lease grant re-arms it, a renewed one ends by Lost.
  void WatchLease(int64_t ms) {
    if (lease_timer == nullptr) {
      lease_timer = new uv_timer_t;
      uv_timer_init(in->loop, lease_timer);
      uv_unref((uv_handle_t *)lease_timer);
      lease_timer->data = this;
    }
    lease_retry_ms = 10;
    uv_timer_start(lease_timer, LeaseTimerCb, (uint64_t)ms + 1, 0);
  }
  static void LeaseTimerCb(uv_timer_t *t) {
    Core *c = static_cast<Core *>(t->data);
    c->SyncBusy();
    if (c->pinned && c->lease_retry_ms <= 2560) {
      uv_timer_start(t, LeaseTimerCb, c->lease_retry_ms, 0);
      c->lease_retry_ms *= 2;
    }
  }
  void StopLeaseTimer() {
    if (lease_timer == nullptr)
      return;
    uv_close((uv_handle_t *)lease_timer, [](uv_handle_t *t) { delete (uv_timer_t *)t; });
    lease_timer = nullptr;
  }
  void MaybeFree() {
    if (!c_alive && !wrapper_alive) {
      Instance *i = in;
      if (counted)
        Busy(in, -1);
      if (in->tearing_down) {
        pending.SuppressDestruct(); // napi's env may be gone: it frees these
      } else if (target != nullptr) {
        napi_delete_reference(env, target);
      }
      delete this;
      i->live_objects--;
      Release(i);
    }
  }
  // The C object is gone (its close callback ran, or close_all finished).
  void CGone() {
    h = nullptr;
    c_alive = false;
    StopLeaseTimer();
    if (client)
      client->objects.erase(this);
    SyncBusy();
    MaybeFree();
  }
  void Complete(int status);
  void Lost(int status);
};

template <typename T> Core *CoreOf(T *h);

void Core::Complete(int status) {
  Napi::Env e(env);
  CallIntoJs(e, in, [&] {
    Napi::FunctionReference cb = std::move(pending);
    int64_t result = (status == 0 && h != nullptr) ? k->result(h) : 0;
    std::string text = (status != 0 && h != nullptr) ? k->error_text(h) : "";
    if (status == 0 && acquire_lease > 0 && Held())
      WatchLease(acquire_lease);
    SyncBusy();
    if (self != nullptr) {
      uint32_t n;
      napi_reference_unref(env, self, &n);
    }
    if (!cb.IsEmpty())
      cb.Call({CodeValue(e, status), Napi::Number::New(e, (double)result),
               Napi::String::New(e, text)});
  });
}

void Core::Lost(int status) {
  Napi::Env e(env);
  // The event first: the hold pins the target until SyncBusy sees it gone.
  if (target != nullptr && !in->events.IsEmpty()) {
    CallIntoJs(e, in, [&] {
      napi_value obj;
      if (napi_get_reference_value(env, target, &obj) != napi_ok || obj == nullptr)
        return;
      in->events.Call({obj, Napi::String::New(e, "lost"), CodeValue(e, status),
                       Napi::String::New(e, "")});
    });
  }
  SyncBusy();
}

// Trampolines shared by every kind: operation callbacks get the Core as arg.
template <typename T> void OpCb(T *, int status, void *arg) {
  static_cast<Core *>(arg)->Complete(status);
}
template <typename T> void LostCb(T *, int status, void *arg) {
  static_cast<Core *>(arg)->Lost(status);
}

// ---- kinds ----------------------------------------------------------------

// A verb's i-th argument (info[0] is the verb's name).
int64_t Int(const Napi::CallbackInfo &info, size_t i) {
  Napi::Value v = info[i + 1];
  return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : 0;
}

#define LK_KIND_COMMON(X)                                                      \
  int X##_close(void *h) {                                                    \
    return lk_##X##_close((lk_##X##_t *)h, [](lk_##X##_t *o) {                \
      static_cast<Core *>(lk_##X##_get_data(o))->CGone();                     \
    });                                                                        \
  }                                                                            \
  int X##_cancel(void *h) { return lk_##X##_cancel((lk_##X##_t *)h); }        \
  int64_t X##_result(const void *h) {                                         \
    return lk_##X##_result((const lk_##X##_t *)h);                            \
  }                                                                            \
  const char *X##_error_text(const void *h) {                                 \
    return lk_##X##_error_text((const lk_##X##_t *)h);                        \
  }
#define LK_KIND_LOST(X)                                                        \
  int X##_set_lost(void *h, bool on) {                                        \
    lk_##X##_t *o = (lk_##X##_t *)h;                                          \
    return lk_##X##_set_lost_cb(o, on ? LostCb<lk_##X##_t> : nullptr,         \
                                lk_##X##_get_data(o));                        \
  }
#define LK_OP(X) OpCb<lk_##X##_t>, c
#define H(X) ((lk_##X##_t *)c->h)

// lock: acquire(wait, lease, fenced), release(), forceRelease(), isLocked(),
// remainingTtl().
LK_KIND_COMMON(lock)
LK_KIND_LOST(lock)
int lock_create(lk_client_t *cl, const char *name, void **out) {
  return lk_lock_new(cl, name, (lk_lock_t **)out);
}
int lock_is_held(const void *h) { return lk_lock_is_held((const lk_lock_t *)h); }
int lock_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = Int(info, 0);
  o.lease_ms = Int(info, 1);
  o.fenced = Int(info, 2) != 0;
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_lock_acquire(H(lock), &o, LK_OP(lock));
}
int lock_release(Core *c, const Napi::CallbackInfo &) { return lk_lock_release(H(lock), LK_OP(lock)); }
int lock_force(Core *c, const Napi::CallbackInfo &) { return lk_lock_force_release(H(lock), LK_OP(lock)); }
int lock_is_locked(Core *c, const Napi::CallbackInfo &) { return lk_lock_is_locked(H(lock), LK_OP(lock)); }
int lock_ttl(Core *c, const Napi::CallbackInfo &) { return lk_lock_remaining_ttl(H(lock), LK_OP(lock)); }
const Verb lock_verbs[] = {{"acquire", lock_acquire}, {"release", lock_release},
                           {"forceRelease", lock_force}, {"isLocked", lock_is_locked},
                           {"remainingTtl", lock_ttl}, {nullptr, nullptr}};

// fair: the same verbs, plus queueLength().
LK_KIND_COMMON(fair)
LK_KIND_LOST(fair)
int fair_create(lk_client_t *cl, const char *name, void **out) {
  return lk_fair_new(cl, name, (lk_fair_t **)out);
}
int fair_is_held(const void *h) { return lk_fair_is_held((const lk_fair_t *)h); }
int fair_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = Int(info, 0);
  o.lease_ms = Int(info, 1);
  o.fenced = Int(info, 2) != 0;
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_fair_acquire(H(fair), &o, LK_OP(fair));
}
int fair_release(Core *c, const Napi::CallbackInfo &) { return lk_fair_release(H(fair), LK_OP(fair)); }
int fair_force(Core *c, const Napi::CallbackInfo &) { return lk_fair_force_release(H(fair), LK_OP(fair)); }
int fair_is_locked(Core *c, const Napi::CallbackInfo &) { return lk_fair_is_locked(H(fair), LK_OP(fair)); }
int fair_ttl(Core *c, const Napi::CallbackInfo &) { return lk_fair_remaining_ttl(H(fair), LK_OP(fair)); }
int fair_queue(Core *c, const Napi::CallbackInfo &) { return lk_fair_queue_length(H(fair), LK_OP(fair)); }
const Verb fair_verbs[] = {{"acquire", fair_acquire}, {"release", fair_release},
                           {"forceRelease", fair_force}, {"isLocked", fair_is_locked},
                           {"remainingTtl", fair_ttl}, {"queueLength", fair_queue},
                           {nullptr, nullptr}};

// rwlock: acquire(side, wait, lease, fenced), release(side), forceRelease(),
// mode(); side is LK_RW_READ (1) or LK_RW_WRITE (2).
LK_KIND_COMMON(rwlock)
LK_KIND_LOST(rwlock)
int rwlock_create(lk_client_t *cl, const char *name, void **out) {
  return lk_rwlock_new(cl, name, (lk_rwlock_t **)out);
}
int rwlock_is_held(const void *h) {
  return lk_rwlock_is_held((const lk_rwlock_t *)h, LK_RW_READ) ||
         lk_rwlock_is_held((const lk_rwlock_t *)h, LK_RW_WRITE);
}
int rwlock_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_rwlock_opts_t o;
  lk_rwlock_opts_init(&o);
  o.wait_ms = Int(info, 1);
  o.lease_ms = Int(info, 2);
  o.fenced = Int(info, 3) != 0;
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_rwlock_acquire(H(rwlock), (lk_rwlock_side_t)Int(info, 0), &o, LK_OP(rwlock));
}
int rwlock_release(Core *c, const Napi::CallbackInfo &info) {
  return lk_rwlock_release(H(rwlock), (lk_rwlock_side_t)Int(info, 0), LK_OP(rwlock));
}
int rwlock_force(Core *c, const Napi::CallbackInfo &) { return lk_rwlock_force_release(H(rwlock), LK_OP(rwlock)); }
int rwlock_mode(Core *c, const Napi::CallbackInfo &) { return lk_rwlock_mode(H(rwlock), LK_OP(rwlock)); }
const Verb rwlock_verbs[] = {{"acquire", rwlock_acquire}, {"release", rwlock_release},
                             {"forceRelease", rwlock_force}, {"mode", rwlock_mode},
                             {nullptr, nullptr}};

// semaphore: acquire(permits, wait), release(permits), trySetPermits(n),
// addPermits(n), available().
LK_KIND_COMMON(semaphore)
int semaphore_create(lk_client_t *cl, const char *name, void **out) {
  return lk_semaphore_new(cl, name, (lk_semaphore_t **)out);
}
int semaphore_is_held(const void *h) { return lk_semaphore_held((const lk_semaphore_t *)h) > 0; }
int semaphore_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_semaphore_opts_t o;
  lk_semaphore_opts_init(&o);
  o.permits = Int(info, 0);
  o.wait_ms = Int(info, 1);
  return lk_semaphore_acquire(H(semaphore), &o, LK_OP(semaphore));
}
int semaphore_release(Core *c, const Napi::CallbackInfo &info) {
  return lk_semaphore_release(H(semaphore), Int(info, 0), LK_OP(semaphore));
}
int semaphore_set(Core *c, const Napi::CallbackInfo &info) {
  return lk_semaphore_try_set_permits(H(semaphore), Int(info, 0), LK_OP(semaphore));
}
int semaphore_add(Core *c, const Napi::CallbackInfo &info) {
  return lk_semaphore_add_permits(H(semaphore), Int(info, 0), LK_OP(semaphore));
}
int semaphore_available(Core *c, const Napi::CallbackInfo &) {
  return lk_semaphore_available(H(semaphore), LK_OP(semaphore));
}
const Verb semaphore_verbs[] = {{"acquire", semaphore_acquire}, {"release", semaphore_release},
                                {"trySetPermits", semaphore_set}, {"addPermits", semaphore_add},
                                {"available", semaphore_available}, {nullptr, nullptr}};

// latch: trySetCount(n), countDown(), getCount(), await(wait), delete().
LK_KIND_COMMON(latch)
int latch_create(lk_client_t *cl, const char *name, void **out) {
  return lk_latch_new(cl, name, nullptr, (lk_latch_t **)out);
}
int latch_is_held(const void *) { return 0; }
int latch_set(Core *c, const Napi::CallbackInfo &info) {
  return lk_latch_try_set_count(H(latch), Int(info, 0), LK_OP(latch));
}
int latch_down(Core *c, const Napi::CallbackInfo &) { return lk_latch_count_down(H(latch), LK_OP(latch)); }
int latch_get(Core *c, const Napi::CallbackInfo &) { return lk_latch_get_count(H(latch), LK_OP(latch)); }
int latch_await(Core *c, const Napi::CallbackInfo &info) {
  return lk_latch_await(H(latch), Int(info, 0), LK_OP(latch));
}
int latch_delete(Core *c, const Napi::CallbackInfo &) { return lk_latch_delete(H(latch), LK_OP(latch)); }
const Verb latch_verbs[] = {{"trySetCount", latch_set}, {"countDown", latch_down},
                            {"getCount", latch_get}, {"await", latch_await},
                            {"delete", latch_delete}, {nullptr, nullptr}};

#define LK_KIND(X, LOST)                                                       \
  {#X, X##_create, X##_close, X##_cancel, X##_is_held, X##_result,           \
   X##_error_text, LOST, X##_verbs}
const Kind kinds[] = {LK_KIND(lock, lock_set_lost), LK_KIND(fair, fair_set_lost),
                      LK_KIND(rwlock, rwlock_set_lost), LK_KIND(semaphore, nullptr),
                      LK_KIND(latch, nullptr)};

// set_data differs per kind only in its type; one switch keeps Core generic.
void SetData(const Kind *k, void *h, Core *c) {
  std::string n = k->name;
  if (n == "lock") lk_lock_set_data((lk_lock_t *)h, c);
  else if (n == "fair") lk_fair_set_data((lk_fair_t *)h, c);
  else if (n == "rwlock") lk_rwlock_set_data((lk_rwlock_t *)h, c);
  else if (n == "semaphore") lk_semaphore_set_data((lk_semaphore_t *)h, c);
  else if (n == "latch") lk_latch_set_data((lk_latch_t *)h, c);
}

Napi::Error LkError(Napi::Env env, int rc, const char *what) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + lk_strerror(rc));
  e.Set("code", Napi::String::New(env, lk_err_name(rc)));
  return e;
}

// ---- the native client ----------------------------------------------------

class NativeClient : public Napi::ObjectWrap<NativeClient> {
public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeClient",
                       {InstanceMethod("close", &NativeClient::Close),
                        InstanceMethod("isConnected", &NativeClient::IsConnected),
                        InstanceMethod("id", &NativeClient::Id),
                        InstanceMethod("errorText", &NativeClient::ErrorText)});
  }

  // new NativeClient(url | null, opts, target)
  NativeClient(const Napi::CallbackInfo &info) : Napi::ObjectWrap<NativeClient>(info) {
    Napi::Env env = info.Env();
    Instance *in = env.GetInstanceData<Instance>();
    core_ = std::make_shared<ClientCore>(in);
    core_->env = env;
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    std::string url, client_name, ca, cert, key, sn;
    if (info[0].IsString()) {
      url = info[0].As<Napi::String>().Utf8Value();
      o.url = url.c_str();
    }
    if (info[1].IsObject()) {
      Napi::Object opts = info[1].As<Napi::Object>();
      auto num = [&](const char *n, int64_t &dst) {
        Napi::Value v = opts.Get(n);
        if (v.IsNumber())
          dst = v.As<Napi::Number>().Int64Value();
      };
      num("connectTimeout", o.connect_timeout_ms);
      num("replyTimeout", o.reply_timeout_ms);
      num("defaultLease", o.default_lease_ms);
      num("heartbeat", o.heartbeat_ms);
      num("busyPollUs", o.busy_poll_us);
      auto str = [&](const char *n, std::string &keep, const char *&dst) {
        Napi::Value v = opts.Get(n);
        if (v.IsString()) {
          keep = v.As<Napi::String>().Utf8Value();
          dst = keep.c_str();
        }
      };
      str("clientName", client_name, o.client_name);
      str("tlsCaFile", ca, o.tls.ca_file);
      str("tlsCertFile", cert, o.tls.cert_file);
      str("tlsKeyFile", key, o.tls.key_file);
      str("tlsServerName", sn, o.tls.server_name);
      Napi::Value v = opts.Get("tlsVerify");
      if (v.IsBoolean())
        o.tls.verify_peer = v.As<Napi::Boolean>().Value() ? 1 : 0;
    }
    o.on_event = OnEvent;
    o.event_arg = core_.get();
    int rc = lk_client_new(in->loop, &o, &core_->c);
    if (rc != 0) {
      LkError(env, rc, "latchkey.connect").ThrowAsJavaScriptException();
      return;
    }
    if (info[2].IsObject())
      napi_create_reference(env, info[2], 0, &core_->self);
  }

  ~NativeClient() override {
    // GC of a client nobody closed: close everything it still has.
    if (core_->self != nullptr) {
      napi_delete_reference(core_->env, core_->self);
      core_->self = nullptr;
    }
    if (core_->c != nullptr && !core_->closing)
      StartClose(core_);
  }

  static std::shared_ptr<ClientCore> CoreOfValue(Napi::Value v) {
    if (!v.IsObject())
      return nullptr;
    NativeClient *nc = Unwrap(v.As<Napi::Object>());
    return nc ? nc->core_ : nullptr;
  }

private:
  static void OnEvent(lk_client_t *cl, lk_event_t ev, void *arg) {
    ClientCore *cc = static_cast<ClientCore *>(arg);
    const char *name = ev == LK_EVENT_CONNECTED      ? "connected"
                       : ev == LK_EVENT_SUSPENDED     ? "suspended"
                       : ev == LK_EVENT_RECONNECTED   ? "reconnected"
                       : ev == LK_EVENT_SERVER_RESTARTED ? "serverRestarted"
                                                       : "topologyChanged";
    if (cc->self == nullptr || cc->in->events.IsEmpty())
      return;
    Napi::Env env(cc->env);
    CallIntoJs(env, cc->in, [&] {
      napi_value obj;
      if (napi_get_reference_value(cc->env, cc->self, &obj) != napi_ok || obj == nullptr)
        return;
      cc->in->events.Call({obj, Napi::String::New(env, name), env.Null(),
                           Napi::String::New(env, lk_client_error_text(cl))});
    });
  }

  // close_all: every open object ends with its pending callback (canceled),
  // then the client; cores whose wrapper is already gone are freed.
  // Returns lk_client_close_all's code: 0 when the close started.
  static int StartClose(std::shared_ptr<ClientCore> cc) {
    cc->closing = true;
    cc->in->closes_pending++;
    Busy(cc->in, 1);
    // The C client holds the last reference until its close callback.
    auto *keep = new std::shared_ptr<ClientCore>(cc);
    lk_client_set_data(cc->c, keep);
    int rc = lk_client_close_all(cc->c, [](lk_client_t *cl) {
      auto *keep = static_cast<std::shared_ptr<ClientCore> *>(lk_client_get_data(cl));
      std::shared_ptr<ClientCore> cc = *keep;
      delete keep;
      cc->c = nullptr;
      std::unordered_set<Core *> objs;
      objs.swap(cc->objects);
      for (Core *o : objs) {
        o->client.reset();
        o->CGone();
      }
      Busy(cc->in, -1);
      if (!cc->closing_cb.IsEmpty()) {
        Napi::Env env(cc->env);
        Napi::FunctionReference cb = std::move(cc->closing_cb);
        CallIntoJs(env, cc->in, [&] { cb.Call({env.Null()}); });
      }
      if (--cc->in->closes_pending == 0 && cc->in->tearing_down)
        FinishTeardown(cc->in);
    });
    if (rc != 0) {
      delete keep;
      cc->in->closes_pending--;
      Busy(cc->in, -1);
      cc->closing = false;
    }
    return rc;
  }

  Napi::Value Close(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (core_->c == nullptr || core_->closing)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    if (info[0].IsFunction())
      core_->closing_cb = Napi::Persistent(info[0].As<Napi::Function>());
    int rc = StartClose(core_);
    if (rc != 0) {
      core_->closing_cb.Reset();
      return Napi::String::New(env, lk_err_name(rc));
    }
    return env.Null();
  }
  Napi::Value IsConnected(const Napi::CallbackInfo &info) {
    bool up = core_->c != nullptr && lk_client_is_connected(core_->c);
    return Napi::Boolean::New(info.Env(), up);
  }
  Napi::Value Id(const Napi::CallbackInfo &info) {
    return core_->c ? Napi::String::New(info.Env(), lk_client_id(core_->c)) : info.Env().Null();
  }
  Napi::Value ErrorText(const Napi::CallbackInfo &info) {
    return Napi::String::New(info.Env(), core_->c ? lk_client_error_text(core_->c) : "");
  }

  std::shared_ptr<ClientCore> core_;

public:
  static void CloseForTeardown(ClientCore *cc) {
    if (cc->c != nullptr && !cc->closing)
      StartClose(cc->shared_from_this());
  }
};

// ---- the native object (every kind) ---------------------------------------

class NativeObject : public Napi::ObjectWrap<NativeObject> {
public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeObject",
                       {InstanceMethod("op", &NativeObject::Op),
                        InstanceMethod("cancel", &NativeObject::Cancel),
                        InstanceMethod("close", &NativeObject::Close),
                        InstanceMethod("isHeld", &NativeObject::IsHeld),
                        InstanceMethod("token", &NativeObject::Token),
                        InstanceMethod("holdCount", &NativeObject::HoldCount)});
  }

  // new NativeObject(kind, nativeClient, name, target)
  NativeObject(const Napi::CallbackInfo &info) : Napi::ObjectWrap<NativeObject>(info) {
    Napi::Env env = info.Env();
    std::string kind = info[0].ToString().Utf8Value();
    const Kind *k = nullptr;
    for (const Kind &x : kinds)
      if (kind == x.name)
        k = &x;
    std::shared_ptr<ClientCore> cc = NativeClient::CoreOfValue(info[1]);
    if (k == nullptr || !cc || !info[2].IsString()) {
      LkError(env, LK_EINVAL, "latchkey: new object").ThrowAsJavaScriptException();
      return;
    }
    if (cc->c == nullptr || cc->closing) {
      LkError(env, LK_ECLOSED, "latchkey: new object").ThrowAsJavaScriptException();
      return;
    }
    std::string name = info[2].As<Napi::String>().Utf8Value();
    void *h = nullptr;
    int rc = k->create(cc->c, name.c_str(), &h);
    if (rc != 0) {
      LkError(env, rc, ("latchkey: " + std::string(k->name)).c_str()).ThrowAsJavaScriptException();
      return;
    }
    c_ = new Core();
    c_->k = k;
    c_->in = cc->in;
    Retain(cc->in);
    cc->in->live_objects++;
    c_->env = env;
    c_->client = cc;
    c_->h = h;
    c_->c_alive = true;
    napi_create_reference(env, Value(), 0, &c_->self);
    if (info[3].IsObject())
      napi_create_reference(env, info[3], 0, &c_->target);
    SetData(k, h, c_);
    if (k->set_lost)
      k->set_lost(h, true);
    cc->objects.insert(c_);
  }

  ~NativeObject() override {
    if (c_ == nullptr)
      return;
    napi_delete_reference(c_->env, c_->self);
    c_->self = nullptr;
    c_->wrapper_alive = false;
    if (c_->h != nullptr) {
      // Collected while open: it holds nothing (a hold pins the wrapper),
      // unless the environment is ending; close it (holds given back) and
      // stay counted until the close callback, which frees the core.
      if (c_->k->set_lost)
        c_->k->set_lost(c_->h, false);
      if (c_->k->close(c_->h) == 0) {
        c_->h = nullptr;
        c_->SyncBusy();
        return;
      }
    }
    c_->MaybeFree();
  }

private:
  // op(verb, ...args, cb): returns null (started; cb(code, result, text)
  // follows once) or the code it was refused with at once.
  Napi::Value Op(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    if (!c_->pending.IsEmpty())
      return Napi::String::New(env, lk_err_name(LK_EBUSY));
    std::string verb = info[0].ToString().Utf8Value();
    size_t n = info.Length();
    if (n < 2 || !info[n - 1].IsFunction())
      return Napi::String::New(env, lk_err_name(LK_EINVAL));
    VerbFn fn = nullptr;
    for (const Verb *v = c_->k->verbs; v->name != nullptr; v++)
      if (verb == v->name)
        fn = v->fn;
    if (fn == nullptr)
      return Napi::String::New(env, lk_err_name(LK_EINVAL));
    c_->pending = Napi::Persistent(info[n - 1].As<Napi::Function>());
    c_->acquire_lease = 0; // an acquire verb sets its fixed lease
    int rc = fn(c_, info);
    if (rc != 0) {
      c_->pending.Reset();
      return Napi::String::New(env, lk_err_name(rc));
    }
    uint32_t cnt;
    napi_reference_ref(env, c_->self, &cnt); // no GC while pending
    c_->SyncBusy();
    return env.Null();
  }

  Napi::Value Cancel(const Napi::CallbackInfo &info) {
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(info.Env(), lk_err_name(LK_ECLOSED));
    int rc = c_->k->cancel(c_->h);
    return rc == 0 ? info.Env().Null() : Napi::String::New(info.Env(), lk_err_name(rc));
  }
  Napi::Value Close(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    if (c_->k->set_lost)
      c_->k->set_lost(c_->h, false);
    int rc = c_->k->close(c_->h);
    if (rc != 0)
      return Napi::String::New(env, lk_err_name(rc));
    c_->h = nullptr;
    c_->SyncBusy(); // counted until the close callback: the holds go back first
    return env.Null();
  }
  Napi::Value IsHeld(const Napi::CallbackInfo &info) {
    return Napi::Boolean::New(info.Env(), c_ && c_->h && c_->k->is_held(c_->h));
  }
  // A BigInt: tokens are server counters (INCR), exact to 2^63 - 1, which
  // a Number is not beyond 2^53.
  Napi::Value Token(const Napi::CallbackInfo &info) {
    int64_t t = 0;
    if (c_ && c_->h) {
      std::string n = c_->k->name;
      if (n == "lock") t = lk_lock_token((lk_lock_t *)c_->h);
      else if (n == "fair") t = lk_fair_token((lk_fair_t *)c_->h);
      else if (n == "rwlock") t = lk_rwlock_token((lk_rwlock_t *)c_->h);
    }
    return Napi::BigInt::New(info.Env(), t);
  }
  Napi::Value HoldCount(const Napi::CallbackInfo &info) {
    int64_t t = 0;
    if (c_ && c_->h) {
      std::string n = c_->k->name;
      if (n == "lock") t = lk_lock_hold_count((lk_lock_t *)c_->h);
      else if (n == "fair") t = lk_fair_hold_count((lk_fair_t *)c_->h);
      else if (n == "semaphore") t = lk_semaphore_held((lk_semaphore_t *)c_->h);
    }
    return Napi::Number::New(info.Env(), (double)t);
  }

  Core *c_ = nullptr;
};

// ---- module ---------------------------------------------------------------

Napi::Value LiveCounts(const Napi::CallbackInfo &info) {
  Instance *in = info.Env().GetInstanceData<Instance>();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("clients", Napi::Number::New(info.Env(), (double)in->live_clients));
  o.Set("objects", Napi::Number::New(info.Env(), (double)in->live_objects));
  return o;
}

Napi::Value SetEvents(const Napi::CallbackInfo &info) {
  Instance *in = info.Env().GetInstanceData<Instance>();
  in->events = Napi::Persistent(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

#define LK_STR2(x) #x
#define LK_STR(x) LK_STR2(x)
#define LK_UV_HEADER_VERSION                                                   \
  LK_STR(UV_VERSION_MAJOR) "." LK_STR(UV_VERSION_MINOR) "." LK_STR(UV_VERSION_PATCH)

// The Instance outlives napi's instance-data finalizer: Teardown frees it.
void KeepInstance(Napi::Env, Instance *) {}

// The last step of the teardown: the keep-alive handle closes, then Node
// may close the loop.
void FinishTeardown(Instance *in) {
  uv_close((uv_handle_t *)&in->keep, [](uv_handle_t *h) {
    Instance *in = static_cast<Instance *>(h->data);
    napi_remove_async_cleanup_hook(in->hook);
    Release(in);
  });
}

// At the environment's end (process exit, a worker's end), Node waits for
// this hook: every client still open is closed with lk_client_close_all
// (its handles leave the loop, which a worker's end closes; handles left
// behind there crashed the process), then the keep-alive handle.
void AsyncTeardown(napi_async_cleanup_hook_handle hook, void *arg) {
  Instance *in = static_cast<Instance *>(arg);
  in->hook = hook;
  in->tearing_down = true;
  // Node runs the loop while this hook is pending, but a loop with only
  // unreferenced handles returns at once: the keep-alive handle stays
  // referenced until the closes are done.
  uv_ref((uv_handle_t *)&in->keep);
  in->events.Reset();
  in->resource.Reset();
  napi_async_destroy(in->env, in->actx);
  std::unordered_set<ClientCore *> open = in->clients;
  for (ClientCore *cc : open)
    NativeClient::CloseForTeardown(cc);
  if (in->closes_pending == 0)
    FinishTeardown(in);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Built against Node's uv.h: the running libuv must not be older.
  if (uv_version() < (unsigned)UV_VERSION_HEX) {
    Napi::Error::New(env, std::string("latchkey: built for libuv ") + LK_UV_HEADER_VERSION +
                              ", running " + uv_version_string())
        .ThrowAsJavaScriptException();
    return exports;
  }
  auto *in = new Instance();
  in->env = env;
  napi_get_uv_event_loop(env, &in->loop);
  uv_async_init(in->loop, &in->keep, nullptr);
  in->keep.data = in;
  uv_unref((uv_handle_t *)&in->keep);
  in->resource = Napi::Persistent(Napi::Object::New(env));
  napi_async_init(env, in->resource.Value(), Napi::String::New(env, "latchkey"), &in->actx);
  env.SetInstanceData<Instance, KeepInstance>(in);
  napi_add_async_cleanup_hook(env, AsyncTeardown, in, nullptr);
  exports.Set("NativeClient", NativeClient::Init(env));
  exports.Set("NativeObject", NativeObject::Init(env));
  exports.Set("setEvents", Napi::Function::New(env, SetEvents));
  exports.Set("liveCounts", Napi::Function::New(env, LiveCounts));
  exports.Set("uvVersion", Napi::String::New(env, LK_UV_HEADER_VERSION));
  exports.Set("runningUvVersion", Napi::String::New(env, uv_version_string()));
  exports.Set("opensslVersion", Napi::String::New(env, OpenSSL_version(OPENSSL_VERSION)));
  exports.Set("opensslHeaderVersion", Napi::String::New(env, OPENSSL_VERSION_TEXT));
  return exports;
}

} // namespace

NODE_API_MODULE(latchkey, Init)
