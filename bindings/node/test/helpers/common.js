'use strict';
// Shared by the test files: a redis-server per file, and bounded waits.
const { before, after } = require('node:test');
const { startRedis } = require('./redis');

// One private server for the calling test file; stopped after it.
function serverForFile() {
  const box = {};
  before(async () => { box.redis = await startRedis(); });
  after(async () => { if (box.redis) await box.redis.stop(); });
  return box;
}

// Polls cond() until true, every 20 ms, for at most ms; false on timeout.
async function until(cond, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

// Liveness bounds scale with the C harness's timing factor.
const TIMING = Number(process.env.LK_TEST_TIMING || 1);
const liveness = (ms) => ms * TIMING;

module.exports = { serverForFile, until, liveness };
