/**
 * Attacks on this round's lease and prefetch changes, from outside (the option reader, header
 * and metrics attacks are in edge-round-attacks.test.ts):
 * - the idle lease (renewal every second beat): an edge cut off right after a renewal stops
 *   serving within one lease of sending it, and a switch to Private made meanwhile answers only
 *   once that lease is over, with no unsigned bytes after; an edge process whose origin is
 *   stopped (SIGSTOP) likewise;
 * - a file deleted or made Private right after its completion (inside the origin's fill hold
 *   and the edge's prefetch gate) is never served unsigned nor kept; the hold stays bounded.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer, stopAll, type CofferProcess } from '../helpers/processes.js';
import { rawRequest } from '../helpers/raw-http.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { ManualClock, eventually, jsonClient } from '../kit/index.js';

// ---------------------------------------------------------------- the idle lease, cut off

const LEASE_MS = 5000;

/** Lets `ms` of the shared clock pass in steps, with real time between them for the sockets. */
async function pass(clock: ManualClock, ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    await clock.advance(Math.min(step, ms - t));
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The follower's own lease end (monotonic ms on its clock). */
const leaseEnd = (e: TestEdge): number => (e.edge.follower as unknown as { leaseUntil: number }).leaseUntil;

describe('an idle edge cut off right after a renewal', () => {
  const clock = new ManualClock(Date.now());
  let o: TestOrigin;
  let proxy: TcpProxy;
  let e: TestEdge;

  beforeAll(async () => {
    const lease = { COFFER_EDGE_LEASE_MS: String(LEASE_MS) };
    o = await startTestOrigin(lease, { clock });
    proxy = await TcpProxy.start('127.0.0.1', Number(new URL(o.url).port));
    e = await clock.flowUntil(startTestEdge(o, () => lease, proxy.url, { clock }), 20);
  }, 60_000);

  afterAll(async () => {
    proxy?.thaw();
    await e?.close();
    await proxy?.close();
    await o?.close();
  });

  test('stops serving within one lease of its last acknowledgement, and a switch to Private made meanwhile never lets unsigned bytes out after it returns', async () => {
    const bytes = randomBytes(3000);
    const rec = await clock.flowUntil(uploadBytes(o, bytes, { name: 'lease.bin' }), 20);
    const path = `/files/${rec.file_id}`;
    await clock.flowUntil(eventually(async () => expect((await rawRequest(e.edge.url, path)).status).toBe(200)), 20);
    // Idle: past the busy leases after the last change, renewing every second beat.
    await pass(clock, LEASE_MS * 5);
    expect(e.edge.follower.serving()).toBe(true);
    // Wait for the next renewal to be answered, and cut the link at once.
    const before = leaseEnd(e);
    for (let i = 0; i < 100 && leaseEnd(e) === before; i++) await pass(clock, 50, 50);
    expect(leaseEnd(e)).toBeGreaterThan(before);
    proxy.freeze();
    const renewedUntil = leaseEnd(e);

    const t0 = clock.monotonic();
    let returnedAt: number | null = null;
    const switching = o.post('/collections/file/update', { file_id: rec.file_id, visibility: 'Private' }).then((r) => {
      returnedAt = clock.monotonic();
      return r;
    });
    const probes: Array<Promise<{ sentAt: number; status: number | null }>> = [];
    while (returnedAt === null && clock.monotonic() - t0 < LEASE_MS * 3) {
      const sentAt = clock.monotonic();
      probes.push(rawRequest(e.edge.url, path, { timeoutMs: 20_000 }).then((r) => ({ sentAt, status: r.status }), () => ({ sentAt, status: null })));
      await pass(clock, 100, 100);
    }
    expect(returnedAt, 'the switch never returned').not.toBeNull();
    expect((await switching).status).toBe(200);
    // The origin waited for the edge's lease to end (it could not acknowledge).
    expect(returnedAt!).toBeGreaterThanOrEqual(renewedUntil);
    for (let i = 0; i < 10; i++) {
      const sentAt = clock.monotonic();
      probes.push(rawRequest(e.edge.url, path, { timeoutMs: 20_000 }).then((r) => ({ sentAt, status: r.status }), () => ({ sentAt, status: null })));
      await pass(clock, 100, 100);
    }
    expect(e.edge.follower.serving()).toBe(false);
    proxy.thaw();
    const settled = await clock.flowUntil(Promise.all(probes), 20);
    const late = settled.filter((p) => p.status === 200 && (p.sentAt >= renewedUntil || p.sentAt >= returnedAt!));
    expect(late, `unsigned 200s after the lease or the switch (lease to ${renewedUntil}, switch returned ${returnedAt})`).toEqual([]);
    expect(settled.some((p) => p.status === 200 && p.sentAt < renewedUntil), 'served from cache while the lease ran').toBe(true);
    // Caught up again: Private now, unsigned refused.
    await clock.flowUntil(eventually(async () => expect((await rawRequest(e.edge.url, path)).status).toBe(403)), 20);
  }, 120_000);
});

// ---------------------------------------------------------------- prefetch gate and fill hold

describe('a file deleted or made Private right after its completion', () => {
  let o: TestOrigin;
  let e: TestEdge;

  beforeAll(async () => {
    o = await startTestOrigin();
    e = await startTestEdge(o);
  }, 60_000);

  afterAll(async () => {
    await e?.close();
    await o?.close();
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // Inside the edge's prefetch gate (≤250 ms after its acknowledgement) and the origin's 1 s hold.
  const DELAYS = [0, 5, 20, 60, 120, 200, 260, 400, 700];

  test('is never served nor kept once the delete returns', async () => {
    const doomed: string[] = [];
    for (const delay of DELAYS) {
      const rec = await uploadBytes(o, randomBytes(2000 + delay), { name: `gate-${delay}.bin` });
      doomed.push(rec.file_id);
      await sleep(delay);
      expect((await o.post('/collections/file/delete', { file_id: rec.file_id })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await rawRequest(e.edge.url, `/files/${rec.file_id}`)).status, `delay ${delay}`).toBe(404);
    }
    // Past every gate and hold: nothing of a deleted file was put in the cache after all.
    await sleep(1500);
    const kept = await readdir(`${e.dir}/blobs`).catch(() => [] as string[]);
    expect(kept.filter((name) => doomed.some((id) => name.startsWith(`${id}.`)))).toEqual([]);
    for (const id of doomed) expect((await rawRequest(e.edge.url, `/files/${id}`)).status).toBe(404);
  }, 60_000);

  test('never answers unsigned once the switch returns, whenever its prefetch lands', async () => {
    const switched: string[] = [];
    for (const delay of DELAYS) {
      const rec = await uploadBytes(o, randomBytes(2500 + delay), { name: `switch-${delay}.bin` });
      switched.push(rec.file_id);
      await sleep(delay);
      expect((await o.post('/collections/file/update', { file_id: rec.file_id, visibility: 'Private' })).status).toBe(200);
      const seen: number[] = [];
      for (let i = 0; i < 6; i++) {
        for (const headers of [{}, { range: 'bytes=0-9' }, { 'if-none-match': `"${rec.sha256}"` }] as Array<Record<string, string>>) {
          seen.push((await rawRequest(e.edge.url, `/files/${rec.file_id}`, { headers })).status);
        }
        await sleep(60 * i);
      }
      expect(seen.filter((s) => s !== 403), `delay ${delay}`).toEqual([]);
    }
    // Not vacuous: the prefetches did land, the bytes are kept, and only a signature reaches them.
    const kept = await readdir(`${e.dir}/blobs`);
    expect(switched.filter((id) => kept.some((name) => name.startsWith(`${id}.`))).length).toBeGreaterThan(0);
  }, 60_000);
});

// ---------------------------------------------------------------- an origin stopped (SIGSTOP)

describe('an idle edge process whose origin is stopped (SIGSTOP)', () => {
  const LEASE = 2000;
  const KEY = 'key-' + randomBytes(8).toString('hex');
  const SECRET = 'secret-' + randomBytes(8).toString('hex');
  const TOKEN = 'edge-' + randomBytes(8).toString('hex');
  let dir: string;
  let origin: CofferProcess;
  let edge: CofferProcess;
  let originUrl: string;
  let edgeUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-a2-stop-'));
    const env = { COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: TOKEN, COFFER_EDGE_LEASE_MS: String(LEASE), COFFER_HOST: '127.0.0.1' };
    origin = spawnCoffer({ name: 'origin', kind: 'origin', args: ['origin', '--port', '0'], env: { ...env, COFFER_DATA_DIR: join(dir, 'o') }, readyTimeoutMs: 60_000 });
    originUrl = await origin.ready;
    // Odd but well-formed spellings: read without commander, with commander's meaning.
    edge = spawnCoffer({ name: 'edge', kind: 'edge', args: ['edge', `--origin=${originUrl}`, '--edge-port', '1', '--edge-port=0', '--data-dir', join(dir, 'e'), '--name', 'stop-test'], env, readyTimeoutMs: 60_000 });
    edgeUrl = await edge.ready;
  }, 120_000);

  afterAll(async () => {
    if (origin && !origin.exit) origin.child.kill('SIGCONT');
    await stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('stops serving within one lease of the stop, never unsigned Private, and serves again once it runs', async () => {
    const client = jsonClient(originUrl, KEY);
    const pub = await uploadBytes(client, randomBytes(5000), { name: 'stop-public.bin' });
    const priv = await uploadBytes(client, randomBytes(5000), { name: 'stop-private.bin', visibility: 'Private' });
    await eventually(async () => expect((await rawRequest(edgeUrl, `/files/${pub.file_id}`)).headers['x-cache']).toBe('HIT'), { timeoutMs: 20_000 });
    // Past the busy leases after the last change: the edge renews every second beat.
    await new Promise((r) => setTimeout(r, LEASE * 4 + 700));
    expect((await rawRequest(edgeUrl, `/files/${pub.file_id}`)).status).toBe(200);

    origin.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    const probes: Array<{ at: number; status: number | null; priv: number | null }> = [];
    while (Date.now() - stoppedAt < LEASE + 1500) {
      const at = Date.now();
      const [a, b] = await Promise.all([
        rawRequest(edgeUrl, `/files/${pub.file_id}`, { timeoutMs: 3000 }).then((r) => r.status, () => null),
        rawRequest(edgeUrl, `/files/${priv.file_id}`, { timeoutMs: 3000 }).then((r) => r.status, () => null),
      ]);
      probes.push({ at: at - stoppedAt, status: a, priv: b });
      await new Promise((r) => setTimeout(r, 50));
    }
    origin.child.kill('SIGCONT');
    // A request sent a lease after the stop cannot have been decided under a lease the edge still held.
    expect(probes.filter((p) => p.status === 200 && p.at >= LEASE), JSON.stringify(probes)).toEqual([]);
    expect(probes.some((p) => p.status !== 200), 'the edge never stopped serving').toBe(true);
    expect(probes.filter((p) => p.priv === 200)).toEqual([]);
    await eventually(async () => expect((await rawRequest(edgeUrl, `/files/${pub.file_id}`)).status).toBe(200), { timeoutMs: 20_000 });
  }, 120_000);
});

// ---------------------------------------------------------------- the origin's fill hold, bounded

describe('the origin\'s fill hold', () => {
  test('never holds a fill longer than the hold, whatever the completion\'s stamp says', async () => {
    const { EdgeRecords } = await import('../../src/feed/records.js');
    const { Readable } = await import('node:stream');
    const HOLD = 1000;
    const clock = new ManualClock();
    const limits: number[] = [];
    // Completed "in the future": another origin's clock ahead, or this one stepped back by NTP.
    const file = { id: 'f', status: 'ready', blob_key: 'k', size: 1, sha256: 'h', completed_at: clock.now() + 3_600_000 };
    const meta = { read: { getFile: async () => file } } as unknown as ConstructorParameters<typeof EdgeRecords>[0];
    const blobs = { read: async () => Readable.from([Buffer.from('x')]) } as unknown as ConstructorParameters<typeof EdgeRecords>[1];
    const records = new EdgeRecords(meta, blobs, { settled: async (ms) => void limits.push(ms), now: () => clock.now(), holdMs: HOLD });
    expect(await records.blob('f')).toBeDefined();
    expect(limits).toEqual([HOLD]);
  });
});
