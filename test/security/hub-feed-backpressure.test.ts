/**
 * The origin's feed respects back-pressure: a holder of the edge token who opens the feed and
 * never reads makes the origin hold at most about one batch of events for it, however many
 * are appended, and the stream is dropped once it has stayed full for a lease.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { sleep } from '../kit/index.js';

const LEASE_MS = 1000;
const EDGE_TOKEN = 'hub-feed-token-' + randomBytes(12).toString('hex');

/** Events of about 1 KiB, like file records with long names. */
const EVENTS = 40_000;
const PAD = 'x'.repeat(1000);
/** Far below what 40,000 events take (about 40 MB), well above one batch of 500 (about 0.5 MB). */
const BOUND = 4 * 1024 * 1024;

describe('the feed to an edge that never reads', () => {
  let origin: TestOrigin;

  beforeAll(async () => {
    origin = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_EDGE_TOKEN: EDGE_TOKEN });
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
          for (let i = 0; i < 2000; i++) await tx.appendEvent({ type: 'folder.deleted', folder_id: 'none', data: { folder_id: 'none', pad: PAD } }, Date.now());
        });
      }
      // The stream stays full for a lease, then is dropped.
      let dropped = false;
      for (let i = 0; i < 150 && !dropped; i++) {
        await sleep(50);
        dropped = !hub.feedStreams().some((s) => s.edge === 'never-reads');
      }
      expect(most, `bytes held for the stream at most: ${most}`).toBeLessThan(BOUND);
      expect(dropped, 'a stream that stays full for a lease is dropped').toBe(true);
    } finally {
      clearInterval(sampler);
      socket.destroy();
    }
  }, 60_000);
});
