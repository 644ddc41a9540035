/**
 * Issue 26, cut-through attacked from outside: a parent that has children sends them a fill as
 * it arrives (src/edge/tier-route.ts, core/hot-bytes.ts `fill`, core/held-stream.ts). Here its
 * own upstream (a fake parent of the parent) closes or stalls mid-body, many children abort or
 * stall mid-stream, the file is deleted, the parent loses its lease, files of every edge size,
 * and more fills at once than the parent's 32 MiB hold. A child must never get the whole body of
 * a copy that failed, nor bytes of a version no longer current; the parent must not crash, hang
 * or leak what it holds for children.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { RequestTap } from '../helpers/request-tap.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { askParent, fakeUpstream as fakeUpstreamOn, slowBlobProxy as slowProxy, type Mode } from '../helpers/tier-stream-rig.js';
import { sha256, waitFor } from '../kit/index.js';
import { PARENT_HOT_FILES } from '../../src/edge/tier-route.js';

let o: TestOrigin;
const started: TestEdge[] = [];
const servers: http.Server[] = [];
const closers: Array<() => Promise<void> | void> = [];
const MiB = 1 << 20;

beforeAll(async () => {
  o = await startTestOrigin();
});

afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  for (const c of closers) await c();
  await Promise.all(started.map((e) => e.close()));
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await o?.close();
}, 120_000);

const token = () => o.origin.credentials.edgeTokens[0]!;
const fakeUpstream = () => fakeUpstreamOn(servers);
type Upstream = Awaited<ReturnType<typeof fakeUpstream>>;
const slowBlobProxy = (target: string, perTick: number, pause?: { after: number; ms: number }) =>
  slowProxy(target, perTick, (close) => closers.push(close), pause);
/** A child's raw request to `parent` with the edges' token (tier-stream-rig.ts `askParent`). */
const childAsks = (parent: TestEdge, id: string, sha: string, method = 'GET') => askParent(parent.edge.url, token(), id, sha, method);

/** A parent edge filling from `upstream` first (then the origin, through `originUrl`), already asked by a child. */
async function parentWithChildren(upstream: string, originUrl = o.url, env: Record<string, string> = {}): Promise<TestEdge> {
  const e = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: upstream, ...env }), originUrl);
  started.push(e);
  const r = await fetch(`${e.edge.url}/_edge/blob/none?sha256=${'0'.repeat(64)}&seq=0`, { headers: { authorization: `Bearer ${token()}` } });
  expect(r.status).toBe(404);
  return e;
}

/** Puts `bytes` at the fake upstream (`first` of them at once, then as `mode` says), uploads them, and waits for the parent's fill from it. */
async function uploadFilling(up: Upstream, bytes: Buffer, first: number, name: string, mode?: Mode, tail?: Buffer) {
  up.add(bytes, first, mode, tail);
  const rec = await uploadBytes(o, bytes, { name });
  await waitFor(() => up.asked(bytes) === 1, { timeoutMs: 10_000, what: 'the parent filling from its upstream' });
  return rec;
}

const fileOf = (e: TestEdge, id: string) => e.edge.state.files.get(id);
const cached = (e: TestEdge, id: string) => {
  const f = fileOf(e, id);
  return f !== undefined && e.edge.cache.lookup(f) !== null;
};

/** Nothing is counted for children once every entry is dropped: no answer kept a buffer it gave up. */
async function expectNoLeak(parent: TestEdge): Promise<void> {
  parent.edge.childCopies.clear();
  await waitFor(() => parent.edge.childCopies.bytes === 0, { timeoutMs: 10_000, what: `childCopies to hold nothing (has ${parent.edge.childCopies.bytes})` });
}

async function expectWhole(parent: TestEdge, id: string, bytes: Buffer): Promise<void> {
  const again = childAsks(parent, id, sha256(bytes));
  expect((await again.done).complete).toBe(true);
  expect(again.status()).toBe(200);
  expect(sha256(again.body())).toBe(sha256(bytes));
}

/** The parent's own copy is kept, from where `counts` says; a child asking now gets it whole; nothing stays counted. */
async function expectSettled(parent: TestEdge, id: string, counts: Record<string, number>, bytes?: Buffer): Promise<void> {
  await waitFor(() => cached(parent, id), { timeoutMs: 20_000, what: 'the parent\'s own copy' });
  expect(parent.edge.cache.counts).toMatchObject(counts);
  if (bytes) await expectWhole(parent, id, bytes);
  await expectNoLeak(parent);
}

