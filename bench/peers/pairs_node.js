'use strict';
/* bench/peers/pairs_node.js: B1 (bench/README.md, "Peers"): sequential pairs
 * on one name from Node, one implementation per run.
 *
 *   node pairs_node.js --impl latchkey-node|redis-semaphore|node-redlock-single
 *        --port P [--host H] [--pairs N] [--warmup W]
 *
 * A pair is one uncontended acquire and the release of that hold, awaited
 * back to back on one client made once:
 *   latchkey-node        latchkey for Node (bindings/node, built there):
 *                        lock.acquire() (try once, the watchdog's default
 *                        lease), lock.release();
 *   redis-semaphore      its Mutex with the library's defaults: acquire(),
 *                        release();
 *   node-redlock-single  npm `redlock` v5 over this one server (retryCount 0,
 *                        duration 30000 ms): acquire([name], 30000),
 *                        lock.release().
 * Figures (one JSON line each, bench "B1"): pairs_per_s, acq_p50_us,
 * acq_p99_us, pair_p50_us, cpu_us_per_pair (this process: process.cpuUsage).
 * Progress on stderr. Run it on the client CPU (bench/peers.sh pins it). */

const path = require('node:path');

const hr = () => Number(process.hrtime.bigint());

function usage() {
  process.stderr.write('usage: node pairs_node.js --impl latchkey-node|redis-semaphore|node-redlock-single --port P [--host H] [--pairs N] [--warmup W]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { impl: null, host: '127.0.0.1', port: 0, pairs: 3000, warmup: 300 };
  const int = (v, lo, hi) => {
    if (!/^[0-9]+$/.test(v || '')) usage();
    const n = Number(v);
    if (n < lo || n > hi) usage();
    return n;
  };
  for (let i = 0; i < argv.length; i += 2) {
    const s = argv[i], v = argv[i + 1];
    if (v === undefined) usage();
    if (s === '--impl') a.impl = v;
    else if (s === '--port') a.port = int(v, 1, 65535);
    else if (s === '--host') a.host = v;
    else if (s === '--pairs') a.pairs = int(v, 1, 10000000);
    else if (s === '--warmup') a.warmup = int(v, 0, 10000000);
    else usage();
  }
  if (!['latchkey-node', 'redis-semaphore', 'node-redlock-single'].includes(a.impl) || a.port === 0) usage();
  return a;
}

function pct(sorted, q) {
  const n = sorted.length;
  let rank = Math.floor(q * n + 0.999999);
  rank = Math.min(Math.max(rank, 1), n);
  return sorted[rank - 1] / 1000;
}

/* { acquire(), release(), close() } for the implementation asked. */
async function makeImpl(a, name) {
  if (a.impl === 'latchkey-node') {
    const latchkey = require(path.join(__dirname, '..', '..', 'bindings', 'node'));
    const lk = await latchkey.connect(`redis://${a.host}:${a.port}`);
    const lock = lk.lock(name);
    return { acquire: () => lock.acquire(), release: () => lock.release(), close: () => lk.close() };
  }
  const Redis = require('ioredis');
  const redis = new Redis({ host: a.host, port: a.port, lazyConnect: true });
  await redis.connect();
  if (a.impl === 'redis-semaphore') {
    const { Mutex } = require('redis-semaphore');
    const mutex = new Mutex(redis, name); /* the library's defaults */
    return { acquire: () => mutex.acquire(), release: () => mutex.release(), close: () => redis.quit() };
  }
  const RedlockMod = require('redlock');
  const Redlock = RedlockMod.default || RedlockMod;
  const redlock = new Redlock([redis], { retryCount: 0 });
  let held = null;
  return {
    acquire: async () => { held = await redlock.acquire([name], 30000); },
    release: () => held.release(),
    close: () => redis.quit(),
  };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const impl = await makeImpl(a, `bench:b1:${a.impl}:${process.pid}`);
  for (let i = 0; i < a.warmup; i++) {
    await impl.acquire();
    await impl.release();
  }
  const acq = new Array(a.pairs);
  const pair = new Array(a.pairs);
  const u0 = process.cpuUsage();
  const w0 = hr();
  for (let i = 0; i < a.pairs; i++) {
    const t0 = hr();
    await impl.acquire();
    const t1 = hr();
    await impl.release();
    acq[i] = t1 - t0;
    pair[i] = hr() - t0;
  }
  const wall = hr() - w0;
  const u = process.cpuUsage(u0);
  await impl.close();
  acq.sort((x, y) => x - y);
  pair.sort((x, y) => x - y);
  const out = (metric, value, unit) => process.stdout.write(JSON.stringify({
    bench: 'B1', impl: a.impl, metric, value: Number(value.toPrecision(6)), unit, pairs: a.pairs }) + '\n');
  out('pairs_per_s', a.pairs / (wall / 1e9), 'pairs/s');
  out('acq_p50_us', pct(acq, 0.5), 'us');
  out('acq_p99_us', pct(acq, 0.99), 'us');
  out('pair_p50_us', pct(pair, 0.5), 'us');
  out('cpu_us_per_pair', (u.user + u.system) / a.pairs, 'us');
  process.stderr.write(`# ${a.impl}: ${a.pairs} pairs in ${(wall / 1e6).toFixed(0)} ms\n`);
}

main().catch((e) => {
  process.stderr.write(`pairs_node.js: ${e.stack || e}\n`);
  process.exit(1);
});
