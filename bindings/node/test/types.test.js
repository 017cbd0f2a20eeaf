'use strict';
// index.d.ts is checked, not only shipped: TypeScript (pinned in
// package-lock.json, installed by npm ci) compiles test/types/usage.ts, which
// uses every declared call as docs/node.md does, with --strict. A declaration
// that no longer fits the documented use, or misuse that stops being an
// error (its @ts-expect-error lines), fails this test.
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

test('index.d.ts type-checks against the documented use (tsc --strict)', () => {
  const root = path.join(__dirname, '..');
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022',
    '--module', 'commonjs', '--moduleResolution', 'node', '--types', 'node',
    path.join(__dirname, 'types', 'usage.ts')], { cwd: root, encoding: 'utf8', timeout: 120000 });
  assert.strictEqual(r.error, undefined, String(r.error));
  assert.strictEqual(r.status, 0, `tsc reported:\n${r.stdout}${r.stderr}`);
});
