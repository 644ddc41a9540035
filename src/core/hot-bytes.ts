/**
 * Whole files held in memory for a short while, for a server that sends the same new file to
 * many edges at once (the origin to its edges, a parent edge to its children): the bytes are
 * read once and every answer writes the same buffer, instead of each reading its own copy
 * through the storage. An origin sent a 10 MiB prewarm to 200 edges at about 1 s of CPU per GiB
 * that way, and at about 0.25 s from one buffer (bench/README.md, Fleet benchmark, "one read per
 * new file").
 *
 * Bounded: files up to `fileLimit`, `capacity` bytes in all (a file being read counts from its
 * start); a file that does not fit is not held, and its caller reads it as before. An entry
 * idle for `idleMs` is dropped. A buffer stays counted while any caller still uses it (a slow or
 * stalled socket has not taken it all), even once dropped: slow readers of many files cannot
 * keep more than `capacity` alive, they only make later callers read as before.
 */
import { systemClock, type Clock, type TimerHandle } from './clock.js';

export interface HotBytesOptions {
  capacity: number;
  fileLimit: number;
  idleMs: number;
  clock?: Clock;
}

/** The bytes as a storage hands them over. */
export type ByteSource = AsyncIterable<Buffer | Uint8Array>;

interface Entry {
  size: number;
  /** The file, filled from the front as its bytes come (`at` of them so far). */
  buf: Buffer;
  at: number;
  bytes: Promise<Buffer>;
  ready: boolean;
  failed: boolean;
  /** Woken whenever `at` grows, and once the entry is whole or failed. */
  waiters: Array<() => void>;
  usedAt: number;
  /** Callers that took it and have not released it. */
  users: number;
  /** No longer in the map; still counted until its last user releases it. */
  gone: boolean;
  /** While filled: when the last bytes came, and how to give the filling up. */
  movedAt: number;
  stop?: (err: Error) => void;
}

/** A file taken from HotBytes: its bytes, and `release` once they are written (or given up). */
export interface HeldBytes {
  bytes: Promise<Buffer>;
  /** False when the caller has to wait for the read (what it decided before may have changed meanwhile). */
  ready: boolean;
  size: number;
  /**
   * The bytes that may be sent already, from the front: all of them once the file is whole,
   * and until then all but the last byte, so that no reader ever has the whole of a copy that
   * then fails its check.
   */
  sendable(): Buffer;
  /** Resolves once `from + atLeast` bytes are sendable, or all are; rejects when the filling failed. */
  after(from: number, atLeast?: number): Promise<void>;
  release(): void;
}

/** Fills an entry from a copy under way (`HotBytes.fill`): bytes in order, then `end` or `fail`. */
export interface HotFill {
  /** Copies `chunk` in: the caller may reuse it once this returns. */
  write(chunk: Uint8Array): void;
  /** The copy is whole and checked. */
  end(): void;
  fail(err: Error): void;
}

export class HotBytes {
  private readonly entries = new Map<string, Entry>();
  private held = 0;
  private sweeper: TimerHandle | undefined;
  private readonly clock: Clock;
  /** Answers given from a buffer already held or being read (metrics, tests). */
  shared = 0;
  /** Files read into memory. */
  loads = 0;

  constructor(private readonly opts: HotBytesOptions) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Bytes held or being read. */
  get bytes(): number {
    return this.held;
  }

  /** Like `take`, for a caller done with the bytes as soon as it has them. */
  get(key: string, size: number, open: () => Promise<ByteSource>): Promise<Buffer> | null {
    const t = this.take(key, size, open);
    return t ? t.bytes.finally(t.release) : null;
  }

  /**
   * The whole of the file `key` (`size` bytes), read by `open` once and shared by every caller
   * until it idles out; null when it cannot be held (too large, or no room). A read that fails
   * or gives another length rejects every caller waiting on it and is not kept. The caller
   * must call `release` once the bytes are written or given up: until then they count.
   */
  take(key: string, size: number, open: () => Promise<ByteSource>): HeldBytes | null {
    const found = this.peek(key, size);
    if (found) return found;
    const fill = this.fill(key, size);
    if (!fill) return null;
    const entry = this.entries.get(key)!;
    this.read(entry, fill, open);
    this.loads++;
    return this.lease(entry);
  }

  /** The file `key` if it is held or being filled now, shared like `take`; null otherwise. */
  peek(key: string, size: number): HeldBytes | null {
    const found = this.entries.get(key);
    if (!found || found.size !== size) return null;
    found.usedAt = this.clock.monotonic();
    this.shared++;
    // Most recently used last: eviction walks from the front.
    this.entries.delete(key);
    this.entries.set(key, found);
    return this.lease(found);
  }