describe('an upstream that fails mid-body', () => {
  for (const mode of ['close', 'stall'] as const) {
    it(`${mode}: children mid-stream get an incomplete answer, the parent falls back to the origin, later children get the whole file`, async () => {
      const up = await fakeUpstream();
      const originTap = await RequestTap.start(o.url);
      closers.push(() => originTap.close());
      const parent = await parentWithChildren(up.url, originTap.url);
      const bytes = randomBytes(4_000_000);
      const rec = await uploadFilling(up, bytes, 2_500_000, `upstream-${mode}.bin`, mode);
      const children = Array.from({ length: 3 }, () => childAsks(parent, rec.file_id, sha256(bytes)));
      const ends = await Promise.all(children.map((c) => c.done));
      for (const [i, c] of children.entries()) {
        // Either cut mid-stream, or (asked once the tapped fill failed) the origin's whole copy.
        if (ends[i]!.complete) expect(sha256(c.body())).toBe(sha256(bytes));
        else expect(c.received()).toBeLessThan(bytes.length);
        expect(c.body().equals(bytes.subarray(0, c.received()))).toBe(true);
      }
      await expectSettled(parent, rec.file_id, { parent: 0, origin: 1, failovers: 1 }, bytes);
      expect(originTap.blobFetches(rec.file_id)).toBe(1);
    }, 60_000);
  }
});

describe('many children on one streaming fill', () => {
  it('twenty children, five aborting and five stalling mid-way: the rest get the whole file, the hold stays bounded and is freed', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(8 * MiB);
    const rec = await uploadFilling(up, bytes, 3 * MiB, 'many-children.bin');
    const children = Array.from({ length: 20 }, () => childAsks(parent, rec.file_id, sha256(bytes)));
    await waitFor(() => children.every((c) => c.received() >= MiB), { timeoutMs: 20_000, what: 'the first piece at every child' });
    const aborting = children.slice(0, 5);
    const stalling = children.slice(5, 10);
    const rest = children.slice(10);
    for (const c of aborting) c.abort();
    for (const c of stalling) c.stall();
    expect(parent.edge.childCopies.bytes).toBeLessThanOrEqual(PARENT_HOT_FILES.capacity);
    up.release();
    for (const c of rest) {
      expect((await c.done).complete).toBe(true);
      expect(sha256(c.body())).toBe(sha256(bytes));
    }
    for (const c of aborting) {
      await c.done;
      expect(c.received()).toBeLessThan(bytes.length);
    }
    expect(parent.edge.childCopies.bytes).toBeLessThanOrEqual(PARENT_HOT_FILES.capacity);
    // The parent still answers, and its own copy is whole.
    await waitFor(() => cached(parent, rec.file_id), { timeoutMs: 20_000, what: 'the parent\'s own copy' });
    await expectWhole(parent, rec.file_id, bytes);
    // Stalled children still hold the buffer: dropped, it is counted until they go.
    parent.edge.childCopies.clear();
    for (const c of stalling) c.abort();
    await Promise.all(stalling.map((c) => c.done));
    await expectNoLeak(parent);
  }, 90_000);
});

describe('the file changes or the parent loses its lease while children stream', () => {
  it('a delete cuts every child mid-stream; a child asking for the old version after gets no bytes', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(4 * MiB);
    const rec = await uploadFilling(up, bytes, 2 * MiB + 1000, 'deleted.bin');
    const children = Array.from({ length: 4 }, () => childAsks(parent, rec.file_id, sha256(bytes)));
    await waitFor(() => children.every((c) => c.received() >= MiB), { timeoutMs: 20_000, what: 'the first piece at every child' });
    expect((await o.post('/collections/file/delete', { file_id: rec.file_id })).status).toBe(200);
    await waitFor(() => fileOf(parent, rec.file_id) === undefined, { timeoutMs: 10_000, what: 'the parent applying the delete' });
    const late = childAsks(parent, rec.file_id, sha256(bytes));
    up.release();
    for (const c of children) {
      expect((await c.done).complete).toBe(false);
      expect(c.received()).toBeLessThan(bytes.length);
    }
    await late.done;
    expect(late.status()).toBe(404);
    expect(late.body().includes(bytes.subarray(0, 64))).toBe(false);
    await expectNoLeak(parent);
  }, 60_000);

  it('a parent that loses its lease mid-stream sends no more', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(o.url).port));
    closers.push(() => proxy.cut());
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url, proxy.url, { COFFER_EDGE_LEASE_MS: '1000' });
    const bytes = randomBytes(4 * MiB);
    const rec = await uploadFilling(up, bytes, 2 * MiB + 1000, 'lease-lost.bin');
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at the child' });
    proxy.freeze();
    await waitFor(() => !parent.edge.follower.serving(), { timeoutMs: 10_000, what: 'the parent losing its lease' });
    const before = child.received();
    up.release();
    expect((await child.done).complete).toBe(false);
    expect(child.received()).toBe(before);
    proxy.thaw();
  }, 60_000);
});

