'use strict';
// Lifetime: garbage collection closes open objects that hold nothing (a
// held one is kept), and the process exits once nothing is held or waited
// on, without closing anything.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const latchkey = require('..');
const { serverForFile, until, liveness } = require('./helpers/common');
const { startRedis } = require('./helpers/redis');

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

test('a held lock nobody references is not collected: the hold stays until the client closes', async () => {
  // await lock.acquire({ wait: Infinity }); startServer(); is the usual
  // shape: the Lock is unreachable at once. Collecting it gave the hold back
  // with no 'lost' event, and a second instance got in.
  const lk = await latchkey.connect(box.redis.url);
  const other = await latchkey.connect(box.redis.url);
  try {
    let lost = 0;
    await (async () => {
      const lock = lk.lock('node:gc');
      lock.on('lost', () => { lost++; });
      await lock.acquire({ wait: Infinity });
    })();
    await collect();
    // A release sent by a collection would be done within this wait: the
    // other client, woken by it, would get the lock.
    await assert.rejects(other.lock('node:gc').acquire({ wait: 1000 }), (e) => e.code === 'LK_ETIMEDOUT');
    assert.match(await box.redis.command('EXISTS', 'node:gc'), /^:1/);
    assert.strictEqual(lost, 0);
    // Many objects made and dropped, holding nothing: all collected, the
    // client still works.
    const base = latchkey.liveCounts().objects;
    for (let i = 0; i < 200; i++) lk.lock(`node:gc:${i}`);
    assert.ok(await until(async () => { await collect(); return latchkey.liveCounts().objects <= base; }, liveness(5000)),
      `objects not collected: ${latchkey.liveCounts().objects}, base ${base}`);
    await lk.close(); // the held lock's way back
    assert.match(await box.redis.command('EXISTS', 'node:gc'), /^:0/);
    const again = other.lock('node:gc');
    await again.acquire();
    assert.strictEqual(again.isHeld, true);
  } finally {
    await lk.close();
    await other.close();
  }
});

