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
  bytes: Promise<Buffer>;
  ready: boolean;
  usedAt: number;
  /** Callers that took it and have not released it. */
  users: number;
  /** No longer in the map; still counted until its last user releases it. */
  gone: boolean;
  /** While read: when the last bytes came, and how to give the read up. */
  movedAt: number;
  stop?: (err: Error) => void;
}

/** A file taken from HotBytes: its bytes, and `release` once they are written (or given up). */
export interface HeldBytes {
  bytes: Promise<Buffer>;
  /** False when the caller has to wait for the read (what it decided before may have changed meanwhile). */
  ready: boolean;
  release(): void;
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
    const now = this.clock.monotonic();
    const found = this.entries.get(key);
    if (found && found.size === size) {
      found.usedAt = now;
      this.shared++;
      // Most recently used last: eviction walks from the front.
      this.entries.delete(key);
      this.entries.set(key, found);
      return this.lease(found);
    }
    if (found) this.drop(key);
    if (size > this.opts.fileLimit || !this.makeRoom(size)) return null;
    const entry: Entry = { size, bytes: Promise.resolve(Buffer.alloc(0)), ready: false, usedAt: now, users: 0, gone: false, movedAt: now };
    entry.bytes = this.load(entry, open).then(
      (buf) => {
        entry.ready = true;
        return buf;
      },
      (err: unknown) => {
        if (this.entries.get(key) === entry) this.drop(key);
        throw err;
      },
    );
    this.entries.set(key, entry);
    this.held += size;
    this.loads++;
    this.arm();
    return this.lease(entry);
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
   * Reads the entry's bytes; given up (its callers told, the source destroyed) once stalled for
   * idleMs, so a read stuck in the storage does not hold every later caller with it.
   */
  private load(entry: Entry, open: () => Promise<ByteSource>): Promise<Buffer> {
    let source: ByteSource | undefined;
    let stopped = false;
    const destroy = () => (source as { destroy?: () => void } | undefined)?.destroy?.();
    const stalled = new Promise<never>((_, reject) => {
      entry.stop = (err) => {
        stopped = true;
        destroy();
        reject(err);
      };
    });
    const read = (async () => {
      source = await open();
      if (stopped) destroy();
      return await readWhole(source, entry.size, () => (entry.movedAt = this.clock.monotonic()));
    })();
    // Once given up, the read's own end is nobody's concern.
    read.catch(() => {});
    return Promise.race([read, stalled]);
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
      else if (!e.ready && now - e.movedAt >= this.opts.idleMs) e.stop?.(new Error(`the storage sent nothing for ${this.opts.idleMs} ms`));
    }
    if (this.entries.size > 0) this.arm();
  }
}

/** Reads exactly `size` bytes into one buffer; fewer or more is an error. */
async function readWhole(source: ByteSource, size: number, moved: () => void): Promise<Buffer> {
  const out = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for await (const chunk of source) {
    moved();
    if (at + chunk.length > size) throw new Error(`stored bytes longer than the record's ${size}`);
    out.set(chunk, at);
    at += chunk.length;
  }
  if (at !== size) throw new Error(`stored bytes shorter (${at}) than the record's ${size}`);
  return out;
}
