// The addon's shared state (src/addon.cc: clients, objects, lifetime,
// keep-alive; src/kinds.cc: what differs per kind of object). Every object
// is one latchkey handle (latchkey/handle.h), so closing, canceling, the
// lost callback, is_held, the token and the result are the same code for
// every kind; a kind only says how it is made and what its verbs are.
#ifndef LATCHKEY_NODE_GLUE_H
#define LATCHKEY_NODE_GLUE_H

#include <napi.h>
#include <uv.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "latchkey/client.h"
#include "latchkey/errno.h"
#include "latchkey/handle.h"

namespace lkn {

struct Core;
struct ClientCore;

// Per Node environment (the main thread, or one worker).
struct Instance {
  napi_env env = nullptr;
  uv_loop_t *loop = nullptr;
  uv_async_t keep;
  int64_t busy = 0;
  napi_async_context actx = nullptr;
  Napi::FunctionReference events; // events(target, name, code, text, extra)
  Napi::ObjectReference resource; // the async resource of every callback
  // The environment's end (AsyncTeardown): no more calls into JS; every
  // client still open is closed before the loop goes away.
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

void Retain(Instance *in);
void Release(Instance *in);
void Busy(Instance *in, int delta);

// Runs fn inside a callback scope, so promises settled by it run their
// continuations when it returns; a throw becomes an uncaught exception.
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

inline Napi::Value CodeValue(Napi::Env env, int status) {
  return status == 0 ? env.Null() : Napi::String::New(env, lk_err_name(status));
}

// ---- per-kind tables ------------------------------------------------------

// A verb starts one operation (its callback: OpCb below) and returns the
// code it was refused with at once, or 0. info[0] is the verb's name.
using VerbFn = int (*)(Core *c, const Napi::CallbackInfo &info);
// What the promise gets besides the result number, read from the object in
// the operation's callback (permit ids, a term, dropped members...);
// undefined when nullptr.
using ExtraFn = Napi::Value (*)(Core *c, Napi::Env env, int status);

struct Verb {
  const char *name;
  VerbFn fn;
  ExtraFn extra;
};

// What new NativeObject(kind, client, name, target, arg) gives a kind's
// create; a group kind (MultiLock, RedLock) adds the cores it borrows.
struct NewArgs {
  std::shared_ptr<ClientCore> client;
  std::string name;
  Napi::Value arg;
  std::vector<Core *> members;                       // MultiLock: its locks
  std::vector<std::shared_ptr<ClientCore>> clients;  // every client it uses
};

struct Kind {
  const char *name;
  int (*create)(NewArgs &a, lk_handle_t **out);
  const Verb *verbs;
  // Synchronous reads (info(what)) beyond isHeld/token/holdCount; nullptr:
  // none. Returns undefined for a name it does not know.
  Napi::Value (*info)(Core *c, Napi::Env env, const std::string &what);
};

const Kind *FindKind(const std::string &name);

// Unwraps the native parts the group kinds borrow (src/addon.cc).
Core *CoreOfObjectValue(Napi::Value v);
std::shared_ptr<ClientCore> CoreOfClientValue(Napi::Value v);

// Starts lk_client_close_all; returns its code (0: started).
int StartClientClose(std::shared_ptr<ClientCore> cc);

// ---- cores ----------------------------------------------------------------

struct ClientCore : std::enable_shared_from_this<ClientCore> {
  explicit ClientCore(Instance *i);
  ~ClientCore();
  Instance *in;
  napi_env env;
  lk_client_t *c = nullptr;
  napi_ref self = nullptr;            // weak: the JS client, for events
  std::unordered_set<Core *> objects; // open C objects made from this client
  Napi::FunctionReference closing_cb; // close()'s callback while closing
  bool closing = false;
  // Its JS object was collected while a MultiLock or RedLock made from
  // another client still borrowed it (close_all: LK_EBUSY): that group's
  // end closes it (Core::CGone).
  bool deferred_close = false;
};

struct Core {
  const Kind *k;
  Instance *in;
  napi_env env;
  std::shared_ptr<ClientCore> client;
  lk_handle_t *h = nullptr;      // the C object; nullptr once closing
  bool c_alive = false;          // C object not yet freed
  bool wrapper_alive = true;
  bool counted = false;          // counted in Instance::busy
  bool pinned = false;           // self and target strong: held or observing
  bool observing = false;        // a leader's observe() until its last call
  napi_ref self = nullptr;       // the native wrapper (strong while pending or held)
  napi_ref target = nullptr;     // the JS object events go to (strong while held)
  Napi::FunctionReference pending;
  Napi::FunctionReference close_cb; // close()'s callback: called when the C object is gone
  const Verb *pending_verb = nullptr;
  int64_t acquire_lease = 0;     // the pending acquire's fixed lease (ms), or 0
  uv_timer_t *lease_timer = nullptr; // armed by a fixed-lease grant (unreferenced)
  uint64_t lease_retry_ms = 0;
  // A MultiLock's member lock is borrowed by it (its close is LK_EBUSY
  // meanwhile): group is that MultiLock; a member collected meanwhile is
  // closed when the group's C object is gone (deferred_close).
  Core *group = nullptr;
  std::vector<Core *> members;
  std::vector<std::shared_ptr<ClientCore>> group_clients;
  bool deferred_close = false;

  bool Held() const { return h != nullptr && lk_handle_is_held(h) == 1; }
  void SyncBusy();
  void WatchLease(int64_t ms);
  static void LeaseTimerCb(uv_timer_t *t);
  void StopLeaseTimer();
  void MaybeFree();
  void CGone();
  void Complete(int status);
  void Lost(int status);
  void Health(lk_health_t state, int64_t ms_left);
  // Emits name on the JS object (events(target, name, code, text, extra)).
  void Emit(const char *name, int status, Napi::Value extra);
  // Starts lk_handle_close (the lost callback removed first); h is nullptr
  // after 0.
  int StartClose();
};

// The operation callback of every typed API: the Core is its arg.
template <typename T> void OpCb(T *, int status, void *arg) {
  static_cast<Core *>(arg)->Complete(status);
}

// A verb's i-th argument (info[0] is the verb's name).
inline int64_t Int(const Napi::CallbackInfo &info, size_t i) {
  Napi::Value v = info[i + 1];
  return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : 0;
}
// A string argument kept by the caller for the call; false when absent.
inline bool Str(const Napi::CallbackInfo &info, size_t i, std::string &out) {
  Napi::Value v = info[i + 1];
  if (!v.IsString())
    return false;
  out = v.As<Napi::String>().Utf8Value();
  return true;
}

} // namespace lkn

#endif
