/**
 * Issue 26, tiers: edges fill from parent edges (COFFER_EDGE_PARENTS) before the origin. In
 * this process: one origin, reached by every edge through a RequestTap that counts its blob
 * fetches, and edges in trees above it. Fake parents (plain HTTP servers) stand for stale,
 * lying, dead and silent ones.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { RequestTap } from '../helpers/request-tap.js';
import { sha256, waitFor } from '../kit/index.js';
import type { EdgeFile } from '../../src/edge/state.js';

let o: TestOrigin;
let tap: RequestTap;
const started: TestEdge[] = [];
const taps: RequestTap[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  o = await startTestOrigin();
  tap = await RequestTap.start(o.url);
});

afterAll(async () => {
  // Fake parents and taps first: an edge's close waits for its answers, and an answer still
  // waiting on a fill from a silent fake parent would hold it.
  for (const s of servers) s.closeAllConnections();
  await Promise.all([...started.map((e) => e.close()), ...taps.map((t) => t.close())]);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await tap?.close();
  await o?.close();
  // An edge lets answers under way finish for up to 10 s when it stops (server.ts, CLOSE_GRACE_MS).
}, 120_000);

/** A tap of its own: counts the blob fetches of the edges a test starts through it, and of no others. */
async function newTap(): Promise<RequestTap> {
  const t = await RequestTap.start(o.url);
  taps.push(t);
  return t;
}

async function edge(parents: string[] = [], env: Record<string, string> = {}, through = tap): Promise<TestEdge> {
  const e = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: parents.join(','), COFFER_EDGE_NAME: 'test-region', ...env }), through.url);
  started.push(e);
  return e;
}

async function upload(size = 200_000, fields: Record<string, unknown> = {}): Promise<{ id: string; path: string; bytes: Buffer; sha: string }> {
  const bytes = randomBytes(size);
  const rec = await uploadBytes(o, bytes, { name: 'tiered.bin', ...fields });
  return { id: rec.file_id, path: `/files/${rec.file_id}`, bytes, sha: sha256(bytes) };
}

const fileAt = (e: TestEdge, id: string): EdgeFile | undefined => e.edge.state.files.get(id);
const cached = (e: TestEdge, id: string) => {
  const f = fileAt(e, id);
  return f !== undefined && e.edge.cache.lookup(f) !== null;
};
const waitCached = (edges: TestEdge[], id: string, timeoutMs = 20_000) =>
  waitFor(() => edges.every((e) => cached(e, id)), { timeoutMs, what: `file ${id} cached at every edge` });

async function get(e: TestEdge, path: string, headers: Record<string, string> = {}) {
  const r = await fetch(e.edge.url + path, { headers });
  return { status: r.status, xcache: r.headers.get('x-cache'), body: Buffer.from(await r.arrayBuffer()) };
}

