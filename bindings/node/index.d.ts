// Types of lib/index.js (docs/node.md).
import { EventEmitter } from 'node:events';

/** An Error whose code is latchkey's code name, e.g. "LK_ETIMEDOUT". */
export interface LatchkeyError extends Error {
  code: string;
  serverText?: string;
}

export interface ConnectOptions {
  url?: string;
  host?: string;
  port?: number;
  /** ms before connect() rejects with LK_ECONN (default 5000); 1..2^31-1,
   *  else (Infinity too) connect() rejects with LK_EINVAL. */
  connectTimeout?: number;
  replyTimeout?: number;
  defaultLease?: number;
  heartbeat?: number;
  busyPollUs?: number;
  clientName?: string;
  tlsCaFile?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  tlsServerName?: string;
  tlsVerify?: boolean;
}

export interface AcquireOptions {
  /** ms to wait: 0 tries once (default), Infinity waits forever. */
  wait?: number;
  /** ms; omitted: the client's default lease, renewed by the watchdog. */
  lease?: number;
  fenced?: boolean;
  signal?: AbortSignal;
}

/** A failed operation's error; MultiLock and RedLock failures carry each
 *  member's (master's) code in detail (null: that one succeeded), the rate
 *  limiter's LK_ETIMEDOUT the server's wait estimate (ms), the barrier's
 *  failures { round, dropped }. */
export interface LatchkeyOpError extends LatchkeyError {
  detail?: Array<string | null> | number | BarrierOutcome;
}

declare class LatchkeyObject extends EventEmitter {
  readonly client: Client;
  readonly name: string;
  /** Resolves once the C object is gone (holds given back). */
  close(): Promise<void>;
  on(event: 'lost', listener: (err: LatchkeyError) => void): this;
  /** The hold is at risk (a renewal failed or its connection dropped):
   *  msLeft before its local deadline; 'safe' or 'lost' follows. */
  on(event: 'atRisk', listener: (msLeft: number) => void): this;
  /** A renewal confirmed the hold again: msLeft of the renewed lease. */
  on(event: 'safe', listener: (msLeft: number) => void): this;
}

export class Lock extends LatchkeyObject {
  acquire(opts?: AcquireOptions): Promise<void>;
  /** true when this was the last hold. */
  release(): Promise<boolean>;
  using<T>(fn: (lock: this) => Promise<T> | T, opts?: AcquireOptions): Promise<T>;
  forceRelease(): Promise<boolean>;
  isLocked(): Promise<boolean>;
  remainingTtl(): Promise<number>;
  readonly isHeld: boolean;
  readonly holdCount: number;
  /** The last fenced acquisition's token (0n if none): a 64-bit counter. */
  readonly token: bigint;
}

export class FairLock extends Lock {
  queueLength(): Promise<number>;
}

export interface ReadWriteSide {
  acquire(opts?: AcquireOptions): Promise<void>;
  release(): Promise<boolean>;
  using<T>(fn: (side: ReadWriteSide) => Promise<T> | T, opts?: AcquireOptions): Promise<T>;
}

export class ReadWriteLock extends LatchkeyObject {
  readonly read: ReadWriteSide;
  readonly write: ReadWriteSide;
  mode(): Promise<'free' | 'read' | 'write'>;
  forceRelease(): Promise<boolean>;
  readonly isHeld: boolean;
}

export class Semaphore extends LatchkeyObject {
  acquire(opts?: { permits?: number; wait?: number; signal?: AbortSignal }): Promise<void>;
  release(permits?: number): Promise<void>;
  trySetPermits(n: number): Promise<boolean>;
  addPermits(n: number): Promise<number>;
  available(): Promise<number>;
  readonly held: number;
}

export class Latch extends LatchkeyObject {
  trySetCount(n: number): Promise<boolean>;
  countDown(): Promise<void>;
  getCount(): Promise<number>;
  await(opts?: { wait?: number; signal?: AbortSignal }): Promise<void>;
  delete(): Promise<boolean>;
}

export class PermitSemaphore extends LatchkeyObject {
  /** Resolves with the new permits' ids (32 hex characters each). lease
   *  omitted: the client's default lease, renewed while this object lives. */
  acquire(opts?: { permits?: number; wait?: number; lease?: number; signal?: AbortSignal }): Promise<string[]>;
  /** One of this object's permits by id, or all (no id): how many. */
  release(id?: string): Promise<number>;
  /** Any permit by id, another process's too. */
  releaseId(id: string): Promise<boolean>;
  updateLease(lease: number, id?: string): Promise<void>;
  trySetPermits(n: number): Promise<boolean>;
  addPermits(n: number): Promise<number>;
  available(): Promise<number>;
  acquired(): Promise<number>;
  using<T>(fn: (ids: string[]) => Promise<T> | T,
    opts?: { permits?: number; wait?: number; lease?: number; signal?: AbortSignal }): Promise<T>;
  readonly isHeld: boolean;
  readonly held: number;
  readonly permitIds: string[];
}

export class MultiLock extends LatchkeyObject {
  /** The member locks: borrowed, they stay open while the MultiLock is. */
  readonly locks: Lock[];
  acquire(opts?: AcquireOptions): Promise<void>;
  release(): Promise<void>;
  using<T>(fn: (ml: this) => Promise<T> | T, opts?: AcquireOptions): Promise<T>;
  readonly isHeld: boolean;
  readonly holdCount: number;
}

