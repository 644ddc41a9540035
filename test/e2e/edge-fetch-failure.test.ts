/**
 * An edge whose fetch of a file from the origin fails (the connection reset mid-way). A
 * request that joined a fetch it did not start, such as the prefetch a completion began,
 * gets a fetch of its own instead of that fetch's failure; a request whose own fetch fails
 * is answered 502, and the next one fetches afresh. The edge reaches the origin through a
 * proxy that holds the chosen fetch until the test resets it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeCache } from '../../src/edge/cache.js';
import { expectError } from '../helpers/api.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { rawRequest } from '../helpers/raw-http.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { sha256 } from '../kit/index.js';

const BLOB_FETCH = /^GET \/_edge\/blob\//;

let o: TestOrigin;
let proxy: TcpProxy;
let running: TestEdge;

beforeAll(async () => {
  o = await startTestOrigin();
  const { hostname, port } = new URL(o.url);
  proxy = await TcpProxy.start(hostname, Number(port));
  running = await startTestEdge(o, () => ({}), proxy.url);
});

afterAll(async () => {
  await running?.close();
  await proxy?.close();
  await o?.close();
});

/** Resolves when the cache has been asked for bytes `n` times in all (the prefetch counts). */
function countEnsures(cache: EdgeCache): { reached(n: number): Promise<void>; restore(): void } {
  const original = cache.ensure;
  let calls = 0;
  const waiters: Array<{ n: number; resolve(): void }> = [];
  cache.ensure = function (this: EdgeCache, ...args: Parameters<EdgeCache['ensure']>) {
    calls++;
    for (const w of waiters.filter((x) => x.n <= calls)) w.resolve();
    return original.apply(this, args);
  };
  return {
    reached: (n) => (calls >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    restore: () => { cache.ensure = original; },
  };
}

async function uploadPublic(): Promise<{ id: string; path: string; bytes: Buffer }> {
  const bytes = randomBytes(300_000);
  const rec = await uploadBytes(o, bytes, { name: 'refetch.bin' });
  return { id: rec.file_id, path: new URL(rec.delivery_url).pathname, bytes };
}

describe('an edge whose fetch from the origin fails', () => {
  it('answers a request that joined a failed prefetch with a fetch of its own', async () => {
    const held = proxy.intercept(BLOB_FETCH);
    const spy = countEnsures(running.edge.cache);
    try {
      const file = await uploadPublic();
      // The completion's prefetch has reached the proxy and is held there.
      await held.held;
      await spy.reached(1);
      const answer = rawRequest(running.edge.url, file.path);
      // The request has joined the prefetch; then the prefetch's connection is reset.
      await spy.reached(2);
      held.reset();
      const res = await answer;
      expect(res.status, res.body.toString().slice(0, 200)).toBe(200);
      expect(sha256(res.body)).toBe(sha256(file.bytes));
      // It was asked for while the completion's fetch was under way.
      expect(res.headers['x-cache']).toBe('HIT');
      const again = await rawRequest(running.edge.url, file.path);
      expect([again.status, again.headers['x-cache']]).toEqual([200, 'HIT']);
    } finally {
      spy.restore();
    }
  });

  it('answers 502 when its own fetch fails, and fetches afresh for the next request', async () => {
    const prefetch = proxy.intercept(BLOB_FETCH);
    const file = await uploadPublic();
    await prefetch.held;
    prefetch.reset();
    // The prefetch has failed with nobody waiting on it; the next request starts its own fetch.
    await expect.poll(() => running.edge.cache.fetching(file.id)).toBe(false);
    const own = proxy.intercept(BLOB_FETCH);
    const answer = rawRequest(running.edge.url, file.path);
    await own.held;
    own.reset();
    expectError(await answer, 502, 'bad_gateway');
    const next = await rawRequest(running.edge.url, file.path);
    expect([next.status, next.headers['x-cache']]).toEqual([200, 'MISS']);
    expect(sha256(next.body)).toBe(sha256(file.bytes));
  });
});
