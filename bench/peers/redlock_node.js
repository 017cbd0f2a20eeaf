'use strict';
/* bench/peers/redlock_node.js: B4 (bench/README.md) for the peer node-redlock
 * (npm `redlock` v5) over 5 masters, pairs back to back as
 * bench/multilock_redlock.c runs latchkey's RedLock, and over master 1 alone
 * (impl "node-redlock-single") for the p50 ratio to one master.
 *
 *   node redlock_node.js --ports P1,P2,P3,P4,P5 [--host H] [--pairs N]
 *        [--warmup W] [--rounds R]
 *
 * A pair is one uncontended acquire (retryCount 0, as latchkey's wait 0;
 * duration 30000 ms) and the release of that hold: `await
 * redlock.acquire([name], 30000)`, the time taken when it resolves (at the
 * quorum: redlock resolves as soon as 3 of 5 voted), then `await
 * lock.release()` (also resolved at the quorum) and the next pair. One
 * ioredis client per master, made once. Per round both implementations run
 * N pairs, their order alternating; the figures are the medians of the
 * per-round ones, under multilock_redlock's metric names: acq_p50_us,
 * acq_p99_us, pairs_per_s, server_us_per_pair (INFO commandstats usec of the
 * five masters), server_cpu_us_per_pair (their INFO cpu), cpu_us_per_pair
 * (this process: process.cpuUsage), commands_per_pair (the clients' own
 * count of commands sent) and, for "node-redlock", p50_vs_single_master.
 * With --latchkey-node, latchkey for Node (bindings/node, built there) runs
 * in the same rounds as impl "latchkey-node": latchkey.redLock over five
 * latchkey clients, acquire({ lease: 30000 }) (one attempt, the same fixed
 * lease as redlock's duration; it resolves at the quorum too), release()
 * (resolved once every master answered); its commands are not counted (the
 * addon does not expose the client's count), so it has no
 * commands_per_pair line.
 * One JSON line per figure (bench "B4"); progress on stderr. Run it on the
 * client CPU (bench/peers.sh: taskset -c 1, masters on CPU 0). */

const fs = require('node:fs');
const path = require('node:path');
const Redis = require('ioredis');
const RedlockMod = require('redlock');

const Redlock = RedlockMod.default || RedlockMod;
const hr = () => Number(process.hrtime.bigint());

function usage() {
  process.stderr.write('usage: node redlock_node.js --ports P1,..,P5 [--host H] [--pairs N] [--warmup W] [--rounds R]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { host: '127.0.0.1', ports: null, pairs: 3000, warmup: 300, rounds: 3, latchkeyNode: false };
  const int = (v, lo, hi) => {
    if (!/^[0-9]+$/.test(v || '')) usage();
    const n = Number(v);
    if (n < lo || n > hi) usage();
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i], v = argv[i + 1];
    if (s === '--latchkey-node') { a.latchkeyNode = true; continue; }
    if (v === undefined) usage();
    i++;
    if (s === '--ports') a.ports = v.split(',').map((p) => int(p, 1, 65535));
    else if (s === '--port') int(v, 1, 65535); /* a suite runner passes it; the masters come from --ports */
    else if (s === '--host') a.host = v;
    else if (s === '--pairs') a.pairs = int(v, 1, 10000000);
    else if (s === '--warmup') a.warmup = int(v, 0, 10000000);
    else if (s === '--rounds') a.rounds = int(v, 1, 20);
    else usage();
  }
  if (a.ports === null || a.ports.length !== 5) usage();
  return a;
}

