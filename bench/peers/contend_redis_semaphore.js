'use strict';
/* bench/peers/contend_redis_semaphore.js: B3 (bench/README.md) for the peer
 * redis-semaphore: its Mutex with the library's defaults (retry every 10 ms,
 * acquire timeout 10 s, lock timeout 10 s), in N node processes (default 8,
 * child_process.fork) looping on ONE name: acquire (wait up to 10 s) -> hold
 * a random 0..200 us -> release -> acquire again at once.
 *
 *   node contend_redis_semaphore.js [--host H] [--port P] [--procs N]
 *        [--seconds S] [--warmup-ms MS] [--hold-us MAX] [--order-margin-us US]
 *        [--no-pin] [--impl redis-semaphore|latchkey-node]
 *
 * --impl latchkey-node runs latchkey for Node (bindings/node, built there)
 * in the same workers instead: lk.lock(name).acquire({ wait: 10000 }) with
 * the watchdog's default lease, release(). Its top-level commands are not
 * counted (the addon does not expose the client's count): those two lines
 * are left out for it; the server's figures are the same.
 *
 * The same figures, names and JSON shape as bench/contend.h prints for
 * latchkey (bench "B3", variant "lock"), so bench/peers.sh can put them side
 * by side:
 *   - every worker logs each cycle (t_call, t_acq, t_rel, t_done from
 *     process.hrtime, the CLOCK_MONOTONIC every process shares) and hands
 *     its log to the parent over IPC when it stops; the parent merges the
 *     logs and checks mutual exclusion (a hold [t_acq, t_rel] that starts
 *     while another process's is still open is a violation: the recorded
 *     interval lies inside the real one, so any overlap is real);
 *   - top-level commands are the workers' own count (every command their
 *     ioredis client sends, as latchkey's commands_sent); server commands
 *     are INFO commandstats (every command but INFO and CONFIG, so the
 *     scripts' inner ones too) over the window; Redis CPU is INFO cpu
 *     (used_cpu_sys + used_cpu_user) over the same interval.
 *
 * Differences from contend.h, on purpose:
 *   - the window opens warmup-ms after every worker has connected (node
 *     starts far slower than a fork); the parent's INFO snapshot and the
 *     workers' command counts are taken when it opens;
 *   - the hold: node has no nanosleep, and Atomics.wait costs ~35-80 us more
 *     than asked on the reference machine, so a hold waits (target - 60 us)
 *     and spins the rest; `hold_mean_us` reports what the holds really were;
 *   - `redis_cpu_us_per_acq` is printed directly (contend.h prints
 *     redis_cpu_pct; bench/peers.sh derives the per-acquisition figure of
 *     both the same way).
 *
 * Pinning as contend.h: LK_BENCH_PIN (default 1) and LK_BENCH_WORKER_CPUS
 * (default "0,1"): worker i runs on CPU cpus[i % n] (taskset -a -p on itself).
 * Bounded: the window, then 10 s for the last waits and the closes; a worker
 * still running then is killed and the run reported failed (exit 1). */

const { fork, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const Redis = require('ioredis');
const { Mutex } = require('redis-semaphore');

const hr = () => Number(process.hrtime.bigint()); /* ns; < 2^53 for ~104 days of uptime */

function parseArgs(argv) {
  const a = {
    host: '127.0.0.1', port: 6379, procs: 8, seconds: 5, warmupMs: 500, holdUs: 200,
    orderMarginUs: 50, pin: process.env.LK_BENCH_PIN !== '0', impl: 'redis-semaphore',
    cpus: (process.env.LK_BENCH_WORKER_CPUS || '0,1').split(',').map(Number)
      .filter((c) => Number.isInteger(c) && c >= 0),
  };
  const num = (v, lo, hi) => {
    if (!/^[0-9]+$/.test(v || '')) return NaN;
    const n = Number(v);
    return n >= lo && n <= hi ? n : NaN;
  };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i], v = argv[i + 1];
    let ok = true;
    if (s === '--no-pin') { a.pin = false; continue; }
    if (v === undefined) return null;
    i++;
    if (s === '--host') a.host = v;
    else if (s === '--impl') ok = ['redis-semaphore', 'latchkey-node'].includes(a.impl = v);
    else if (s === '--port') ok = !Number.isNaN(a.port = num(v, 1, 65535));
    else if (s === '--procs') ok = !Number.isNaN(a.procs = num(v, 2, 64));
    else if (s === '--seconds') ok = !Number.isNaN(a.seconds = num(v, 1, 60));
    else if (s === '--warmup-ms') ok = !Number.isNaN(a.warmupMs = num(v, 0, 10000));
    else if (s === '--hold-us') ok = !Number.isNaN(a.holdUs = num(v, 0, 100000));
    else if (s === '--order-margin-us') ok = !Number.isNaN(a.orderMarginUs = num(v, 0, 1000000));
    else ok = false;
    if (!ok) return null;
  }
  if (a.cpus.length === 0) a.cpus = [0, 1];
  return a;
}

