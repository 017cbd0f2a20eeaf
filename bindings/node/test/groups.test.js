'use strict';
// The primitives that hold several things or follow others: the permit
// semaphore, MultiLock, RedLock (over three servers of its own), leader
// election, the rate limiter and the double barrier.
const test = require('node:test');
const assert = require('node:assert');
const latchkey = require('..');
const { startRedis } = require('./helpers/redis');
const { serverForFile, until, liveness } = require('./helpers/common');

const box = serverForFile();

test('permit semaphore: ids, release by id, a fixed lease expires', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const pa = a.permitSemaphore('node:psem');
    const pb = b.permitSemaphore('node:psem');
    assert.strictEqual(await pa.trySetPermits(2), true);
    const ids = await pa.acquire({ permits: 2 });
    assert.strictEqual(ids.length, 2);
    for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/);
    assert.deepStrictEqual(pa.permitIds, ids);
    assert.strictEqual(pa.held, 2);
    assert.strictEqual(pa.isHeld, true);
    assert.strictEqual(await pb.acquired(), 2);
    await assert.rejects(pb.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    // Another client gives back one of a's permits by its id.
    assert.strictEqual(await pb.releaseId(ids[0]), true);
    const [mine] = await pb.acquire({ lease: 300 });
    assert.match(mine, /^[0-9a-f]{32}$/);
    assert.strictEqual(await pa.release(ids[1]), 1);
    // ids[0] was given back by b: a only learns it when it tries.
    assert.deepStrictEqual(pa.permitIds, [ids[0]]);
    await assert.rejects(pa.release(ids[0]), (e) => e.code === 'LK_ELEASELOST');
    assert.strictEqual(pa.held, 0);
    // The fixed lease runs out: the permit comes back without a release.
    assert.ok(await until(async () => (await pa.available()) === 2, liveness(5000)));
    await assert.rejects(pa.release(), (e) => e.code === 'LK_ENOTHELD');
    const n = await pa.using(async (got) => {
      assert.strictEqual(got.length, 1);
      return pa.held;
    });
    assert.strictEqual(n, 1);
    assert.strictEqual(pa.held, 0);
  } finally {
    await a.close();
    await b.close();
  }
});

test('multilock: all or none, members borrowed while it is open', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const l1 = a.lock('node:ml:1');
    const l2 = b.lock('node:ml:2'); // another client
    const ml = latchkey.multiLock([l1, l2]);
    const other = a.lock('node:ml:2');
    const intruder = (await latchkey.connect(box.redis.url));
    const blocker = intruder.lock('node:ml:2');
    await blocker.acquire();
    await assert.rejects(ml.acquire(), (e) => e.code === 'LK_ETIMEDOUT' && Array.isArray(e.detail)
      && e.detail[1] === 'LK_ETIMEDOUT');
    assert.strictEqual(l1.isHeld, false); // none: what it took was given back
    const waiting = ml.acquire({ wait: liveness(10000) });
    await blocker.release();
    await waiting;
    assert.strictEqual(ml.isHeld, true);
    assert.strictEqual(l1.isHeld && l2.isHeld, true);
    await assert.rejects(other.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    await assert.rejects(l1.close(), (e) => e.code === 'LK_EBUSY');
    await ml.release();
    assert.strictEqual(ml.isHeld, false);
    assert.strictEqual(await ml.using(async () => l2.isHeld), true);
    await other.acquire();
    await other.release();
    await ml.close();
    await l1.close();
    await intruder.close();
  } finally {
    await b.close(); // a member's client: the MultiLock of a is closed by now
    await a.close();
  }
});

test('redlock: a quorum of three masters, one of them down', async () => {
  const servers = [box.redis, await startRedis(), await startRedis()];
  const clients = [];
  const others = [];
  try {
    for (const s of servers) clients.push(await latchkey.connect(s.url, { connectTimeout: liveness(5000) }));
    for (const s of servers) others.push(await latchkey.connect(s.url, { connectTimeout: liveness(5000) }));
    const rl = latchkey.redLock(clients, 'node:redlock');
    const rival = latchkey.redLock(others, 'node:redlock');
    assert.strictEqual(rl.quorum, 2);
    await rl.acquire({ fenced: true });
    assert.strictEqual(rl.isHeld, true);
    assert.ok(rl.votes >= 2);
    assert.ok(rl.validity > 0);
    assert.ok(rl.token > 0n);
    await assert.rejects(rival.acquire(), (e) => e.code === 'LK_ETIMEDOUT' || e.code === 'LK_ENOQUORUM');
    await rl.release();
    // One master gone: two of three still make a quorum.
    await servers[2].stop();
    await rival.using(async () => {
      assert.strictEqual(rival.isHeld, true);
      await assert.rejects(rl.acquire(), (e) => e.code === 'LK_ETIMEDOUT' || e.code === 'LK_ENOQUORUM');
    }, { wait: liveness(10000), nodeTimeout: 200 });
    await rl.close();
    await rival.close();
  } finally {
    for (const c of [...clients, ...others]) await c.close();
    await servers[1].stop();
    await servers[2].stop();
  }
});

