'use strict';
// latchkey for Node.js: promises and EventEmitters over the native glue
// (src/addon.cc), which runs latchkey's C objects on Node's own loop.
// docs/node.md is the user's guide.
const { EventEmitter } = require('node:events');
const path = require('node:path');

const native = require(path.join(__dirname, '..', 'build', 'Release', 'latchkey.node'));

// An Error whose code is latchkey's code name ("LK_ETIMEDOUT", ...); the
// server's error text, when there was one, is in serverText.
function lkError(code, what, text) {
  const err = new Error(`${what}: ${code}${text ? ` (${text})` : ''}`);
  err.code = code;
  if (text) err.serverText = text;
  return err;
}

// Native events (a lost lease, a client's connection events) reach the JS
// object they belong to through this one function; the native side holds
// that object weakly, so it can still be collected.
native.setEvents((target, name, code, text, extra) => target._event(name, code, text, extra));

// Milliseconds as latchkey takes them: -1 waits or leases forever (or the
// client's default lease, for lease).
function ms(v, dflt) {
  if (v === undefined || v === null) return dflt;
  if (v === Infinity || v === -1) return -1;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw lkError('LK_EINVAL', 'latchkey', `not a duration in ms: ${v}`);
  }
  return Math.floor(v);
}

class LatchkeyObject extends EventEmitter {
  constructor(client, kind, name, arg) {
    super();
    this.client = client; // keeps the client alive while this object is
    this.name = name;
    this._n = new native.NativeObject(kind, client._n, String(name), this, arg);
  }

