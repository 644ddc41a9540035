/**
 * A file held in memory while a copy fills it (core/hot-bytes.ts `fill`), and sent as it fills
 * (core/held-stream.ts): what a parent edge's children read while its own fill is under way.
 */
import { describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import type http from 'node:http';
import { heldStream, writeHeld } from '../../src/core/held-stream.js';
import { HotBytes } from '../../src/core/hot-bytes.js';
import { ManualClock } from '../kit/clock.js';

const hot = (clock = new ManualClock()) => ({ clock, h: new HotBytes({ capacity: 1000, fileLimit: 400, idleMs: 10_000, clock }) });
const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256));

/** Reads a stream to its end; resolves with what came and how it ended. */
function drain(stream: NodeJS.ReadableStream) {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  const ended = new Promise<'end' | Error>((resolve) => {
    stream.on('end', () => resolve('end'));
    stream.on('error', (err: Error) => resolve(err));
  });
  return { got: () => Buffer.concat(parts), ended };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('HotBytes.fill', () => {
  it('lets readers have the bytes as they are written, all but the last until the copy ends', async () => {
    const { h } = hot();
    const fill = h.fill('k', 300)!;
    const reader = h.peek('k', 300)!;
    expect(reader.sendable().length).toBe(0);
    let woke = false;
    const next = reader.after(0).then(() => (woke = true));
    fill.write(bytes.subarray(0, 100));
    await next;
    expect(woke).toBe(true);
    expect(reader.sendable().equals(bytes.subarray(0, 100))).toBe(true);
    fill.write(bytes.subarray(100));
    // Whole, but not yet checked: the last byte waits.
    expect(reader.sendable().length).toBe(299);
    fill.end();
    expect(reader.sendable().equals(bytes)).toBe(true);
    expect((await reader.bytes).equals(bytes)).toBe(true);
    reader.release();
    expect(h.bytes).toBe(300);
    expect(h.fill('k', 300), 'one filling per file').toBeNull();
  });

  it('a failed copy rejects every reader and is not kept; so is one that writes too much or ends short', async () => {
    const { h } = hot();
    const fill = h.fill('k', 300)!;
    const reader = h.peek('k', 300)!;
    fill.write(bytes.subarray(0, 50));
    const waiting = reader.after(50);
    fill.fail(new Error('upstream gone'));
    await expect(waiting).rejects.toThrow();
    await expect(reader.bytes).rejects.toThrow('upstream gone');
    expect(h.peek('k', 300)).toBeNull();
    reader.release();
    expect(h.bytes).toBe(0);

    const long = h.fill('long', 10)!;
    long.write(Buffer.alloc(11));
    expect(h.peek('long', 10)).toBeNull();
    const short = h.fill('short', 10)!;
    short.write(Buffer.alloc(9));
    short.end();
    expect(h.peek('short', 10)).toBeNull();
    expect(h.bytes).toBe(0);
  });

  it('gives up a copy nothing is written to for idleMs', async () => {
    const { h, clock } = hot();
    const fill = h.fill('k', 300)!;
    const reader = h.peek('k', 300)!;
    fill.write(bytes.subarray(0, 10));
    const waiting = reader.after(10).then(() => 'more', () => 'failed');
    await clock.advance(25_000);
    expect(await waiting).toBe('failed');
    fill.write(bytes.subarray(10));
    fill.end();
    expect(h.peek('k', 300)).toBeNull();
    reader.release();
  });

  it('holds nothing over its limit or beyond its capacity', () => {
    const { h } = hot();
    expect(h.fill('big', 401)).toBeNull();
    expect(h.fill('a', 400)).not.toBeNull();
    expect(h.fill('b', 400)).not.toBeNull();
    // Both are being filled: neither can make way.
    expect(h.fill('c', 400)).toBeNull();
    expect(h.bytes).toBe(800);
  });
});

describe('heldStream', () => {
  it('waits for a whole piece of a copy under way before sending it, and sends the rest at the end', async () => {
    const { h } = hot();
    const fill = h.fill('k', 300)!;
    const out = drain(heldStream(h.peek('k', 300)!, { piece: 100 }));
    fill.write(bytes.subarray(0, 99));
    await tick();
    expect(out.got().length).toBe(0);
    fill.write(bytes.subarray(99, 250));
    await tick();
    expect(out.got().length).toBe(250);
    fill.write(bytes.subarray(250));
    await tick();
    expect(out.got().length).toBe(250);
    fill.end();
    expect(await out.ended).toBe('end');
    expect(out.got().equals(bytes)).toBe(true);
  });

  it('sends a filling copy as it comes and ends once it is whole; the reader is released at the end', async () => {
    const { h } = hot();
    const fill = h.fill('k', 300)!;
    const out = drain(heldStream(h.peek('k', 300)!, { piece: 1 }));
    fill.write(bytes.subarray(0, 120));
    await tick();
    expect(out.got().equals(bytes.subarray(0, 120))).toBe(true);
    fill.write(bytes.subarray(120));
    await tick();
    expect(out.got().length).toBe(299);
    fill.end();
    expect(await out.ended).toBe('end');
    expect(out.got().equals(bytes)).toBe(true);
    h.drop('k');
    await tick();
    expect(h.bytes, 'released once the stream closed').toBe(0);
  });

  it('fails without the last byte when the copy fails, and stops once the file is no longer current', async () => {
    const { h } = hot();
    const fill = h.fill('k', 300)!;
    const out = drain(heldStream(h.peek('k', 300)!, { piece: 1 }));
    fill.write(bytes);
    await tick();
    fill.fail(new Error('wrong bytes'));
    expect(await out.ended).toBeInstanceOf(Error);
    expect(out.got().length).toBe(299);

    let current = true;
    const again = h.fill('k', 300)!;
    const second = drain(heldStream(h.peek('k', 300)!, { stillCurrent: () => current, piece: 1 }));
    again.write(bytes.subarray(0, 100));
    await tick();
    current = false;
    again.write(bytes.subarray(100));
    again.end();
    expect(await second.ended).toBeInstanceOf(Error);
    expect(second.got().length).toBe(100);
    await tick();
    h.clear();
    expect(h.bytes).toBe(0);
  });
});

/** What writeHeld uses of a response: written pieces, end, destroy, close. */
function fakeResponse() {
  const r = Object.assign(new EventEmitter(), {
    closed: false, destroyed: false, ended: false, pieces: [] as Buffer[],
    write(b: Buffer) { r.pieces.push(Buffer.from(b)); return true; },
    end(b?: Buffer) { if (b) r.pieces.push(Buffer.from(b)); r.ended = true; r.closed = true; r.emit('close'); },
    destroy() { r.destroyed = true; r.closed = true; r.emit('close'); },
  });
  return r;
}

describe('writeHeld', () => {
  it('sends a whole piece at once, and what has come once a second passes without one', async () => {
    const { h, clock } = hot();
    const fill = h.fill('k', 300)!;
    const res = fakeResponse();
    const done = writeHeld(res as unknown as http.ServerResponse, h.peek('k', 300)!, { piece: 100, clock });
    fill.write(bytes.subarray(0, 150));
    await tick();
    expect(res.pieces.map((p) => p.length)).toEqual([150]);
    fill.write(bytes.subarray(150, 170));
    await tick();
    expect(res.pieces.length, 'less than a piece waits').toBe(1);
    await clock.advance(1000);
    await tick();
    expect(res.pieces.map((p) => p.length)).toEqual([150, 20]);
    fill.write(bytes.subarray(170));
    fill.end();
    await done;
    expect(res.ended).toBe(true);
    expect(Buffer.concat(res.pieces).equals(bytes)).toBe(true);
    expect(h.bytes).toBe(300);
    h.drop('k');
    expect(h.bytes, 'released once the answer closed').toBe(0);
  });

  it('cuts the answer when the copy fails or the file stops being current', async () => {
    const { h, clock } = hot();
    const fill = h.fill('k', 300)!;
    const res = fakeResponse();
    const done = writeHeld(res as unknown as http.ServerResponse, h.peek('k', 300)!, { piece: 100, clock });
    fill.write(bytes);
    fill.fail(new Error('wrong bytes'));
    await done;
    expect(res.destroyed).toBe(true);
    expect(Buffer.concat(res.pieces).length).toBeLessThan(300);

    let current = true;
    const again = h.fill('k', 300)!;
    const res2 = fakeResponse();
    const done2 = writeHeld(res2 as unknown as http.ServerResponse, h.peek('k', 300)!, { piece: 100, clock, stillCurrent: () => current });
    again.write(bytes.subarray(0, 100));
    await tick();
    current = false;
    again.write(bytes.subarray(100));
    again.end();
    await done2;
    expect(res2.destroyed).toBe(true);
    expect(Buffer.concat(res2.pieces).length).toBe(100);
  });
});
