/**
 * Attacks on the settled lines (src/feed/streams.ts settled(), src/edge/follower.ts
 * afterSettled; docs/edge.md "Following the origin" and "The cache"): an edge starts a new
 * file's fill on the origin's `settled` line, or on its own deadline (SETTLE_WAIT_MS).
 *
 * - A fake origin writes forged and garbled lines to a real FeedFollower (on a ManualClock):
 *   the stream is kept, nothing settles that the edge has not applied, and a fill still runs on
 *   a genuine line or on its deadline; an edge that reconnects between a completion and its
 *   line fills on the new stream's line.
 * - The origin's streams: a completion read before an older one settled does not cost the
 *   older one its line (bursts coalesce, a steady flow of completions still gets lines).
 * - A real origin and edge in this process: a file switched to Private, or deleted, right after
 *   its completion (before its line, or while its prefetch runs) is never served unsigned and
 *   never after the delete; a burst of completions all become cache hits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/ports.js';
import { FeedStreams } from '../../src/feed/streams.js';
import { FeedFollower, SETTLE_WAIT_MS } from '../../src/edge/follower.js';
import { originClient } from '../../src/edge/origin-client.js';
import { EdgeState, type EdgeFile } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';
import { sha256, sleep, waitFor } from '../kit/index.js';
import { FakeResponse } from '../helpers/fake-response.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';

const LEASE_MS = 1000;

const fileData = (id: string): EdgeFile => ({
  file_id: id, name: `${id}.bin`, visibility: 'Public', folder_id: null, size: 1, content_type: 'application/octet-stream', sha256: 'a', completed_at: 0, updated_at: 0,
});
const change = (seq: number, id = `f${seq}`) => `id: ${seq}\nevent: change\ndata: ${JSON.stringify({ seq, type: 'file.ready', data: fileData(id) })}\n\n`;
const settledLine = (data: string) => `event: settled\ndata: ${data}\n\n`;

/** A fake origin: a snapshot at 0, feeds the test writes to, acknowledgements answered with a lease. */
async function fakeOrigin() {
  const clock = new ManualClock();
  const feeds: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/_edge/snapshot') {
      res.end(JSON.stringify({ seq: 0, folders: [], files: [] }));
    } else if (url.pathname === '/_edge/feed') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: ping\ndata: {"head":0}\n\n');
      feeds.push(res);
    } else if (url.pathname === '/_edge/ack') {
      req.resume();
      req.on('end', () => res.end(JSON.stringify({ lease: true, lease_ms: LEASE_MS, head: 0 })));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  /** Fills asked for (as the edge's server asks: afterSettled of the completion's sequence), and when each ran. */
  const filled = new Map<string, number>();
  let follower: FeedFollower | null = null;
  const state = new EdgeState({
    fileReady: (file, completedAt) => {
      if (completedAt === null) return;
      const from = clock.monotonic();
      follower!.afterSettled(completedAt, () => filled.set(file.file_id, clock.monotonic() - from));
    },
    fileGone: () => {},
  });
  const errors: string[] = [];
  const origin = originClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, undefined);
  follower = new FeedFollower({ origin, token: 't', leaseMs: LEASE_MS, state, clock, onError: (what) => errors.push(what) });
  const pass = async (ms: number, step = 5) => {
    for (let t = 0; t < ms; t += step) {
      await clock.advance(step);
      await new Promise((r) => setTimeout(r, 1));
    }
  };
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 2000 && !done(); i++) await pass(1, 1);
    expect(done()).toBe(true);
  };
  let started = false;
  const starting = follower.start().then(() => (started = true));
  await until(() => started);
  await starting;
  const feed = () => feeds.at(-1)!;
  return {
    clock, feeds, state, follower, filled, errors, pass, until,
    /** Writes to the newest feed and lets the follower read it. */
    async write(text: string) {
      feed().write(text);
      await pass(2, 1);
    },
    async close() {
      follower!.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('forged and garbled settled lines, at a real follower', () => {
  it('are ignored without dropping the stream: no string, fraction, negative or missing sequence settles anything, and the fill runs on its deadline', async () => {
    const o = await fakeOrigin();
    try {
      await o.write(change(1));
      expect(o.state.seq).toBe(1);
      for (const data of ['{"seq":"x"}', '{"seq":"99"}', 'null', '"1"', 'not json', '{"seq":-5}', '{"seq":0.5}', '{"seq":null}', '{}', '[1]', '{"seq":{"valueOf":1}}']) {
        await o.write(settledLine(data));
      }
      expect(o.feeds.length, 'the stream is kept: nothing reconnected').toBe(1);
      expect(o.errors).toEqual([]);
      expect(o.follower.serving(), 'the lease is kept').toBe(true);
      expect(o.filled.has('f1'), 'nothing settled it').toBe(false);
      // A string compared as text ("99" < "100") must not settle a later completion either.
      await o.write(change(2));
      expect(o.filled.has('f2')).toBe(false);
      await o.pass(SETTLE_WAIT_MS + 20);
      expect([o.filled.get('f1'), o.filled.get('f2')].every((at) => at !== undefined && at >= SETTLE_WAIT_MS - 10), 'both filled on their deadline').toBe(true);
    } finally {
      await o.close();
    }
  });

  it('a huge sequence settles only what the edge has applied: a completion after it still waits for its own line', async () => {
    const o = await fakeOrigin();
    try {
      await o.write(change(1));
      // Past the integers a double holds exactly: no sequence at all.
      await o.write(settledLine('{"seq":1e300}'));
      await o.write(settledLine(`{"seq":${Number.MAX_SAFE_INTEGER + 2}}`));
      expect(o.filled.has('f1')).toBe(false);
      await o.write(settledLine(`{"seq":${Number.MAX_SAFE_INTEGER}}`));
      expect(o.filled.has('f1'), 'f1 was applied, so a line covering it fills it').toBe(true);
      await o.write(change(2));
      await o.pass(20);
      expect(o.filled.has('f2'), 'not settled in advance by a number from before it').toBe(false);
      await o.write(settledLine('{"seq":2}'));
      expect(o.filled.has('f2'), 'its own line fills it').toBe(true);
      expect(o.feeds.length).toBe(1);
    } finally {
      await o.close();
    }
  });

  it('an edge that reconnects between a completion and its line fills on the new stream\'s line; with none, on its deadline', async () => {
    const o = await fakeOrigin();
    try {
      await o.write(change(1));
      await o.write(change(2));
      o.feeds[0]!.destroy();
      await o.until(() => o.feeds.length === 2);
      expect(o.filled.size, 'nothing filled on the way').toBe(0);
      await o.write(settledLine('{"seq":1}'));
      expect([o.filled.has('f1'), o.filled.has('f2')]).toEqual([true, false]);
      await o.pass(SETTLE_WAIT_MS + 20);
      expect(o.filled.has('f2')).toBe(true);
    } finally {
      await o.close();
    }
  });
});

const ready = (seq: number): StoredEvent => ({ seq, created_at: 0, type: 'file.ready', file_id: `f${seq}`, folder_id: null, data: { ...fileData(`f${seq}`) } });
const settledLines = (res: FakeResponse) => res.written.filter((t) => t.startsWith('event: settled'));

describe('the origin\'s settled lines under a flow of completions', () => {
  it('a completion read before an older one settles does not cost the older one its line', async () => {
    const clock = new ManualClock();
    const events = [ready(1), ready(2)];
    const feed = new FeedStreams({
      eventsAfter: async (seq, limit) => events.filter((e) => e.seq > seq).slice(0, limit),
      head: () => events.at(-1)!.seq, learned: () => {}, drainMs: 500, clock,
    });
    const res = new FakeResponse();
    feed.attach('e', 0, res.res);
    await clock.advance(0);
    // Steady: each completion settles while the next one is already on its way.
    feed.settled(1);
    events.push(ready(3));
    feed.wake();
    await clock.advance(0);
    feed.settled(2);
    feed.settled(3);
    feed.settled(3);
    expect(settledLines(res)).toEqual([1, 2, 3].map((s) => `event: settled\ndata: {"seq":${s}}\n\n`));
  });
});

describe('completions that never settle here', () => {
  it('(made through another origin) are remembered only up to a bound, and a later local one still gets its line', async () => {
    const clock = new ManualClock();
    const events = Array.from({ length: 6000 }, (_, i) => ready(i + 1));
    const feed = new FeedStreams({
      eventsAfter: async (seq, limit) => events.filter((e) => e.seq > seq).slice(0, limit),
      head: () => events.at(-1)!.seq, learned: () => {}, drainMs: 500, clock,
    });
    const res = new FakeResponse();
    feed.attach('e', 0, res.res);
    for (let i = 0; i < 20; i++) await clock.advance(0);
    expect(feed.list()[0]!.sent).toBe(6000);
    expect((feed as unknown as { unannounced: Set<number> }).unannounced.size).toBeLessThanOrEqual(4096);
    feed.settled(6000);
    expect(settledLines(res)).toEqual(['event: settled\ndata: {"seq":6000}\n\n']);
    expect((feed as unknown as { unannounced: Set<number> }).unannounced.size).toBe(0);
  });
});

describe('a real origin and edge, the line racing a switch or a delete', () => {
  let o: TestOrigin;
  let e: TestEdge;
  beforeAll(async () => {
    o = await startTestOrigin();
    e = await startTestEdge(o);
  }, 60_000);
  afterAll(async () => {
    await e?.close();
    await o?.close();
  }, 60_000);

  const get = async (path: string) => {
    const r = await fetch(e.edge.url + path);
    return { status: r.status, xcache: r.headers.get('x-cache'), body: Buffer.from(await r.arrayBuffer()) };
  };
  /** Asks the edge for `path` until its prefetch deadline has surely passed, and returns every status seen. */
  const watch = async (path: string) => {
    const seen = new Set<number>();
    const until = Date.now() + SETTLE_WAIT_MS + 800;
    while (Date.now() < until) {
      seen.add((await get(path)).status);
      await sleep(40);
    }
    return [...seen].sort();
  };

  it('a file switched to Private right after its completion is never served unsigned, before or after its fill', async () => {
    const rec = await uploadBytes(o, randomBytes(50_000), { name: 'turned.bin' });
    const switched = await o.post('/collections/file/update', { file_id: rec.file_id, visibility: 'Private' });
    expect(switched.status).toBe(200);
    expect((await watch(`/files/${rec.file_id}`)).includes(200)).toBe(false);
  });

  it('a file deleted right after its completion is never served, and its bytes do not stay in the cache', async () => {
    const rec = await uploadBytes(o, randomBytes(50_000), { name: 'gone.bin' });
    // The completion waited for the edge's acknowledgement: the edge knows the file, its fill still waits for the line.
    const known = e.edge.state.files.get(rec.file_id);
    expect(known).toBeDefined();
    expect((await o.post('/collections/file/delete', { file_id: rec.file_id })).status).toBe(200);
    expect(await watch(`/files/${rec.file_id}`)).toEqual([404]);
    expect(e.edge.state.files.has(rec.file_id)).toBe(false);
    expect(e.edge.cache.fetching(rec.file_id)).toBe(false);
    expect(e.edge.cache.lookup(known!), 'no bytes of it kept').toBeNull();
  });

  it('a burst of completions: every file becomes a cache hit with its own bytes', async () => {
    const made = await Promise.all(Array.from({ length: 24 }, async (_, i) => {
      const bytes = randomBytes(20_000 + i);
      const rec = await uploadBytes(o, bytes, { name: `burst-${i}.bin` });
      return { id: rec.file_id as string, sha: sha256(bytes) };
    }));
    await waitFor(() => made.every((m) => {
      const f = e.edge.state.files.get(m.id);
      return f !== undefined && e.edge.cache.lookup(f) !== null;
    }), { timeoutMs: 30_000, what: 'every file of the burst in the edge cache' });
    for (const m of made) {
      const r = await get(`/files/${m.id}`);
      expect([r.status, r.xcache, sha256(r.body)]).toEqual([200, 'HIT', m.sha]);
    }
  });
});
