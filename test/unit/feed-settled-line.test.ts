/**
 * Settled lines (src/feed/streams.ts, src/edge/follower.ts): once a completion is acknowledged
 * by every live edge, the origin tells each stream that sent it, and an edge starts the new
 * file's fill on that line, or on its own deadline (SETTLE_WAIT_MS) when none comes. Deletes and
 * switches send none: nothing is fetched for them.
 */
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/ports.js';
import { FeedStreams } from '../../src/feed/streams.js';
import { SETTLE_WAIT_MS } from '../../src/edge/follower.js';
import { EdgeState, type EdgeFile } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';
import { FakeResponse } from '../helpers/fake-response.js';
import { followerRig } from '../helpers/follower-rig.js';

const fileData = (id: string): EdgeFile => ({
  file_id: id, name: `${id}.bin`, visibility: 'Public', folder_id: null, size: 1, content_type: 'application/octet-stream', sha256: 'a', completed_at: 0, updated_at: 0,
});
const ready = (seq: number): StoredEvent => ({ seq, created_at: 0, type: 'file.ready', file_id: `f${seq}`, folder_id: null, data: { ...fileData(`f${seq}`) } });
const deleted = (seq: number): StoredEvent => ({ seq, created_at: 0, type: 'folder.deleted', file_id: null, folder_id: 'x', data: { folder_id: 'x' } });

function feedOf(clock: ManualClock, events: StoredEvent[]): FeedStreams {
  return new FeedStreams({
    eventsAfter: async (seq, limit) => events.filter((e) => e.seq > seq).slice(0, limit),
    head: () => events.at(-1)?.seq ?? 0,
    learned: () => {},
    drainMs: 500,
    clock,
  });
}

const settledLines = (res: FakeResponse) => res.written.filter((t) => t.startsWith('event: settled'));

describe('the origin\'s settled lines', () => {
  it('are written once per completion, only to streams that sent it and are not full', async () => {
    const clock = new ManualClock();
    const events = [deleted(1), ready(2)];
    const feed = feedOf(clock, events);
    const [sent, full, behind] = [new FakeResponse(), new FakeResponse(), new FakeResponse()];
    feed.attach('sent', 0, sent.res);
    feed.attach('full', 0, full.res);
    await clock.advance(0);
    full.full = true;
    feed.settled(2);
    feed.settled(2);
    events.push(ready(3));
    feed.attach('behind', 3, behind.res);
    await clock.advance(0);
    expect(settledLines(sent)).toEqual(['event: settled\ndata: {"seq":2}\n\n']);
    expect(settledLines(full), 'a full stream is skipped').toEqual([]);
    expect(settledLines(behind), 'a stream attached after it gets nothing for it').toEqual([]);
  });

  it('are not written for changes that bring no new file', async () => {
    const clock = new ManualClock();
    const events = [deleted(1), deleted(2)];
    const feed = feedOf(clock, events);
    const res = new FakeResponse();
    feed.attach('e', 0, res.res);
    await clock.advance(0);
    feed.settled(2);
    events.push(ready(3), deleted(4));
    feed.wake();
    await clock.advance(0);
    feed.settled(2);
    expect(settledLines(res), 'the completion at 3 is not settled by 2').toEqual([]);
    feed.settled(4);
    expect(settledLines(res)).toEqual(['event: settled\ndata: {"seq":4}\n\n']);
  });
});

describe('an edge waiting for the settled line', () => {
  it('fills a completion once the origin says every edge has it, before its own deadline', async () => {
    const rig = await followerRig();
    try {
      const seq = await rig.append({ type: 'file.ready', file_id: 'f', data: { ...fileData('f') } });
      let published = false;
      const publishing = rig.hub.publish(seq).then(() => (published = true));
      await rig.until(() => published);
      await publishing;
      let ran = -1;
      const from = rig.clock.monotonic();
      rig.follower.afterSettled(seq, () => (ran = rig.clock.monotonic() - from));
      expect(ran, 'already settled: runs at once').toBe(0);

      const next = await rig.append({ type: 'file.ready', file_id: 'g', data: { ...fileData('g') } });
      let at = -1;
      const start = rig.clock.monotonic();
      rig.follower.afterSettled(next, () => (at = rig.clock.monotonic() - start));
      void rig.hub.publish(next);
      await rig.until(() => at >= 0);
      expect(at, 'ran on the settled line, not the deadline').toBeLessThan(SETTLE_WAIT_MS);
    } finally {
      await rig.close();
    }
  });

  it('fills on its own deadline when no settled line comes', async () => {
    const rig = await followerRig();
    try {
      // Appended but never published here: as a change made through another origin.
      const seq = await rig.append({ type: 'file.ready', file_id: 'f', data: { ...fileData('f') } });
      let at = -1;
      const start = rig.clock.monotonic();
      rig.follower.afterSettled(seq, () => (at = rig.clock.monotonic() - start));
      await rig.pass(SETTLE_WAIT_MS - 10);
      expect(at, 'not before the deadline').toBe(-1);
      await rig.pass(20);
      expect(at).toBe(SETTLE_WAIT_MS);
    } finally {
      await rig.close();
    }
  });
});

describe('what the edge state asks to fetch', () => {
  it('names the completion\'s sequence for a new file, and none for a file an update brought into view', () => {
    const asked: Array<[string, number | null]> = [];
    const state = new EdgeState({ fileReady: (f, at) => void asked.push([f.file_id, at]), fileGone: () => {} });
    state.apply({ seq: 1, type: 'file.ready', data: { ...fileData('a') } });
    state.apply({ seq: 2, type: 'file.updated', data: { ...fileData('b') } });
    state.apply({ seq: 3, type: 'file.updated', data: { ...fileData('a'), name: 'renamed' } });
    expect(asked).toEqual([['a', 1], ['b', null]]);
  });
});
