/**
 * Streamed acknowledgements against a shutdown under a read of the log, and against every
 * interleaving of changes, dropped and stalled streams, slow writes and a body-gathering proxy
 * we could make (seeded), through the front of test/helpers/ack-front.ts: the edge never serves
 * from cache once the origin answered a change without it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FeedStreams } from '../../src/feed/streams.js';
import { ManualClock } from '../kit/clock.js';
import { LEASE, front, type Front } from '../helpers/ack-front.js';

let f: Front | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

describe('a shutdown while a feed stream reads the log', () => {
  // The origin's close ends every feed stream (hub.endStreams, before the server closes); a
  // stream whose read of the log was under way must not write what it read after the end
  // (ERR_STREAM_WRITE_AFTER_END, with no listener, is an uncaught exception mid-shutdown).
  it('writes nothing to a stream ended under a read of the log', async () => {
    let read!: (events: Array<{ seq: number; type: string; data: object }>) => void;
    const streams = new FeedStreams({
      eventsAfter: () => new Promise((r) => (read = r as never)),
      head: () => 1, learned: () => {}, drainMs: 1000, clock: new ManualClock(),
    });
    const errors: Error[] = [];
    let attached = false;
    const server = http.createServer((_req, res) => {
      res.on('error', (err) => errors.push(err));
      streams.attach('e', 0, res);
      attached = true;
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const req = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, (res) => res.resume());
    req.on('error', () => {});
    try {
      while (!attached || !read) await new Promise((r) => setTimeout(r, 5));
      streams.end();
      read([{ seq: 1, type: 'folder.deleted', data: {} }]);
      await new Promise((r) => setTimeout(r, 50));
      expect(errors.map((e) => (e as NodeJS.ErrnoException).code)).toEqual([]);
    } finally {
      req.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('every interleaving we could make', () => {
  /** A small seeded generator, so a failure can be run again. */
  const random = (seed: number) => () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  it.each([1, 2, 3])('never leaves the edge serving from cache once the origin answered a change without it (seed %i)', async (seed) => {
    f = await front();
    const rnd = random(seed);
    const published: Array<{ seq: number; answered: () => boolean }> = [];
    let release: (() => void) | null = null;
    let violations = 0;
    let without = 0;
    let frozen = false;
    const check = () => {
      for (const p of published) {
        if (!p.answered() || f!.state.seq >= p.seq) continue;
        without++;
        if (f!.follower.serving()) violations++;
      }
    };
    for (let step = 0; step < 300; step++) {
      const r = rnd();
      if (r < 0.25) published.push(await f.publishChange());
      else if (r < 0.3) f.dropFeeds();
      else if (r < 0.37) f.dropAckStreams();
      else if (r < 0.42) f.silent = !f.silent;
      else if (r < 0.47) {
        if (release) {
          release();
          release = null;
        } else release = f.holdWrites();
      } else if (r < 0.5) f.mode = f.mode === 'route' ? 'buffer' : 'route';
      else if (r < 0.56) f.freezeFeeds((frozen = !frozen));
      await f.pass(Math.floor(rnd() * 4) * 20 + 5, 5, check);
    }
    release?.();
    f.freezeFeeds(false);
    f.silent = false;
    f.mode = 'route';
    await f.pass(3 * LEASE, 20, check);
    expect(without, 'the origin did answer changes without the edge').toBeGreaterThan(0);
    expect(violations).toBe(0);
    expect(published.every((p) => p.answered()), 'every change answered in the end').toBe(true);
  });
});