/* ---------- the worker ---------- */

function pinSelf(cpu) {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch (e) {
    return false;
  }
}

async function worker() {
  const a = JSON.parse(process.env.LK_PEER_ARGS);
  const index = Number(process.env.LK_PEER_INDEX);
  if (a.pin) pinSelf(a.cpus[index % a.cpus.length]);
  let sent = 0;
  const st = { error: '', acqFailures: 0, relFailures: 0, cmds0: 0, cmds1: 0 };
  let mutex, closeClient;
  if (a.impl === 'latchkey-node') {
    const latchkey = require(require('node:path').join(__dirname, '..', '..', 'bindings', 'node'));
    let lk;
    try {
      lk = await latchkey.connect(`redis://${a.host}:${a.port}`);
    } catch (e) {
      process.send({ type: 'ready', ok: false, error: String(e.message || e) });
      process.exit(3);
    }
    const lock = lk.lock(a.name);
    mutex = { acquire: () => lock.acquire({ wait: 10000 }), release: () => lock.release() };
    closeClient = () => lk.close();
  } else {
    const redis = new Redis({ host: a.host, port: a.port, lazyConnect: true, maxRetriesPerRequest: 1 });
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (...args) => { sent++; return send(...args); };
    redis.on('error', () => {}); /* failures show up as failed acquires/releases */
    try {
      await redis.connect();
    } catch (e) {
      process.send({ type: 'ready', ok: false, error: String(e.message || e) });
      process.exit(3);
    }
    mutex = new Mutex(redis, a.name); /* the library's defaults */
    closeClient = () => redis.quit();
  }
  const go = await new Promise((resolve) => {
    process.on('message', (m) => { if (m && m.type === 'go') resolve(m); });
    process.send({ type: 'ready', ok: true });
  });
  const { tStart, tEnd } = go;
  /* Room for 40 000 cycles a second, far above what one name allows. */
  const cap = Math.ceil((a.seconds + 1) * 40000);
  const recs = new Float64Array(cap * 4);
  let n = 0, overflow = 0, holdNs = 0, holds = 0;
  const spinUntil = (t) => { while (hr() < t); };
  const sab = new Int32Array(new SharedArrayBuffer(4));
  let rng = (process.pid * 2654435761) >>> 0 || 1;
  const rand = () => { /* xorshift32 */
    rng ^= rng << 13; rng >>>= 0; rng ^= rng >>> 17; rng ^= rng << 5; rng >>>= 0;
    return rng;
  };
  const windowTimer = setTimeout(() => { st.cmds0 = sent; }, Math.max(0, (tStart - hr()) / 1e6));
  for (;;) {
    const tCall = hr();
    if (tCall >= tEnd) break;
    try {
      await mutex.acquire();
    } catch (e) {
      if (!st.error) st.error = 'acquire: ' + (e.message || e);
      if (tCall >= tStart) st.acqFailures++;
      continue;
    }
    const tAcq = hr();
    const hold = a.holdUs > 0 ? (rand() % (a.holdUs * 1000 + 1)) : 0;
    if (hold > 0) {
      const until = tAcq + hold;
      if (hold > 60000) Atomics.wait(sab, 0, 0, (hold - 60000) / 1e6);
      spinUntil(until);
    }
    const tRel = hr();
    holdNs += tRel - tAcq;
    holds++;
    try {
      await mutex.release();
    } catch (e) {
      if (!st.error) st.error = 'release: ' + (e.message || e);
      st.relFailures++;
    }
    const tDone = hr();
    if (tCall >= tStart) {
      if (n < cap) {
        recs[n * 4] = tCall; recs[n * 4 + 1] = tAcq; recs[n * 4 + 2] = tRel; recs[n * 4 + 3] = tDone;
        n++;
      } else {
        overflow++;
      }
    }
  }
  clearTimeout(windowTimer);
  st.cmds1 = sent;
  process.send({
    type: 'done', index, n, overflow, recs: recs.slice(0, n * 4), holdNs, holds, ...st,
  }, () => {
    closeClient().catch(() => {}).finally(() => process.exit(0));
  });
}

