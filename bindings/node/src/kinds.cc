// What differs per kind of object: how it is made, its verbs (each starts
// one operation of the typed C API with OpCb as its callback), and what the
// promise gets besides the result number. Everything else (close, cancel,
// lost, is_held, token, result, error text) goes through the generic handle
// (latchkey/handle.h) in src/addon.cc.
#include "glue.h"

#include "latchkey/barrier.h"
#include "latchkey/errno.h"
#include "latchkey/fair.h"
#include "latchkey/latch.h"
#include "latchkey/leader.h"
#include "latchkey/lock.h"
#include "latchkey/multilock.h"
#include "latchkey/ratelimiter.h"
#include "latchkey/rwlock.h"
#include "latchkey/semaphore.h"

namespace lkn {
namespace {

#define LK_OP(X) OpCb<lk_##X##_t>, c
#define H(X) lk_handle_as_##X(c->h)

// The kinds made from one client and a name.
#define LK_SIMPLE_CREATE(X)                                                    \
  int X##_create(NewArgs &a, lk_handle_t **out) {                             \
    lk_##X##_t *o = nullptr;                                                   \
    int rc = lk_##X##_new(a.client->c, a.name.c_str(), &o);                    \
    if (rc == 0)                                                               \
      *out = lk_##X##_handle(o);                                               \
    return rc;                                                                 \
  }

Napi::Value Term(Napi::Env env, int64_t t) { return Napi::BigInt::New(env, t > 0 ? t : 0); }

Napi::Value NullableString(Napi::Env env, const char *s) {
  return s != nullptr ? Napi::String::New(env, s) : env.Null();
}

// ---- lock: acquire(wait, lease, fenced), release(), forceRelease(),
// isLocked(), remainingTtl() -----------------------------------------------
LK_SIMPLE_CREATE(lock)
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
const Verb lock_verbs[] = {{"acquire", lock_acquire, nullptr}, {"release", lock_release, nullptr},
                           {"forceRelease", lock_force, nullptr}, {"isLocked", lock_is_locked, nullptr},
                           {"remainingTtl", lock_ttl, nullptr}, {nullptr, nullptr, nullptr}};
Napi::Value lock_info(Core *c, Napi::Env env, const std::string &what) {
  if (what == "holdCount")
    return Napi::Number::New(env, c->h ? (double)lk_lock_hold_count(H(lock)) : 0);
  return env.Undefined();
}

// ---- fair: the lock's verbs and queueLength() ------------------------------
LK_SIMPLE_CREATE(fair)
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
const Verb fair_verbs[] = {{"acquire", fair_acquire, nullptr}, {"release", fair_release, nullptr},
                           {"forceRelease", fair_force, nullptr}, {"isLocked", fair_is_locked, nullptr},
                           {"remainingTtl", fair_ttl, nullptr}, {"queueLength", fair_queue, nullptr},
                           {nullptr, nullptr, nullptr}};
Napi::Value fair_info(Core *c, Napi::Env env, const std::string &what) {
  if (what == "holdCount")
    return Napi::Number::New(env, c->h ? (double)lk_fair_hold_count(H(fair)) : 0);
  return env.Undefined();
}

// ---- rwlock: acquire(side, wait, lease, fenced), release(side),
// forceRelease(), mode(); side is LK_RW_READ (1) or LK_RW_WRITE (2) --------
LK_SIMPLE_CREATE(rwlock)
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
const Verb rwlock_verbs[] = {{"acquire", rwlock_acquire, nullptr}, {"release", rwlock_release, nullptr},
                             {"forceRelease", rwlock_force, nullptr}, {"mode", rwlock_mode, nullptr},
                             {nullptr, nullptr, nullptr}};

// ---- semaphore: acquire(permits, wait), release(permits),
// trySetPermits(n), addPermits(n), available() -----------------------------
LK_SIMPLE_CREATE(semaphore)
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
const Verb semaphore_verbs[] = {{"acquire", semaphore_acquire, nullptr}, {"release", semaphore_release, nullptr},
                                {"trySetPermits", semaphore_set, nullptr}, {"addPermits", semaphore_add, nullptr},
                                {"available", semaphore_available, nullptr}, {nullptr, nullptr, nullptr}};
Napi::Value semaphore_info(Core *c, Napi::Env env, const std::string &what) {
  if (what == "holdCount")
    return Napi::Number::New(env, c->h ? (double)lk_semaphore_held(H(semaphore)) : 0);
  return env.Undefined();
}

// ---- psem: acquire(permits, wait, lease) resolves with the new permit
// ids; release(id | null), releaseId(id), updateLease(id | null, lease),
// trySetPermits(n), addPermits(n), available(), acquired() ------------------
LK_SIMPLE_CREATE(psem)
Napi::Value PermitIds(Core *c, Napi::Env env, size_t last) {
  lk_psem_t *p = H(psem);
  size_t n = p ? lk_psem_permit_count(p) : 0;
  if (last > n)
    last = n;
  Napi::Array ids = Napi::Array::New(env, last);
  for (size_t i = 0; i < last; i++)
    ids.Set((uint32_t)i, Napi::String::New(env, lk_psem_permit_id(p, n - last + i)));
  return ids;
}
Napi::Value psem_new_ids(Core *c, Napi::Env env, int status) {
  if (status != 0 || c->h == nullptr)
    return env.Undefined();
  return PermitIds(c, env, (size_t)lk_psem_result(H(psem)));
}
int psem_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_psem_opts_t o;
  lk_psem_opts_init(&o);
  o.permits = Int(info, 0);
  o.wait_ms = Int(info, 1);
  o.lease_ms = Int(info, 2);
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_psem_acquire(H(psem), &o, LK_OP(psem));
}
int psem_release(Core *c, const Napi::CallbackInfo &info) {
  std::string id;
  bool one = Str(info, 0, id);
  return lk_psem_release(H(psem), one ? id.c_str() : nullptr, LK_OP(psem));
}
int psem_release_id(Core *c, const Napi::CallbackInfo &info) {
  std::string id;
  if (!Str(info, 0, id))
    return LK_EINVAL;
  return lk_psem_release_id(H(psem), id.c_str(), LK_OP(psem));
}
int psem_update(Core *c, const Napi::CallbackInfo &info) {
  std::string id;
  bool one = Str(info, 0, id);
  return lk_psem_update_lease(H(psem), one ? id.c_str() : nullptr, Int(info, 1), LK_OP(psem));
}
int psem_set(Core *c, const Napi::CallbackInfo &info) {
  return lk_psem_try_set_permits(H(psem), Int(info, 0), LK_OP(psem));
}
int psem_add(Core *c, const Napi::CallbackInfo &info) {
  return lk_psem_add_permits(H(psem), Int(info, 0), LK_OP(psem));
}
int psem_available(Core *c, const Napi::CallbackInfo &) { return lk_psem_available(H(psem), LK_OP(psem)); }
int psem_acquired(Core *c, const Napi::CallbackInfo &) { return lk_psem_acquired(H(psem), LK_OP(psem)); }
const Verb psem_verbs[] = {{"acquire", psem_acquire, psem_new_ids}, {"release", psem_release, nullptr},
                           {"releaseId", psem_release_id, nullptr}, {"updateLease", psem_update, nullptr},
                           {"trySetPermits", psem_set, nullptr}, {"addPermits", psem_add, nullptr},
                           {"available", psem_available, nullptr}, {"acquired", psem_acquired, nullptr},
                           {nullptr, nullptr, nullptr}};
