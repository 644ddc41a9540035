/**
 * The origin pings only streams that were quiet for `quietMs` (src/feed/streams.ts): a ping
 * only keeps a silent stream's watchdog quiet, so a stream written to lately gets none, and a
 * quiet one gets one every `quietMs` or so, never a lease of silence. On a clock moved by hand.
 */
import { describe, expect, it } from 'vitest';
import { FeedStreams } from '../../src/feed/streams.js';
import { ManualClock } from '../kit/clock.js';
import { FakeResponse } from '../helpers/fake-response.js';


const LEASE = 1000;
const QUIET = (LEASE * 2) / 5;
const TICK = LEASE / 4;

describe('quiet pings', () => {
  it('pings a stream only once it was quiet for quietMs, so it never goes a lease without a word', async () => {
    const clock = new ManualClock();
    const feed = new FeedStreams({ eventsAfter: async () => [], head: () => 0, learned: () => {}, drainMs: LEASE, quietMs: QUIET, clock });
    const a = new FakeResponse();
    feed.attach('a', 0, a.res);
    await clock.advance(0);
    expect(a.written.length, 'the ping sent on attach').toBe(1);
    const writes: number[] = [];
    const ticker = clock.setInterval(() => {
      const before = a.written.length;
      feed.ping();
      if (a.written.length > before) writes.push(clock.monotonic());
    }, TICK);
    await clock.advance(10 * LEASE);
    clock.clearInterval(ticker);
    // One per tick would be 40; one per two ticks (the first tick after QUIET) 20.
    expect(writes.length).toBeLessThanOrEqual(10 * LEASE / (2 * TICK) + 1);
    const gaps = writes.map((t, i) => t - (i === 0 ? 0 : writes[i - 1]!));
    expect(Math.max(...gaps), 'never silent for a lease').toBeLessThan(LEASE);
  });

  it('skips a stream written to within quietMs and gives every quiet one the same text', async () => {
    const clock = new ManualClock();
    const feed = new FeedStreams({ eventsAfter: async () => [], head: () => 0, learned: () => {}, drainMs: LEASE, quietMs: QUIET, clock });
    const a = new FakeResponse();
    const b = new FakeResponse();
    feed.attach('a', 0, a.res);
    await clock.advance(0);
    await clock.advance(QUIET - 10);
    feed.attach('b', 0, b.res);
    await clock.advance(0);
    await clock.advance(10);
    feed.ping();
    expect(a.written.length, 'a was quiet: pinged').toBe(2);
    expect(b.written.length, 'b was just written to: not pinged').toBe(1);
    await clock.advance(QUIET);
    const c = new FakeResponse();
    feed.attach('c', 0, c.res);
    await clock.advance(0);
    await clock.advance(QUIET);
    feed.ping();
    expect(a.written.at(-1)).toBe(b.written.at(-1));
    expect(a.written.at(-1)).toBe('event: ping\ndata: {"head":0}\n\n');
  });
});
