/**
 * One read per new file (src/core/hot-bytes.ts): the origin and a parent edge send the same
 * new file to many edges from one buffer. Bounded, idled out on a clock moved by hand, never
 * keeping a failed or short read, and never answering for a file deleted or replaced.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HotBytes, type ByteSource } from '../../src/core/hot-bytes.js';
import { BlobNotFoundError, type StoredFile } from '../../src/core/ports.js';
import { EdgeRecords } from '../../src/feed/records.js';
import { ManualClock } from '../kit/clock.js';

const MiB = 1 << 20;

/** A source that counts its reads and gives `bytes` in chunks of `chunk`. */
function counted(bytes: Buffer, chunk = 64 * 1024) {
  const reads = { n: 0 };
  const open = async (): Promise<ByteSource> => {
    reads.n++;
    const parts: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += chunk) parts.push(bytes.subarray(at, at + chunk));
    return Readable.from(parts);
  };
  return { reads, open };
}

/** A get that must be held (not null). */
function must(p: Promise<Buffer> | null): Promise<Buffer> {
  expect(p).not.toBeNull();
  return p!;
}

const hot = (clock = new ManualClock(), capacity = 8 * MiB, fileLimit = 4 * MiB) => ({ clock, h: new HotBytes({ capacity, fileLimit, idleMs: 10_000, clock }) });