/* ---------- the parent ---------- */

function parseInfo(text) {
  const o = { callsTotal: 0, evalsha: 0, subscribe: 0, cpuS: 0, total: 0 };
  for (const line of text.split('\r\n')) {
    let m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) {
      const name = m[1], calls = Number(m[2]);
      if (name === 'info' || name === 'config' || name.startsWith('config|')) continue;
      o.callsTotal += calls;
      if (name === 'evalsha' || name === 'eval') o.evalsha += calls;
      if (name === 'subscribe' || name === 'ssubscribe') o.subscribe += calls;
      continue;
    }
    m = /^used_cpu_(sys|user):([0-9.]+)/.exec(line);
    if (m) { o.cpuS += Number(m[2]); continue; }
    m = /^total_commands_processed:(\d+)/.exec(line);
    if (m) o.total = Number(m[1]);
  }
  return o;
}

/* Nearest rank, as bench_pct_us: sorted ns in, us out. */
function pct(sorted, q) {
  const n = sorted.length;
  if (n === 0) return 0;
  let rank = Math.floor(q * n + 0.999999);
  rank = Math.min(Math.max(rank, 1), n);
  return sorted[rank - 1] / 1000;
}
const sortNum = (arr) => Float64Array.from(arr).sort();

/* bench_json_num's formatting: integers as such, >= 1000 with one decimal,
 * else 4 significant digits. */
function fmt(v) {
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (!Number.isFinite(v)) return 'null';
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  if (Math.abs(v) >= 1000) return v.toFixed(1);
  return String(Number(v.toPrecision(4)));
}

