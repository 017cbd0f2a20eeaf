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

#include "glue.h"
#include "latchkey/errno.h"
#include "latchkey/leader.h"

namespace lkn {

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

// ---- cores ----------------------------------------------------------------

ClientCore::ClientCore(Instance *i) : in(i) {
  Retain(in);
  in->live_clients++;
  in->clients.insert(this);
}
ClientCore::~ClientCore() {
  if (in->tearing_down)
    closing_cb.SuppressDestruct(); // napi's env may be gone
  in->clients.erase(this);
  in->live_clients--;
  Release(in);
}
// Connecting is not counted in Instance::busy: a first connection that
// never succeeds emits no event to stop counting on, and connect() keeps
// the process alive with its own timer until it settles.

// Re-reads what this object holds and does: pins or unpins the JS side,
// counts or uncounts it for keep-alive. Closing (C object alive, h gone)
// counts until the close callback, so the hold is given back before the
// loop may stop. A leader that observes is pinned and counted too: its
// events are what the program waits for.
void Core::SyncBusy() {
  bool keep = Held() || observing;
  if (keep != pinned) {
    pinned = keep;
    if (!in->tearing_down) { // else napi frees the references itself
      Napi::HandleScope hs(env); // may run from a libuv callback
      uint32_t n;
      for (napi_ref r : {self, target}) {
        if (r == nullptr)
          continue;
        if (keep)
          napi_reference_ref(env, r, &n);
        else
          napi_reference_unref(env, r, &n);
      }
    }
  }
  bool want = !pending.IsEmpty() || keep || (c_alive && h == nullptr);
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
void Core::WatchLease(int64_t ms) {
  if (lease_timer == nullptr) {
    lease_timer = new uv_timer_t;
    uv_timer_init(in->loop, lease_timer);
    uv_unref((uv_handle_t *)lease_timer);
    lease_timer->data = this;
  }
  lease_retry_ms = 10;
  uv_timer_start(lease_timer, LeaseTimerCb, (uint64_t)ms + 1, 0);
}
void Core::LeaseTimerCb(uv_timer_t *t) {
  Core *c = static_cast<Core *>(t->data);
  c->SyncBusy();
  if (c->pinned && c->lease_retry_ms <= 2560) {
    uv_timer_start(t, LeaseTimerCb, c->lease_retry_ms, 0);
    c->lease_retry_ms *= 2;
  }
}
void Core::StopLeaseTimer() {
  if (lease_timer == nullptr)
    return;
  uv_close((uv_handle_t *)lease_timer, [](uv_handle_t *t) { delete (uv_timer_t *)t; });
  lease_timer = nullptr;
}
void Core::MaybeFree() {
  if (!c_alive && !wrapper_alive) {
    Instance *i = in;
    if (counted)
      Busy(in, -1);
    if (in->tearing_down) {
      pending.SuppressDestruct(); // napi's env may be gone: it frees these
      close_cb.SuppressDestruct();
    } else if (target != nullptr) {
      napi_delete_reference(env, target);
    }
    delete this;
    i->live_objects--;
    Release(i);
  }
}

int Core::StartClose() {
  lk_handle_set_lost_cb(h, nullptr, nullptr); // LK_EINVAL for kinds without
  lk_handle_set_health_cb(h, nullptr, nullptr);
  int rc = lk_handle_close(h, [](lk_handle_t *hh) {
    static_cast<Core *>(lk_handle_get_data(hh))->CGone();
  });
  if (rc == 0) {
    h = nullptr;
    SyncBusy(); // counted until the close callback: the holds go back first
  }
  return rc;
}

// The C object is gone (its close callback ran, or close_all finished).
// A group (MultiLock, RedLock) no longer borrows its members and clients:
// those whose JS objects were collected meanwhile are closed now. Not
// from inside a client's close_all, which has freed them already.
void Core::CGone() {
  h = nullptr;
  c_alive = false;
  StopLeaseTimer();
  if (group != nullptr) {
    auto &g = group->members;
    for (size_t i = 0; i < g.size(); i++)
      if (g[i] == this) {
        g.erase(g.begin() + (long)i);
        break;
      }
    group = nullptr;
  }
  std::vector<Core *> ms;
  ms.swap(members);
  for (Core *m : ms) {
    m->group = nullptr;
    if (m->deferred_close && m->h != nullptr && m->client && !m->client->closing &&
        m->StartClose() != 0)
      m->h = nullptr; // cannot happen once the group is gone; never leave it half
  }
  std::vector<std::shared_ptr<ClientCore>> cls;
  cls.swap(group_clients);
  for (auto &cc : cls)
    if (cc->deferred_close && cc->c != nullptr && !cc->closing)
      StartClientClose(cc);
  if (client)
    client->objects.erase(this);
  SyncBusy();
  if (!close_cb.IsEmpty()) {
    Napi::Env e(env);
    if (in->tearing_down) {
      close_cb.SuppressDestruct(); // napi's env may be gone
    } else {
      Napi::FunctionReference cb = std::move(close_cb);
      CallIntoJs(e, in, [&] { cb.Call({}); });
    }
  }
  MaybeFree();
}

void Core::Complete(int status) {
  Napi::Env e(env);
  const Verb *verb = pending_verb;
  pending_verb = nullptr;
  CallIntoJs(e, in, [&] {
    Napi::FunctionReference cb = std::move(pending);
    int64_t result = 0;
    if (h != nullptr && (status == 0 || status == LK_ETIMEDOUT))
      lk_handle_result(h, &result);
    std::string text = (status != 0 && h != nullptr) ? lk_handle_error_text(h) : "";
    Napi::Value extra = verb && verb->extra ? verb->extra(this, e, status) : e.Undefined();
    if (status == 0 && acquire_lease > 0 && Held())
      WatchLease(acquire_lease);
    SyncBusy();
    if (self != nullptr) {
      uint32_t n;
      napi_reference_unref(env, self, &n);
    }
    if (!cb.IsEmpty())
      cb.Call({CodeValue(e, status), Napi::Number::New(e, (double)result),
               Napi::String::New(e, text), extra});
  });
}

void Core::Emit(const char *name, int status, Napi::Value extra) {
  Napi::Env e(env);
  if (target == nullptr || in->events.IsEmpty())
    return;
  CallIntoJs(e, in, [&] {
    napi_value obj;
    if (napi_get_reference_value(env, target, &obj) != napi_ok || obj == nullptr)
      return;
    in->events.Call({obj, Napi::String::New(e, name), CodeValue(e, status),
                     Napi::String::New(e, ""), extra.IsEmpty() ? e.Undefined() : extra});
  });
}

void Core::Lost(int status) {
  // The event first: the hold pins the target until SyncBusy sees it gone.
  Emit("lost", status, Napi::Value());
  SyncBusy();
}

// A hold's health (latchkey/handle.h): 'atRisk' then 'safe' or 'lost', each
// with the ms left before the hold's local deadline.
void Core::Health(lk_health_t state, int64_t ms_left) {
  Napi::Env e(env);
  Napi::HandleScope scope(e);
  Emit(state == LK_HEALTH_AT_RISK ? "atRisk" : "safe", 0, Napi::Number::New(e, (double)ms_left));
}

Napi::Error LkError(Napi::Env env, int rc, const char *what) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + lk_strerror(rc));
  e.Set("code", Napi::String::New(env, lk_err_name(rc)));
  return e;
}