Napi::Value psem_info(Core *c, Napi::Env env, const std::string &what) {
  if (what == "holdCount")
    return Napi::Number::New(env, c->h ? (double)lk_psem_permit_count(H(psem)) : 0);
  if (what == "permitIds")
    return PermitIds(c, env, (size_t)-1);
  return env.Undefined();
}

// ---- latch: trySetCount(n), countDown(), getCount(), await(wait),
// delete() -----------------------------------------------------------------
int latch_create(NewArgs &a, lk_handle_t **out) {
  lk_latch_t *o = nullptr;
  int rc = lk_latch_new(a.client->c, a.name.c_str(), nullptr, &o);
  if (rc == 0)
    *out = lk_latch_handle(o);
  return rc;
}
int latch_set(Core *c, const Napi::CallbackInfo &info) {
  return lk_latch_try_set_count(H(latch), Int(info, 0), LK_OP(latch));
}
int latch_down(Core *c, const Napi::CallbackInfo &) { return lk_latch_count_down(H(latch), LK_OP(latch)); }
int latch_get(Core *c, const Napi::CallbackInfo &) { return lk_latch_get_count(H(latch), LK_OP(latch)); }
int latch_await(Core *c, const Napi::CallbackInfo &info) {
  return lk_latch_await(H(latch), Int(info, 0), LK_OP(latch));
}
int latch_delete(Core *c, const Napi::CallbackInfo &) { return lk_latch_delete(H(latch), LK_OP(latch)); }
const Verb latch_verbs[] = {{"trySetCount", latch_set, nullptr}, {"countDown", latch_down, nullptr},
                            {"getCount", latch_get, nullptr}, {"await", latch_await, nullptr},
                            {"delete", latch_delete, nullptr}, {nullptr, nullptr, nullptr}};

