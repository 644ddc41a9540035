/**
 * `POST /_edge/acks` on a real origin (docs/edge.md, "Following the origin"): only with the
 * edge token, only as JSON lines, only where the edge's feed is; each renewal answered on that
 * feed with its number, a plain acknowledgement not at all; a malformed line ends the stream.
 * And a real edge acknowledges this way, never by request, while changes are answered.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { waitFor } from '../kit/index.js';
import { openAcks, openFeed } from '../helpers/edge-streams.js';

let o: TestOrigin;

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '2000', COFFER_LOG_LEVEL: 'debug' });
});
afterAll(async () => {
  await o?.close();
});

describe('POST /_edge/acks', () => {
  test('is refused without the edge token, as another type, or where the edge has no feed, and the connection closed', async () => {
    const feed = await openFeed(o, 'typed');
    try {
      for (const [status, acks] of [
        [401, await openAcks(o, 'nofeed', { authorization: 'Bearer wrong' })],
        [409, await openAcks(o, 'nofeed')],
        [415, await openAcks(o, 'typed', { 'content-type': 'text/plain' })],
        [400, await openAcks(o, 'bad id!')],
      ] as const) {
        expect(acks.status).toBe(status);
        // The body never ends: a connection kept for it would hold the origin's shutdown.
        await waitFor(() => acks.closed(), { timeoutMs: 5000 });
      }
    } finally {
      feed.close();
    }
  });

  test('answers each renewal on the feed with its number and a lease, and nothing else', async () => {
    const feed = await openFeed(o, 'streamer');
    const acks = await openAcks(o, 'streamer');
    try {
      expect(acks.status).toBe(200);
      acks.write('{"n":7,"seq":0}\n');
      acks.write('{"n":8,"se');
      acks.write('q":0,"renew":true}\n');
      await waitFor(() => feed.text().includes('event: lease'), { timeoutMs: 5000 });
      const lines = feed.text().split('\n\n').filter((b) => b.startsWith('event: lease'));
      expect(lines).toHaveLength(1);
      const answer = JSON.parse(lines[0]!.split('data: ')[1]!);
      expect(answer).toMatchObject({ n: 8, lease: true, head: expect.any(Number) });
      expect(answer.lease_ms).toBeGreaterThan(0);
      expect(answer.lease_ms).toBeLessThanOrEqual(2000);
      expect(acks.body(), 'nothing is written on the acknowledgement stream itself').toBe('');
    } finally {
      acks.end();
      feed.close();
    }
  });

  test('drops the stream at a malformed line, answering none after it', async () => {
    const feed = await openFeed(o, 'garbler');
    const acks = await openAcks(o, 'garbler');
    try {
      acks.write('{"n":1,"seq":"zero","renew":true}\n{"n":2,"seq":0,"renew":true}\n');
      await waitFor(() => acks.closed(), { timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 100));
      expect(feed.text()).not.toContain('event: lease');
    } finally {
      feed.close();
    }
  });
});

describe('a real edge', () => {
  let edge: TestEdge;
  beforeAll(async () => {
    edge = await startTestEdge(o, () => ({ COFFER_EDGE_LEASE_MS: '2000' }));
  });
  afterAll(async () => {
    await edge?.close();
  });

  test('acknowledges on its stream, never by request, and a delete is answered at once', async () => {
    const file = await uploadBytes(o, Buffer.from('streamed acks'), { name: 'a.txt' });
    await waitFor(async () => (await fetch(`${edge.edge.url}/files/${file.file_id}`)).status === 200, { timeoutMs: 10_000 });
    const t0 = performance.now();
    const r = await o.post('/collections/file/delete', { file_id: file.file_id });
    expect(r.status).toBe(200);
    expect(performance.now() - t0, 'not held for the lease').toBeLessThan(1000);
    expect((await fetch(`${edge.edge.url}/files/${file.file_id}`)).status).toBe(404);
    const urls = o.logs.map((l) => JSON.parse(l) as { msg?: string; url?: string }).filter((l) => l.msg === 'request').map((l) => l.url ?? '');
    expect(urls.filter((u) => u === '/_edge/ack'), 'no acknowledgement by request').toEqual([]);
  });
});