/** A plain HTTP server standing in for a parent edge. */
async function fakeParent(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('fill through a parent', () => {
  it('prewarms a child from its parent: the origin sends the bytes once, the child answers a HIT', async () => {
    const t = await newTap();
    const parent = await edge([], {}, t);
    const child = await edge([parent.edge.url], {}, t);
    const f = await upload();
    await waitCached([parent, child], f.id);
    expect(t.blobFetches(f.id)).toBe(1);
    expect(child.edge.cache.counts.parent).toBeGreaterThanOrEqual(1);
    expect(parent.edge.cache.counts.servedToChildren).toBeGreaterThanOrEqual(1);
    const r = await get(child, f.path);
    expect(r.status).toBe(200);
    expect(r.xcache).toBe('HIT');
    expect(sha256(r.body)).toBe(f.sha);
  });

  it('fills a miss (a file uploaded before the child started) from the parent, not the origin', async () => {
    const t = await newTap();
    const parent = await edge([], {}, t);
    const f = await upload();
    await waitCached([parent], f.id);
    const before = t.blobFetches(f.id);
    const child = await edge([parent.edge.url], {}, t);
    expect(cached(child, f.id)).toBe(false);
    const r = await get(child, f.path);
    expect(r.status).toBe(200);
    expect(r.xcache).toBe('MISS');
    expect(sha256(r.body)).toBe(f.sha);
    expect(t.blobFetches(f.id)).toBe(before);
    expect(child.edge.cache.counts).toMatchObject({ parent: 1, origin: 0, failovers: 0 });
  });

  it('coalesces: six children asking one parent for one new file make one fetch from the origin', async () => {
    const t = await newTap();
    const parent = await edge([], {}, t);
    const children = await Promise.all(Array.from({ length: 6 }, () => edge([parent.edge.url], {}, t)));
    const servedBefore = parent.edge.cache.counts.servedToChildren;
    const loadsBefore = parent.edge.childCopies.loads;
    const f = await upload(3_000_000);
    await waitCached([parent, ...children], f.id, 30_000);
    expect(t.blobFetches(f.id)).toBe(1);
    expect(parent.edge.cache.counts.servedToChildren - servedBefore).toBe(6);
    // Over the cache's 1 MiB in memory: read from the parent's disk once, for all six.
    expect(parent.edge.childCopies.loads - loadsBefore).toBe(1);
    for (const c of children) expect(sha256((await get(c, f.path)).body)).toBe(f.sha);
    for (const c of children) expect(c.edge.cache.counts.failovers).toBe(0);
  });

  it('coalesces six children that all ask while the parent\'s own fill is held at the origin', async () => {
    const t = await newTap();
    const parentTap = await newTap();
    const parent = await edge([], {}, parentTap);
    const toParent = await RequestTap.start(parent.edge.url);
    taps.push(toParent);
    const children = await Promise.all(Array.from({ length: 6 }, () => edge([toParent.url], {}, t)));
    const release = parentTap.holdRequests(/^GET \/_edge\/blob\//);
    const f = await upload(1_000_000);
    try {
      await waitFor(() => toParent.blobFetches(f.id) === 6 && parentTap.blobFetches(f.id) === 1, { timeoutMs: 10_000, what: 'six children asking the parent' });
    } finally {
      release();
    }
    await waitCached([parent, ...children], f.id, 30_000);
    expect(parent.edge.cache.counts).toMatchObject({ origin: 1, servedToChildren: 6 });
    for (const c of children) expect(c.edge.cache.counts).toMatchObject({ parent: 1, origin: 0, failovers: 0 });
    expect(parentTap.blobFetches(f.id)).toBe(1);
    expect(t.blobFetches(f.id)).toBe(0);
  });

  it('serves across three tiers (grandchild → child → parent → origin) with one origin fetch', async () => {
    const t = await newTap();
    const parent = await edge([], {}, t);
    const child = await edge([parent.edge.url], {}, t);
    const grandchild = await edge([child.edge.url], {}, t);
    const f = await upload();
    await waitCached([parent, child, grandchild], f.id);
    expect(t.blobFetches(f.id)).toBe(1);
    expect(sha256((await get(grandchild, f.path)).body)).toBe(f.sha);
  });
});

describe('a parent that is wrong, dead or silent', () => {
  it('refuses a stale or lying parent and fills from the origin', async () => {
    const old = randomBytes(200_000);
    let current: { sha: string; size: number } = { sha: '', size: 0 };
    // Old bytes under the old version's header; a wrong header; the right header over wrong bytes.
    const staleUrl = await fakeParent((_req, res) => {
      res.writeHead(200, { 'content-length': old.length, 'x-coffer-sha256': sha256(old) });
      res.end(old);
    });
    const wrongHeaderUrl = await fakeParent((_req, res) => {
      res.writeHead(200, { 'content-length': current.size, 'x-coffer-sha256': '0'.repeat(64) });
      res.end(randomBytes(current.size));
    });
    const wrongBytesUrl = await fakeParent((_req, res) => {
      res.writeHead(200, { 'content-length': current.size, 'x-coffer-sha256': current.sha });
      res.end(randomBytes(current.size));
    });
    const children = [await edge([staleUrl]), await edge([wrongHeaderUrl]), await edge([wrongBytesUrl])];
    const bytes = randomBytes(200_000);
    current = { sha: sha256(bytes), size: bytes.length };
    const rec = await uploadBytes(o, bytes, { name: 'v2.bin' });
    await waitCached(children, rec.file_id);
    for (const c of children) {
      expect(c.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 1 });
      const r = await get(c, `/files/${rec.file_id}`);
      expect(sha256(r.body)).toBe(current.sha);
    }
  });

  it('falls back from a dead parent (connection refused) and from one that never answers', async () => {
    const dead = await fakeParent(() => {});
    servers.at(-1)!.close();
    await new Promise((r) => setTimeout(r, 50));
    const silent = await fakeParent(() => { /* headers never come */ });
    const child = await edge([dead, silent]);
    const f = await upload();
    await waitCached([child], f.id, 30_000);
    expect(child.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 2 });
    expect(sha256((await get(child, f.path)).body)).toBe(f.sha);
  });

  it('waits on a parent that sends 102 Processing each second, past the 3 s a silent one gets, and takes its bytes', async () => {
    let current: Buffer = Buffer.alloc(0);
    let beats = 0;
    const slow = await fakeParent((_req, res) => {
      const timer = setInterval(() => {
        if (++beats <= 4) return res.writeProcessing();
        clearInterval(timer);
        res.writeHead(200, { 'content-length': current.length, 'x-coffer-sha256': sha256(current) });
        res.end(current);
      }, 1000);
    });
    const child = await edge([slow]);
    current = randomBytes(100_000);
    const rec = await uploadBytes(o, current, { name: 'slow-parent.bin' });
    await waitCached([child], rec.file_id, 20_000);
    expect(beats).toBeGreaterThanOrEqual(5);
    expect(child.edge.cache.counts).toMatchObject({ parent: 1, origin: 0, failovers: 0 });
  });

  it('takes a parent 404 as "ask the next source": the origin is the authority', async () => {
    const empty = await fakeParent((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"not_found","message":"","details":{}}}');
    });
    const child = await edge([empty]);
    const f = await upload();
    await waitCached([child], f.id);
    expect(child.edge.cache.counts).toMatchObject({ origin: 1, failovers: 1 });
  });
});

