'use strict';
/* bench/peers/report.js: the summary of a bench/peers.sh run.
 *
 *   node report.js ROUNDS.jsonl
 *
 * Reads every run's JSON lines (each with the "round" bench/peers.sh added),
 * groups them by bench + impl + variant + metric and prints, on stdout, one
 * aggregated JSON line per group (value = the median over the rounds, min,
 * max, reps), then two markdown tables with latchkey / peer ratios: of the
 * medians, and paired (the median of the per-round ratios, each between runs
 * seconds apart).
 *
 * multilock_redlock names its bench "redlock_acquire"; it is B4 here. Two
 * figures are normalized so that every impl's comes out the same way:
 * server_cmds_per_acq (its own line in newer bench/contend.h, a field of the
 * inner_cmds_per_acq line in older ones) and redis_cpu_us_per_acq (printed by
 * newer bench/contend.h and by the peer program; when some impl of the run
 * lacks it, every impl's is derived from redis_cpu_pct / acquisitions_per_s,
 * which reads about 1% low: the CPU share covers the window plus the closes). */

const fs = require('node:fs');

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node report.js ROUNDS.jsonl\n');
  process.exit(2);
}
const runs = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{'))
  .map((l) => { try { return JSON.parse(l); } catch (e) { return null; } }).filter(Boolean);

const median = (v) => {
  const s = [...v].sort((x, y) => x - y), n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

/* per-round values: key -> round -> value */
const byKey = new Map();
const put = (bench, impl, variant, metric, round, value, unit) => {
  const key = [bench, impl, variant || '', metric].join('\u0001');
  if (!byKey.has(key)) byKey.set(key, { bench, impl, variant, metric, unit, rounds: new Map() });
  byKey.get(key).rounds.set(round, value);
};
/* B1 and B2's C programs (bench_common.h's pair line: one line, the other
 * figures as fields, a variant): spread into the Node runners' metrics,
 * impl "latchkey" renamed latchkey-c beside latchkey-node. */
const cPairFields = [['p50_us', 'pair_p50_us'], ['acq_p50_us', 'acq_p50_us'],
  ['acq_p99_us', 'acq_p99_us'], ['cpu_us_per_pair', 'cpu_us_per_pair']];
for (const r of runs) {
  if ((r.bench === 'B1' || r.bench === 'B2') && r.variant && r.metric === 'pairs_per_s') {
    const impl = r.impl === 'latchkey' ? 'latchkey-c' : r.impl;
    put(r.bench, impl, undefined, 'pairs_per_s', r.round, r.value, 'pairs/s');
    for (const [field, metric] of cPairFields)
      if (typeof r[field] === 'number') put(r.bench, impl, undefined, metric, r.round, r[field], 'us');
    r.spread = true;
  }
}
for (const r of runs) {
  if (r.spread) continue;
  const bench = r.bench === 'redlock_acquire' ? 'B4' : r.bench;
  put(bench, r.impl, r.variant, r.metric, r.round, r.value, r.unit);
  if (r.metric === 'inner_cmds_per_acq' && typeof r.server_cmds_per_acq === 'number')
    put(bench, r.impl, r.variant, 'server_cmds_per_acq', r.round, r.server_cmds_per_acq, 'commands');
}
/* same_process_pct is a field of the transfers line: fetch it from the runs */
for (const r of runs)
  if (r.bench === 'B3' && r.metric === 'transfers_per_s' && typeof r.same_process_pct === 'number')
    put('B3', r.impl, r.variant, 'same_process_pct', r.round, r.same_process_pct, '%');
/* redis_cpu_us_per_acq, derived, for every B3 impl and round */
const get = (bench, impl, variant, metric) =>
  byKey.get([bench, impl, variant || '', metric].join('\u0001'));
const b3impls = [...new Set([...byKey.values()].filter((g) => g.bench === 'B3').map((g) => g.impl))];
let cpuDerived = false;
for (const impl of b3impls) {
  const pct = get('B3', impl, 'lock', 'redis_cpu_pct'), aps = get('B3', impl, 'lock', 'acquisitions_per_s');
  if (!pct || !aps) continue;
  for (const [round, p] of pct.rounds)
    if (aps.rounds.get(round) > 0)
      put('B3', impl, 'lock', 'redis_cpu_us_per_acq_derived', round, p / 100 * 1e6 / aps.rounds.get(round), 'us');
  if (!get('B3', impl, 'lock', 'redis_cpu_us_per_acq')) cpuDerived = true;
}

/* aggregated lines */
const agg = (g) => {
  const v = [...g.rounds.values()];
  return { median: median(v), min: Math.min(...v), max: Math.max(...v), reps: v.length };
};
for (const g of byKey.values()) {
  const a = agg(g);
  const o = { bench: g.bench, impl: g.impl };
  if (g.variant) o.variant = g.variant;
  Object.assign(o, { metric: g.metric, value: Number(a.median.toPrecision(6)), unit: g.unit,
    min: Number(a.min.toPrecision(6)), max: Number(a.max.toPrecision(6)), reps: a.reps });
  process.stdout.write(JSON.stringify(o) + '\n');
}

const fmt = (v) => {
  if (v === undefined || !Number.isFinite(v)) return '–';
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
};
const cell = (g) => {
  if (!g) return '–';
  const a = agg(g);
  return a.reps > 1 ? `${fmt(a.median)} (${fmt(a.min)}–${fmt(a.max)})` : fmt(a.median);
};
const ratios = (ga, gb) => {
  if (!ga || !gb) return ['–', '–'];
  const m = agg(ga).median / agg(gb).median;
  const per = [];
  for (const [round, va] of ga.rounds)
    if (gb.rounds.has(round) && gb.rounds.get(round) !== 0) per.push(va / gb.rounds.get(round));
  const x = (v) => (Number.isFinite(v) ? v.toFixed(2) + 'x' : '–');
  return [x(m), per.length ? x(median(per)) : '–'];
};

/* B1 and B2: latchkey for Node against each Node peer on one master, with
 * the C programs of the same rounds (the floor: raw-minimal / the best peer
 * bounds what any client on this placement can reach) when they ran. */
const pairTable = (bench, title, rows) => {
  const g = (impl, metric) => get(bench, impl, undefined, metric);
  if (!g('latchkey-node', 'pairs_per_s')) return;
  const peers = ['redis-semaphore', 'node-redlock-single'];
  const cs = ['latchkey-c', 'raw-minimal'].filter((c) => g(c, 'pairs_per_s'));
  const pairs = [...peers.map((p) => ['latchkey-node', p]), ...cs.map((c) => [c, 'redis-semaphore'])];
  const cols = ['latchkey-node', ...peers, ...cs];
  process.stdout.write(`\n### ${bench}: ${title}, medians (min–max) over the rounds\n\n`);
  process.stdout.write(`| | ${cols.join(' | ')} | ${pairs.map(([a, b]) => `${a} / ${b} (paired)`).join(' | ')} |\n`);
  process.stdout.write(`|---|${cols.map(() => '---').join('|')}|${pairs.map(() => '---').join('|')}|\n`);
  for (const [label, m] of rows) {
    const rs = pairs.map(([a, b]) => {
      const [x, y] = ratios(g(a, m), g(b, m));
      return `${x} (${y})`;
    });
    process.stdout.write(`| ${label} | ${cols.map((c) => cell(g(c, m))).join(' | ')} | ${rs.join(' | ')} |\n`);
  }
};
pairTable('B1', 'sequential pairs, one master', [
  ['pairs/s', 'pairs_per_s'],
  ['pair p50 µs', 'pair_p50_us'],
  ['acquire p50 µs', 'acq_p50_us'],
  ['acquire p99 µs', 'acq_p99_us'],
  ['client CPU µs / pair', 'cpu_us_per_pair'],
]);
pairTable('B2', '64 in flight on one client, one master', [
  ['pairs/s', 'pairs_per_s'],
  ['acquire p50 µs', 'acq_p50_us'],
  ['acquire p99 µs', 'acq_p99_us'],
  ['client CPU µs / pair', 'cpu_us_per_pair'],
]);

/* B3 */
const b3rows = [
  ['acquisitions/s', 'acquisitions_per_s'],
  ['transfers/s', 'transfers_per_s'],
  ['same-process acquisitions %', null, 'same_process_pct'],
  ['top-level commands / acquisition', 'toplevel_cmds_per_acq'],
  ['server commands / acquisition (scripts\' inner ones too)', 'server_cmds_per_acq'],
  [cpuDerived ? 'Redis CPU µs / acquisition (≈, from redis_cpu_pct)' : 'Redis CPU µs / acquisition',
    cpuDerived ? 'redis_cpu_us_per_acq_derived' : 'redis_cpu_us_per_acq'],
  ['Redis CPU %', 'redis_cpu_pct'],
  ['wait p50 µs', 'wait_p50_us'],
  ['wait p99 µs', 'wait_p99_us'],
  ['wait max µs', 'wait_max_us'],
  ['mutual-exclusion violations', 'mutex_violations'],
  ['acquire failures', 'acquire_failures'],
];
const peersB3 = b3impls.filter((i) => i !== 'latchkey');
/* latchkey for Node against the Node peer, when both ran */
const nodeVsB3 = b3impls.includes('latchkey-node') && b3impls.includes('redis-semaphore');
if (b3impls.length) {
  const cols = ['latchkey', ...peersB3];
  process.stdout.write(`\n### B3: 8 processes on one name (variant "lock"), medians (min–max) over the rounds\n\n`);
  const extra = nodeVsB3 ? ['latchkey-node / redis-semaphore (paired)'] : [];
  process.stdout.write(`| | ${cols.join(' | ')} | ${[...peersB3.map((p) => `latchkey / ${p} (paired)`), ...extra].join(' | ')} |\n`);
  process.stdout.write(`|---|${cols.map(() => '---').join('|')}|${[...peersB3, ...extra].map(() => '---').join('|')}|\n`);
  for (const [label, metric, field] of b3rows) {
    const m = metric || field;
    const gs = cols.map((c) => get('B3', c, 'lock', m));
    const rs = peersB3.map((p) => {
      const [x, y] = ratios(get('B3', 'latchkey', 'lock', m), get('B3', p, 'lock', m));
      return `${x} (${y})`;
    });
    if (nodeVsB3) {
      const [x, y] = ratios(get('B3', 'latchkey-node', 'lock', m), get('B3', 'redis-semaphore', 'lock', m));
      rs.push(`${x} (${y})`);
    }
    process.stdout.write(`| ${label} | ${gs.map(cell).join(' | ')} | ${rs.join(' | ')} |\n`);
  }
}

/* B4 */
const b4 = (impl, metric) => get('B4', impl, undefined, metric);
if (b4('node-redlock', 'pairs_per_s') || b4('latchkey', 'pairs_per_s')) {
  const rows = [
    ['pairs/s', 'pairs_per_s'],
    ['acquire p50 µs', 'acq_p50_us'],
    ['acquire p99 µs', 'acq_p99_us'],
    ['p50 / one master\'s p50', 'p50_vs_single_master'],
    ['masters\' CPU µs / pair', 'server_cpu_us_per_pair'],
    ['client CPU µs / pair', 'cpu_us_per_pair'],
    ['commands / pair', 'commands_per_pair'],
  ];
  process.stdout.write(`\n### B4: RedLock, pairs back to back, medians (min–max) over the rounds\n\n`);
  const lkn = !!b4('latchkey-node', 'pairs_per_s');
  process.stdout.write('| | latchkey (5 masters) | node-redlock (5 masters) | latchkey / node-redlock (paired) | latchkey-single | node-redlock-single | single: latchkey / node-redlock (paired) |' +
    (lkn ? ' latchkey-node (5 masters) | latchkey-node / node-redlock (paired) |' : '') + '\n');
  process.stdout.write('|---|---|---|---|---|---|---|' + (lkn ? '---|---|' : '') + '\n');
  for (const [label, m] of rows) {
    const [r5, p5] = ratios(b4('latchkey', m), b4('node-redlock', m));
    const [r1, p1] = ratios(b4('latchkey-single', m), b4('node-redlock-single', m));
    const [rn, pn] = ratios(b4('latchkey-node', m), b4('node-redlock', m));
    process.stdout.write(`| ${label} | ${cell(b4('latchkey', m))} | ${cell(b4('node-redlock', m))} | ${r5} (${p5}) | ` +
      `${cell(b4('latchkey-single', m))} | ${cell(b4('node-redlock-single', m))} | ${r1} (${p1}) |` +
      (lkn ? ` ${cell(b4('latchkey-node', m))} | ${rn} (${pn}) |` : '') + '\n');
  }
}
