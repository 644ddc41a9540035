/**
 * Bounded waits: an edge that keeps acknowledging an old sequence holds no change up for
 * longer than a lease. The edge is faked here with plain HTTP and the edge token: it reads
 * the feed but acknowledges the sequence of its snapshot every 100 ms. Changes must still be
 * answered within the lease (plus a margin), one after the other; the edge is then lapsed
 * and gets a lease again only once it acknowledges the head.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { createDatabase } from '../helpers/postgres.js';
import { sleep } from '../kit/index.js';

const LEASE_MS = 1000;
/**
 * Polling, the clock allowance between origins and a busy test machine. The bounds here are on
 * the wall clock because the check runs end to end, over HTTP and on PostgreSQL, whose work
 * takes real time; the same rules are held to the millisecond on a clock moved by hand in
 * test/unit/feed-bounded-waits.test.ts and feed-shared-leases.test.ts.
 */
const MARGIN_MS = 1000;
const EDGE_TOKEN = 'hub-test-edge-token-' + randomBytes(12).toString('hex');

interface AckAnswer {
  lease: boolean;
  lease_ms: number;
  head: number;
}

/** An edge that follows the feed of one origin and acknowledges on another (or the same). */
class StuckEdge {
  readonly id = 'stuck-' + randomBytes(6).toString('hex');
  snapshotSeq = 0;
  answers: AckAnswer[] = [];
  private feed: http.ClientRequest | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 2 });

  constructor(private readonly feedUrl: string, private readonly ackUrl: string) {}

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${EDGE_TOKEN}` };
  }

  async start(): Promise<void> {
    const res = await fetch(`${this.feedUrl}/_edge/snapshot`, { headers: this.headers() });
    expect(res.status).toBe(200);
    this.snapshotSeq = ((await res.json()) as { seq: number }).seq;
    await new Promise<void>((resolve, reject) => {
      this.feed = http.get(`${this.feedUrl}/_edge/feed?after=${this.snapshotSeq}&edge=${this.id}`, { headers: this.headers() }, (r) => {
        expect(r.statusCode).toBe(200);
        r.resume(); // reads everything, applies nothing
        resolve();
      });
      this.feed.on('error', reject);
    });
  }

  ack(seq: number): Promise<AckAnswer> {
    const body = JSON.stringify({ edge: this.id, seq });
    return new Promise<AckAnswer>((resolve, reject) => {
      const req = http.request(`${this.ackUrl}/_edge/ack`, {
        method: 'POST', agent: this.agent,
        headers: { ...this.headers(), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            const answer = JSON.parse(text) as AckAnswer;
            this.answers.push(answer);
            resolve(answer);
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Acknowledges `seq` every 100 ms from now on. */
  keepAcking(seq: number): void {
    this.timer = setInterval(() => void this.ack(seq).catch(() => {}), 100);
  }

  stopAcking(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  close(): void {
    this.stopAcking();
    this.feed?.destroy();
    this.agent.destroy();
  }
}

/** POSTs with the key; resolves with the status and how long the answer took, or fails after 10 s. */
async function timedPost(o: TestOrigin, path: string, body: unknown): Promise<{ status: number; ms: number; body: any }> {
  const t = performance.now();
  const res = await fetch(o.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const parsed = await res.json();
  return { status: res.status, ms: performance.now() - t, body: parsed };
}

/** Makes `changes` changes in a row on `on`, each answered within the lease plus the margin. */
async function boundedChanges(on: TestOrigin[], fileIds: string[]): Promise<number[]> {
  const times: number[] = [];
  let i = 0;
  const next = () => on[i++ % on.length]!;
  for (const id of fileIds) {
    for (const visibility of ['Private', 'Public']) {
      const r = await timedPost(next(), '/collections/file/update', { file_id: id, visibility });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      times.push(r.ms);
    }
  }
  for (const id of fileIds) {
    const r = await timedPost(next(), '/collections/file/delete', { file_id: id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    times.push(r.ms);
  }
  for (const ms of times) expect(ms, `every change within the lease and a margin: ${times.map(Math.round).join(', ')} ms`).toBeLessThan(LEASE_MS + MARGIN_MS);
  return times;
}

/** After the changes: no lease while it acknowledges an old sequence; one once it acknowledges the head. */
async function expectLapsedUntilCaughtUp(edge: StuckEdge): Promise<void> {
  edge.stopAcking();
  const behind = await edge.ack(edge.snapshotSeq);
  expect(behind.lease, 'behind the head: no lease').toBe(false);
  expect(behind.lease_ms).toBe(0);
  expect(behind.head).toBeGreaterThan(edge.snapshotSeq);
  const caught = await edge.ack(behind.head);
  expect(caught.lease, 'at the head: a lease again').toBe(true);
  expect(caught.lease_ms).toBeGreaterThan(0);
  expect(caught.lease_ms).toBeLessThanOrEqual(LEASE_MS);
}

const settings = { COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_EDGE_TOKEN: EDGE_TOKEN };

describe('one origin: an edge that keeps acknowledging an old sequence', () => {
  let origin: TestOrigin;
  let edge: StuckEdge | null = null;

  beforeAll(async () => {
    origin = await startTestOrigin(settings);
  });
  afterEach(() => edge?.close());
  afterAll(async () => {
    await origin?.close();
  });

  it('holds each change up for at most a lease, is marked lapsed, and gets a lease again only at the head', async () => {
    const files = [];
    for (let n = 0; n < 3; n++) files.push(await uploadBytes(origin, randomBytes(1000)));
    edge = new StuckEdge(origin.url, origin.url);
    await edge.start();
    const first = await edge.ack(edge.snapshotSeq);
    expect(first.lease, 'at the head when it joins').toBe(true);
    expect(first.lease_ms).toBe(LEASE_MS);
    edge.keepAcking(edge.snapshotSeq);
    await sleep(300);
    const times = await boundedChanges([origin], files.map((f) => f.file_id));
    // It held a lease when the first change was made: that change waited for it.
    expect(times[0]!, 'the first change waited for the lease the edge held').toBeGreaterThanOrEqual(LEASE_MS - 400);
    const row = (await origin.origin.stores.meta.edgeLeases()).find((r) => r.edge_id === edge!.id);
    expect(['lapsed', 'behind'], `row state ${row?.state}`).toContain(row?.state);
    await expectLapsedUntilCaughtUp(edge);
  });
});

describe('two origins on one PostgreSQL database: the edge follows A and acknowledges on B', () => {
  let a: TestOrigin;
  let b: TestOrigin;
  let dir = '';
  let edge: StuckEdge | null = null;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-hub-bounded-'));
    const databaseUrl = await createDatabase();
    const shared = { ...settings, COFFER_DATA_DIR: dir, COFFER_ACCESS_KEY: 'k-' + randomBytes(8).toString('hex'), COFFER_SIGNING_SECRET: 's-' + randomBytes(8).toString('hex') };
    a = await startTestOrigin(shared, { databaseUrl });
    b = await startTestOrigin(shared, { databaseUrl });
  }, 60_000);
  afterEach(() => edge?.close());
  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds changes on either origin up for at most a lease (plus polling and the clock allowance)', async () => {
    const files = [];
    for (let n = 0; n < 3; n++) files.push(await uploadBytes(n % 2 ? b : a, randomBytes(1000)));
    edge = new StuckEdge(a.url, b.url);
    await edge.start();
    const first = await edge.ack(edge.snapshotSeq);
    expect(first.lease, 'at the head when it joins').toBe(true);
    edge.keepAcking(edge.snapshotSeq);
    await sleep(300);
    const times = await boundedChanges([a, b], files.map((f) => f.file_id));
    expect(times[0]!, 'the first change waited for the lease the edge held').toBeGreaterThanOrEqual(LEASE_MS - 400);
    await expectLapsedUntilCaughtUp(edge);
  });
});
