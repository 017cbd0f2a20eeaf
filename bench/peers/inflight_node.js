'use strict';
/* bench/peers/inflight_node.js: B2 (bench/README.md, "Peers"): many
 * promises in flight from one Node client, one implementation per run.
 *
 *   node inflight_node.js --impl latchkey-node|redis-semaphore|node-redlock-single
 *        --port P [--host H] [--inflight K] [--pairs N] [--warmup W]
 *
 * K loops (default 64) run at once on one client made once, each on a name
 * of its own (uncontended), each doing N / K pairs (acquire, then the
 * release of that hold) back to back; the event loop interleaves them, so
 * about K operations are always in flight. Implementations as in
 * pairs_node.js (latchkey-node: lock.acquire() try once with the watchdog's
 * default lease; redis-semaphore's Mutex with its defaults; npm `redlock`
 * v5 over this one server, retryCount 0, duration 30000 ms).
 * Figures (one JSON line each, bench "B2"): pairs_per_s (all loops), acq_p50_us,
 * acq_p99_us, cpu_us_per_pair (this process: process.cpuUsage). Progress on
 * stderr. Run it on the client CPU (bench/peers.sh pins it). */

const path = require('node:path');

const hr = () => Number(process.hrtime.bigint());
const IMPLS = ['latchkey-node', 'redis-semaphore', 'node-redlock-single'];

function usage() {
  process.stderr.write(`usage: node inflight_node.js --impl ${IMPLS.join('|')} --port P [--host H] [--inflight K] [--pairs N] [--warmup W]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const a = { impl: null, host: '127.0.0.1', port: 0, inflight: 64, pairs: 20000, warmup: 1000 };
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
    else if (s === '--inflight') a.inflight = int(v, 1, 4096);
    else if (s === '--pairs') a.pairs = int(v, 1, 10000000);
    else if (s === '--warmup') a.warmup = int(v, 0, 10000000);
    else usage();
  }
  if (!IMPLS.includes(a.impl) || a.port === 0) usage();
  return a;
}

function pct(sorted, q) {
  const n = sorted.length;
  let rank = Math.floor(q * n + 0.999999);
  rank = Math.min(Math.max(rank, 1), n);
  return sorted[rank - 1] / 1000;
}

/* { lock(name) -> { acquire(), release() }, close() } for the implementation asked. */
async function makeImpl(a) {
  if (a.impl === 'latchkey-node') {
    const latchkey = require(path.join(__dirname, '..', '..', 'bindings', 'node'));
    const lk = await latchkey.connect(`redis://${a.host}:${a.port}`);
    return {
      lock: (name) => {
        const l = lk.lock(name);
        return { acquire: () => l.acquire(), release: () => l.release() };
      },
      close: () => lk.close(),
    };
  }
  const Redis = require('ioredis');
  const redis = new Redis({ host: a.host, port: a.port, lazyConnect: true });
  await redis.connect();
  if (a.impl === 'redis-semaphore') {
    const { Mutex } = require('redis-semaphore');
    return {
      lock: (name) => {
        const m = new Mutex(redis, name); /* the library's defaults */
        return { acquire: () => m.acquire(), release: () => m.release() };
      },
      close: () => redis.quit(),
    };
  }
  const RedlockMod = require('redlock');
  const Redlock = RedlockMod.default || RedlockMod;
  const redlock = new Redlock([redis], { retryCount: 0 });
  return {
    lock: (name) => {
      let held = null;
      return {
        acquire: async () => { held = await redlock.acquire([name], 30000); },
        release: () => held.release(),
      };
    },
    close: () => redis.quit(),
  };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const impl = await makeImpl(a);
  const locks = Array.from({ length: a.inflight }, (_, i) => impl.lock(`bench:b2:${a.impl}:${process.pid}:${i}`));
  const per = Math.max(1, Math.floor(a.pairs / a.inflight));
  const total = per * a.inflight;
  const acq = new Float64Array(total);
  let k = 0;
  const loop = async (l, n, rec) => {
    for (let i = 0; i < n; i++) {
      const t0 = hr();
      await l.acquire();
      if (rec) acq[k++] = hr() - t0;
      await l.release();
    }
  };
  const warm = Math.ceil(a.warmup / a.inflight);
  await Promise.all(locks.map((l) => loop(l, warm, false)));
  const u0 = process.cpuUsage();
  const w0 = hr();
  await Promise.all(locks.map((l) => loop(l, per, true)));
  const wall = hr() - w0;
  const u = process.cpuUsage(u0);
  await impl.close();
  acq.sort();
  const out = (metric, value, unit) => process.stdout.write(JSON.stringify({
    bench: 'B2', impl: a.impl, metric, value: Number(value.toPrecision(6)), unit, pairs: total,
    inflight: a.inflight }) + '\n');
  out('pairs_per_s', total / (wall / 1e9), 'pairs/s');
  out('acq_p50_us', pct(acq, 0.5), 'us');
  out('acq_p99_us', pct(acq, 0.99), 'us');
  out('cpu_us_per_pair', (u.user + u.system) / total, 'us');
  process.stderr.write(`# ${a.impl}: ${total} pairs, ${a.inflight} in flight, in ${(wall / 1e6).toFixed(0)} ms\n`);
}

main().catch((e) => {
  process.stderr.write(`inflight_node.js: ${e.stack || e}\n`);
  process.exit(1);
});