function pct(sorted, q) {
  const n = sorted.length;
  if (n === 0) return 0;
  let rank = Math.floor(q * n + 0.999999);
  rank = Math.min(Math.max(rank, 1), n);
  return sorted[rank - 1] / 1000;
}
const median = (v) => {
  const s = [...v].sort((x, y) => x - y), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

/* The masters' commandstats usec and INFO cpu (us), summed. */
async function serverUs(admins) {
  let usec = 0, cpu = 0;
  for (const r of admins) {
    const text = await r.info('all');
    for (const line of text.split('\r\n')) {
      let m = /^cmdstat_([^:]+):calls=\d+,usec=(\d+)/.exec(line);
      if (m && m[1] !== 'info') usec += Number(m[2]);
      m = /^used_cpu_(sys|user):([0-9.]+)/.exec(line);
      if (m) cpu += Number(m[2]) * 1e6;
    }
  }
  return { usec, cpu };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let sent = 0, errors = 0;
  const mk = (port) => {
    const r = new Redis({ host: a.host, port, lazyConnect: true, maxRetriesPerRequest: 1 });
    r.on('error', () => {});
    return r;
  };
  const clients = a.ports.map(mk);
  for (const c of clients) {
    await c.connect();
    const send = c.sendCommand.bind(c);
    c.sendCommand = (...args) => { sent++; return send(...args); };
  }
  const admins = a.ports.map(mk);
  for (const c of admins) await c.connect();
  const settings = { retryCount: 0 };
  const redlockImpl = (name, rl) => {
    rl.on('error', () => { errors++; });
    return { name, acquire: (key) => rl.acquire([key], 30000) }; /* resolves with { release() } */
  };
  const impls = [
    redlockImpl('node-redlock', new Redlock(clients, settings)),
    redlockImpl('node-redlock-single', new Redlock([clients[0]], settings)),
  ];
  let lkClients = [];
  if (a.latchkeyNode) {
    const latchkey = require(path.join(__dirname, '..', '..', 'bindings', 'node'));
    for (const port of a.ports) lkClients.push(await latchkey.connect(`redis://${a.host}:${port}`));
    const objs = new Map(); /* one RedLock object per name, made once */
    impls.push({
      name: 'latchkey-node',
      acquire: async (key) => {
        if (!objs.has(key)) objs.set(key, latchkey.redLock(lkClients, key));
        const rl = objs.get(key);
        await rl.acquire({ lease: 30000 });
        return rl;
      },
    });
  }
  const base = `lkbench:peers:redlock:${process.pid}`;
  const samples = new Float64Array(a.pairs);
  const runPairs = async (im, n, rec) => {
    const name = `${base}:${im.name}`;
    for (let i = 0; i < n; i++) {
      const t0 = hr();
      const lock = await im.acquire(name);
      if (rec) samples[i] = hr() - t0;
      await lock.release();
    }
  };
  for (const im of impls) await runPairs(im, a.warmup, false);
  const fig = {};
  for (const im of impls) fig[im.name] = { p50: [], p99: [], pps: [], srv: [], scpu: [], cpu: [], cmd: [] };
  for (let r = 0; r < a.rounds; r++) {
    const order = r % 2 ? [...impls].reverse() : impls;
    const parts = [];
    for (const im of order) {
      const s0 = await serverUs(admins);
      const c0 = sent, u0 = process.cpuUsage(), w0 = hr();
      await runPairs(im, a.pairs, true);
      const wall = hr() - w0, u = process.cpuUsage(u0), c1 = sent;
      /* The stragglers of the last release (redlock resolved at the quorum) */
      await new Promise((resolve) => setTimeout(resolve, 20));
      const s1 = await serverUs(admins);
      const f = fig[im.name], sorted = Float64Array.from(samples).sort();
      f.p50.push(pct(sorted, 0.5));
      f.p99.push(pct(sorted, 0.99));
      f.pps.push(a.pairs / (wall / 1e9));
      f.srv.push((s1.usec - s0.usec) / a.pairs);
      f.scpu.push((s1.cpu - s0.cpu) / a.pairs);
      f.cpu.push((u.user + u.system) / a.pairs);
      f.cmd.push((c1 - c0) / a.pairs);
      parts.push(`${im.name} p50 ${f.p50[r].toFixed(1)} p99 ${f.p99[r].toFixed(1)} us ${f.pps[r].toFixed(0)} pairs/s`);
    }
    process.stderr.write(`# round ${r + 1}: ${parts.join('; ')}\n`);
  }
    /* redlock's exports hide its package.json: read it next to its entry */
  const pkg = path.join(path.dirname(require.resolve('redlock')), '..', '..', 'package.json');
  const lib = 'redlock ' + JSON.parse(fs.readFileSync(pkg, 'utf8')).version.replace(/^v/, '');
  const json = (impl, metric, value, unit) => {
    const o = { bench: 'B4', impl, metric, value: Number(value.toFixed(3)), unit,
      masters: impl === 'node-redlock-single' ? 1 : 5, quorum: impl === 'node-redlock-single' ? 1 : 3,
      pairs: a.pairs, rounds: a.rounds, inflight: 1,
      library: impl === 'latchkey-node' ? 'latchkey-node (bindings/node)' : lib, node: process.version };
    process.stdout.write(JSON.stringify(o) + '\n');
  };
  const m = {};
  for (const im of impls) {
    const f = fig[im.name];
    m[im.name] = { p50: median(f.p50) };
    json(im.name, 'acq_p50_us', median(f.p50), 'us');
    json(im.name, 'acq_p99_us', median(f.p99), 'us');
    json(im.name, 'pairs_per_s', median(f.pps), 'pairs/s');
    json(im.name, 'server_us_per_pair', median(f.srv), 'us');
    json(im.name, 'server_cpu_us_per_pair', median(f.scpu), 'us');
    json(im.name, 'cpu_us_per_pair', median(f.cpu), 'us');
    if (im.name !== 'latchkey-node') json(im.name, 'commands_per_pair', median(f.cmd), 'commands');
  }
  json('node-redlock', 'p50_vs_single_master', m['node-redlock'].p50 / m['node-redlock-single'].p50, 'x');
  for (const c of lkClients) await c.close();
  for (const c of admins) await c.del(`${base}:node-redlock`, `${base}:node-redlock-single`, `${base}:latchkey-node`);
  await Promise.all([...clients, ...admins].map((c) => c.quit()));
  if (errors) process.stderr.write(`redlock_node: ${errors} errors from redlock\n`);
  return errors ? 1 : 0;
}

main().then((rc) => process.exit(rc), (e) => {
  process.stderr.write(`redlock_node: ${e.stack || e}\n`);
  process.exit(1);
});
