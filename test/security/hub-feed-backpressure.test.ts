/**
 * The origin's feed respects back-pressure: a holder of the edge token who opens the feed and
 * never reads makes the origin hold at most about one batch of events for it, however many
 * are appended, and the stream is dropped once it has stayed full for a lease. The origin runs
 * on a clock moved by hand, so "a lease" is exactly that, not a wait on the wall clock.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { ManualClock, sleep } from '../kit/index.js';
import { DEFAULT_POLL_MS } from '../../src/feed/hub.js';

const LEASE_MS = 1000;
const EDGE_TOKEN = 'hub-feed-token-' + randomBytes(12).toString('hex');

/** Events of about 1 KiB, like file records with long names. */
const EVENTS = 40_000;
const PAD = 'x'.repeat(1000);
/** Far below what 40,000 events take (about 40 MB), well above one batch of 500 (about 0.5 MB). */
const BOUND = 4 * 1024 * 1024;

/** Waits (on the wall clock: it is the socket's doing) until the bytes held for the stream stop changing. */
async function stalled(held: () => number): Promise<number> {
  let last = -1;
  for (let steady = 0, i = 0; steady < 10 && i < 1000; i++) {
    await sleep(20);
    const now = held();
    steady = now > 0 && now === last ? steady + 1 : 0;
    last = now;
  }
  return last;
}

describe('the feed to an edge that never reads', () => {
  let origin: TestOrigin;
  const clock = new ManualClock();

  beforeAll(async () => {
    origin = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_EDGE_TOKEN: EDGE_TOKEN }, { clock });
  });
  afterAll(async () => {
    await origin?.close();
  });

  it('holds a bounded number of bytes for it while events pile up, and drops it', async () => {
    const { hostname, port } = new URL(origin.url);
    const socket = net.connect({ host: hostname, port: Number(port) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('error', () => {});
    socket.write(`GET /_edge/feed?after=0&edge=never-reads HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${EDGE_TOKEN}\r\n\r\n`);
    // Never read: the kernel's buffers fill, then the origin's writes stall.
    socket.pause();
    const hub = origin.origin.hub;
    for (let i = 0; i < 100 && !hub.feedStreams().some((s) => s.edge === 'never-reads'); i++) await sleep(20);
    expect(hub.feedStreams().some((s) => s.edge === 'never-reads'), 'the feed was opened').toBe(true);

    let most = 0;
    const sampler = setInterval(() => {
      for (const s of hub.feedStreams()) if (s.edge === 'never-reads') most = Math.max(most, s.buffered);
    }, 5);
    try {
      const meta = origin.origin.stores.meta;
      for (let done = 0; done < EVENTS; done += 2000) {
        await meta.transaction(async (tx) => {
          for (let i = 0; i < 2000; i++) await tx.appendEvent({ type: 'folder.deleted', folder_id: 'none', data: { folder_id: 'none', pad: PAD } }, clock.now());
        });
      }
      // The next poll finds the events and feeds them until the stream is full; the clock stands still meanwhile.
      await clock.advance(DEFAULT_POLL_MS);
      const open = () => hub.feedStreams().some((s) => s.edge === 'never-reads');
      const held = await stalled(() => hub.feedStreams().find((s) => s.edge === 'never-reads')?.buffered ?? 0);
      expect(held, 'the stream filled up').toBeGreaterThan(0);
      expect(most, `bytes held for the stream at most: ${most}`).toBeLessThan(BOUND);
      // Full since the poll: dropped when a lease has passed, not before.
      await clock.advance(LEASE_MS - 1);
      expect(open(), 'full for less than a lease: kept').toBe(true);
      await clock.advance(1);
      expect(open(), 'a stream that stays full for a lease is dropped').toBe(false);
    } finally {
      clearInterval(sampler);
      socket.destroy();
    }
  }, 60_000);
});
