/**
 * SHA-256 of files, computed on a worker thread so the event loop stays free for
 * requests. Hash states live in the worker and are addressed by number; messages are
 * handled in order, so an update sent before a fork is in the fork.
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../core/v8-flags.js';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const hashes = new Map();
const buf = Buffer.allocUnsafe(1 << 20);
parentPort.on('message', (m) => {
  try {
    if (m.op === 'create') hashes.set(m.id, createHash('sha256'));
    else if (m.op === 'fork') hashes.set(m.id, hashes.get(m.from).copy());
    else if (m.op === 'drop') hashes.delete(m.id);
    else if (m.op === 'update') {
      const hash = hashes.get(m.id);
      const fd = fs.openSync(m.path, 'r');
      let size = 0;
      try {
        for (;;) {
          const n = fs.readSync(fd, buf, 0, buf.length, null);
          if (n === 0) break;
          hash.update(buf.subarray(0, n));
          size += n;
        }
      } finally {
        fs.closeSync(fd);
      }
      parentPort.postMessage({ seq: m.seq, value: size });
    } else if (m.op === 'digest') {
      const value = hashes.get(m.id).digest('hex');
      hashes.delete(m.id);
      parentPort.postMessage({ seq: m.seq, value });
    }
  } catch (err) {
    if (m.seq !== undefined) parentPort.postMessage({ seq: m.seq, error: String((err && err.message) || err) });
  }
});
`;

export type HashId = number;

export class FileHasher {
  private worker: Worker | null = null;
  private nextId = 1;
  private nextSeq = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private get thread(): Worker {
    if (!this.worker) {
      const worker = startWorker(WORKER_SOURCE, { eval: true });
      worker.unref();
      worker.on('message', (m: { seq: number; value?: unknown; error?: string }) => {
        const w = this.waiting.get(m.seq);
        if (!w) return;
        this.waiting.delete(m.seq);
        if (m.error !== undefined) w.reject(new Error(m.error));
        else w.resolve(m.value);
      });
      worker.on('error', (err) => this.failAll(err));
      worker.on('exit', () => {
        this.worker = null;
        this.failAll(new Error('the hashing thread stopped'));
      });
      this.worker = worker;
    }
    return this.worker;
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }

  private ask<T>(message: Record<string, unknown>): Promise<T> {
    const seq = this.nextSeq++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(seq, { resolve: resolve as (v: unknown) => void, reject });
      this.thread.postMessage({ ...message, seq });
    });
  }

  create(): HashId {
    const id = this.nextId++;
    this.thread.postMessage({ op: 'create', id });
    return id;
  }

  /** A new state equal to `from` after every update sent to it so far. */
  fork(from: HashId): HashId {
    const id = this.nextId++;
    this.thread.postMessage({ op: 'fork', id, from });
    return id;
  }

  /** Feeds the file's bytes; resolves with its size. */
  update(id: HashId, path: string): Promise<number> {
    return this.ask<number>({ op: 'update', id, path });
  }

  /** The hex digest; the state is gone afterwards. */
  digest(id: HashId): Promise<string> {
    return this.ask<string>({ op: 'digest', id });
  }

  drop(id: HashId): void {
    this.worker?.postMessage({ op: 'drop', id });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