test('leader: one leads, terms increase, observers see changes, resign hands over', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  const c = await latchkey.connect(box.redis.url);
  try {
    const la = a.leader('node:role');
    const lb = b.leader('node:role');
    const watcher = c.leader('node:role');
    const seen = [];
    watcher.on('change', (ch) => seen.push(ch));
    watcher.observe();
    const t1 = await la.campaign({ value: 'node-a' });
    assert.strictEqual(typeof t1, 'bigint');
    assert.ok(t1 > 0n);
    assert.strictEqual(la.isLeader, true);
    assert.strictEqual(la.term, t1);
    await assert.rejects(lb.campaign({ wait: 0 }), (e) => e.code === 'LK_ETIMEDOUT');
    const ac = new AbortController();
    const canceled = lb.campaign({ signal: ac.signal });
    ac.abort();
    await assert.rejects(canceled, (e) => e.code === 'LK_ECANCELED');
    assert.ok(await until(() => seen.some((ch) => ch.value === 'node-a' && ch.term === t1), liveness(5000)));
    const next = lb.campaign({ value: 'node-b', wait: liveness(10000) });
    await la.resign();
    assert.strictEqual(la.isLeader, false);
    const t2 = await next;
    assert.ok(t2 > t1);
    assert.ok(await until(() => seen.some((ch) => ch.value === 'node-b' && ch.term === t2), liveness(5000)));
    const ended = new Promise((resolve) => watcher.once('observeEnd', resolve));
    watcher.observeStop();
    await ended;
    await lb.resign();
  } finally {
    await a.close();
    await b.close();
    await c.close();
  }
});

test('leader: a lost leadership emits lost', async () => {
  const a = await latchkey.connect(box.redis.url);
  try {
    const la = a.leader('node:role:lost');
    const lost = new Promise((resolve) => la.once('lost', resolve));
    await la.campaign({ lease: 1000 });
    // Someone deletes the leadership under it: the next renewal finds it gone.
    // (One script: the helper reads single replies, not KEYS's array.)
    const deleted = await box.redis.command('EVAL', "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
      + "n = n + redis.call('DEL', k) end return n", '0', '*node:role:lost*');
    assert.match(deleted, /^:[1-9]/);
    const err = await Promise.race([lost, new Promise((_, rej) => setTimeout(() => rej(new Error('no lost event')), liveness(10000)))]);
    assert.strictEqual(err.code, 'LK_ELEASELOST');
    assert.strictEqual(la.isLeader, false);
  } finally {
    await a.close();
  }
});

test('rate limiter: the window holds at most rate permits', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const ra = a.rateLimiter('node:rate');
    const rb = b.rateLimiter('node:rate');
    assert.strictEqual(await ra.getConfig(), null);
    assert.strictEqual(await ra.trySetRate({ rate: 3, interval: 60000 }), true);
    assert.strictEqual(await rb.trySetRate({ rate: 9, interval: 1000 }), false);
    assert.deepStrictEqual(await rb.getConfig(), { type: 'overall', rate: 3, interval: 60000, keepAlive: 0 });
    assert.strictEqual(await ra.acquire({ permits: 2 }), 1);
    assert.strictEqual(await rb.tryAcquire(), 0);
    await assert.rejects(ra.tryAcquire(), (e) => e.code === 'LK_ETIMEDOUT' && e.detail > 0);
    assert.strictEqual(await rb.available(), 0);
    await assert.rejects(ra.acquire({ permits: 4 }), (e) => e.code === 'LK_EINVAL');
    await rb.setRate({ rate: 2, interval: 300, type: 'overall' });
    assert.strictEqual(await rb.available(), 2);
    await ra.acquire({ permits: 2 });
    // The window slides: a waiting acquire gets its permit.
    assert.strictEqual(await ra.acquire({ wait: liveness(5000) }), 1);
  } finally {
    await a.close();
    await b.close();
  }
});

test('barrier: members are released together, then leave together', async () => {
  const clients = [];
  try {
    for (let i = 0; i < 3; i++) clients.push(await latchkey.connect(box.redis.url));
    const bs = clients.map((c) => c.barrier('node:barrier', 3));
    const first = [bs[0].enter({ member: 'm0' }), bs[1].enter({ member: 'm1' })];
    let released = false;
    Promise.all(first).then(() => { released = true; });
    await new Promise((r) => setTimeout(r, 50));
    assert.strictEqual(released, false);
    const third = await bs[2].enter({ member: 'm2' });
    const outs = await Promise.all(first);
    for (const o of [...outs, third]) assert.deepStrictEqual(o, { round: third.round, dropped: [] });
    assert.ok(third.round >= 1);
    assert.strictEqual(bs[1].member, 'm1');
    const leaving = [bs[0].leave(), bs[1].leave()];
    await bs[2].leave();
    await Promise.all(leaving);
    // using(): enter, run, leave.
    const r = await Promise.all(bs.map((b, i) => b.using(async (self) => self.round, { member: `u${i}` })));
    assert.strictEqual(new Set(r).size, 1);
    assert.ok(r[0] > third.round);
  } finally {
    for (const c of clients) await c.close();
  }
});

test('permit semaphore: a renewed permit taken away emits lost; a waiting barrier enter is canceled by its signal', async () => {
  const a = await latchkey.connect(box.redis.url, { defaultLease: 1000 });
  try {
    const ps = a.permitSemaphore('node:psem:lost');
    await ps.trySetPermits(1);
    const lost = new Promise((resolve) => ps.once('lost', resolve));
    const [id] = await ps.acquire(); // the default lease, renewed by the watchdog
    assert.match(id, /^[0-9a-f]{32}$/);
    // Another owner gives it back by id: the next renewal finds it gone.
    const b = await latchkey.connect(box.redis.url);
    assert.strictEqual(await b.permitSemaphore('node:psem:lost').releaseId(id), true);
    await b.close();
    const err = await Promise.race([lost, new Promise((_, rej) => setTimeout(() => rej(new Error('no lost event')), liveness(10000)))]);
    assert.strictEqual(err.code, 'LK_ELEASELOST');
    assert.strictEqual(ps.held, 0);
    const bar = a.barrier('node:barrier:cancel', 2);
    const ac = new AbortController();
    const entering = bar.enter({ signal: ac.signal, member: 'alone' });
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(entering, (e) => e.code === 'LK_ECANCELED');
  } finally {
    await a.close();
  }
});
