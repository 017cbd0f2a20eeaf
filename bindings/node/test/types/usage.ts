// Compiled, never run (test/types.test.js: tsc --noEmit --strict): every
// declared call of index.d.ts used the way docs/node.md shows it, so a
// declaration that drifts from the documented use fails the Node lane.
// The lines marked @ts-expect-error must stay errors: misuse is refused.
import * as latchkey from '../..';
import type { LatchkeyError, LatchkeyOpError, BarrierOutcome, LeaderChange } from '../..';

async function everyPrimitive(): Promise<void> {
  const lk: latchkey.Client = await latchkey.connect('redis://127.0.0.1:6390', { defaultLease: 5000 });
  const other = await latchkey.connect({ host: '127.0.0.1', port: 6391, connectTimeout: 1000, tlsVerify: true });
  const id: string = lk.id;
  const up: boolean = lk.isConnected;

  const lock = lk.lock('orders:42');
  const ac = new AbortController();
  await lock.acquire({ wait: 5000, lease: 10000, fenced: true, signal: ac.signal });
  const last: boolean = await lock.release();
  const n: number = await lock.using(async (l) => l.holdCount + 1, { wait: Infinity });
  const token: bigint = lock.token;
  const ttl: number = await lock.remainingTtl();
  const locked: boolean = await lock.isLocked();
  lock.on('lost', (err: LatchkeyError) => console.error(err.code, err.serverText));
  lock.on('atRisk', (msLeft: number) => console.warn('pause writes for', msLeft));
  lock.on('safe', (msLeft: number) => console.info('renewed for', msLeft));

  const fair = lk.fairLock('fair:1');
  const queued: number = await fair.queueLength();
  await fair.using(() => undefined);

  const rw = lk.readWriteLock('rw:1');
  await rw.read.acquire({ wait: 100 });
  await rw.write.using(async (side) => side.release);
  const mode: 'free' | 'read' | 'write' = await rw.mode();

  const sem = lk.semaphore('sem:1');
  await sem.trySetPermits(3);
  await sem.acquire({ permits: 2, wait: 100 });
  await sem.release(2);
  const avail: number = await sem.available();

  const latch = lk.latch('latch:1');
  await latch.trySetCount(2);
  await latch.countDown();
  await latch.await({ wait: 1000 });
  const count: number = await latch.getCount();

  const ps = lk.permitSemaphore('psem:1');
  const ids: string[] = await ps.acquire({ permits: 1, lease: 2000 });
  await ps.updateLease(4000, ids[0]);
  const released: number = await ps.release(ids[0]);
  await ps.using(async (got) => got.length);

  const ml = latchkey.multiLock([lock, other.lock('orders:43')]);
  await ml.acquire({ wait: 1000 });
  await ml.release();

  const rl = latchkey.redLock([lk, other], 'rl:1', { layout: 'lean', persistent: false });
  await rl.acquire({ wait: 1000, nodeTimeout: 50 });
  const votes: number = rl.votes + rl.quorum + rl.validity;
  await rl.release();

  const leader = lk.leader('role:primary');
  const term: bigint = await leader.campaign({ lease: 3000, value: 'node-a', wait: 1000 });
  leader.on('change', (c: LeaderChange) => console.log(c.term, c.value));
  leader.on('atRisk', (msLeft: number) => console.warn(msLeft));
  leader.observe();
  leader.observeStop();
  await leader.resign();

  const rate = lk.rateLimiter('rate:1');
  await rate.trySetRate({ rate: 10, interval: 1000, type: 'overall' });
  const left: number = await rate.acquire({ permits: 1, wait: 100 });
  const cfg = await rate.getConfig();
  const interval: number | undefined = cfg?.interval;

  const barrier = lk.barrier('barrier:1', 3);
  const entered: BarrierOutcome = await barrier.enter({ wait: 1000, lease: 2000 });
  const dropped: string[] = entered.dropped;
  await barrier.leave({ wait: 1000 });

  try {
    await lock.acquire();
  } catch (e) {
    const err = e as LatchkeyOpError;
    const code: string = err.code;
    void code;
  }

  // @ts-expect-error a wait is milliseconds, not a string
  await lock.acquire({ wait: '5s' });
  // @ts-expect-error release takes no argument on a lock
  await lock.release(1);
  // @ts-expect-error no such event on an object
  lock.on('lsot', () => undefined);

  const live = latchkey.liveCounts();
  void [id, up, last, n, token, ttl, locked, queued, mode, avail, count, released, votes, term,
        left, interval, dropped, live.clients, live.objects, latchkey.versions.uvRunning];
  await lk.close();
  await other.close();
}

void everyPrimitive;
