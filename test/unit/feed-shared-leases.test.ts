/**
 * The lease rules, in this process: two hubs (two origins) on one SQLite file, edges played by
 * calling `ack` as the follower would, and one clock moved by hand, so each wait is measured
 * exactly instead of slept through.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { MetadataStore } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { DEFAULT_POLL_MS, EdgeHub, defaultSkewMs } from '../../src/feed/hub.js';
import { ManualClock } from '../kit/clock.js';

const LEASE = 300;
const SKEW = defaultSkewMs(LEASE);

describe('the shared lease table: two hubs on one store', () => {
  const clock = new ManualClock();
  let dir = '';
  let stores: MetadataStore[] = [];
  let hubs: EdgeHub[] = [];
  let a: EdgeHub;
  let b: EdgeHub;

  const append = (store: MetadataStore) => store.transaction((tx) => tx.appendEvent({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } }, clock.now()));
  /** Moves the clock a millisecond at a time until `p` settles; resolves with its value. */
  const drive = async <T>(p: Promise<T>, limitMs = 5000): Promise<T> => {
    let done = false;
    const watched = p.finally(() => (done = true));
    for (let t = 0; t < limitMs && !done; t++) await clock.advance(1);
    if (!done) throw new Error(`still waiting after ${limitMs} ms`);
    return watched;
  };
  /** How many ms of the clock `p` took to settle. */
  const timed = async (p: Promise<void>): Promise<number> => {
    const t = clock.monotonic();
    await drive(p);
    return clock.monotonic() - t;
  };
  /** Whether `p` settles within `ms` of the clock. */
  const settled = async (p: Promise<void>, ms: number): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true));
    await clock.advance(ms);
    return done;
  };
  const ack = (hub: EdgeHub, edge: string, seq: number) => drive(hub.ack(edge, seq));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-leases-'));
    stores = [await openSqliteStore(join(dir, 'coffer.sqlite')), await openSqliteStore(join(dir, 'coffer.sqlite'))];
    hubs = stores.map((s, i) => new EdgeHub(s, { leaseMs: LEASE, originId: `origin-${i}` }, clock));
    [a, b] = hubs as [EdgeHub, EdgeHub];
    for (const h of hubs) await h.start();
  });

  // Each test starts with the edges of the ones before out of their leases, so only its own hold changes.
  beforeEach(() => clock.advance(LEASE + SKEW + DEFAULT_POLL_MS));

  afterAll(async () => {
    for (const h of hubs) await h.close();
    expect(clock.pending, 'every timer cleared on close').toBe(0);
    for (const s of stores) await s.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('grants a new edge a lease only once it has applied the head', async () => {
    const head = await append(stores[0]!);
    expect((await ack(b, 'new-edge', head - 1)).lease, 'behind the head').toBe(false);
    const at = await ack(b, 'new-edge', head);
    expect(at, 'at the head').toMatchObject({ lease: true, lease_ms: LEASE, head });
    expect((await ack(b, 'new-edge', head)).lease, 'still heard from').toBe(true);
  });

  it('holds a change on one origin until an edge acknowledging the other has applied it', async () => {
    const head = await append(stores[0]!);
    expect((await ack(b, 'edge-b', head)).lease).toBe(true);
    const seq = await append(stores[0]!);
    const waiting = a.publish(seq);
    expect(await settled(waiting, LEASE / 2), 'answered before the edge on B had it').toBe(false);
    await ack(b, 'edge-b', seq);
    // Found at A's next read of the table, long before the lease would have run out.
    expect(await timed(waiting)).toBeLessThanOrEqual(DEFAULT_POLL_MS * 2);
  });

  it('answers without an edge gone quiet on the other origin only after its lease (and the clock allowance), and marks it lapsed', async () => {
    const head = await append(stores[0]!);
    // Before the acknowledgement: its lease runs from when the origin received it.
    const heardAt = clock.now();
    expect((await ack(b, 'quiet', head)).lease).toBe(true);
    const seq = await append(stores[0]!);
    await drive(a.publish(seq));
    const waited = clock.now() - heardAt;
    expect(waited, 'waited for the lease and the allowance').toBeGreaterThanOrEqual(LEASE + SKEW);
    expect(waited, 'and then for no more than a poll or two').toBeLessThanOrEqual(LEASE + SKEW + DEFAULT_POLL_MS * 2);
    const row = (await stores[0]!.edgeLeases()).find((r) => r.edge_id === 'quiet')!;
    expect(row.state).toBe('lapsed');
    // Heard from again (an acknowledgement that was held up): no lease until it has the change.
    expect((await ack(b, 'quiet', seq - 1)).lease, 'lapsed, behind').toBe(false);
    expect((await ack(a, 'quiet', seq - 1)).lease, 'lapsed, behind, on the other origin').toBe(false);
    expect((await ack(b, 'quiet', seq)).lease, 'caught up').toBe(true);
  });

  it('makes an edge quiet for a lease catch up even when no change was answered without it', async () => {
    const head = await append(stores[0]!);
    expect((await ack(a, 'napper', head)).lease).toBe(true);
    await clock.advance(LEASE + 50);
    const later = await append(stores[1]!);
    expect((await ack(a, 'napper', head)).lease, 'quiet for a lease, behind').toBe(false);
    expect((await ack(a, 'napper', later)).lease).toBe(true);
  });

  it('never answers a change without a live edge: a renewal while behind ends before the change is answered, and then none', async () => {
    const head = await append(stores[0]!);
    expect((await ack(b, 'racer', head)).lease).toBe(true);
    const seq = await append(stores[0]!);
    const waiting = a.publish(seq);
    let answeredAt = Infinity;
    void waiting.then(() => (answeredAt = clock.monotonic()));
    // Renewed before its lease runs out, still without the change: at most what is left of a lease since the change.
    await clock.advance(LEASE - 100);
    expect(answeredAt, 'held while the lease runs').toBe(Infinity);
    const sent = clock.monotonic();
    const renewed = await ack(b, 'racer', seq - 1);
    expect(renewed.lease_ms, 'a renewal while behind is cut short').toBeLessThan(LEASE - 50);
    await drive(waiting);
    if (renewed.lease) expect(sent + renewed.lease_ms, 'the change waited for the renewed lease').toBeLessThanOrEqual(answeredAt);
    expect((await ack(b, 'racer', seq - 1)).lease, 'answered without it: no lease until it catches up').toBe(false);
    expect((await ack(b, 'racer', seq)).lease).toBe(true);
  });

  it('marks by compare-and-set: a mark on a row that changed since it was read does nothing', async () => {
    const store = stores[0]!;
    const [row] = await store.recordEdgeAcks([{ edge_id: 'cas', origin_id: 'x', acked_seq: 1, heard_at: 1, live_until: 2 }]);
    await store.recordEdgeAcks([{ edge_id: 'cas', origin_id: 'x', acked_seq: 2, heard_at: 3, live_until: 4 }]);
    expect(await store.markEdgesLapsed([{ edge_id: 'cas', version: row!.version }])).toEqual([]);
    const now = (await store.edgeLeases()).find((r) => r.edge_id === 'cas')!;
    expect(now).toMatchObject({ acked_seq: 2, live_until: 4, state: 'behind', version: row!.version + 1 });
    expect(await store.markEdgesLapsed([{ edge_id: 'cas', version: now.version }])).toEqual(['cas']);
    expect(await store.markEdgeCaughtUp('cas', now.version), 'a lapsed row is not caught up by a stale version').toBe(false);
    expect(await store.pruneEdgeLeases(5)).toBeGreaterThanOrEqual(1);
    expect((await store.edgeLeases()).some((r) => r.edge_id === 'cas')).toBe(false);
  });
});