  // One operation: resolves with its result, rejects with an lkError. A
  // signal cancels it (the object's pending acquire or await). withExtra:
  // resolves with { result, extra } (what the kind reads besides the
  // number: permit ids, a term...); a failure's extra is the error's detail.
  _op(verb, args, signal, withExtra = false) {
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) {
        reject(lkError('LK_ECANCELED', `${this.constructor.name}.${verb}`, ''));
        return;
      }
      let onAbort = null;
      const rc = this._n.op(verb, ...args, (code, result, text, extra) => {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        if (code) {
          const err = lkError(code, `${this.constructor.name}.${verb}`, text);
          if (extra !== undefined) err.detail = extra;
          reject(err);
        } else resolve(withExtra ? { result, extra } : result);
      });
      if (rc) {
        reject(lkError(rc, `${this.constructor.name}.${verb}`, ''));
        return;
      }
      if (signal) {
        onAbort = () => this._n.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  _event(name, code, text, extra) {
    if (name === 'lost') this.emit('lost', lkError(code, `${this.constructor.name} ${this.name}`, text));
    else if (name === 'atRisk' || name === 'safe') this.emit(name, extra);
    else if (name === 'change') this.emit('change', extra);
    else if (name === 'observeEnd') this.emit('observeEnd');
  }

  // Closes: a pending operation ends with LK_ECANCELED, holds are given
  // back (best effort); resolves once the C object is gone (a MultiLock's
  // members, a RedLock's clients are free to close then). Garbage
  // collection of an open object that holds nothing does the same (a held
  // one is not collected).
  close() {
    return new Promise((resolve, reject) => {
      const rc = this._n.close(() => resolve());
      if (rc === 'LK_ECLOSED') resolve(); // closed already, or by its client's close
      else if (rc) reject(lkError(rc, `${this.constructor.name}.close`, ''));
    });
  }
}

// The reentrant lock (Redisson's RLock).
class Lock extends LatchkeyObject {
  constructor(client, name, kind = 'lock') {
    super(client, kind, name);
  }
  // wait: ms to wait (0: try once, Infinity: forever); lease: ms, or
  // omitted for the watchdog-renewed default lease. Resolves when held;
  // rejects with LK_ETIMEDOUT when the wait ran out.
  async acquire({ wait = 0, lease, fenced = false, signal } = {}) {
    await this._op('acquire', [ms(wait, 0), ms(lease, -1), fenced ? 1 : 0], signal);
  }
  // Resolves true when this was the last hold (the lock is free now).
  async release() {
    return (await this._op('release', [])) === 1;
  }
  async using(fn, opts) {
    await this.acquire(opts);
    try {
      return await fn(this);
    } finally {
      await this.release();
    }
  }
  async forceRelease() { return (await this._op('forceRelease', [])) === 1; }
  async isLocked() { return (await this._op('isLocked', [])) === 1; }
  async remainingTtl() { return this._op('remainingTtl', []); }
  get isHeld() { return this._n.isHeld(); }
  get holdCount() { return this._n.holdCount(); }
  // A BigInt (tokens are 64-bit server counters); 0n when none.
  get token() { return this._n.token(); }
}

// The fair lock (RFairLock): first come, first served.
class FairLock extends Lock {
  constructor(client, name) {
    super(client, name, 'fair');
  }
  async queueLength() { return this._op('queueLength', []); }
}

const READ = 1;
const WRITE = 2;

// One side of a read/write lock: the lock API on that side.
class Side {
  constructor(rw, side) {
    this._rw = rw;
    this._side = side;
  }
  async acquire({ wait = 0, lease, fenced = false, signal } = {}) {
    await this._rw._op('acquire', [this._side, ms(wait, 0), ms(lease, -1), fenced ? 1 : 0], signal);
  }
  async release() { return (await this._rw._op('release', [this._side])) === 1; }
  async using(fn, opts) {
    await this.acquire(opts);
    try {
      return await fn(this);
    } finally {
      await this.release();
    }
  }
}

// The read/write lock (RReadWriteLock): rw.read and rw.write. One object
// is one owner with one operation pending at a time, as in C.
class ReadWriteLock extends LatchkeyObject {
  constructor(client, name) {
    super(client, 'rwlock', name);
    this.read = new Side(this, READ);
    this.write = new Side(this, WRITE);
  }
  async forceRelease() { return (await this._op('forceRelease', [])) === 1; }
  // 'free', 'read' or 'write'.
  async mode() { return ['free', 'read', 'write'][await this._op('mode', [])]; }
  get isHeld() { return this._n.isHeld(); }
}

// The counting semaphore (RSemaphore).
class Semaphore extends LatchkeyObject {
  constructor(client, name) {
    super(client, 'semaphore', name);
  }
  async acquire({ permits = 1, wait = 0, signal } = {}) {
    await this._op('acquire', [permits, ms(wait, 0)], signal);
  }
  async release(permits = 1) { await this._op('release', [permits]); }
  async trySetPermits(n) { return (await this._op('trySetPermits', [n])) === 1; }
  async addPermits(n) { return this._op('addPermits', [n]); }
  async available() { return this._op('available', []); }
  get held() { return this._n.holdCount(); }
}

// The countdown latch (RCountDownLatch).
class Latch extends LatchkeyObject {
  constructor(client, name) {
    super(client, 'latch', name);
  }
  async trySetCount(n) { return (await this._op('trySetCount', [n])) === 1; }
  async countDown() { await this._op('countDown', []); }
  async getCount() { return this._op('getCount', []); }
  // Resolves when the count reaches 0; LK_ETIMEDOUT when the wait ran out.
  async await({ wait = Infinity, signal } = {}) { await this._op('await', [ms(wait, -1)], signal); }
  async delete() { return (await this._op('delete', [])) === 1; }
}

// using(): acquire, run fn, release even when fn throws.
async function using(obj, fn, opts) {
  await obj.acquire(opts);
  try {
    return await fn(obj);
  } finally {
    await obj.release();
  }
}

// The permit-expirable semaphore (RPermitExpirableSemaphore): each permit
// has its own id and lease.
class PermitSemaphore extends LatchkeyObject {
  constructor(client, name) {
    super(client, 'psem', name);
  }
  // Resolves with the new permits' ids; lease omitted: the client's default
  // lease, renewed while this object lives; a number: fixed.
  async acquire({ permits = 1, wait = 0, lease, signal } = {}) {
    return (await this._op('acquire', [permits, ms(wait, 0), ms(lease, -1)], signal, true)).extra;
  }
  // Gives back one of this object's permits by id, or all of them (no id);
  // resolves with how many.
  async release(id) { return this._op('release', [id ?? null]); }
  // Gives back any permit by id (another process's too).
  async releaseId(id) { return (await this._op('releaseId', [String(id)])) === 1; }
  // A new lease (ms, or Infinity/omitted for the renewed default) on one
  // permit of this object's, or on all of them (no id).
  async updateLease(lease, id) { await this._op('updateLease', [id ?? null, ms(lease, -1)]); }
  async trySetPermits(n) { return (await this._op('trySetPermits', [n])) === 1; }
  async addPermits(n) { return this._op('addPermits', [n]); }
  async available() { return this._op('available', []); }
  async acquired() { return this._op('acquired', []); }
  // Acquires, runs fn(ids), releases those permits even when fn throws.
  async using(fn, opts) {
    const ids = await this.acquire(opts);
    try {
      return await fn(ids);
    } finally {
      for (const id of ids) await this.release(id);
    }
  }
  get isHeld() { return this._n.isHeld(); }
  get held() { return this._n.holdCount(); }
  get permitIds() { return this._n.info('permitIds'); }
}

// Several locks (possibly on different clients and servers) taken all
// together or none (RedissonMultiLock). The locks are borrowed: they stay
// open while the MultiLock is (their close() rejects with LK_EBUSY).
class MultiLock extends LatchkeyObject {
  constructor(locks) {
    if (!Array.isArray(locks) || locks.length === 0 || !locks.every((l) => l instanceof Lock && !(l instanceof FairLock))) {
      throw lkError('LK_EINVAL', 'latchkey.multiLock', 'an array of Lock objects');
    }
    super(locks[0].client, 'multilock', '', locks.map((l) => l._n));
    this.locks = locks; // borrowed: kept alive with the group
  }
  async acquire({ wait = 0, lease, fenced = false, signal } = {}) {
    await this._op('acquire', [ms(wait, 0), ms(lease, -1), fenced ? 1 : 0], signal);
  }
  async release() { await this._op('release', []); }
  async using(fn, opts) { return using(this, fn, opts); }
  get isHeld() { return this._n.isHeld(); }
  get holdCount() { return this._n.holdCount(); }
}

const REDLOCK_LAYOUTS = { redisson: 0, lean: 1 };

// One name on N independent masters (one client each), held while a
// majority holds it (RedissonRedLock).
class RedLock extends LatchkeyObject {
  constructor(clients, name, { persistent = false, quarantine, retryJitter, layout = 'redisson' } = {}) {
    if (!Array.isArray(clients) || clients.length === 0 || !clients.every((c) => c instanceof Client)) {
      throw lkError('LK_EINVAL', 'latchkey.redLock', 'an array of Client objects');
    }
    if (!(layout in REDLOCK_LAYOUTS)) throw lkError('LK_EINVAL', 'latchkey.redLock', `layout: ${layout}`);
    const cfg = { clients: clients.map((c) => c._n), persistent: persistent ? 1 : 0, layout: REDLOCK_LAYOUTS[layout] };
    if (quarantine !== undefined) cfg.quarantine = ms(quarantine, 0);
    if (retryJitter !== undefined) cfg.retryJitter = ms(retryJitter, 0);
    super(clients[0], 'redlock', name, cfg);
    this.clients = clients; // borrowed: kept alive with the RedLock
  }
  async acquire({ wait = 0, lease, nodeTimeout = 0, fenced = false, signal } = {}) {
    await this._op('acquire', [ms(wait, 0), ms(lease, -1), ms(nodeTimeout, 0), fenced ? 1 : 0], signal);
  }
  async release() { await this._op('release', []); }
  async using(fn, opts) { return using(this, fn, opts); }
  get isHeld() { return this._n.isHeld(); }
  get holdCount() { return this._n.holdCount(); }
  get token() { return this._n.token(); }
  // ms of validity left (0 when not held); masters that hold it; quorum.
  get validity() { return this._n.info('validity'); }
  get votes() { return this._n.info('votes'); }
  get quorum() { return this._n.info('quorum'); }
}

// Leader election for a role: campaign() resolves when elected, with the
// term (a BigInt fencing token); 'lost' when the leadership is lost;
// observe() emits 'change' ({ term, value }) for the role's leader.
class Leader extends LatchkeyObject {
  constructor(client, role) {
    super(client, 'leader', role);
  }
  async campaign({ lease, value, wait = Infinity, signal } = {}) {
    const args = [ms(lease, -1), value === undefined ? null : String(value), ms(wait, -1)];
    return (await this._op('campaign', args, signal, true)).extra;
  }
  async resign() { await this._op('resign', []); }
  // The lock idiom: acquire campaigns, release resigns.
  acquire(opts) { return this.campaign(opts); }
  release() { return this.resign(); }
  async using(fn, opts) { return using(this, fn, opts); }
  // Starts following the role (events 'change', then 'observeEnd' after
  // observeStop() or close()); keeps the process alive meanwhile.
  observe() {
    const rc = this._n.observe();
    if (rc) throw lkError(rc, 'Leader.observe', '');
  }
  observeStop() {
    const rc = this._n.observeStop();
    if (rc) throw lkError(rc, 'Leader.observeStop', '');
  }
  get isLeader() { return this._n.isHeld(); }
  get isHeld() { return this._n.isHeld(); }
  get term() { return this._n.token(); }
  get observedTerm() { return this._n.info('observedTerm'); }
  get observedValue() { return this._n.info('observedValue'); }
}

const RATE_TYPES = { overall: 0, perClient: 1 };

function rateArgs({ rate, interval, type = 'overall', keepAlive = 0 } = {}) {
  if (!(type in RATE_TYPES)) throw lkError('LK_EINVAL', 'RateLimiter', `type: ${type}`);
  return [RATE_TYPES[type], rate, ms(interval, 0), ms(keepAlive, 0)];
}

// A rate limiter (RRateLimiter): at most rate permits in any window of
// interval ms, for every client together ('overall') or each ('perClient').
class RateLimiter extends LatchkeyObject {
  constructor(client, name) {
    super(client, 'ratelimiter', name);
  }
  async trySetRate(cfg) { return (await this._op('trySetRate', rateArgs(cfg))) === 1; }
  async setRate(cfg) { await this._op('setRate', rateArgs(cfg)); }
  // Resolves with the permits left in the window. LK_ETIMEDOUT when the
  // wait ran out: err.detail is the server's estimate of the wait (ms).
  async acquire({ permits = 1, wait = 0, signal } = {}) {
    return this._op('acquire', [permits, ms(wait, 0)], signal);
  }
  async tryAcquire(permits = 1) { return this.acquire({ permits, wait: 0 }); }
  async available() { return this._op('available', []); }
  // { type, rate, interval, keepAlive }, or null when none is set.
  async getConfig() { return (await this._op('getConfig', [], undefined, true)).extra; }
}

// A double barrier: members enter, are released together once `members`
// have entered, work, then leave together.
class Barrier extends LatchkeyObject {
  constructor(client, name, members) {
    super(client, 'barrier', name, members);
    this.members = members;
  }
  // Resolves with { round, dropped } once every member entered.
  async enter({ wait = Infinity, lease, member, signal } = {}) {
    const args = [ms(wait, -1), ms(lease, -1), member === undefined ? null : String(member)];
    return (await this._op('enter', args, signal, true)).extra;
  }
  // Resolves with { round, dropped } once every member left.
  async leave({ wait = Infinity, signal } = {}) {
    return (await this._op('leave', [ms(wait, -1)], signal, true)).extra;
  }
  // The lock idiom: acquire enters, release leaves.
  acquire(opts) { return this.enter(opts); }
  release() { return this.leave(); }
  async using(fn, opts) { return using(this, fn, opts); }
  get round() { return this._n.info('round'); }
  get member() { return this._n.info('member'); }
}

// A connection to Redis (one latchkey client): commands, pub/sub, the
// watchdog. Events: 'suspended', 'reconnected', 'serverRestarted',
// 'topologyChanged'.
class Client extends EventEmitter {
  constructor(url, options) {
    super();
    this._n = new native.NativeClient(url, options, this);
  }
  _event(name, code, text) {
    this.emit(name, text);
  }
  get id() { return this._n.id(); }
  get isConnected() { return this._n.isConnected(); }
  lock(name) { return new Lock(this, name); }
  fairLock(name) { return new FairLock(this, name); }
  readWriteLock(name) { return new ReadWriteLock(this, name); }
  semaphore(name) { return new Semaphore(this, name); }
  latch(name) { return new Latch(this, name); }
  permitSemaphore(name) { return new PermitSemaphore(this, name); }
  leader(role) { return new Leader(this, role); }
  rateLimiter(name) { return new RateLimiter(this, name); }
  barrier(name, members) { return new Barrier(this, name, members); }
  // Closes every object of this client (pending operations end with
  // LK_ECANCELED, holds are given back), then the client. Every call
  // resolves when that close has finished (a second call does not resolve
  // before the first one's close is done).
  close() {
    if (!this._closed) {
      this._closed = new Promise((resolve, reject) => {
        const rc = this._n.close(() => resolve());
        if (rc === 'LK_ECLOSED') resolve(); // closed already: the environment's end
        else if (rc) reject(lkError(rc, 'Client.close', ''));
      });
      // A refused close can be asked for again.
      this._closed.catch(() => { this._closed = null; });
    }
    return this._closed;
  }
}

// The longest connectTimeout: what setTimeout can wait (2^31 - 1 ms).
const MAX_CONNECT_TIMEOUT = 2147483647;

// connect('redis://host:port/db') or connect({ url, connectTimeout, ... }):
// resolves once the first connection is ready; rejects with LK_ECONN when
// it is not within connectTimeout (default 5000 ms; 1..2^31 - 1, else
// LK_EINVAL: there is no unlimited wait, Infinity included).
function connect(urlOrOptions = 'redis://127.0.0.1:6379', maybeOptions = {}) {
  const options = typeof urlOrOptions === 'string' ? { ...maybeOptions, url: urlOrOptions } : { ...urlOrOptions };
  const url = options.url ?? `redis://${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
  let client;
  let connectTimeout;
  try {
    connectTimeout = ms(options.connectTimeout, 5000);
    if (connectTimeout < 1 || connectTimeout > MAX_CONNECT_TIMEOUT) {
      throw lkError('LK_EINVAL', 'latchkey.connect',
        `connectTimeout not in 1..${MAX_CONNECT_TIMEOUT} ms: ${options.connectTimeout}`);
    }
    client = new Client(url, options); // a malformed URL throws LK_EINVAL
  } catch (err) {
    return Promise.reject(err);
  }
  if (client.isConnected) return Promise.resolve(client);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.removeListener('connected', onUp);
      const why = client._n.errorText();
      client.close().finally(() => reject(lkError('LK_ECONN', `latchkey.connect ${url}`, why)));
    }, connectTimeout);
    const onUp = () => {
      clearTimeout(timer);
      resolve(client);
    };
    client.once('connected', onUp);
  });
}

// A MultiLock of lock objects (of any clients); a RedLock of one name on
// several clients (one per master).
function multiLock(locks) { return new MultiLock(locks); }
function redLock(clients, name, options) { return new RedLock(clients, name, options); }

module.exports = {
  connect,
  multiLock,
  redLock,
  // Client and object cores alive in this environment (freed once both
  // their JS object and their C object are gone): the tests' leak check.
  liveCounts: native.liveCounts,
  Client,
  Lock,
  FairLock,
  ReadWriteLock,
  Semaphore,
  Latch,
  PermitSemaphore,
  MultiLock,
  RedLock,
  Leader,
  RateLimiter,
  Barrier,
  versions: {
    uvHeaders: native.uvVersion,
    uvRunning: native.runningUvVersion,
    openssl: native.opensslVersion,
    opensslHeaders: native.opensslHeaderVersion,
  },
};