describe('the rules across tiers', () => {
  let tiers: TestEdge[];
  beforeAll(async () => {
    const parent = await edge();
    const child = await edge([parent.edge.url]);
    tiers = [parent, child, await edge([child.edge.url])];
  });

  it('a delete is answered 404 at every tier once the call returns', async () => {
    const f = await upload();
    await waitCached(tiers, f.id);
    expect((await o.post('/collections/file/delete', { file_id: f.id })).status).toBe(200);
    for (const e of tiers) expect((await get(e, f.path)).status).toBe(404);
  });

  it('a switch to Private is answered 403 (unsigned) at every tier once the call returns', async () => {
    const f = await upload();
    await waitCached(tiers, f.id);
    expect((await o.post('/collections/file/update', { file_id: f.id, visibility: 'Private' })).status).toBe(200);
    for (const e of tiers) expect((await get(e, f.path)).status).toBe(403);
  });

  it('a link revocation is answered 403 at every tier once the call returns', async () => {
    const f = await upload(50_000, { visibility: 'Private' });
    await waitCached(tiers, f.id);
    const link = await o.post('/collections/create-link', { file_id: f.id, file_type: 'other' });
    const url = new URL(link.body.presigned_url);
    const signed = url.pathname + url.search;
    for (const e of tiers) expect((await get(e, signed)).status).toBe(200);
    // Links issued in the same second as the revocation are revoked too.
    expect((await o.post('/collections/file/revoke-links', { file_id: f.id })).status).toBe(200);
    for (const e of tiers) expect((await get(e, signed)).status).toBe(403);
  });
});