// ---- multilock: made from lock objects (arg: their native objects);
// acquire(wait, lease, fenced), release(). The member statuses of the last
// operation come with a failure. --------------------------------------------
int multilock_create(NewArgs &a, lk_handle_t **out) {
  if (!a.arg.IsArray())
    return LK_EINVAL;
  Napi::Array arr = a.arg.As<Napi::Array>();
  std::vector<lk_lock_t *> locks;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Core *m = CoreOfObjectValue(arr.Get(i));
    lk_lock_t *l = m && m->h ? lk_handle_as_lock(m->h) : nullptr;
    if (l == nullptr)
      return m && !m->h ? LK_ECLOSED : LK_EINVAL;
    locks.push_back(l);
    a.members.push_back(m);
    a.clients.push_back(m->client);
  }
  lk_multilock_t *o = nullptr;
  int rc = lk_multilock_new(locks.data(), locks.size(), &o);
  if (rc == 0)
    *out = lk_multilock_handle(o);
  return rc;
}
Napi::Value multilock_statuses(Core *c, Napi::Env env, int status) {
  lk_multilock_t *m = H(multilock);
  if (status == 0 || m == nullptr)
    return env.Undefined();
  size_t n = lk_multilock_size(m);
  Napi::Array out = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; i++)
    out.Set((uint32_t)i, CodeValue(env, lk_multilock_member_status(m, i)));
  return out;
}
int multilock_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_multilock_opts_t o;
  lk_multilock_opts_init(&o);
  o.wait_ms = Int(info, 0);
  o.lease_ms = Int(info, 1);
  o.fenced = Int(info, 2) != 0;
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_multilock_acquire(H(multilock), &o, LK_OP(multilock));
}
int multilock_release(Core *c, const Napi::CallbackInfo &) {
  return lk_multilock_release(H(multilock), LK_OP(multilock));
}
const Verb multilock_verbs[] = {{"acquire", multilock_acquire, multilock_statuses},
                                {"release", multilock_release, multilock_statuses},
                                {nullptr, nullptr, nullptr}};
Napi::Value multilock_info(Core *c, Napi::Env env, const std::string &what) {
  if (what == "holdCount")
    return Napi::Number::New(env, c->h ? (double)lk_multilock_hold_count(H(multilock)) : 0);
  return env.Undefined();
}

