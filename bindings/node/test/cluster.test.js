'use strict';
// A Redis Cluster of three masters (no replicas) on free loopback ports,
// formed with redis-cli --cluster create as the C harness does
// (test/harness/redis_cluster.c) and stopped by PID: the client finds the
// cluster by itself from one node's URL, and names on different slots work
// alone and together (a MultiLock across slots).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const latchkey = require('..');
const { startRedis } = require('./helpers/redis');
const { until, liveness } = require('./helpers/common');

function haveRedisCli() {
  try {
    require('node:child_process').execFileSync('redis-cli', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function startCluster(masters) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lk-node-cluster-'));
  const nodes = [];
  try {
    for (let i = 0; i < masters; i++) {
      // A directory per node: each writes its own nodes.conf.
      const nodeDir = path.join(dir, String(i));
      fs.mkdirSync(nodeDir);
      nodes.push(await startRedis(async () => ['--cluster-enabled', 'yes', '--dir', nodeDir,
        '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000']));
    }
    await new Promise((resolve, reject) => {
      execFile('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas', '0', '--cluster-yes'], { timeout: liveness(30000) },
      (err, stdout, stderr) => (err ? reject(new Error(`cluster create: ${err.message}\n${stdout}${stderr}`)) : resolve()));
    });
    const ok = await until(async () => {
      for (const n of nodes) {
        if (!(await n.command('CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
      }
      return true;
    }, liveness(20000));
    if (!ok) throw new Error('the cluster did not reach cluster_state:ok');
    return {
      nodes,
      async stop() {
        for (const n of nodes) await n.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const n of nodes) await n.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

test('cluster: the client finds the cluster; locks, semaphores and a MultiLock across slots',
  { skip: !haveRedisCli() && 'no redis-cli' }, async () => {
    const cluster = await startCluster(3);
    const a = await latchkey.connect(cluster.nodes[0].url, { connectTimeout: liveness(10000) });
    const b = await latchkey.connect(cluster.nodes[1].url, { connectTimeout: liveness(10000) });
    try {
      // Names on many slots: some live on another node than the one connected to.
      const names = Array.from({ length: 6 }, (_, i) => `node:cluster:${i}`);
      for (const name of names) {
        const la = a.lock(name);
        await la.acquire();
        await assert.rejects(b.lock(name).acquire(), (e) => e.code === 'LK_ETIMEDOUT');
        await la.release();
        await b.lock(name).using(async (l) => assert.strictEqual(l.isHeld, true));
      }
      const ml = latchkey.multiLock(names.map((n) => a.lock(n)));
      await ml.acquire();
      await assert.rejects(b.lock(names[5]).acquire(), (e) => e.code === 'LK_ETIMEDOUT');
      await ml.release();
      await ml.close();
      const ps = b.permitSemaphore('node:cluster:psem');
      assert.strictEqual(await ps.trySetPermits(1), true);
      const [id] = await ps.acquire();
      await assert.rejects(a.permitSemaphore('node:cluster:psem').acquire(), (e) => e.code === 'LK_ETIMEDOUT');
      assert.strictEqual(await ps.release(id), 1);
      const leader = a.leader('node:cluster:role');
      assert.ok((await leader.campaign()) > 0n);
      await leader.resign();
    } finally {
      await a.close();
      await b.close();
      await cluster.stop();
    }
  });
