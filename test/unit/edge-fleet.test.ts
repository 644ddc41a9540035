/**
 * The fleet's states (src/feed/fleet.ts), one rule at a time over a store held in memory and a
 * clock moved by hand: which edges answer, which do not, and when one is forgotten.
 */
import { beforeEach, describe, expect, test } from 'vitest';
import { EdgeFleet, FORGET_AFTER_MS, MAX_REPORTED_EDGES, REPORT_EVERY_MS, type FleetStore } from '../../src/feed/fleet.js';
import { parseEdgeStatus, type EdgeStatus } from '../../src/feed/edge-status.js';
import type { EdgeLease, EdgeReportRow } from '../../src/core/ports.js';
import { ManualClock } from '../kit/index.js';

const clock = new ManualClock(Date.parse('2026-11-27T10:00:00Z'));
let leases: EdgeLease[];
let reports: Map<string, EdgeReportRow>;
const store: FleetStore = {
  edgeLeases: async () => leases,
  edgeReports: async () => [...reports.values()],
  recordEdgeReport: async (row) => void reports.set(row.edge_id, row),
  pruneEdgeReports: async (before) => {
    let n = 0;
    for (const [id, r] of reports) if (r.received_at < before && reports.delete(id)) n++;
    return n;
  },
};
let fleet: EdgeFleet;

const status = (id: string, over: Partial<EdgeStatus> = {}): EdgeStatus => ({
  id, name: id.toUpperCase(), parents: [], started_at: clock.now(), seq: 3, cache: { used_bytes: 0, capacity_bytes: 100 },
  requests: 0, hits: 0, misses: 0, bytes_sent: 0, fills: { parent: 0, origin: 0, failovers: 0, served_to_children: 0 }, ...over,
});
const lease = (id: string, over: Partial<EdgeLease> = {}): EdgeLease => ({
  edge_id: id, origin_id: 'o', acked_seq: 5, heard_at: clock.now(), live_until: clock.now() + 5000, state: 'caught_up', version: 1, ...over,
});
const stateOf = async (id: string) => (await fleet.list()).edges.find((e) => e.id === id)?.state;

beforeEach(() => {
  leases = [];
  reports = new Map();
  fleet = new EdgeFleet({ meta: store, clock, originId: 'o', head: () => 7 });
});

describe('states', () => {
  test('a lease held and reports coming: live; lag from the larger of acked and reported seq', async () => {
    leases = [lease('a')];
    await fleet.record(status('a'));
    const [a] = (await fleet.list()).edges;
    expect(a).toMatchObject({ state: 'live', answering: true, applied_seq: 5, feed_lag_events: 2, name: 'A' });
  });

  test('a lease that ran out, or a row marked lapsed: lapsed', async () => {
    leases = [lease('a', { live_until: clock.now() - 1 }), lease('b', { state: 'lapsed' })];
    expect(await stateOf('a')).toBe('lapsed');
    expect(await stateOf('b')).toBe('lapsed');
    const edges = (await fleet.list()).edges;
    expect(edges.map((e) => e.answering)).toEqual([false, false]);
    // A lapsed row holds no lease, whatever its live_until says.
    expect(edges.find((e) => e.id === 'b')!.lease_expires_at).toBeNull();
  });

  test('reports stopped for three intervals while the lease row still runs: unreachable', async () => {
    await fleet.record(status('a'));
    await clock.advance(REPORT_EVERY_MS * 3 + 1);
    leases = [lease('a')];
    expect(await stateOf('a')).toBe('unreachable');
  });

  test('a behind row heard lately is catching up; one quiet for long is unreachable', async () => {
    leases = [lease('a', { state: 'behind', live_until: 0 })];
    expect(await stateOf('a')).toBe('catching_up');
    leases = [lease('a', { state: 'behind', live_until: 0, heard_at: clock.now() - REPORT_EVERY_MS * 3 - 1 })];
    expect(await stateOf('a')).toBe('unreachable');
  });

  test('an edge without a report is listed by its id with no counts; hit ratio only after answers', async () => {
    leases = [lease('a')];
    expect((await fleet.list()).edges[0]).toMatchObject({ name: 'a', requests: null, hit_ratio: null, cache_used_bytes: null });
    await fleet.record(status('a', { hits: 1, misses: 3 }));
    expect((await fleet.list()).edges[0]!.hit_ratio).toBe(0.25);
  });

  test('a stored report that no longer reads lists the edge without its counts', async () => {
    leases = [lease('a')];
    reports.set('a', { edge_id: 'a', origin_id: 'o', received_at: clock.now(), report: '{"id":"a","name":' });
    expect((await fleet.list()).edges[0]).toMatchObject({ id: 'a', name: 'a', state: 'live', requests: null });
  });

  test('silent for more than an hour: forgotten', async () => {
    await fleet.record(status('a'));
    await clock.advance(FORGET_AFTER_MS + 1);
    expect((await fleet.list()).edges).toEqual([]);
  });
});

describe('parseEdgeStatus', () => {
  test('takes a full report and refuses what is off', () => {
    expect(parseEdgeStatus(status('a'))).toEqual(status('a'));
    expect(parseEdgeStatus({ ...status('a'), name: 'x'.repeat(100) })).not.toBeTypeOf('string');
    for (const bad of [null, [], { ...status('a'), name: 'x'.repeat(101) }, { ...status('a'), seq: -1 }, { ...status('a'), parents: 'p' },
      { ...status('a'), cache: { used_bytes: 1 } }, { ...status('a'), fills: { ...status('a').fills, more: 1 } },
      // C1 controls, line separators and text-direction overrides would rewrite a terminal or a page.
      { ...status('a'), name: 'eu\u009b31m' }, { ...status('a'), name: 'eu\u202ewest' }, { ...status('a'), parents: ['http://p\u2028x'] }]) {
      expect(parseEdgeStatus(bad)).toBeTypeOf('string');
    }
  });
});

describe('reports under many ids', () => {
  test('one origin keeps at most MAX_REPORTED_EDGES ids an hour; known ids stay, and room returns after the hour', async () => {
    for (let i = 0; i < MAX_REPORTED_EDGES; i++) await fleet.record(status(`e${i}`));
    await fleet.record(status('intruder'));
    expect(reports.has('intruder')).toBe(false);
    await fleet.record(status('e7', { requests: 9 }));
    expect(JSON.parse(reports.get('e7')!.report).requests).toBe(9);
    await clock.advance(FORGET_AFTER_MS + 1);
    await fleet.record(status('late'));
    expect(reports.has('late')).toBe(true);
  });
});