// ---- redlock: made from clients (arg: { clients: [native clients],
// persistent, quarantine, retryJitter, layout }); acquire(wait, lease,
// nodeTimeout, fenced), release(). The node statuses come with a failure.
int redlock_create(NewArgs &a, lk_handle_t **out) {
  if (!a.arg.IsObject())
    return LK_EINVAL;
  Napi::Object cfgv = a.arg.As<Napi::Object>();
  Napi::Value list = cfgv.Get("clients");
  if (!list.IsArray())
    return LK_EINVAL;
  Napi::Array arr = list.As<Napi::Array>();
  std::vector<lk_client_t *> clients;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    std::shared_ptr<ClientCore> cc = CoreOfClientValue(arr.Get(i));
    if (!cc)
      return LK_EINVAL;
    if (cc->c == nullptr || cc->closing)
      return LK_ECLOSED;
    clients.push_back(cc->c);
    a.clients.push_back(cc);
  }
  lk_redlock_config_t cfg;
  lk_redlock_config_init(&cfg);
  auto num = [&](const char *n, int64_t &dst) {
    Napi::Value v = cfgv.Get(n);
    if (v.IsNumber())
      dst = v.As<Napi::Number>().Int64Value();
  };
  int64_t persistent = cfg.persistent, layout = cfg.layout;
  num("persistent", persistent);
  num("quarantine", cfg.quarantine_ms);
  num("retryJitter", cfg.retry_jitter_ms);
  num("layout", layout);
  cfg.persistent = (int)persistent;
  cfg.layout = (int)layout;
  lk_redlock_t *o = nullptr;
  int rc = lk_redlock_new(clients.data(), clients.size(), a.name.c_str(), &cfg, &o);
  if (rc == 0)
    *out = lk_redlock_handle(o);
  return rc;
}
Napi::Value redlock_statuses(Core *c, Napi::Env env, int status) {
  lk_redlock_t *r = H(redlock);
  if (status == 0 || r == nullptr)
    return env.Undefined();
  size_t n = lk_redlock_size(r);
  Napi::Array out = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; i++)
    out.Set((uint32_t)i, CodeValue(env, lk_redlock_node_status(r, i)));
  return out;
}
int redlock_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = Int(info, 0);
  o.lease_ms = Int(info, 1);
  o.node_timeout_ms = Int(info, 2);
  o.fenced = Int(info, 3) != 0;
  c->acquire_lease = o.lease_ms > 0 ? o.lease_ms : 0;
  return lk_redlock_acquire(H(redlock), &o, LK_OP(redlock));
}
int redlock_release(Core *c, const Napi::CallbackInfo &) {
  return lk_redlock_release(H(redlock), LK_OP(redlock));
}
const Verb redlock_verbs[] = {{"acquire", redlock_acquire, redlock_statuses},
                              {"release", redlock_release, redlock_statuses},
                              {nullptr, nullptr, nullptr}};
Napi::Value redlock_info(Core *c, Napi::Env env, const std::string &what) {
  lk_redlock_t *r = H(redlock);
  if (what == "holdCount")
    return Napi::Number::New(env, r ? (double)lk_redlock_hold_count(r) : 0);
  if (what == "validity")
    return Napi::Number::New(env, r ? (double)lk_redlock_validity_ms(r) : 0);
  if (what == "votes")
    return Napi::Number::New(env, r ? (double)lk_redlock_votes(r) : 0);
  if (what == "quorum")
    return Napi::Number::New(env, r ? (double)lk_redlock_quorum(r) : 0);
  return env.Undefined();
}

// ---- leader: campaign(lease, value | null, wait) resolves with the term;
// resign(). observe() lives in src/addon.cc (a stream of events, not one
// operation). -----------------------------------------------------------------
LK_SIMPLE_CREATE(leader)
Napi::Value leader_term(Core *c, Napi::Env env, int status) {
  return Term(env, c->h ? lk_leader_term(H(leader)) : 0);
}
int leader_campaign(Core *c, const Napi::CallbackInfo &info) {
  lk_leader_opts_t o;
  lk_leader_opts_init(&o);
  o.lease_ms = Int(info, 0);
  std::string value;
  if (Str(info, 1, value))
    o.value = value.c_str(); // copied by lk_leader_campaign
  o.wait_ms = Int(info, 2);
  return lk_leader_campaign(H(leader), &o, LK_OP(leader));
}
int leader_resign(Core *c, const Napi::CallbackInfo &) { return lk_leader_resign(H(leader), LK_OP(leader)); }
const Verb leader_verbs[] = {{"campaign", leader_campaign, leader_term},
                            {"resign", leader_resign, nullptr}, {nullptr, nullptr, nullptr}};
