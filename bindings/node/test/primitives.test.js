'use strict';
// The other primitives through the same glue: fair lock, read/write lock,
// semaphore, latch.
const test = require('node:test');
const assert = require('node:assert');
const latchkey = require('..');
const { serverForFile, liveness } = require('./helpers/common');

const box = serverForFile();

test('fair lock: exclusion, queue length, release', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const fa = a.fairLock('node:fair');
    const fb = b.fairLock('node:fair');
    await fa.acquire();
    await assert.rejects(fb.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    const waiting = fb.acquire({ wait: liveness(10000) });
    let queued = 0;
    for (let i = 0; i < 100 && queued === 0; i++) {
      queued = await fa.queueLength();
      if (queued === 0) await new Promise((r) => setTimeout(r, 20));
    }
    assert.strictEqual(queued, 1);
    assert.strictEqual(await fa.release(), true);
    await waiting;
    assert.strictEqual(fb.isHeld, true);
    assert.strictEqual(await fb.release(), true);
  } finally {
    await a.close();
    await b.close();
  }
});

test('read/write lock: readers share, a writer excludes', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const ra = a.readWriteLock('node:rw');
    const rb = b.readWriteLock('node:rw');
    await ra.read.acquire();
    await rb.read.acquire();
    assert.strictEqual(await ra.mode(), 'read');
    // Holding read, the same owner cannot take write (no upgrade).
    await assert.rejects(rb.write.acquire(), (e) => e.code === 'LK_EUPGRADE');
    await rb.read.release();
    await assert.rejects(rb.write.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    await ra.read.release();
    assert.strictEqual(await ra.mode(), 'free');
    await ra.write.using(async () => {
      assert.strictEqual(await rb.mode(), 'write');
      await assert.rejects(rb.read.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    });
    assert.strictEqual(ra.isHeld, false);
  } finally {
    await a.close();
    await b.close();
  }
});

test('semaphore: permits are counted across clients', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const sa = a.semaphore('node:sem');
    const sb = b.semaphore('node:sem');
    assert.strictEqual(await sa.trySetPermits(2), true);
    assert.strictEqual(await sb.trySetPermits(5), false);
    await sa.acquire({ permits: 2 });
    assert.strictEqual(sa.held, 2);
    assert.strictEqual(await sb.available(), 0);
    await assert.rejects(sb.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    const waiting = sb.acquire({ wait: liveness(10000) });
    await sa.release(1);
    await waiting;
    assert.strictEqual(sb.held, 1);
    await sb.release(1);
    await sa.release(1);
    assert.strictEqual(await sa.available(), 2);
  } finally {
    await a.close();
    await b.close();
  }
});

test('latch: await resolves when the count reaches zero', async () => {
  const a = await latchkey.connect(box.redis.url);
  const b = await latchkey.connect(box.redis.url);
  try {
    const la = a.latch('node:latch');
    const lb = b.latch('node:latch');
    assert.strictEqual(await la.trySetCount(2), true);
    await assert.rejects(lb.await({ wait: 100 }), (e) => e.code === 'LK_ETIMEDOUT');
    const done = lb.await({ wait: liveness(10000) });
    await la.countDown();
    assert.strictEqual(await la.getCount(), 1);
    await la.countDown();
    await done;
    assert.strictEqual(await la.getCount(), 0);
  } finally {
    await a.close();
    await b.close();
  }
});
