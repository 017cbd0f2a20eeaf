'use strict';
// Two Node processes contend for one name; the overlap checker is a
// directory each holder creates on entry and removes on exit: mkdir fails
// with EEXIST exactly when another process is inside.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { serverForFile, liveness } = require('./helpers/common');

const box = serverForFile();

const worker = `
  const fs = require('node:fs');
  const latchkey = require(process.env.LK_MODULE);
  (async () => {
    const lk = await latchkey.connect(process.env.LK_URL);
    const lock = lk.lock('node:processes');
    let entries = 0, overlaps = 0;
    for (let i = 0; i < Number(process.env.LK_ROUNDS); i++) {
      await lock.acquire({ wait: Number(process.env.LK_WAIT) });
      try { fs.mkdirSync(process.env.LK_PROBE); } catch { overlaps++; }
      entries++;
      await new Promise((r) => setTimeout(r, 2));
      fs.rmSync(process.env.LK_PROBE, { recursive: true, force: true });
      await lock.release();
    }
    await lk.close();
    console.log(JSON.stringify({ entries, overlaps }));
  })();`;

test('two processes exclude each other on one name (overlap checker)', async () => {
  const probe = path.join(os.tmpdir(), `lk-node-probe-${process.pid}`);
  fs.rmSync(probe, { recursive: true, force: true });
  const env = { ...process.env, LK_MODULE: path.join(__dirname, '..'), LK_URL: box.redis.url,
    LK_PROBE: probe, LK_ROUNDS: '30', LK_WAIT: String(liveness(20000)) };
  const run = () => new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', worker], { env, timeout: liveness(60000) },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))));
  });
  const results = await Promise.all([run(), run()]);
  assert.deepStrictEqual(results, [{ entries: 30, overlaps: 0 }, { entries: 30, overlaps: 0 }]);
});