async function parent(a) {
  const redis = new Redis({ host: a.host, port: a.port, lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  await redis.connect();
  const rtt = [];
  for (let j = 0; j < 200; j++) {
    const t0 = hr();
    await redis.ping();
    rtt.push(hr() - t0);
  }
  const rttUs = pct(sortNum(rtt), 0.5);
  a.name = `lkbench:peers:${a.impl === 'latchkey-node' ? 'latchkey-node' : 'semaphore'}:${process.pid}`;
  const kids = [];
  const results = new Array(a.procs);
  const exited = [];
  let bad = false;
  const readyAll = [];
  for (let p = 0; p < a.procs; p++) {
    const child = fork(__filename, [], {
      env: { ...process.env, LK_PEER_ROLE: 'worker', LK_PEER_INDEX: String(p), LK_PEER_ARGS: JSON.stringify(a) },
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    kids.push(child);
    readyAll.push(new Promise((resolve) => {
      child.on('message', (m) => {
        if (m.type === 'ready') resolve(m);
        else if (m.type === 'done') results[m.index] = m;
      });
      child.on('exit', () => resolve({ ok: false, error: 'exited before it was ready' }));
    }));
    exited.push(new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig }))));
  }
  const killAll = () => kids.forEach((k) => { if (k.exitCode === null && k.signalCode === null) k.kill('SIGKILL'); });
  const ready = await Promise.race([
    Promise.all(readyAll),
    new Promise((resolve) => setTimeout(() => resolve(null), 30000).unref()),
  ]);
  if (ready === null || ready.some((r) => !r.ok)) {
    process.stderr.write(`contend_redis_semaphore: workers not ready: ${ready ? JSON.stringify(ready.filter((r) => !r.ok)) : 'timeout'}\n`);
    killAll();
    process.exit(1);
  }
  const tStart = hr() + a.warmupMs * 1e6;
  const tEnd = tStart + a.seconds * 1e9;
  kids.forEach((k) => k.send({ type: 'go', tStart, tEnd }));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, (tStart - hr()) / 1e6)));
  const i0 = parseInfo(await redis.info('all'));
  /* Bounded: the window, then 10 s for the last waiters and the closes. */
  const giveUp = setTimeout(() => {
    process.stderr.write('contend_redis_semaphore: workers still running 10 s after the window: killed\n');
    bad = true;
    killAll();
  }, Math.max(0, (tEnd - hr()) / 1e6) + 10000);
  const codes = await Promise.all(exited);
  clearTimeout(giveUp);
  const cpuWallNs = hr() - tStart;
  const i1 = parseInfo(await redis.info('all'));
  await redis.del(a.name);
  await redis.quit();
  codes.forEach((c, p) => {
    if (c.code !== 0) {
      process.stderr.write(`contend_redis_semaphore: worker ${p} ended with ${c.code ?? c.sig}\n`);
      bad = true;
    }
  });

  /* Merge the logs. */
  const ev = [];
  let acqFail = 0, relFail = 0, overflow = 0, toplevel = 0, holdNs = 0, holds = 0;
  const per = [];
  for (let p = 0; p < a.procs; p++) {
    const r = results[p];
    if (!r) { bad = true; per.push(new Float64Array(0)); continue; }
    if (r.error) process.stderr.write(`contend_redis_semaphore: worker ${p}: ${r.error}\n`);
    acqFail += r.acqFailures; relFail += r.relFailures; overflow += r.overflow;
    toplevel += r.cmds1 - r.cmds0; holdNs += r.holdNs; holds += r.holds;
    per.push(r.recs);
    for (let j = 0; j < r.n; j++)
      ev.push({ tCall: r.recs[j * 4], tAcq: r.recs[j * 4 + 1], tRel: r.recs[j * 4 + 2], w: p });
  }
  ev.sort((x, y) => x.tAcq - y.tAcq);
  const n = ev.length;
  const lastEnd = new Array(a.procs).fill(0), ptr = new Array(a.procs).fill(0);
  const handoff = [], xfer = [], wait = ev.map((e) => e.tAcq - e.tCall);
  let acqInWindow = 0, transfers = 0, streak = 1, longest = 0, mutexViol = 0, orderViol = 0;
  for (let k = 0; k < n; k++) {
    const r = ev[k], w = r.w;
    if (r.tAcq <= tEnd) acqInWindow++;
    if (k > 0) {
      const prev = ev[k - 1];
      const h = r.tAcq > prev.tRel ? r.tAcq - prev.tRel : 0;
      handoff.push(h);
      if (prev.w !== w) {
        xfer.push(h);
        if (r.tAcq <= tEnd) transfers++;
        streak = 1;
      } else {
        streak++;
      }
    }
    if (streak > longest) longest = streak;
    for (let q = 0; q < a.procs; q++)
      if (q !== w && lastEnd[q] > r.tAcq) { mutexViol++; break; }
    if (r.tRel > lastEnd[w]) lastEnd[w] = r.tRel;
    /* Order, as contend.h: was another process waiting since well before? */
    let overtook = false;
    for (let q = 0; q < a.procs && !overtook; q++) {
      if (q === w) continue;
      const base = per[q], m = base.length / 4;
      while (ptr[q] < m && base[ptr[q] * 4 + 1] <= r.tAcq) ptr[q]++;
      if (ptr[q] < m && base[ptr[q] * 4] < r.tAcq && base[ptr[q] * 4] + a.orderMarginUs * 1000 < r.tCall)
        overtook = true;
    }
    if (overtook) orderViol++;
  }
  const secs = a.seconds;
  const hs = sortNum(handoff), xs = sortNum(xfer), ws = sortNum(wait);
  const lkNode = a.impl === 'latchkey-node';
  const common = { procs: a.procs, hold_us_max: a.holdUs, ordered: false, pinned: a.pin,
    library: lkNode ? 'latchkey-node (bindings/node)' : 'redis-semaphore ' + require('redis-semaphore/package.json').version,
    ...(lkNode ? {} : { retry_ms: 10 }), node: process.version };
  const line = (metric, value, unit, extra = {}) => {
    if (lkNode && (metric === 'toplevel_cmds_per_acq' || metric === 'inner_cmds_per_acq')) return; /* not counted */
    const f = { bench: 'B3', impl: a.impl, variant: 'lock', metric, value, unit, ...common, ...extra };
    process.stdout.write('{' + Object.entries(f).map(([k, v]) => JSON.stringify(k) + ':' + fmt(v)).join(',') + '}\n');
  };
  const per1 = (x) => (n ? x / n : 0);
  line('acquisitions_per_s', acqInWindow / secs, 'acq/s', { acquisitions: n, seconds: secs,
    hold_mean_us: holds ? holdNs / holds / 1000 : 0 });
  line('transfers_per_s', transfers / secs, 'transfers/s',
    { same_process_pct: acqInWindow ? 100 * (1 - transfers / acqInWindow) : 0 });
  line('handoff_p50_us', pct(hs, 0.5), 'us', { rtt_p50_us: rttUs, in_rtts: rttUs > 0 ? pct(hs, 0.5) / rttUs : 0 });
  line('handoff_p99_us', pct(hs, 0.99), 'us');
  line('transfer_p50_us', pct(xs, 0.5), 'us', { in_rtts: rttUs > 0 ? pct(xs, 0.5) / rttUs : 0 });
  line('transfer_p99_us', pct(xs, 0.99), 'us');
  line('wait_p50_us', pct(ws, 0.5), 'us');
  line('wait_p99_us', pct(ws, 0.99), 'us');
  line('wait_max_us', pct(ws, 1), 'us', { over_p50: pct(ws, 0.5) > 0 ? pct(ws, 1) / pct(ws, 0.5) : 0 });
  line('longest_streak', longest, 'acquisitions');
  line('toplevel_cmds_per_acq', per1(toplevel), 'commands', { evalsha_per_acq: per1(i1.evalsha - i0.evalsha) });
  line('inner_cmds_per_acq', per1(i1.callsTotal - i0.callsTotal - toplevel), 'commands',
    { server_cmds_per_acq: per1(i1.callsTotal - i0.callsTotal),
      total_commands_processed_per_acq: per1(i1.total - i0.total) });
  line('server_cmds_per_acq', per1(i1.callsTotal - i0.callsTotal), 'commands');
  line('subscribe_per_acq', per1(i1.subscribe - i0.subscribe), 'commands');
  line('redis_cpu_pct', 100 * (i1.cpuS - i0.cpuS) / (cpuWallNs / 1e9), '%');
  line('redis_cpu_us_per_acq', per1((i1.cpuS - i0.cpuS) * 1e6), 'us', { wall_s: cpuWallNs / 1e9 });
  line('mutex_violations', mutexViol, 'count', { goal: '== 0', met: mutexViol === 0 });
  line('order_violations', orderViol, 'count', { order_margin_us: a.orderMarginUs });
  line('acquire_failures', acqFail, 'count', { release_failures: relFail, log_overflow: overflow });
  return bad || acqFail !== 0 || relFail !== 0 || n === 0 ? 1 : 0;
}

if (process.env.LK_PEER_ROLE === 'worker') {
  worker().catch((e) => { process.stderr.write(`worker: ${e.stack || e}\n`); process.exit(4); });
} else {
  const a = parseArgs(process.argv.slice(2));
  if (a === null) {
    process.stderr.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(7, 11).join('\n') + '\n');
    process.exit(2);
  }
  parent(a).then((rc) => process.exit(rc), (e) => {
    process.stderr.write(`contend_redis_semaphore: ${e.stack || e}\n`);
    process.exit(1);
  });
}