describe('sizes at the edges of what a parent holds', () => {
  const sizes = [0, 1, MiB, PARENT_HOT_FILES.fileLimit, PARENT_HOT_FILES.fileLimit + 1];
  for (const size of sizes) {
    it(`${size} bytes: a child asking mid-fill, and a HEAD, get the whole right file`, async () => {
      const up = await fakeUpstream();
      const parent = await parentWithChildren(up.url);
      const bytes = randomBytes(size);
      const rec = await uploadFilling(up, bytes, Math.floor(size / 2), `size-${size}.bin`);
      const child = childAsks(parent, rec.file_id, sha256(bytes));
      const head = childAsks(parent, rec.file_id, sha256(bytes), 'HEAD');
      // Never the last byte before the copy is checked.
      await new Promise((r) => setTimeout(r, 300));
      expect(child.received()).toBeLessThan(Math.max(size, 1));
      up.release();
      expect((await child.done).complete).toBe(true);
      expect(child.status()).toBe(200);
      expect(sha256(child.body())).toBe(sha256(bytes));
      await head.done;
      expect(head.status()).toBe(200);
      expect(head.received()).toBe(0);
      await expectSettled(parent, rec.file_id, { parent: 1, origin: 0, failovers: 0 }, bytes);
    }, 60_000);
  }
});

describe('more fills at once than a parent holds', () => {
  it('three 12 MiB fills: the hold never passes 32 MiB, and every file arrives whole', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url);
    const files = Array.from({ length: 3 }, () => randomBytes(12 * MiB));
    for (const b of files) up.add(b, 6 * MiB);
    const recs: Array<{ file_id: string }> = [];
    for (const [i, b] of files.entries()) recs.push(await uploadBytes(o, b, { name: `big-${i}.bin` }));
    await waitFor(() => files.every((b) => up.asked(b) === 1), { timeoutMs: 20_000, what: 'the parent filling all three' });
    expect(parent.edge.childCopies.bytes).toBeLessThanOrEqual(PARENT_HOT_FILES.capacity);
    const children = recs.map((r, i) => childAsks(parent, r.file_id, sha256(files[i]!)));
    await new Promise((r) => setTimeout(r, 500));
    // Two are held and stream; the third waits for the parent's whole copy.
    expect(children.filter((c) => c.received() >= MiB).length).toBe(2);
    up.release();
    for (const [i, c] of children.entries()) {
      expect((await c.done).complete).toBe(true);
      expect(sha256(c.body())).toBe(sha256(files[i]!));
    }
    expect(parent.edge.cache.counts).toMatchObject({ parent: 3, origin: 0, failovers: 0 });
    expect(parent.edge.childCopies.bytes).toBeLessThanOrEqual(PARENT_HOT_FILES.capacity);
    await expectNoLeak(parent);
  }, 90_000);
});

/** A file uploaded before its parent started: no fill of it at the parent until a child asks. */
async function missAtParent(name: string) {
  const bytes = randomBytes(3 * MiB);
  const rec = await uploadBytes(o, bytes, { name });
  const up = await fakeUpstream();
  up.add(bytes, 2 * MiB + 1000);
  const parent = await parentWithChildren(up.url);
  expect(cached(parent, rec.file_id)).toBe(false);
  expect(up.asked(bytes)).toBe(0);
  return { parent, up, rec, bytes };
}