Napi::Value leader_info(Core *c, Napi::Env env, const std::string &what) {
  lk_leader_t *l = H(leader);
  if (what == "observedTerm")
    return Term(env, l ? lk_leader_observed_term(l) : 0);
  if (what == "observedValue")
    return l ? NullableString(env, lk_leader_observed_value(l)) : env.Null();
  return env.Undefined();
}

// ---- ratelimiter: trySetRate(type, rate, interval, keepAlive),
// setRate(...), acquire(permits, wait) (result: permits left; after
// LK_ETIMEDOUT the server's wait estimate), available(), getConfig()
// (resolves with the configuration or null) ---------------------------------
LK_SIMPLE_CREATE(ratelimiter)
bool RateConfig(const Napi::CallbackInfo &info, lk_ratelimiter_config_t *cfg) {
  lk_ratelimiter_config_init(cfg);
  cfg->type = (lk_rate_type_t)Int(info, 0);
  cfg->rate = Int(info, 1);
  cfg->interval_ms = Int(info, 2);
  cfg->keep_alive_ms = Int(info, 3);
  return true;
}
int ratelimiter_try_set(Core *c, const Napi::CallbackInfo &info) {
  lk_ratelimiter_config_t cfg;
  RateConfig(info, &cfg);
  return lk_ratelimiter_try_set_rate(H(ratelimiter), &cfg, LK_OP(ratelimiter));
}
int ratelimiter_set(Core *c, const Napi::CallbackInfo &info) {
  lk_ratelimiter_config_t cfg;
  RateConfig(info, &cfg);
  return lk_ratelimiter_set_rate(H(ratelimiter), &cfg, LK_OP(ratelimiter));
}
int ratelimiter_acquire(Core *c, const Napi::CallbackInfo &info) {
  lk_ratelimiter_opts_t o;
  lk_ratelimiter_opts_init(&o);
  o.permits = Int(info, 0);
  o.wait_ms = Int(info, 1);
  return lk_ratelimiter_acquire(H(ratelimiter), &o, LK_OP(ratelimiter));
}
int ratelimiter_available(Core *c, const Napi::CallbackInfo &) {
  return lk_ratelimiter_available(H(ratelimiter), LK_OP(ratelimiter));
}
int ratelimiter_get_config(Core *c, const Napi::CallbackInfo &) {
  return lk_ratelimiter_get_config(H(ratelimiter), LK_OP(ratelimiter));
}
Napi::Value ratelimiter_wait_estimate(Core *c, Napi::Env env, int status) {
  // After LK_ETIMEDOUT the result is the server's estimate of the wait.
  if (status != LK_ETIMEDOUT || c->h == nullptr)
    return env.Undefined();
  return Napi::Number::New(env, (double)lk_ratelimiter_result(H(ratelimiter)));
}
Napi::Value ratelimiter_config(Core *c, Napi::Env env, int status) {
  lk_ratelimiter_t *r = H(ratelimiter);
  if (status != 0 || r == nullptr || lk_ratelimiter_result(r) != 1)
    return env.Null();
  lk_ratelimiter_config_t cfg;
  lk_ratelimiter_config(r, &cfg);
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", Napi::String::New(env, cfg.type == LK_RATE_PER_CLIENT ? "perClient" : "overall"));
  o.Set("rate", Napi::Number::New(env, (double)cfg.rate));
  o.Set("interval", Napi::Number::New(env, (double)cfg.interval_ms));
  o.Set("keepAlive", Napi::Number::New(env, (double)cfg.keep_alive_ms));
  return o;
}
const Verb ratelimiter_verbs[] = {{"trySetRate", ratelimiter_try_set, nullptr},
                                  {"setRate", ratelimiter_set, nullptr},
                                  {"acquire", ratelimiter_acquire, ratelimiter_wait_estimate},
                                  {"available", ratelimiter_available, nullptr},
                                  {"getConfig", ratelimiter_get_config, ratelimiter_config},
                                  {nullptr, nullptr, nullptr}};

