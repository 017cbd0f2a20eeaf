'use strict';
// A private redis-server for one test file, on a free loopback port, stopped
// by its PID (the C harness's conventions: never 6379, never a fixed port).
const { spawn } = require('node:child_process');
const net = require('node:net');

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Whether buf holds one whole reply: a line, or a bulk string whose length
// its header gives (the replies the tests read: no arrays).
function complete(buf) {
  const eol = buf.indexOf('\r\n');
  if (eol < 0) return false;
  if (buf[0] !== '$') return true;
  const len = Number(buf.slice(1, eol));
  return len < 0 || Buffer.byteLength(buf, 'latin1') >= eol + 2 + len + 2;
}

// One RESP command over a fresh connection; resolves with the raw reply text.
function command(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    sock.setTimeout(5000, () => sock.destroy(new Error('redis command timed out')));
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      if (complete(buf)) {
        sock.end();
        resolve(buf);
      }
    });
    let req = `*${args.length}\r\n`;
    for (const a of args) req += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
    sock.write(req);
  });
}

// extraArgs(): more redis-server arguments, asked afresh for each attempt
// (a TLS port of its own, say); the plain port always answers PING.
async function startRedis(extraArgs = async () => []) {
  // A port taken between the probe and the bind makes redis-server exit:
  // try a few ports, each bounded in time.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const extra = await extraArgs();
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1',
      '--save', '', '--appendonly', 'no', ...extra], { stdio: 'ignore' });
    let exited = false;
    proc.on('exit', () => { exited = true; });
    const deadline = Date.now() + 10000;
    while (!exited && Date.now() < deadline) {
      try {
        if ((await command(port, 'PING')).startsWith('+PONG')) {
          return {
            port,
            extra,
            url: `redis://127.0.0.1:${port}`,
            command: (...a) => command(port, ...a),
            // SIGSTOP / SIGCONT: a server that stops answering, then comes back.
            pause: () => process.kill(proc.pid, 'SIGSTOP'),
            resume: () => process.kill(proc.pid, 'SIGCONT'),
            stop: () => new Promise((resolve) => {
              if (exited) return resolve();
              proc.once('exit', () => resolve());
              process.kill(proc.pid, 'SIGKILL');
            }),
          };
        }
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (!exited) process.kill(proc.pid, 'SIGKILL');
  }
  throw new Error('redis-server did not start');
}

module.exports = { startRedis, freePort };
