'use strict';
// A C program and a Node program exclude each other on one name: the C side
// is the latchkey command (src/cli, built by the top-level CMake build into
// build/latchkey, or named by $LATCHKEY_CLI).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const latchkey = require('..');
const { serverForFile, liveness } = require('./helpers/common');

const box = serverForFile();

const cli = process.env.LATCHKEY_CLI || path.join(__dirname, '..', '..', '..', 'build', 'latchkey');
const haveCli = fs.existsSync(cli);
// CI names the command: there a missing one is a failure, not a skip.
const skip = !haveCli && !process.env.LATCHKEY_CLI ? `no latchkey command at ${cli} (build it: cmake --build build --target latchkey_cli)` : false;

// Runs `latchkey run` on the test's server; onLine sees each stdout line.
function run(args, onLine = () => {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(cli, ['run', '--redis', box.redis.url, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), liveness(20000));
    p.on('error', reject);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

test('a lock held by Node keeps the C program out', { skip }, async () => {
  const lk = await latchkey.connect(box.redis.url);
  try {
    const lock = lk.lock('node:interop:1');
    await lock.acquire();
    const r = await run(['--wait', '0', 'node:interop:1', '--', 'true']);
    assert.deepStrictEqual(r, { code: 75, signal: null }); // not acquired within --wait
    await lock.release();
    const r2 = await run(['--wait', '0', 'node:interop:1', '--', 'true']);
    assert.deepStrictEqual(r2, { code: 0, signal: null });
  } finally {
    await lk.close();
  }
});

test('a lock held by the C program keeps Node out, and is Node\'s once it is released', { skip }, async () => {
  const lk = await latchkey.connect(box.redis.url);
  try {
    const lock = lk.lock('node:interop:2');
    let inside;
    const entered = new Promise((resolve) => { inside = resolve; });
    // The command says "in" while the C program holds the lock, then waits
    // for a file the test creates, so the check below runs during the hold.
    const gate = path.join(require('node:os').tmpdir(), `lk-node-gate-${process.pid}`);
    fs.rmSync(gate, { force: true });
    const cProgram = run(['--wait', '10s', 'node:interop:2', '--', 'sh', '-c',
      `echo in; i=0; while [ ! -e "${gate}" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`],
    (line) => { if (line === 'in') inside(); });
    await entered;
    await assert.rejects(lock.acquire(), (e) => e.code === 'LK_ETIMEDOUT');
    const waiting = lock.acquire({ wait: liveness(20000) });
    fs.writeFileSync(gate, '');
    assert.deepStrictEqual(await cProgram, { code: 0, signal: null });
    await waiting;
    assert.strictEqual(lock.isHeld, true);
    fs.rmSync(gate, { force: true });
  } finally {
    await lk.close();
  }
});
