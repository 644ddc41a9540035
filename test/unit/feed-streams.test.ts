/**
 * The feed's streams (src/feed/streams.ts) and its batched acknowledgements
 * (src/feed/ack-batch.ts), on a clock moved by hand: a stream that stays full is dropped after
 * exactly `drainMs`, one that drains is not; acknowledgements of a burst are written together.
 */
import { describe, expect, it } from 'vitest';
import type { EdgeAck, EdgeLease, StoredEvent } from '../../src/core/ports.js';
import { AckBatch } from '../../src/feed/ack-batch.js';
import { FeedStreams } from '../../src/feed/streams.js';
import { ManualClock } from '../kit/clock.js';
import { FakeResponse } from '../helpers/fake-response.js';


const DRAIN_MS = 500;

function feedOf(clock: ManualClock, events: StoredEvent[]): FeedStreams {
  return new FeedStreams({
    eventsAfter: async (seq, limit) => events.filter((e) => e.seq > seq).slice(0, limit),
    head: () => events.at(-1)?.seq ?? 0,
    learned: () => {},
    drainMs: DRAIN_MS,
    clock,
  });
}

const event = (seq: number): StoredEvent => ({ seq, created_at: 0, type: 'folder.deleted', file_id: null, folder_id: 'x', data: { folder_id: 'x' } });

describe('feed streams', () => {
  it('drops a stream that stays full for drainMs, and not a moment before', async () => {
    const clock = new ManualClock();
    const events = [event(1)];
    const feed = feedOf(clock, events);
    const res = new FakeResponse();
    res.full = true;
    feed.attach('edge', 0, res.res);
    await clock.advance(0);
    expect(res.written.join('')).toContain('id: 1\n');
    expect(feed.list()).toEqual([{ edge: 'edge', sent: 1, buffered: res.writableLength }]);
    await clock.advance(DRAIN_MS - 1);
    expect(res.destroyed, 'still within drainMs').toBe(false);
    await clock.advance(1);
    expect(res.destroyed, 'full for drainMs').toBe(true);
    expect(feed.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('keeps a stream that drains in time and sends it what came meanwhile', async () => {
    const clock = new ManualClock();
    const events = [event(1)];
    const feed = feedOf(clock, events);
    const res = new FakeResponse();
    res.full = true;
    feed.attach('edge', 0, res.res);
    await clock.advance(DRAIN_MS - 1);
    events.push(event(2));
    feed.wake();
    res.drain();
    await clock.advance(DRAIN_MS * 2);
    expect(res.destroyed).toBe(false);
    expect(res.written.join('')).toContain('id: 2\n');
    expect(feed.list()[0]).toMatchObject({ edge: 'edge', sent: 2 });
    expect(clock.pending, 'no drain timer left behind').toBe(0);
    feed.end();
    expect(res.destroyed).toBe(true);
  });
});

describe('acknowledgement batches', () => {
  const row = (a: EdgeAck): EdgeLease => ({ ...a, state: 'caught_up', version: 1 });

  it('writes a burst in one write after the delay, and what arrives during a write in the next', async () => {
    const clock = new ManualClock();
    const writes: string[][] = [];
    let release: (() => void) | null = null;
    const batch = new AckBatch(async (acks) => {
      writes.push(acks.map((a) => a.edge_id));
      if (writes.length === 1) await new Promise<void>((r) => (release = r));
      return acks.map(row);
    }, 4, clock);
    const ack = (edge_id: string): EdgeAck => ({ edge_id, origin_id: 'o', acked_seq: 1, heard_at: clock.now(), live_until: 0 });
    const first = [batch.record(ack('a')), batch.record(ack('b'))];
    await clock.advance(3);
    expect(writes, 'nothing written within the delay').toEqual([]);
    await clock.advance(1);
    expect(writes).toEqual([['a', 'b']]);
    const later = batch.record(ack('c'));
    release!();
    expect((await Promise.all(first)).map((r) => r.edge_id)).toEqual(['a', 'b']);
    expect((await later).edge_id).toBe('c');
    expect(writes).toEqual([['a', 'b'], ['c']]);
  });

  it('refuses what is queued when closed', async () => {
    const clock = new ManualClock();
    const batch = new AckBatch(async (acks) => acks.map(row), 4, clock);
    const pending = batch.record({ edge_id: 'a', origin_id: 'o', acked_seq: 1, heard_at: 0, live_until: 0 });
    batch.close();
    await expect(pending).rejects.toThrow(/shutting down/);
    expect(clock.pending).toBe(0);
  });
});