describe('HotBytes', () => {
  it('reads a file once for any number of callers at once, and gives each the same bytes', async () => {
    const { h } = hot();
    const bytes = Buffer.from(Array.from({ length: MiB + 3 }, (_, i) => i % 251));
    const src = counted(bytes);
    const all = await Promise.all(Array.from({ length: 50 }, () => must(h.get('k', bytes.length, src.open))));
    expect(src.reads.n).toBe(1);
    for (const b of all) expect(b.equals(bytes)).toBe(true);
    expect(h.loads).toBe(1);
    expect(h.shared).toBe(49);
    expect(h.bytes).toBe(bytes.length);
  });

  it('does not hold a file over its limit, nor more than its capacity of files being read', async () => {
    const { h } = hot(new ManualClock(), 5 * MiB, 4 * MiB);
    expect(h.get('big', 4 * MiB + 1, counted(Buffer.alloc(1)).open)).toBeNull();
    const never = new Promise<ByteSource>(() => {});
    expect(h.get('a', 3 * MiB, () => never)).not.toBeNull();
    // 'a' is still being read: it cannot make way.
    expect(h.get('b', 3 * MiB, () => never)).toBeNull();
    expect(h.bytes).toBe(3 * MiB);
  });

  it('makes room by dropping the least recently used file read whole', async () => {
    const { h } = hot(new ManualClock(), 4 * MiB, 2 * MiB);
    const a = counted(Buffer.alloc(2 * MiB, 1));
    const b = counted(Buffer.alloc(2 * MiB, 2));
    const c = counted(Buffer.alloc(2 * MiB, 3));
    await h.get('a', 2 * MiB, a.open);
    await h.get('b', 2 * MiB, b.open);
    await h.get('a', 2 * MiB, a.open); // 'a' used last
    await h.get('c', 2 * MiB, c.open); // drops 'b'
    expect(h.bytes).toBe(4 * MiB);
    await h.get('a', 2 * MiB, a.open);
    expect(a.reads.n).toBe(1);
    await h.get('b', 2 * MiB, b.open);
    expect(b.reads.n).toBe(2);
  });

  it('drops a file idle for idleMs, and keeps one in use', async () => {
    const { clock, h } = hot();
    const a = counted(Buffer.alloc(1000, 1));
    const b = counted(Buffer.alloc(1000, 2));
    await h.get('a', 1000, a.open);
    await h.get('b', 1000, b.open);
    await clock.advance(6_000);
    await h.get('b', 1000, b.open);
    await clock.advance(4_000);
    expect(h.bytes).toBe(1000);
    await h.get('b', 1000, b.open);
    expect(b.reads.n).toBe(1);
    await clock.advance(20_000);
    expect(h.bytes).toBe(0);
    expect(clock.pending, 'no timer is left once nothing is held').toBe(0);
    await h.get('a', 1000, a.open);
    expect(a.reads.n).toBe(2);
  });

  it('does not keep a read that fails or gives another length; every waiting caller hears of it', async () => {
    const { h } = hot();
    const gone = () => Promise.reject(new BlobNotFoundError('k'));
    const waiting = [h.get('k', 10, gone), h.get('k', 10, gone)];
    for (const w of waiting) await expect(w).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(h.bytes).toBe(0);
    await expect(h.get('short', 10, counted(Buffer.alloc(9)).open)).rejects.toThrow(/shorter/);
    await expect(h.get('long', 10, counted(Buffer.alloc(11)).open)).rejects.toThrow(/longer/);
    expect(h.bytes).toBe(0);
    const ok = counted(Buffer.alloc(10, 7));
    expect((await must(h.get('short', 10, ok.open))).equals(Buffer.alloc(10, 7))).toBe(true);
  });

  it('keeps counting a buffer still in use once dropped or idle, so slow readers cannot hold more than the capacity', async () => {
    const { clock, h } = hot(new ManualClock(), 4 * MiB, 2 * MiB);
    const a = h.take('a', 2 * MiB, counted(Buffer.alloc(2 * MiB, 1)).open)!;
    const b = h.take('b', 2 * MiB, counted(Buffer.alloc(2 * MiB, 2)).open)!;
    await Promise.all([a.bytes, b.bytes]);
    // Both in use (a stalled socket each): neither makes way, and idling does not uncount them.
    expect(h.take('c', 2 * MiB, counted(Buffer.alloc(2 * MiB, 3)).open)).toBeNull();
    await clock.advance(30_000);
    h.drop('a');
    expect(h.bytes).toBe(4 * MiB);
    expect(h.take('c', 2 * MiB, counted(Buffer.alloc(2 * MiB, 3)).open)).toBeNull();
    a.release();
    a.release(); // twice is once
    expect(h.bytes).toBe(2 * MiB);
    const c = h.take('c', 2 * MiB, counted(Buffer.alloc(2 * MiB, 3)).open)!;
    expect((await c.bytes)[0]).toBe(3);
    c.release();
    b.release();
    await clock.advance(30_000);
    expect(h.bytes).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('gives up a read that stalls for idleMs: its callers hear so, the next caller reads again', async () => {
    const { clock, h } = hot();
    let destroyed = 0;
    const stuck = async (): Promise<ByteSource> => {
      const s = new Readable({ read() {} });
      s.push(Buffer.alloc(10));
      s.on('close', () => destroyed++);
      return s;
    };
    const waiting = [h.get('k', 100, stuck), h.get('k', 100, stuck), h.get('never', 100, () => new Promise(() => {}))];
    const settled = Promise.allSettled(waiting);
    await clock.advance(25_000);
    for (const r of await settled) expect(r.status).toBe('rejected');
    expect(destroyed).toBe(1);
    expect(h.bytes).toBe(0);
    const ok = counted(Buffer.alloc(100, 5));
    expect((await must(h.get('k', 100, ok.open)))[0]).toBe(5);
  });

  it('reads again for another size under the same key, and after drop', async () => {
    const { h } = hot();
    const a = counted(Buffer.alloc(10, 1));
    await h.get('k', 10, a.open);
    const b = counted(Buffer.alloc(12, 2));
    expect((await must(h.get('k', 12, b.open))).length).toBe(12);
    expect(h.bytes).toBe(12);
    h.drop('k');
    expect(h.bytes).toBe(0);
    await h.get('k', 12, b.open);
    expect(b.reads.n).toBe(2);
  });
});

describe('EdgeRecords.blob with files held in memory', () => {
  function setup() {
    const clock = new ManualClock();
    let file: StoredFile | undefined = { id: 'f', status: 'ready', blob_key: 'k1', size: 4, sha256: 'h1', completed_at: 0 } as StoredFile;
    const stored = new Map<string, Buffer>([['k1', Buffer.from('old!')], ['k2', Buffer.from('new!')]]);
    const reads: string[] = [];
    const meta = { read: { getFile: async () => file } } as unknown as ConstructorParameters<typeof EdgeRecords>[0];
    const blobs = {
      read: async (key: string) => {
        reads.push(key);
        const b = stored.get(key);
        if (!b) throw new BlobNotFoundError(key);
        return Readable.from([b]);
      },
    } as unknown as ConstructorParameters<typeof EdgeRecords>[1];
    const h = new HotBytes({ capacity: 1024, fileLimit: 16, idleMs: 10_000, clock });
    const r = new EdgeRecords(meta, blobs, undefined, h);
    return { r, reads, stored, set: (f: StoredFile | undefined) => (file = f) };
  }
  const body = async (r: EdgeRecords) => {
    const b = await r.blob('f');
    if (!b) return undefined;
    const parts: Buffer[] = [];
    for await (const c of b.body as AsyncIterable<Buffer>) parts.push(c);
    return Buffer.concat(parts).toString();
  };

  it('reads a file once for many edges at once', async () => {
    const { r, reads } = setup();
    const all = await Promise.all(Array.from({ length: 20 }, () => body(r)));
    expect(all).toEqual(Array(20).fill('old!'));
    expect(reads).toEqual(['k1']);
  });

  it('answers nothing for a file deleted since, though its bytes are held', async () => {
    const { r, set } = setup();
    expect(await body(r)).toBe('old!');
    set(undefined);
    expect(await r.blob('f')).toBeUndefined();
  });

  it('answers the new version of a replaced file, never the held old one', async () => {
    const { r, set, reads } = setup();
    expect(await body(r)).toBe('old!');
    set({ id: 'f', status: 'ready', blob_key: 'k2', size: 4, sha256: 'h2', completed_at: 0 } as StoredFile);
    expect(await body(r)).toBe('new!');
    expect(reads).toEqual(['k1', 'k2']);
  });

  it('answers nothing for bytes gone from storage, and does not keep the failure', async () => {
    const { r, stored, reads } = setup();
    stored.delete('k1');
    expect(await r.blob('f')).toBeUndefined();
    stored.set('k1', Buffer.from('old!'));
    expect(await body(r)).toBe('old!');
    expect(reads).toEqual(['k1', 'k1']);
  });

  it('streams a file over the limit, each edge reading its own', async () => {
    const { r, set, stored, reads } = setup();
    stored.set('big', Buffer.alloc(100, 1));
    set({ id: 'f', status: 'ready', blob_key: 'big', size: 100, sha256: 'hb', completed_at: 0 } as StoredFile);
    const a = await r.blob('f');
    const b = await r.blob('f');
    expect(Buffer.isBuffer(a!.body)).toBe(false);
    expect(Buffer.isBuffer(b!.body)).toBe(false);
    expect(reads).toEqual(['big', 'big']);
  });
});
