/**
 * The feed's streams share reads of the log (src/feed/streams.ts): a change fanned out to many
 * streams at one sequence costs one read, and a read begun before a newer head never stands
 * in for one after it; changes up to the head are sent without a ping after them. On a clock
 * moved by hand.
 */
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/ports.js';
import { FeedStreams } from '../../src/feed/streams.js';
import { ManualClock } from '../kit/clock.js';
import { FakeResponse } from '../helpers/fake-response.js';


const event = (seq: number): StoredEvent => ({ seq, created_at: 0, type: 'folder.deleted', file_id: null, folder_id: 'x', data: { folder_id: 'x' } });

function setup() {
  const clock = new ManualClock();
  const log: StoredEvent[] = [event(1)];
  let head = 1;
  const reads: number[] = [];
  /** When set, reads wait for `release()` and answer what the log held when they began. */
  let hold: Array<() => void> | null = null;
  const feed = new FeedStreams({
    eventsAfter: async (seq, limit) => {
      reads.push(seq);
      const found = log.filter((e) => e.seq > seq).slice(0, limit);
      if (hold) await new Promise<void>((r) => hold!.push(r));
      return found;
    },
    head: () => head,
    learned: () => {},
    drainMs: 1000,
    clock,
  });
  const append = () => {
    log.push(event(log.length + 1));
    head = log.length;
  };
  return {
    clock, feed, reads, append,
    holdReads: () => (hold = []),
    release: () => {
      const waiting = hold ?? [];
      hold = null;
      for (const r of waiting) r();
    },
  };
}

const settle = async (clock: ManualClock) => {
  for (let i = 0; i < 5; i++) await clock.advance(0);
};

describe('feed streams share reads of the log', () => {
  it('reads once for a change fanned out to many streams at one sequence', async () => {
    const { clock, feed, reads, append } = setup();
    const res = Array.from({ length: 5 }, () => new FakeResponse());
    res.forEach((r, i) => feed.attach(`e${i}`, 1, r.res));
    await settle(clock);
    reads.length = 0;
    append();
    feed.wake();
    await settle(clock);
    expect(reads.filter((s) => s === 1), 'one read after 1 for five streams').toHaveLength(1);
    for (const r of res) expect(r.written.join('')).toContain('id: 2\n');
  });

  it('does not hand a read begun before a newer head to a stream woken by it', async () => {
    const { clock, feed, append, holdReads, release } = setup();
    const a = new FakeResponse();
    const b = new FakeResponse();
    feed.attach('a', 1, a.res);
    feed.attach('b', 1, b.res);
    await settle(clock);
    // C's read after 1 is under way (it finds nothing) when event 2 is committed and announced.
    holdReads();
    const c = new FakeResponse();
    feed.attach('c', 1, c.res);
    append();
    feed.wake();
    release();
    await settle(clock);
    for (const [name, r] of [['a', a], ['b', b], ['c', c]] as const) expect(r.written.join(''), name).toContain('id: 2\n');
  });

  it('sends no ping after changes up to the head, and one to a stream with nothing to send', async () => {
    const { clock, feed, append } = setup();
    const idle = new FakeResponse();
    feed.attach('idle', 1, idle.res);
    await settle(clock);
    expect(idle.written, 'nothing new: the ping tells it the head').toEqual(['event: ping\ndata: {"head":1}\n\n']);
    append();
    feed.wake();
    await settle(clock);
    expect(idle.written).toHaveLength(2);
    expect(idle.written[1]).toContain('id: 2\n');
  });
});
