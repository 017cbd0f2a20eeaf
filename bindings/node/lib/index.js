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
native.setEvents((target, name, code, text) => target._event(name, code, text));

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
  constructor(client, kind, name) {
    super();
    this.client = client; // keeps the client alive while this object is
    this.name = name;
    this._n = new native.NativeObject(kind, client._n, String(name), this);
  }

  // One operation: resolves with its result, rejects with an lkError. A
  // signal cancels it (the object's pending acquire or await).
  _op(verb, args, signal) {
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) {
        reject(lkError('LK_ECANCELED', `${this.constructor.name}.${verb}`, ''));
        return;
      }
      let onAbort = null;
      const rc = this._n.op(verb, ...args, (code, result, text) => {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        if (code) reject(lkError(code, `${this.constructor.name}.${verb}`, text));
        else resolve(result);
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

  _event(name, code, text) {
    if (name === 'lost') this.emit('lost', lkError(code, `${this.constructor.name} ${this.name}`, text));
  }

  // Starts closing: a pending operation ends with LK_ECANCELED, holds are
  // given back (best effort). Garbage collection of an open object that
  // holds nothing does the same (a held one is not collected).
  close() {
    const rc = this._n.close();
    if (rc && rc !== 'LK_ECLOSED') return Promise.reject(lkError(rc, `${this.constructor.name}.close`, ''));
    return Promise.resolve();
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

module.exports = {
  connect,
  // Client and object cores alive in this environment (freed once both
  // their JS object and their C object are gone): the tests' leak check.
  liveCounts: native.liveCounts,
  Client,
  Lock,
  FairLock,
  ReadWriteLock,
  Semaphore,
  Latch,
  versions: {
    uvHeaders: native.uvVersion,
    uvRunning: native.runningUvVersion,
    openssl: native.opensslVersion,
    opensslHeaders: native.opensslHeaderVersion,
  },
};
