'use strict';
// docs/node.md's example runs as written and prints what the page says.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { serverForFile, liveness } = require('./helpers/common');

const box = serverForFile();

// The text blocks that follow the marker comment: the program, its output.
function blocksAfterMarker(page, marker) {
  const text = fs.readFileSync(page, 'utf8');
  const at = text.indexOf(marker);
  assert.ok(at >= 0, `no ${marker} in ${page}`);
  const blocks = [...text.slice(at).matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks;
}

test('docs/node.md: the example runs and prints its stated output', async () => {
  const page = path.join(__dirname, '..', '..', '..', 'docs', 'node.md');
  const [program, output] = blocksAfterMarker(page, 'test/docs.test.js runs this block');
  assert.match(program, /require\('latchkey'\)/);
  const script = program.replace("require('latchkey')", `require(${JSON.stringify(path.join(__dirname, '..'))})`);
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { env: { ...process.env, REDIS_URL: box.redis.url }, timeout: liveness(20000) },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  assert.strictEqual(out, output);
});
