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

declare class LatchkeyObject extends EventEmitter {
  readonly client: Client;
  readonly name: string;
  close(): Promise<void>;
  on(event: 'lost', listener: (err: LatchkeyError) => void): this;
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

export class Client extends EventEmitter {
  readonly id: string;
  readonly isConnected: boolean;
  lock(name: string): Lock;
  fairLock(name: string): FairLock;
  readWriteLock(name: string): ReadWriteLock;
  semaphore(name: string): Semaphore;
  latch(name: string): Latch;
  /** Resolves once the close is done (every call, the second one too). */
  close(): Promise<void>;
}

export function connect(url: string, options?: ConnectOptions): Promise<Client>;
export function connect(options?: ConnectOptions): Promise<Client>;

/** Client and object cores alive in this environment (a leak check). */
export function liveCounts(): { clients: number; objects: number };

export const versions: {
  uvHeaders: string;
  uvRunning: string;
  openssl: string;
  opensslHeaders: string;
};
