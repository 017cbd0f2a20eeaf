'use strict';
// Lifetime: garbage collection closes open objects, and the process exits
// once nothing is held or waited on, without closing anything.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const latchkey = require('..');
const { serverForFile, until, liveness } = require('./helpers/common');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const box = serverForFile();

async function collect() {
  // Finalizers of wrapped objects may run on a later turn: a few rounds.
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

test('garbage collection of a held lock closes it: the hold is given back', async () => {
  const lk = await latchkey.connect(box.redis.url);
  try {
    await (async () => {
      const lock = lk.lock('node:gc');
      await lock.acquire();
    })();
    assert.match(await box.redis.command('EXISTS', 'node:gc'), /^:1/);
    await collect();
    assert.ok(await until(async () => /^:0/.test(await box.redis.command('EXISTS', 'node:gc')), liveness(5000)),
      'the collected lock still holds its key');
    // Many objects made and dropped: all collected, the client still works.
    for (let i = 0; i < 200; i++) lk.lock(`node:gc:${i}`);
    await collect();
    const again = lk.lock('node:gc');
    await again.acquire();
    assert.strictEqual(again.isHeld, true);
  } finally {
    await lk.close();
  }
});

test('garbage collection of a client and its held lock together closes both', async () => {
  const clients = async () => (await Promise.resolve(box.redis.command('CLIENT', 'LIST'))).split('\n').filter((l) => l.includes('name=latchkey')).length;
  const before = await clients();
  for (let round = 0; round < 3; round++) {
    await (async () => {
      const lk = await latchkey.connect(box.redis.url);
      const lock = lk.lock(`node:gc:both:${round}`);
      await lock.acquire();
      lk.fairLock(`node:gc:fair:${round}`); // open, never used
    })();
  }
  assert.ok((await clients()) > before);
  await collect();
  const gone = await until(async () => {
    const keys = await box.redis.command('EXISTS', 'node:gc:both:0', 'node:gc:both:1', 'node:gc:both:2');
    return /^:0/.test(keys) && (await clients()) === before;
  }, liveness(5000));
  assert.ok(gone, 'a collected client kept its connections or its lock');
});

test('every client and object core is freed once closed and collected', async () => {
  await collect();
  const base = latchkey.liveCounts();
  // Each round in a function of its own: a suspended async frame keeps its
  // locals alive, which would keep the round's objects from collection.
  const oneRound = async (round) => {
    await collect(); // round 0's objects: closed, now collected
    const start = latchkey.liveCounts();
    const lk = await latchkey.connect(box.redis.url);
    const locks = [];
    for (let i = 0; i < 50; i++) locks.push(lk.lock(`node:live:${i}`));
    await locks[0].acquire();
    await locks[1].acquire();
    await locks[1].release();
    locks[2].close();
    assert.deepStrictEqual(latchkey.liveCounts(), { clients: start.clients + 1, objects: start.objects + 50 });
    if (round === 0) await lk.close(); // the other round: collected without close
  };
  await oneRound(0);
  await oneRound(1);
  const freed = await until(async () => {
    await collect();
    const now = latchkey.liveCounts();
    return now.clients === base.clients && now.objects === base.objects;
  }, liveness(5000));
  assert.ok(freed, `still alive: ${JSON.stringify(latchkey.liveCounts())}, base ${JSON.stringify(base)}`);
});

// Runs a child script (given as text) with the module's path and the
// server's URL; resolves with its exit code, stdout and the time it took.
function child(script, maxMs) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, LK_MODULE: path.join(__dirname, '..'), LK_URL: box.redis.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), maxMs);
    p.on('error', reject);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, ms: Date.now() - t0 });
    });
  });
}

test('the process exits by itself once nothing is held or waited on (no close)', async () => {
  const r = await child(`
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      const lock = lk.lock('node:idle');
      await lock.acquire();
      await lock.release();
      lk.semaphore('node:idle:sem');
      console.log('idle');
    })();`, liveness(15000));
  assert.strictEqual(r.signal, null, 'the child had to be killed: its loop stayed alive');
  assert.strictEqual(r.code, 0);
  assert.match(r.out, /idle/);
});

test('a held lock keeps the process alive until it is released', async () => {
  // The release runs from an unreferenced timer: it can only fire if the
  // held lock keeps the loop alive on its own.
  const r = await child(`
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      const lock = lk.lock('node:keepalive');
      await lock.acquire();
      console.log('held');
      setTimeout(async () => { await lock.release(); console.log('released'); }, 500).unref();
    })();`, liveness(15000));
  assert.strictEqual(r.signal, null);
  assert.strictEqual(r.code, 0);
  assert.match(r.out, /held\nreleased/);
  assert.match(await box.redis.command('EXISTS', 'node:keepalive'), /^:0/);
});

test('a waiting acquire keeps the process alive until it ends', async () => {
  const lk = await latchkey.connect(box.redis.url);
  const holder = lk.lock('node:waitalive');
  await holder.acquire();
  try {
    const r = await child(`
      const latchkey = require(process.env.LK_MODULE);
      (async () => {
        const lk = await latchkey.connect(process.env.LK_URL);
        try { await lk.lock('node:waitalive').acquire({ wait: 700 }); } catch (e) { console.log(e.code); }
      })();`, liveness(15000));
    assert.strictEqual(r.signal, null);
    assert.strictEqual(r.code, 0);
    assert.match(r.out, /LK_ETIMEDOUT/);
    assert.ok(r.ms >= 700);
  } finally {
    await lk.close();
  }
});

test('a worker thread ends cleanly with a client left open, and terminate() gives its holds back', async () => {
  const { Worker } = require('node:worker_threads');
  const code = `
    const { parentPort } = require('node:worker_threads');
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      const lock = lk.lock(process.env.LK_NAME);
      await lock.acquire();
      if (process.env.LK_RELEASE) await lock.release();
      parentPort.postMessage('ready');
    })();`;
  const start = (name, release) => {
    const w = new Worker(code, { eval: true, env: { ...process.env, LK_MODULE: path.join(__dirname, '..'),
      LK_URL: box.redis.url, LK_NAME: name, ...(release ? { LK_RELEASE: '1' } : {}) } });
    const exited = new Promise((resolve, reject) => { w.on('exit', resolve); w.on('error', reject); });
    const ready = new Promise((resolve) => w.once('message', resolve));
    return { w, exited, ready };
  };
  // Nothing held: the worker's loop ends by itself; the open client is
  // closed by the teardown (its handles left on the worker's loop crashed
  // the process before).
  const idle = start('node:worker:idle', true);
  await idle.ready;
  assert.strictEqual(await idle.exited, 0);
  // Held: the worker stays alive; terminate() closes its client, which
  // gives the hold back.
  const held = start('node:worker:held', false);
  await held.ready;
  assert.match(await box.redis.command('EXISTS', 'node:worker:held'), /^:1/);
  await held.w.terminate();
  await held.exited;
  assert.ok(await until(async () => /^:0/.test(await box.redis.command('EXISTS', 'node:worker:held')), liveness(5000)),
    'the terminated worker left its hold behind');
});
