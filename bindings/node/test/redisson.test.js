'use strict';
// Redisson interop without a JVM: the C harness's Redisson emulators, as
// the program test/interop/redisson_emu_cli.c (built by the top-level CMake
// build into build/test/, or named by $LATCHKEY_REDISSON_EMU), share names
// with Node: the lock, the permit-expirable semaphore, the rate limiter.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const latchkey = require('..');
const { serverForFile, liveness } = require('./helpers/common');

const box = serverForFile();

const emu = process.env.LATCHKEY_REDISSON_EMU
  || path.join(__dirname, '..', '..', '..', 'build', 'test', 'rt_redisson_emu_cli');
// CI names the C build (LATCHKEY_CLI): there a missing emulator is a failure.
const skip = !fs.existsSync(emu) && !process.env.LATCHKEY_CLI
  ? `no Redisson emulator at ${emu} (build it: cmake --build build --target rt_redisson_emu_cli)` : false;

// The emulator as a process: ask(line) resolves with its one-line answer.
function startEmu() {
  const p = spawn(emu, [String(box.redis.port)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  let buf = '';
  p.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w.resolve(line);
    }
  });
  const exited = new Promise((resolve) => p.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`emulator exited (${code})`));
    resolve(code);
  }));
  return {
    ask(line) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`emulator: no answer to ${line}`)), liveness(20000));
        waiting.push({ resolve: (v) => { clearTimeout(timer); resolve(v); }, reject });
        p.stdin.write(`${line}\n`);
      });
    },
    async stop() {
      p.stdin.end('quit\n');
      assert.strictEqual(await exited, 0);
    },
  };
}

test('lock: Redisson and Node exclude each other; a waiting Node acquire gets Redisson\'s release', { skip }, async () => {
  const lk = await latchkey.connect(box.redis.url);
  const r = startEmu();
  try {
    const lock = lk.lock('node:redisson:lock');
    assert.strictEqual(await r.ask('try node:redisson:lock'), 'ok');
    await assert.rejects(lock.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    const waiting = lock.acquire({ wait: liveness(10000) });
    assert.strictEqual(await r.ask('unlock node:redisson:lock'), '1');
    await waiting;
    assert.strictEqual(await r.ask('try node:redisson:lock'), 'busy');
    // Redisson's blocking lock() waits for Node's release (its channel message).
    const rl = r.ask(`lock node:redisson:lock ${liveness(10000)}`);
    await new Promise((res) => setTimeout(res, 50));
    assert.strictEqual(await lock.release(), true);
    assert.strictEqual(await rl, 'ok');
    assert.strictEqual(await r.ask('unlock node:redisson:lock'), '1');
  } finally {
    await r.stop();
    await lk.close();
  }
});

test('permit semaphore: permits are shared with Redisson and released across', { skip }, async () => {
  const lk = await latchkey.connect(box.redis.url);
  const r = startEmu();
  try {
    const ps = lk.permitSemaphore('node:redisson:psem');
    assert.strictEqual(await ps.trySetPermits(2), true);
    const theirs = await r.ask('psem-try node:redisson:psem 30000');
    assert.match(theirs, /^[0-9a-f]{32}$/);
    const [mine] = await ps.acquire();
    assert.strictEqual(await r.ask('psem-available node:redisson:psem'), '0');
    assert.strictEqual(await r.ask('psem-try node:redisson:psem 30000'), 'busy');
    await assert.rejects(ps.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    // Each side gives back the other's permit by id.
    assert.strictEqual(await ps.releaseId(theirs), true);
    assert.strictEqual(await r.ask(`psem-release node:redisson:psem ${mine}`), '1');
    assert.strictEqual(await ps.available(), 2);
  } finally {
    await r.stop();
    await lk.close();
  }
});

test('rate limiter: one window for Redisson and Node', { skip }, async () => {
  const lk = await latchkey.connect(box.redis.url);
  const r = startEmu();
  try {
    const rl = lk.rateLimiter('node:redisson:rate');
    assert.strictEqual(await r.ask('rate-set node:redisson:rate 3 60000'), '1');
    assert.deepStrictEqual(await rl.getConfig(), { type: 'overall', rate: 3, interval: 60000, keepAlive: 0 });
    assert.strictEqual(await rl.acquire({ permits: 2 }), 1);
    assert.strictEqual(await r.ask('rate-try node:redisson:rate 1'), 'ok');
    assert.ok(Number(await r.ask('rate-try node:redisson:rate 1')) > 0); // denied: a wait
    await assert.rejects(rl.tryAcquire(), (e) => e.code === 'LK_ETIMEDOUT');
  } finally {
    await r.stop();
    await lk.close();
  }
});