describe('the edge-to-edge route', () => {
  let parent: TestEdge;
  let f: { id: string; sha: string; bytes: Buffer };
  const token = () => o.origin.credentials.edgeTokens[0]!;
  const ask = (headers: Record<string, string>, sha = f.sha, seq = 0) =>
    fetch(`${parent.edge.url}/_edge/blob/${f.id}?sha256=${sha}&seq=${seq}`, { headers });

  beforeAll(async () => {
    parent = await edge();
    f = await upload();
    await waitCached([parent], f.id);
  });

  it('answers the bytes with the version and the sequence to the edges\' token', async () => {
    const r = await ask({ authorization: `Bearer ${token()}` });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-coffer-sha256')).toBe(f.sha);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('content-security-policy')).toMatch(/^sandbox/);
    expect(Number(r.headers.get('x-coffer-seq'))).toBeGreaterThan(0);
    expect(sha256(Buffer.from(await r.arrayBuffer()))).toBe(f.sha);
  });

  it('refuses without the token, or with a wrong one, with 401 and never a byte of the file', async () => {
    const tries: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${token()}x` }, { authorization: token() }];
    for (const headers of tries) {
      const r = await ask(headers);
      expect(r.status).toBe(401);
      const body = await r.json() as { error: { code: string } };
      expect(body.error.code).toBe('unauthorized');
    }
  });

  it('refuses a loop (Via names it) and a chain deeper than 3, at once', async () => {
    const auth = { authorization: `Bearer ${token()}` };
    const own = await ask({ ...auth, 'x-coffer-via': `a,${parent.edge.follower.edgeId}` });
    expect(own.status).toBe(508);
    expect(((await own.json()) as any).error.code).toBe('edge_loop');
    const deep = await ask({ ...auth, 'x-coffer-via': 'a,b,c,d' });
    expect(deep.status).toBe(508);
    expect((await ask({ ...auth, 'x-coffer-via': 'a,b,c' })).status).toBe(200);
    expect((await ask({ ...auth, 'x-coffer-via': 'a b' })).status).toBe(400);
  });

  it('refuses another version (409-like, reason "version"), an unknown file (404), and a sequence it does not reach in 2 s', async () => {
    const auth = { authorization: `Bearer ${token()}` };
    const other = await ask(auth, '1'.repeat(64));
    expect(other.status).toBe(409);
    expect(((await other.json()) as any).error.code).toBe('edge_version_mismatch');
    const missing = await fetch(`${parent.edge.url}/_edge/blob/nosuchfile?sha256=${f.sha}&seq=0`, { headers: auth });
    expect(missing.status).toBe(404);
    const ahead = await ask(auth, f.sha, parent.edge.state.seq + 1000);
    expect(ahead.status).toBe(503);
    expect(((await ahead.json()) as any).error.details.reason).toBe('behind');
  });

  it('reports the edge\'s status with every usage report', async () => {
    await parent.edge.reportUsage();
    const reports = tap.usageReports().filter((r) => r.edge?.id === parent.edge.follower.edgeId);
    expect(reports.length).toBeGreaterThanOrEqual(1);
    const last = reports.at(-1)!.edge;
    expect(Object.keys(last).sort()).toEqual(['bytes_sent', 'cache', 'fills', 'hits', 'id', 'misses', 'name', 'parents', 'requests', 'seq', 'started_at']);
    expect(last).toMatchObject({ name: 'test-region', parents: [], seq: parent.edge.state.seq });
    expect(last.fills).toMatchObject({ origin: 1, parent: 0, failovers: 0 });
    expect(last.fills.served_to_children).toBeGreaterThanOrEqual(1);
    expect(last.cache.used_bytes).toBeGreaterThan(0);
    expect(last.requests).toBeGreaterThanOrEqual(1);
  });
});

describe('parents in a loop', () => {
  it('A parent of B and B parent of A: no hang, both serve the file (from the origin)', async () => {
    const free = async () => {
      const s = http.createServer();
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      const port = (s.address() as AddressInfo).port;
      await new Promise((r) => s.close(r));
      return port;
    };
    const [pa, pb] = [await free(), await free()];
    const t = await newTap();
    const a = await edge([`http://127.0.0.1:${pb}`], { COFFER_EDGE_PORT: String(pa) }, t);
    const b = await edge([`http://127.0.0.1:${pa}`], { COFFER_EDGE_PORT: String(pb) }, t);
    const f = await upload();
    await waitCached([a, b], f.id, 30_000);
    for (const e of [a, b]) expect(sha256((await get(e, f.path)).body)).toBe(f.sha);
    // Each fill found its parent in a loop (refused, or silent for 3 s) and went to the origin.
    expect(t.blobFetches(f.id)).toBeGreaterThanOrEqual(1);
    expect(t.blobFetches(f.id)).toBeLessThanOrEqual(2);
  });
});

describe('a parent\'s copy held in memory for its children', () => {
  it('answers nothing for a file deleted since it held the bytes for its children in memory', async () => {
    const auth = { authorization: `Bearer ${o.origin.credentials.edgeTokens[0]!}` };
    const holder = await edge();
    const big = await upload(2_000_000);
    await waitCached([holder], big.id);
    const askBig = () => fetch(`${holder.edge.url}/_edge/blob/${big.id}?sha256=${big.sha}&seq=0`, { headers: auth });
    const first = await askBig();
    expect(sha256(Buffer.from(await first.arrayBuffer()))).toBe(big.sha);
    expect(holder.edge.childCopies.bytes).toBeGreaterThanOrEqual(2_000_000);
    expect((await o.post('/collections/file/delete', { file_id: big.id })).status).toBe(200);
    const after = await askBig();
    expect(after.status).toBe(404);
    expect(Buffer.from(await after.arrayBuffer()).includes(big.bytes.subarray(0, 64))).toBe(false);
  });
});