// ---- barrier: made with its member count (arg); enter(wait, lease,
// member | null), leave(wait); both resolve (or reject) with { round,
// dropped } --------------------------------------------------------------------
int barrier_create(NewArgs &a, lk_handle_t **out) {
  if (!a.arg.IsNumber())
    return LK_EINVAL;
  int64_t n = a.arg.As<Napi::Number>().Int64Value();
  if (n < 1 || n > LK_BARRIER_MAX_MEMBERS)
    return LK_EINVAL;
  lk_barrier_t *o = nullptr;
  int rc = lk_barrier_new(a.client->c, a.name.c_str(), (int)n, &o);
  if (rc == 0)
    *out = lk_barrier_handle(o);
  return rc;
}
Napi::Value barrier_outcome(Core *c, Napi::Env env, int status) {
  lk_barrier_t *b = H(barrier);
  if (b == nullptr)
    return env.Undefined();
  size_t n = lk_barrier_dropped_count(b);
  Napi::Array dropped = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; i++)
    dropped.Set((uint32_t)i, Napi::String::New(env, lk_barrier_dropped(b, i)));
  Napi::Object o = Napi::Object::New(env);
  o.Set("round", Napi::Number::New(env, (double)lk_barrier_round(b)));
  o.Set("dropped", dropped);
  return o;
}
int barrier_enter(Core *c, const Napi::CallbackInfo &info) {
  lk_barrier_opts_t o;
  lk_barrier_opts_init(&o);
  o.wait_ms = Int(info, 0);
  o.lease_ms = Int(info, 1);
  std::string member;
  if (Str(info, 2, member))
    o.member = member.c_str(); // copied by lk_barrier_enter
  return lk_barrier_enter(H(barrier), &o, LK_OP(barrier));
}
int barrier_leave(Core *c, const Napi::CallbackInfo &info) {
  lk_barrier_opts_t o;
  lk_barrier_opts_init(&o);
  o.wait_ms = Int(info, 0);
  return lk_barrier_leave(H(barrier), &o, LK_OP(barrier));
}
const Verb barrier_verbs[] = {{"enter", barrier_enter, barrier_outcome},
                              {"leave", barrier_leave, barrier_outcome}, {nullptr, nullptr, nullptr}};
Napi::Value barrier_info(Core *c, Napi::Env env, const std::string &what) {
  lk_barrier_t *b = H(barrier);
  if (what == "round")
    return Napi::Number::New(env, b ? (double)lk_barrier_round(b) : 0);
  if (what == "member")
    return b ? NullableString(env, lk_barrier_member(b)) : env.Null();
  return env.Undefined();
}

#define LK_KIND(X, INFO) {#X, X##_create, X##_verbs, INFO}
const Kind kinds[] = {
    LK_KIND(lock, lock_info),           LK_KIND(fair, fair_info),
    LK_KIND(rwlock, nullptr),           LK_KIND(semaphore, semaphore_info),
    LK_KIND(psem, psem_info),           LK_KIND(latch, nullptr),
    LK_KIND(multilock, multilock_info), LK_KIND(redlock, redlock_info),
    LK_KIND(leader, leader_info),       LK_KIND(ratelimiter, nullptr),
    LK_KIND(barrier, barrier_info),
};

} // namespace

const Kind *FindKind(const std::string &name) {
  for (const Kind &k : kinds)
    if (name == k.name)
      return &k;
  return nullptr;
}

} // namespace lkn