test('garbage collection of a client and its open locks (holding nothing) closes both', async () => {
  const clients = async () => (await Promise.resolve(box.redis.command('CLIENT', 'LIST'))).split('\n').filter((l) => l.includes('name=latchkey')).length;
  const before = await clients();
  for (let round = 0; round < 3; round++) {
    await (async () => {
      const lk = await latchkey.connect(box.redis.url);
      const lock = lk.lock(`node:gc:both:${round}`);
      await lock.acquire();
      await lock.release();
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
    if (round === 0) await lk.close();
    else await locks[0].release(); // the other round: collected without close (a hold would pin it)
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

test('garbage collection of a MultiLock and a RedLock with the clients they borrow frees every core', async () => {
  await collect();
  const base = latchkey.liveCounts();
  const conns = async () => (await box.redis.command('CLIENT', 'LIST')).split('\n').filter((l) => l.includes('name=latchkey')).length;
  const connsBefore = await conns();
  const second = await startRedis(); // a RedLock's masters are distinct servers
  // Members and masters on clients other than the group's own: their
  // clients' close_all refuses (LK_EBUSY) while the group is open, so the
  // group's end closes them, whatever order the collector picks.
  await (async () => {
    const a = await latchkey.connect(box.redis.url);
    const b = await latchkey.connect(box.redis.url);
    const ml = latchkey.multiLock([a.lock('node:gc:ml:1'), b.lock('node:gc:ml:2')]);
    await ml.acquire();
    await ml.release();
    const c = await latchkey.connect(box.redis.url);
    const d = await latchkey.connect(second.url);
    latchkey.redLock([c, d], 'node:gc:rl');
    assert.deepStrictEqual(latchkey.liveCounts(), { clients: base.clients + 4, objects: base.objects + 4 });
  })();
  const freed = await until(async () => {
    await collect();
    const now = latchkey.liveCounts();
    return now.clients === base.clients && now.objects === base.objects && (await conns()) === connsBefore;
  }, liveness(5000));
  await second.stop();
  assert.ok(freed, `still alive: ${JSON.stringify(latchkey.liveCounts())}, base ${JSON.stringify(base)}, connections ${await conns()} (${connsBefore} before)`);
});

function hasRedisCli() {
  try {
    require('node:child_process').execFileSync('redis-cli', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Runs a child script (given as text) with the module's path and the
// server's URL; resolves with its exit code, stdout and the time it took.
function child(script, maxMs) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, LK_MODULE: path.join(__dirname, '..'), LK_URL: box.redis.url,
        LK_PORT: String(box.redis.port) },
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

test('a fixed lease keeps the process alive until it runs out, then lets it exit', async () => {
  // The hold ends at its deadline with no callback: nothing looked again.
  const r = await child(`
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      await lk.lock('node:fixedlease').acquire({ lease: 500 });
      await lk.fairLock('node:fixedlease:fair').acquire({ lease: 500 });
      await lk.readWriteLock('node:fixedlease:rw').write.acquire({ lease: 500 });
      console.log('held');
    })();`, liveness(15000));
  assert.strictEqual(r.signal, null, 'the child had to be killed: an expired lease kept it alive');
  assert.strictEqual(r.code, 0);
  assert.match(r.out, /held/);
  assert.ok(r.ms >= 500, `exited after ${r.ms} ms, before the lease ran out`);
});

test('a client that cannot connect does not keep the process alive', async () => {
  const { freePort } = require('./helpers/redis');
  const net = require('node:net');
  // A port nobody listens on, and a server that accepts and never answers.
  const silent = net.createServer(() => {});
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    for (const port of [await freePort(), silent.address().port]) {
      const r = await child(`
        const latchkey = require(process.env.LK_MODULE);
        new latchkey.Client('redis://127.0.0.1:${port}');
        console.log('made');`, liveness(15000));
      assert.strictEqual(r.signal, null, `port ${port}: the child had to be killed: connecting kept it alive`);
      assert.strictEqual(r.code, 0);
      assert.match(r.out, /made/);
    }
  } finally {
    silent.close();
  }
});

test('close() of a held lock keeps the loop alive until the hold is given back', { skip: !hasRedisCli() && 'no redis-cli' }, async () => {
  // Nothing else pending after close(): the release it defers runs from an
  // unreferenced handle, and the loop used to stop first ('beforeExit'
  // came with the lock still held; only the environment's teardown gave it
  // back, after every exit handler). beforeExit asks the server itself,
  // synchronously.
  const r = await child(`
    const { execFileSync } = require('node:child_process');
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      const lock = lk.lock('node:closeexit');
      await lock.acquire();
      lock.close();
      process.once('beforeExit', () => {
        const n = execFileSync('redis-cli', ['-p', process.env.LK_PORT, 'EXISTS', 'node:closeexit']);
        console.log('at beforeExit: ' + String(n).trim());
      });
    })();`, liveness(15000));
  assert.strictEqual(r.signal, null);
  assert.strictEqual(r.code, 0);
  assert.match(r.out, /at beforeExit: 0/, 'the loop stopped before the close gave the hold back');
  assert.match(await box.redis.command('EXISTS', 'node:closeexit'), /^:0/);
});

test('process.exit() while holding gives nothing back (as docs/node.md says): the hold stays', async () => {
  const r = await child(`
    const latchkey = require(process.env.LK_MODULE);
    (async () => {
      const lk = await latchkey.connect(process.env.LK_URL);
      await lk.lock('node:processexit').acquire();
      console.log('held');
      process.exit(0);
    })();`, liveness(15000));
  assert.strictEqual(r.code, 0);
  assert.match(r.out, /held/);
  // Left on the server with its renewed lease (30 s): no cleanup hook ran.
  assert.match(await box.redis.command('EXISTS', 'node:processexit'), /^:1/);
  await box.redis.command('DEL', 'node:processexit');
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