// close_all: every open object ends with its pending callback (canceled),
// then the client; cores whose wrapper is already gone are freed.
// Returns lk_client_close_all's code: 0 when the close started.
int StartClientClose(std::shared_ptr<ClientCore> cc) {
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
    if (core_->c != nullptr && !core_->closing && StartClientClose(core_) == LK_EBUSY)
      core_->deferred_close = true; // a group made from another client borrows it
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

  Napi::Value Close(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (core_->c == nullptr || core_->closing)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    if (info[0].IsFunction())
      core_->closing_cb = Napi::Persistent(info[0].As<Napi::Function>());
    int rc = StartClientClose(core_);
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
  static int CloseForTeardown(ClientCore *cc) {
    if (cc->c == nullptr || cc->closing)
      return 0;
    return StartClientClose(cc->shared_from_this());
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
                        InstanceMethod("holdCount", &NativeObject::HoldCount),
                        InstanceMethod("info", &NativeObject::Info),
                        InstanceMethod("observe", &NativeObject::Observe),
                        InstanceMethod("observeStop", &NativeObject::ObserveStop)});
  }

  // new NativeObject(kind, nativeClient, name, target, arg): arg is what
  // the kind needs beyond a client and a name (src/kinds.cc).
  NativeObject(const Napi::CallbackInfo &info) : Napi::ObjectWrap<NativeObject>(info) {
    Napi::Env env = info.Env();
    const Kind *k = FindKind(info[0].ToString().Utf8Value());
    std::shared_ptr<ClientCore> cc = NativeClient::CoreOfValue(info[1]);
    if (k == nullptr || !cc || !info[2].IsString()) {
      LkError(env, LK_EINVAL, "latchkey: new object").ThrowAsJavaScriptException();
      return;
    }
    if (cc->c == nullptr || cc->closing) {
      LkError(env, LK_ECLOSED, "latchkey: new object").ThrowAsJavaScriptException();
      return;
    }
    NewArgs a;
    a.client = cc;
    a.name = info[2].As<Napi::String>().Utf8Value();
    a.arg = info[4];
    lk_handle_t *h = nullptr;
    int rc = k->create(a, &h);
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
    // A group runs on its first member's (first master's) client, which
    // close_all closes it with: its core is that client's object.
    std::shared_ptr<ClientCore> owner = cc;
    for (auto &x : a.clients)
      if (x->c == lk_handle_client(h))
        owner = x;
    c_->client = owner;
    c_->h = h;
    c_->c_alive = true;
    c_->members = a.members;
    for (Core *m : a.members)
      m->group = c_;
    c_->group_clients = a.clients;
    napi_create_reference(env, Value(), 0, &c_->self);
    if (info[3].IsObject())
      napi_create_reference(env, info[3], 0, &c_->target);
    lk_handle_set_data(h, c_);
    // LK_EINVAL for the kinds that hold nothing that can be lost.
    lk_handle_set_lost_cb(h, [](lk_handle_t *, int st, void *arg) {
      static_cast<Core *>(arg)->Lost(st);
    }, c_);
    lk_handle_set_health_cb(h, [](lk_handle_t *, lk_health_t st, int64_t ms_left, void *arg) {
      static_cast<Core *>(arg)->Health(st, ms_left);
    }, c_);
    owner->objects.insert(c_);
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
      // stay counted until the close callback, which frees the core. A
      // MultiLock's member refuses (LK_EBUSY) until the MultiLock is gone,
      // which closes it then.
      int rc = c_->StartClose();
      if (rc == 0)
        return;
      if (rc == LK_EBUSY && c_->group != nullptr) {
        c_->deferred_close = true;
        return;
      }
    }
    c_->MaybeFree();
  }

  static Core *CoreOfValue(Napi::Value v) {
    if (!v.IsObject())
      return nullptr;
    NativeObject *no = Unwrap(v.As<Napi::Object>());
    return no ? no->c_ : nullptr;
  }

