/**
 * Issue 26, tiers: a parent that has children sends them a fill as it arrives from upstream,
 * instead of after its own whole copy is on disk (src/edge/tier-route.ts, core/hot-bytes.ts
 * `fill`). The parent under test fills from a fake upstream that sends part of the file and
 * then waits; a child (a raw request with the edges' token) must have those bytes meanwhile,
 * never the last byte of a copy that fails its check, and nothing more once the file changed.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { sha256, waitFor } from '../kit/index.js';

let o: TestOrigin;
const started: TestEdge[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  o = await startTestOrigin();
});

afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(started.map((e) => e.close()));
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await o?.close();
}, 60_000);

const token = () => o.origin.credentials.edgeTokens[0]!;

/**
 * An upstream for the parent that answers the version asked for with `first` bytes of `body()`,
 * then waits for `release` to send `rest()` (by default the rest of the same bytes).
 */
async function pausingUpstream(first: number) {
  let body: Buffer = Buffer.alloc(0);
  let rest: (() => Buffer) | null = null;
  const waiting: Array<() => void> = [];
  let asked = 0;
  const server = http.createServer((_req, res) => {
    asked++;
    res.writeHead(200, { 'content-length': body.length, 'x-coffer-sha256': sha256(body) });
    res.write(body.subarray(0, first));
    waiting.push(() => res.end(rest ? rest() : body.subarray(first)));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set(bytes: Buffer, tail?: () => Buffer) {
      body = bytes;
      rest = tail ?? null;
    },
    asked: () => asked,
    release() {
      for (const w of waiting.splice(0)) w();
    },
  };
}

/** A parent edge filling from `upstream` first, already asked by a child (so it taps its fills). */
async function parentWithChildren(upstream: string): Promise<TestEdge> {
  const e = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: upstream }));
  started.push(e);
  const r = await fetch(`${e.edge.url}/_edge/blob/none?sha256=${'0'.repeat(64)}&seq=0`, { headers: { authorization: `Bearer ${token()}` } });
  expect(r.status).toBe(404);
  return e;
}

/** A child's raw request for the file: the status, and the bytes as they come. */
function childAsks(parent: TestEdge, id: string, sha: string) {
  const chunks: Buffer[] = [];
  let status = 0;
  const received = () => chunks.reduce((n, c) => n + c.length, 0);
  const done = new Promise<{ complete: boolean }>((resolve) => {
    const req = http.get(`${parent.edge.url}/_edge/blob/${id}?sha256=${sha}&seq=0`, { headers: { authorization: `Bearer ${token()}` } }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ complete: res.complete }));
      res.on('error', () => resolve({ complete: false }));
      res.on('close', () => resolve({ complete: res.complete }));
    });
    req.on('error', () => resolve({ complete: false }));
  });
  return { status: () => status, received, body: () => Buffer.concat(chunks), done };
}

describe('a parent sends its children a fill as it arrives', () => {
  it('a child has the first bytes while the parent\'s upstream still holds the rest, then the whole file', async () => {
    // A parent sends a fill under way in pieces of 1 MiB: more than one has come before the pause.
    const up = await pausingUpstream(2_500_000);
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(4_000_000);
    up.set(bytes);
    const rec = await uploadBytes(o, bytes, { name: 'streamed.bin' });
    await waitFor(() => up.asked() === 1, { what: 'the parent filling from its upstream' });
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= 2 * 1024 * 1024, { timeoutMs: 10_000, what: 'the first bytes at the child while the upstream waits' });
    expect(child.status()).toBe(200);
    // The parent has no whole copy yet: the bytes came from its fill under way.
    expect(parent.edge.cache.lookup(parent.edge.state.files.get(rec.file_id)!)).toBeNull();
    expect(child.received()).toBeLessThan(bytes.length);
    up.release();
    expect((await child.done).complete).toBe(true);
    expect(sha256(child.body())).toBe(sha256(bytes));
    await waitFor(() => parent.edge.cache.lookup(parent.edge.state.files.get(rec.file_id)!) !== null, { what: 'the parent\'s own copy kept' });
    expect(parent.edge.cache.counts).toMatchObject({ parent: 1, origin: 0, failovers: 0 });
  });

  it('never sends the last byte of a copy that fails its check: the child\'s answer is cut, the parent falls back to the origin', async () => {
    const up = await pausingUpstream(1_500_000);
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(2_000_000);
    // The right version named, the right first part, the rest wrong.
    up.set(bytes, () => randomBytes(bytes.length - 1_500_000));
    const rec = await uploadBytes(o, bytes, { name: 'lying-upstream.bin' });
    await waitFor(() => up.asked() === 1, { what: 'the parent filling from its upstream' });
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= 1024 * 1024, { timeoutMs: 10_000, what: 'the first bytes at the child' });
    up.release();
    const end = await child.done;
    expect(end.complete).toBe(false);
    expect(child.received()).toBeLessThan(bytes.length);
    await waitFor(() => parent.edge.cache.lookup(parent.edge.state.files.get(rec.file_id)!) !== null, { what: 'the parent\'s copy from the origin' });
    expect(parent.edge.cache.counts).toMatchObject({ origin: 1, failovers: 1 });
    // Asked again, the child gets the whole right file.
    const again = childAsks(parent, rec.file_id, sha256(bytes));
    expect((await again.done).complete).toBe(true);
    expect(sha256(again.body())).toBe(sha256(bytes));
  });

  it('stops sending once the file is deleted, and answers nothing after', async () => {
    const up = await pausingUpstream(1_500_000);
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(2_000_000);
    up.set(bytes);
    const rec = await uploadBytes(o, bytes, { name: 'deleted-mid-fill.bin' });
    await waitFor(() => up.asked() === 1, { what: 'the parent filling from its upstream' });
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= 1024 * 1024, { timeoutMs: 10_000, what: 'the first bytes at the child' });
    expect((await o.post('/collections/file/delete', { file_id: rec.file_id })).status).toBe(200);
    up.release();
    const end = await child.done;
    expect(end.complete).toBe(false);
    expect(child.received()).toBeLessThan(bytes.length);
    const after = childAsks(parent, rec.file_id, sha256(bytes));
    await after.done;
    expect(after.status()).toBe(404);
    expect(after.body().includes(bytes.subarray(0, 64))).toBe(false);
  });

  it('an edge no child has asked keeps no fill in memory for children', async () => {
    const e = await startTestEdge(o);
    started.push(e);
    const bytes = randomBytes(2_000_000);
    const rec = await uploadBytes(o, bytes, { name: 'leaf.bin' });
    await waitFor(() => { const f = e.edge.state.files.get(rec.file_id); return f !== undefined && e.edge.cache.lookup(f) !== null; }, { what: 'the leaf edge\'s copy' });
    expect(e.edge.childCopies.bytes).toBe(0);
    expect(e.edge.childCopies.loads).toBe(0);
  });
});
