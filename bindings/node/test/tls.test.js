'use strict';
// TLS through the addon: the library's TLS layer runs on the OpenSSL inside
// the node process (the addon links no libssl of its own: CMakeLists.txt).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const latchkey = require('..');
const { startRedis, freePort } = require('./helpers/redis');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lk-node-tls-'));
const f = (n) => path.join(dir, n);
let redis;
let tlsPort;

test.before(async () => {
  const ossl = (...a) => execFileSync('openssl', a, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ossl('req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=latchkey node test CA');
  ossl('req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  ossl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial',
    '-out', f('server.crt'), '-days', '1', '-extfile', f('ext.cnf'));
  redis = await startRedis(async () => {
    tlsPort = await freePort();
    return ['--tls-port', String(tlsPort), '--tls-cert-file', f('server.crt'), '--tls-key-file', f('server.key'),
      '--tls-ca-cert-file', f('ca.crt'), '--tls-auth-clients', 'no'];
  });
});

test.after(async () => {
  if (redis) await redis.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('rediss:// with the test CA: acquire and release over TLS', async () => {
  const lk = await latchkey.connect(`rediss://127.0.0.1:${tlsPort}`, { tlsCaFile: f('ca.crt') });
  try {
    const lock = lk.lock('node:tls');
    await lock.acquire();
    assert.match(await redis.command('EXISTS', 'node:tls'), /^:1/);
    assert.strictEqual(await lock.release(), true);
  } finally {
    await lk.close();
  }
  // Node's own TLS still works in the same process beside it.
  const tls = require('node:tls');
  await new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: tlsPort, ca: fs.readFileSync(f('ca.crt')) }, () => {
      s.end();
      resolve();
    });
    s.on('error', reject);
  });
});

test('a server certificate the CA did not sign is refused (LK_ECONN)', async () => {
  await assert.rejects(latchkey.connect(`rediss://127.0.0.1:${tlsPort}`, { connectTimeout: 1500 }),
    (e) => e.code === 'LK_ECONN');
});