describe('other races and lies', () => {
  it('an upstream whose last byte alone is wrong: a child mid-stream never has more than all but that byte, and is cut', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url);
    const bytes = randomBytes(3 * MiB);
    const tail = Buffer.from(bytes.subarray(2 * MiB + 1000));
    tail[tail.length - 1]! ^= 0xff;
    const rec = await uploadFilling(up, bytes, 2 * MiB + 1000, 'last-byte-wrong.bin', 'pause', tail);
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at the child' });
    up.release();
    expect((await child.done).complete).toBe(false);
    expect(child.received()).toBeLessThan(bytes.length);
    expect(child.body().equals(bytes.subarray(0, child.received()))).toBe(true);
    await expectSettled(parent, rec.file_id, { parent: 0, origin: 1, failovers: 1 }, bytes);
  }, 60_000);

  it('a fill failing over between upstreams: the child on the first is cut, a child on the second streams it whole', async () => {
    const first = await fakeUpstream();
    const second = await fakeUpstream();
    const parent = await parentWithChildren(`${first.url},${second.url}`);
    const bytes = randomBytes(4 * MiB);
    first.add(bytes, 2 * MiB + 1000);
    second.add(bytes, 2 * MiB + 1000);
    const rec = await uploadBytes(o, bytes, { name: 'failover-mid-stream.bin' });
    await waitFor(() => first.asked(bytes) === 1, { timeoutMs: 10_000, what: 'the parent filling from its first upstream' });
    const early = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => early.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at the early child' });
    // The first upstream's connection is closed under the fill: the parent moves to the second.
    servers.at(-2)!.closeAllConnections();
    expect((await early.done).complete).toBe(false);
    expect(early.body().equals(bytes.subarray(0, early.received()))).toBe(true);
    await waitFor(() => second.asked(bytes) === 1, { timeoutMs: 10_000, what: 'the parent filling from its second upstream' });
    const late = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => late.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at the late child while the second upstream waits' });
    second.release();
    expect((await late.done).complete).toBe(true);
    expect(sha256(late.body())).toBe(sha256(bytes));
    await expectSettled(parent, rec.file_id, { parent: 1, origin: 0, failovers: 1 });
  }, 60_000);

  // The cache starts a fill a turn later (core/coalesce.ts): the route looks for the fill's
  // buffer once it has begun, or the first child would wait for the parent's whole copy.
  it('a child whose request starts the fill (a miss at the parent) is sent it as it arrives, as is one joining it; both whole and right', async () => {
    const { parent, up, rec, bytes } = await missAtParent('miss-at-parent.bin');
    const first = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => up.asked(bytes) === 1, { timeoutMs: 10_000, what: 'the child\'s request starting the parent\'s fill' });
    const second = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => first.received() >= MiB && second.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at both children while the upstream waits' });
    up.release();
    for (const c of [first, second]) {
      expect((await c.done).complete).toBe(true);
      expect(sha256(c.body())).toBe(sha256(bytes));
    }
    await expectSettled(parent, rec.file_id, { parent: 1, origin: 0, failovers: 0 });
  }, 60_000);
});

/**
 * A parent filling through `slow` (a slowBlobProxy to the origin) with a fill under way for a
 * new file, and a child edge started then that asks for it: the child's answer and its edge.
 */
async function childEdgeBehindSlowParent(slow: string, size: number, name: string) {
  const parent = await parentWithChildren('', slow);
  const bytes = randomBytes(size);
  const rec = await uploadBytes(o, bytes, { name });
  // The parent's fill is under way (and tapped for children) before the child edge exists:
  // started by an earlier request if not by the parent's own prefetch.
  const starter = childAsks(parent, rec.file_id, sha256(bytes));
  await waitFor(() => parent.edge.childCopies.bytes >= bytes.length, { timeoutMs: 10_000, what: 'the parent\'s fill under way' });
  const child = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: parent.edge.url }));
  started.push(child);
  const got = await fetch(`${child.edge.url}/files/${rec.file_id}`);
  expect(got.status).toBe(200);
  expect(sha256(Buffer.from(await got.arrayBuffer()))).toBe(sha256(bytes));
  expect((await starter.done).complete).toBe(true);
  expect(sha256(starter.body())).toBe(sha256(bytes));
  return { parent, child, rec };
}

describe('a slow but steady upstream', () => {
  // A child that has its 200 hears no 102: between pieces of 1 MiB an upstream slower than
  // 1 MiB per PARENT_IDLE_MS (3 s) would make it give the parent up and go to the origin. The
  // parent sends what it has each second when a whole piece has not come (held-stream.ts).
  it('a child edge filling through a parent whose origin sends 200 KiB/s stays with the parent', async () => {
    const { child } = await childEdgeBehindSlowParent(await slowBlobProxy(o.url, 20 * 1024), 2 * MiB + 500_000, 'slow-origin.bin');
    expect(child.edge.cache.counts).toMatchObject({ parent: 1, origin: 0, failovers: 0 });
  }, 90_000);
});