export interface RedLockOptions {
  /** true: the masters persist every write, a restarted one votes at once. */
  persistent?: boolean;
  /** ms a restarted master abstains (default: the longest lease in play). */
  quarantine?: number;
  retryJitter?: number;
  layout?: 'redisson' | 'lean';
}

export interface RedLockAcquireOptions extends AcquireOptions {
  /** ms one master may take to answer (0: lease / 20). */
  nodeTimeout?: number;
}

export class RedLock extends LatchkeyObject {
  readonly clients: Client[];
  acquire(opts?: RedLockAcquireOptions): Promise<void>;
  release(): Promise<void>;
  using<T>(fn: (rl: this) => Promise<T> | T, opts?: RedLockAcquireOptions): Promise<T>;
  readonly isHeld: boolean;
  readonly holdCount: number;
  readonly token: bigint;
  /** ms of validity left, 0 when not held. */
  readonly validity: number;
  readonly votes: number;
  readonly quorum: number;
}

export interface CampaignOptions {
  /** ms the server keeps the leadership without a renewal (renewed every
   *  lease / 3); omitted: the client's default lease. */
  lease?: number;
  /** What observers see while this candidate leads. */
  value?: string;
  /** ms; Infinity (default): until elected. */
  wait?: number;
  signal?: AbortSignal;
}

export interface LeaderChange {
  term: bigint;
  /** null while nobody leads. */
  value: string | null;
}

export class Leader extends LatchkeyObject {
  /** Resolves with the term (a fencing token) once elected. */
  campaign(opts?: CampaignOptions): Promise<bigint>;
  resign(): Promise<void>;
  acquire(opts?: CampaignOptions): Promise<bigint>;
  release(): Promise<void>;
  using<T>(fn: (leader: this) => Promise<T> | T, opts?: CampaignOptions): Promise<T>;
  /** 'change' events until observeStop() or close(), then 'observeEnd'. */
  observe(): void;
  observeStop(): void;
  on(event: 'lost', listener: (err: LatchkeyError) => void): this;
  on(event: 'atRisk', listener: (msLeft: number) => void): this;
  on(event: 'safe', listener: (msLeft: number) => void): this;
  on(event: 'change', listener: (change: LeaderChange) => void): this;
  on(event: 'observeEnd', listener: () => void): this;
  readonly isLeader: boolean;
  readonly isHeld: boolean;
  readonly term: bigint;
  readonly observedTerm: bigint;
  readonly observedValue: string | null;
}

export interface RateConfig {
  rate: number;
  /** The window, ms. */
  interval: number;
  type?: 'overall' | 'perClient';
  /** ms the limiter's keys live after the last acquire; 0: forever. */
  keepAlive?: number;
}

export class RateLimiter extends LatchkeyObject {
  trySetRate(cfg: RateConfig): Promise<boolean>;
  setRate(cfg: RateConfig): Promise<void>;
  /** Resolves with the permits left in the window. */
  acquire(opts?: { permits?: number; wait?: number; signal?: AbortSignal }): Promise<number>;
  tryAcquire(permits?: number): Promise<number>;
  available(): Promise<number>;
  getConfig(): Promise<Required<RateConfig> | null>;
}

export interface BarrierOutcome {
  round: number;
  /** Members dropped (their lease ran out) during this phase. */
  dropped: string[];
}

export interface BarrierEnterOptions {
  /** ms; Infinity (default): until released. */
  wait?: number;
  /** ms the server keeps this member without a renewal. */
  lease?: number;
  /** This member's id (default: the object's owner id). */
  member?: string;
  signal?: AbortSignal;
}

export class Barrier extends LatchkeyObject {
  readonly members: number;
  enter(opts?: BarrierEnterOptions): Promise<BarrierOutcome>;
  leave(opts?: { wait?: number; signal?: AbortSignal }): Promise<BarrierOutcome>;
  acquire(opts?: BarrierEnterOptions): Promise<BarrierOutcome>;
  release(): Promise<BarrierOutcome>;
  using<T>(fn: (barrier: this) => Promise<T> | T, opts?: BarrierEnterOptions): Promise<T>;
  readonly round: number;
  readonly member: string | null;
}

export class Client extends EventEmitter {
  readonly id: string;
  readonly isConnected: boolean;
  lock(name: string): Lock;
  fairLock(name: string): FairLock;
  readWriteLock(name: string): ReadWriteLock;
  semaphore(name: string): Semaphore;
  latch(name: string): Latch;
  permitSemaphore(name: string): PermitSemaphore;
  leader(role: string): Leader;
  rateLimiter(name: string): RateLimiter;
  barrier(name: string, members: number): Barrier;
  /** Resolves once the close is done (every call, the second one too). */
  close(): Promise<void>;
}

export function connect(url: string, options?: ConnectOptions): Promise<Client>;
export function connect(options?: ConnectOptions): Promise<Client>;
/** Locks (of any clients) taken all together or none. */
export function multiLock(locks: Lock[]): MultiLock;
/** One name on several independent masters, one client each. */
export function redLock(clients: Client[], name: string, options?: RedLockOptions): RedLock;

/** Client and object cores alive in this environment (a leak check). */
export function liveCounts(): { clients: number; objects: number };

export const versions: {
  uvHeaders: string;
  uvRunning: string;
  openssl: string;
  opensslHeaders: string;
};