private:
  // op(verb, ...args, cb): returns null (started; cb(code, result, text,
  // extra) follows once) or the code it was refused with at once.
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
    const Verb *found = nullptr;
    for (const Verb *v = c_->k->verbs; v->name != nullptr; v++)
      if (verb == v->name)
        found = v;
    if (found == nullptr)
      return Napi::String::New(env, lk_err_name(LK_EINVAL));
    c_->pending = Napi::Persistent(info[n - 1].As<Napi::Function>());
    c_->pending_verb = found;
    c_->acquire_lease = 0; // an acquire verb sets its fixed lease
    int rc = found->fn(c_, info);
    if (rc != 0) {
      c_->pending.Reset();
      c_->pending_verb = nullptr;
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
    int rc = lk_handle_cancel(c_->h);
    return rc == 0 ? info.Env().Null() : Napi::String::New(info.Env(), lk_err_name(rc));
  }
  Napi::Value Close(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    int rc = c_->StartClose();
    if (rc != 0)
      return Napi::String::New(env, lk_err_name(rc));
    if (info[0].IsFunction())
      c_->close_cb = Napi::Persistent(info[0].As<Napi::Function>());
    return env.Null();
  }
  Napi::Value IsHeld(const Napi::CallbackInfo &info) {
    return Napi::Boolean::New(info.Env(), c_ && c_->Held());
  }
  // A BigInt: tokens are server counters (INCR), exact to 2^63 - 1, which
  // a Number is not beyond 2^53. A leader's is its term.
  Napi::Value Token(const Napi::CallbackInfo &info) {
    int64_t t = c_ && c_->h ? lk_handle_token(c_->h) : 0;
    return Napi::BigInt::New(info.Env(), t > 0 ? t : 0); // < 0: a kind without tokens
  }
  Napi::Value HoldCount(const Napi::CallbackInfo &info) {
    Napi::Value v = Info(info, "holdCount");
    return v.IsNumber() ? v : Napi::Number::New(info.Env(), 0);
  }
  Napi::Value Info(const Napi::CallbackInfo &info) {
    return Info(info, info[0].ToString().Utf8Value());
  }
  Napi::Value Info(const Napi::CallbackInfo &info, const std::string &what) {
    if (c_ == nullptr || c_->k->info == nullptr)
      return info.Env().Undefined();
    return c_->k->info(c_, info.Env(), what);
  }

  // A leader's observe(): 'change' events ({ term, value }) until
  // observeStop() or close, then 'observeEnd'. Not an operation: the
  // object may campaign meanwhile.
  Napi::Value Observe(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    lk_leader_t *l = lk_handle_as_leader(c_->h);
    if (l == nullptr)
      return Napi::String::New(env, lk_err_name(LK_EINVAL));
    int rc = lk_leader_observe(l, ObserveCb, c_);
    if (rc != 0)
      return Napi::String::New(env, lk_err_name(rc));
    c_->observing = true;
    c_->SyncBusy();
    return env.Null();
  }
  Napi::Value ObserveStop(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (c_ == nullptr || c_->h == nullptr)
      return Napi::String::New(env, lk_err_name(LK_ECLOSED));
    lk_leader_t *l = lk_handle_as_leader(c_->h);
    int rc = l ? lk_leader_observe_stop(l) : LK_EINVAL;
    return rc == 0 ? env.Null() : Napi::String::New(env, lk_err_name(rc));
  }
  static void ObserveCb(lk_leader_t *l, int status, void *arg) {
    Core *c = static_cast<Core *>(arg);
    if (status != 0) { // the last call: observing ended
      c->observing = false;
      if (!c->in->tearing_down)
        c->Emit("observeEnd", status, Napi::Value());
      c->SyncBusy();
      return;
    }
    if (c->in->tearing_down)
      return;
    Napi::Env env(c->env);
    Napi::HandleScope hs(env);
    Napi::Object o = Napi::Object::New(env);
    int64_t term = lk_leader_observed_term(l);
    const char *value = lk_leader_observed_value(l);
    o.Set("term", Napi::BigInt::New(env, term > 0 ? term : 0));
    o.Set("value", value ? Napi::Value(Napi::String::New(env, value)) : env.Null());
    c->Emit("change", 0, o);
  }

  Core *c_ = nullptr;
};

Core *CoreOfObjectValue(Napi::Value v) { return NativeObject::CoreOfValue(v); }
std::shared_ptr<ClientCore> CoreOfClientValue(Napi::Value v) { return NativeClient::CoreOfValue(v); }

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
  // A client a group made from another client borrows refuses (LK_EBUSY)
  // until that client is closing: another pass closes it then.
  std::vector<ClientCore *> open(in->clients.begin(), in->clients.end());
  while (!open.empty()) {
    std::vector<ClientCore *> refused;
    for (ClientCore *cc : open)
      if (NativeClient::CloseForTeardown(cc) == LK_EBUSY)
        refused.push_back(cc);
    if (refused.size() == open.size())
      break; // no progress: cannot happen, as a group's own client closes
    open.swap(refused);
  }
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

} // namespace lkn

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return lkn::Init(env, exports); }

NODE_API_MODULE(latchkey, InitModule)