describe('an origin that pauses mid-body', () => {
  it('a child edge streaming from a parent whose origin pauses 4.5 s gets the whole right file, from the parent or the origin', async () => {
    const slow = await slowBlobProxy(o.url, 8 * MiB, { after: 1_600_000, ms: 4500 });
    const { parent, child, rec } = await childEdgeBehindSlowParent(slow, 3 * MiB, 'origin-pauses.bin');
    const counts = child.edge.cache.counts;
    expect(counts.parent + counts.origin).toBe(1);
    await waitFor(() => cached(parent, rec.file_id), { timeoutMs: 20_000, what: 'the parent\'s own copy' });
  }, 60_000);
});

describe('stalled children hold what they were sent, no more', () => {
  it('children stalled on two 16 MiB fills keep 32 MiB counted; a third file takes the old path whole; gone, they free it all', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url);
    const big = [randomBytes(PARENT_HOT_FILES.fileLimit), randomBytes(PARENT_HOT_FILES.fileLimit)];
    const third = randomBytes(3 * MiB);
    for (const b of [...big, third]) up.add(b, 2 * MiB + 1000);
    const recs: Array<{ file_id: string }> = [];
    for (const [i, b] of big.entries()) recs.push(await uploadBytes(o, b, { name: `stalled-${i}.bin` }));
    await waitFor(() => big.every((b) => up.asked(b) === 1), { timeoutMs: 20_000, what: 'the parent filling both' });
    const stalled = recs.map((r, i) => childAsks(parent, r.file_id, sha256(big[i]!)));
    await waitFor(() => stalled.every((c) => c.received() >= MiB), { timeoutMs: 20_000, what: 'the first piece at both stalled children' });
    for (const c of stalled) c.stall();
    up.release();
    await waitFor(() => recs.every((r) => cached(parent, r.file_id)), { timeoutMs: 30_000, what: 'the parent\'s own copies' });
    expect(parent.edge.childCopies.bytes).toBe(PARENT_HOT_FILES.capacity);
    const rec3 = await uploadBytes(o, third, { name: 'after-stalled.bin' });
    await waitFor(() => up.asked(third) === 1, { timeoutMs: 10_000, what: 'the parent filling the third file' });
    const child = childAsks(parent, rec3.file_id, sha256(third));
    await new Promise((r) => setTimeout(r, 300));
    // No room to hold it: the child waits for the parent's whole copy.
    expect(child.received()).toBe(0);
    up.release();
    expect((await child.done).complete).toBe(true);
    expect(sha256(child.body())).toBe(sha256(third));
    expect(parent.edge.childCopies.bytes).toBeLessThanOrEqual(PARENT_HOT_FILES.capacity);
    for (const c of stalled) c.abort();
    await Promise.all(stalled.map((c) => c.done));
    await expectNoLeak(parent);
  }, 90_000);
});

describe('a child that stops reading', () => {
  it('is dropped after COFFER_IDLE_TIMEOUT_MS, and the buffer it held is freed without anyone aborting it', async () => {
    const up = await fakeUpstream();
    const parent = await parentWithChildren(up.url, o.url, { COFFER_IDLE_TIMEOUT_MS: '1500' });
    const bytes = randomBytes(12 * MiB);
    const rec = await uploadFilling(up, bytes, 2 * MiB + 1000, 'stopped-reading.bin');
    const child = childAsks(parent, rec.file_id, sha256(bytes));
    await waitFor(() => child.received() >= MiB, { timeoutMs: 20_000, what: 'the first piece at the child' });
    child.stall();
    up.release();
    await waitFor(() => cached(parent, rec.file_id), { timeoutMs: 20_000, what: 'the parent\'s own copy' });
    // Dropped from the map, the buffer stays counted while the stalled answer holds it.
    parent.edge.childCopies.clear();
    expect(parent.edge.childCopies.bytes).toBe(bytes.length);
    // The parent drops the connection (its idle timeout); the paused client is not told until it reads.
    await waitFor(() => parent.edge.childCopies.bytes === 0, { timeoutMs: 10_000, what: 'the buffer freed once the idle timeout dropped the child' });
    expect(child.received()).toBeLessThan(bytes.length);
    child.abort();
  }, 60_000);
});
