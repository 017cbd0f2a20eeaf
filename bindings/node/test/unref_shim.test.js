'use strict';
// src/unref_shim.h must route every handle init of the uv.h the addon is
// built with: one left out would open a referenced handle that keeps Node
// alive with nothing held (or a handle the addon cannot account for).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');

// The uv.h CMakeLists.txt compiles against: Node's, else the system's.
function uvHeader() {
  const nodes = path.join(process.execPath, '..', '..', 'include', 'node', 'uv.h');
  for (const p of [nodes, '/usr/include/uv.h', '/usr/local/include/uv.h']) {
    if (fs.existsSync(p)) return p;
  }
  return null;
}

test('the unref shim wraps every handle init of uv.h', (t) => {
  const header = uvHeader();
  if (!header) return t.skip('no uv.h found');
  const uv = fs.readFileSync(header, 'utf8');
  // Handle inits take the loop first; uv_loop_init initializes the loop.
  const inits = [...uv.matchAll(/UV_EXTERN int uv_(\w+_init\w*)\(\s*uv_loop_t\s*\*/g)]
    .map((m) => m[1]).filter((n) => n !== 'loop_init');
  assert.ok(inits.includes('timer_init') && inits.includes('tcp_init_ex'), `parsed ${inits}`);
  const src = path.join(__dirname, '..', 'src');
  const h = fs.readFileSync(path.join(src, 'unref_shim.h'), 'utf8');
  const c = fs.readFileSync(path.join(src, 'unref_shim.c'), 'utf8');
  const missing = inits.filter((n) => !h.includes(`#define uv_${n} lk_node_uv_${n}\n`) ||
    !c.includes(`LK_NODE_UNREF_INIT(${n},`));
  assert.deepStrictEqual(missing, [], `${header}: not routed through the shim`);
});

test('the addon leaves the blocking API (src/blocking/) out', (t) => {
  // It runs a loop of its own on a thread, which the shim's unreferenced
  // handles would not keep running; nothing in JavaScript can call it. The
  // addon is not stripped, so a compiled-in function shows in its symbols.
  const bin = fs.readFileSync(path.join(__dirname, '..', 'build', 'Release', 'latchkey.node'));
  if (!bin.includes('lk_lock_new')) return t.skip('the addon has no symbol table (stripped)');
  assert.strictEqual(bin.includes('lk_blocking_new'), false);
});