  /**
   * A new entry for `key`, filled by the caller as its bytes arrive (a parent edge's fill from
   * upstream, which its children read as it comes); null when `key` is held already, too
   * large, or finds no room. Given up like a read once nothing is written for idleMs.
   */
  fill(key: string, size: number): HotFill | null {
    const found = this.entries.get(key);
    if (found?.size === size) return null;
    if (found) this.drop(key);
    if (size > this.opts.fileLimit || !this.makeRoom(size)) return null;
    const now = this.clock.monotonic();
    let settle!: (err: Error | null) => void;
    const entry: Entry = {
      size, buf: Buffer.allocUnsafeSlow(size), at: 0, bytes: new Promise((resolve, reject) => {
        settle = (err) => (err ? reject(err) : resolve(entry.buf));
      }), ready: false, failed: false, waiters: [], usedAt: now, users: 0, gone: false, movedAt: now,
    };
    // A caller that never takes the bytes must not see an unhandled rejection.
    entry.bytes.catch(() => {});
    const wake = () => {
      const waiters = entry.waiters;
      entry.waiters = [];
      for (const w of waiters) w();
    };
    const fail = (err: Error) => {
      if (entry.ready || entry.failed) return;
      entry.failed = true;
      if (this.entries.get(key) === entry) this.drop(key);
      settle(err);
      wake();
    };
    entry.stop = fail;
    this.entries.set(key, entry);
    this.held += size;
    this.arm();
    return {
      write: (chunk) => {
        if (entry.ready || entry.failed) return;
        if (entry.at + chunk.length > size) return fail(new Error(`bytes longer than the record's ${size}`));
        entry.buf.set(chunk, entry.at);
        entry.at += chunk.length;
        entry.movedAt = this.clock.monotonic();
        wake();
      },
      end: () => {
        if (entry.ready || entry.failed) return;
        if (entry.at !== size) return fail(new Error(`bytes shorter (${entry.at}) than the record's ${size}`));
        entry.ready = true;
        settle(null);
        wake();
      },
      fail,
    };
  }

  /** Forgets `key` (a file deleted or replaced): the next caller reads it again. */
  drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    e.gone = true;
    if (e.users === 0) this.held -= e.size;
  }

  /** Drops everything and stops the sweeper (bytes still in use count until released). */
  clear(): void {
    for (const key of [...this.entries.keys()]) this.drop(key);
    this.clock.clearTimeout(this.sweeper);
    this.sweeper = undefined;
  }

  private lease(e: Entry): HeldBytes {
    e.users++;
    let released = false;
    return {
      bytes: e.bytes,
      ready: e.ready,
      size: e.size,
      sendable: () => e.buf.subarray(0, e.ready ? e.size : Math.min(e.at, e.size - 1)),
      after: (from, atLeast = 1) => new Promise<void>((resolve, reject) => {
        const check = () => {
          if (e.failed) reject(new Error('the bytes could not be read'));
          else if (e.ready || Math.min(e.at, e.size - 1) >= from + atLeast) resolve();
          else e.waiters.push(check);
        };
        check();
      }),
      release: () => {
        if (released) return;
        released = true;
        e.users--;
        if (e.users === 0 && e.gone) this.held -= e.size;
      },
    };
  }

  /** Evicts ready entries nobody uses, least recently used first, until `size` more fits. */
  private makeRoom(size: number): boolean {
    if (size > this.opts.capacity) return false;
    for (const [key, e] of this.entries) {
      if (this.held + size <= this.opts.capacity) break;
      // Dropping one in use would free nothing.
      if (e.ready && e.users === 0) this.drop(key);
    }
    return this.held + size <= this.opts.capacity;
  }

  /**
   * Reads the entry's bytes from `open`; given up (its callers told, the source destroyed) once
   * stalled for idleMs, so a read stuck in the storage does not hold every later caller with it.
   */
  private read(entry: Entry, fill: HotFill, open: () => Promise<ByteSource>): void {
    let source: ByteSource | undefined;
    const destroy = () => (source as { destroy?: () => void } | undefined)?.destroy?.();
    const stop = entry.stop!;
    entry.stop = (err) => {
      destroy();
      stop(err);
    };
    void (async () => {
      source = await open();
      if (entry.failed) return destroy();
      for await (const chunk of source) {
        if (entry.failed) return destroy();
        fill.write(chunk);
      }
      fill.end();
    })().catch((err: unknown) => fill.fail(err instanceof Error ? err : new Error(String(err))));
  }

  private arm(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = this.clock.setTimeout(() => {
      this.sweeper = undefined;
      this.sweep();
    }, this.opts.idleMs);
    this.sweeper.unref?.();
  }

  private sweep(): void {
    const now = this.clock.monotonic();
    for (const [key, e] of this.entries) {
      if (e.ready && e.users === 0 && now - e.usedAt >= this.opts.idleMs) this.drop(key);
      else if (!e.ready && now - e.movedAt >= this.opts.idleMs) e.stop?.(new Error(`nothing came for ${this.opts.idleMs} ms`));
    }
    if (this.entries.size > 0) this.arm();
  }
}
