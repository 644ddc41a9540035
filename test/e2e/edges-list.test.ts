/**
 * The edges list (POST /collections/edges, docs/api.md "Edges"): edges' reports of themselves
 * (POST /_edge/usage's `edge`) joined with their leases, on a clock moved by hand. Edges are
 * played here over HTTP with the edge token, so the test decides exactly when each one acks
 * and reports: one keeps going, one stops and is shown as not answering, then forgotten.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock, eventually } from '../kit/index.js';
import { startTestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, TEST_METADATA_POSTGRES, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { createClient } from '../../src/sdk/index.js';

const clock = new ManualClock(Date.now());
const STARTED = clock.now() - 1000;
let o: TestOrigin;
let edgeAuth: Record<string, string>;

const status = (id: string, name: string, over: Record<string, unknown> = {}) => ({
  id, name, parents: [], started_at: STARTED, seq: 0,
  cache: { used_bytes: 1024, capacity_bytes: 10 * 1024 ** 3 },
  requests: 10, hits: 6, misses: 2, bytes_sent: 5000,
  fills: { parent: 0, origin: 2, failovers: 0, served_to_children: 0 },
  ...over,
});
/** An edge's call: the ack batch waits on the clock, so time flows until it answers. */
const asEdge = (path: string, body: unknown) => clock.flowUntil(o.post(path, body, { headers: edgeAuth }), 5);
const report = (edge: unknown, files: unknown = {}) => asEdge('/_edge/usage', { files, edge });
const ack = (id: string, seq = 0) => asEdge('/_edge/ack', { edge: id, seq });
const list = async () => {
  const r = await o.post('/collections/edges', {});
  expect(r.status).toBe(200);
  return r.body as { head_seq: number; checked_at: string; edges: any[] };
};
const byId = async (id: string) => (await list()).edges.find((e) => e.id === id);

beforeAll(async () => {
  const token = `edge-token-${Math.random().toString(36).slice(2)}`;
  o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '5000', COFFER_EDGE_TOKEN: token }, { clock });
  edgeAuth = { authorization: `Bearer ${token}` };
});
afterAll(async () => {
  await o?.close();
});

describe('reports and leases', () => {
  test('an edge that acks and reports is listed live with its counts; empty before', async () => {
    expect((await list()).edges).toEqual([]);
    expect((await ack('edge-paris')).status).toBe(200);
    const sent = clock.now();
    const r = await report(status('edge-paris', 'Paris'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const { head_seq, checked_at, edges } = await list();
    expect(Date.parse(checked_at)).toBe(clock.now());
    expect(edges).toHaveLength(1);
    expect(edges[0]).toEqual({
      id: 'edge-paris', name: 'Paris', parents: [], state: 'live', answering: true,
      last_seen_at: expect.any(String), lease_expires_at: expect.any(String),
      applied_seq: 0, feed_lag_events: head_seq, cache_used_bytes: 1024, cache_capacity_bytes: 10 * 1024 ** 3,
      hit_ratio: 0.75, requests: 10, bytes_sent: 5000,
      fills: { parent: 0, origin: 2, failovers: 0, served_to_children: 0 },
      started_at: new Date(STARTED).toISOString(),
    });
    expect(Date.parse(edges[0].lease_expires_at)).toBeGreaterThan(clock.now());
    // Heard when the report arrived: the clock flows while a call is answered.
    expect(Date.parse(edges[0].last_seen_at)).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(edges[0].last_seen_at)).toBeLessThanOrEqual(clock.now());
  });

  test('a newer report replaces the counts; hit ratio is null before any byte answer', async () => {
    await report(status('edge-paris', 'Paris', { requests: 12, bytes_sent: 7000, hits: 8 }));
    expect(await byId('edge-paris')).toMatchObject({ requests: 12, bytes_sent: 7000, hit_ratio: 0.8 });
    await ack('edge-lyon');
    await report(status('edge-lyon', 'Lyon', { parents: ['http://paris.example:8081'], hits: 0, misses: 0, requests: 0 }));
    const lyon = await byId('edge-lyon');
    expect(lyon).toMatchObject({ name: 'Lyon', parents: ['http://paris.example:8081'], state: 'live', hit_ratio: null });
    // Listed by name.
    expect((await list()).edges.map((e) => e.name)).toEqual(['Lyon', 'Paris']);
  });

  test('an edge that stops is listed as not answering while the other stays live, then forgotten after an hour', async () => {
    // Paris keeps acking and reporting; Lyon goes quiet.
    for (let i = 0; i < 20; i++) {
      await clock.advance(2000);
      await ack('edge-paris');
      if (i % 5 === 4) await report(status('edge-paris', 'Paris'));
    }
    const lyon = await byId('edge-lyon');
    expect(lyon.answering).toBe(false);
    expect(['lapsed', 'unreachable']).toContain(lyon.state);
    expect(lyon.lease_expires_at === null || Date.parse(lyon.lease_expires_at) <= clock.now()).toBe(true);
    expect(await byId('edge-paris')).toMatchObject({ state: 'live', answering: true });

    // Reports stop too: past three intervals Paris is unreachable even before its lease row says so.
    await report(status('edge-report-only', 'Reports only'));
    expect(await byId('edge-report-only')).toMatchObject({ state: 'catching_up', answering: true, lease_expires_at: null });
    await clock.advance(31_000);
    expect(await byId('edge-report-only')).toMatchObject({ state: 'unreachable', answering: false });

    await clock.advance(60 * 60_000);
    expect((await list()).edges).toEqual([]);
  });

  test('an edge that comes back is live again', async () => {
    await ack('edge-lyon');
    await report(status('edge-lyon', 'Lyon'));
    // A lapsed row must catch up first: its next ack of the head earns the lease back.
    await ack('edge-lyon');
    expect(await byId('edge-lyon')).toMatchObject({ state: 'live', answering: true });
  });
});

describe('bad reports are 400 like a bad `files`', () => {
  const cases: Array<[string, unknown]> = [
    ['not an object', 'paris'],
    ['a bad id', status('no spaces allowed', 'x')],
    ['an empty name', status('e1', '  ')],
    ['a long name', status('e1', 'x'.repeat(101))],
    ['a control character in the name', status('e1', 'a\u0007b')],
    ['nine parents', status('e1', 'x', { parents: Array.from({ length: 9 }, (_, i) => `http://p${i}`) })],
    ['a long parent', status('e1', 'x', { parents: ['http://' + 'p'.repeat(300)] })],
    ['a negative count', status('e1', 'x', { requests: -1 })],
    ['a fraction', status('e1', 'x', { bytes_sent: 1.5 })],
    ['a count as text', status('e1', 'x', { hits: '3' })],
    ['cache missing', { ...status('e1', 'x'), cache: undefined }],
    ['fills incomplete', status('e1', 'x', { fills: { parent: 0, origin: 0, failovers: 0 } })],
    ['an unknown field', status('e1', 'x', { extra: 1 })],
  ];
  test.each(cases)('%s', async (_what, edge) => {
    const r = await report(edge, { 'some-file': [1, 10] });
    expectError(r, 400, 'invalid_request', { field: 'edge' });
  });
  test('none of them was kept, and `files` may be empty', async () => {
    expect(await byId('e1')).toBeUndefined();
    expect((await report(status('e2', 'ok'))).status).toBe(200);
    expect((await report(undefined)).status).toBe(200);
  });
});

describe('who may list', () => {
  test('the root key and a Playground session; no other key, grant or edge', async () => {
    const admin = await o.post('/collections/keys/create', { name: 'admin', scopes: ['read', 'write', 'admin'] });
    const reader = await o.post('/collections/keys/create', { name: 'reader', scopes: ['read'] });
    const grant = await o.post('/collections/upload/grant', { max_size: 10 });
    for (const [who, authorization] of [['admin key', `Bearer ${admin.body.key}`], ['read key', `Bearer ${reader.body.key}`], ['grant', `Grant ${grant.body.grant}`]]) {
      expectError(await o.post('/collections/edges', {}, { headers: { authorization } }), 403, 'forbidden', who!);
    }
    expectError(await o.post('/collections/edges', {}, { headers: { authorization: undefined } }), 401, 'unauthorized', 'no key');
    const asEdgeToken = await o.post('/collections/edges', {}, { headers: edgeAuth });
    expect([401, 403]).toContain(asEdgeToken.status);
    const signIn = await fetch(`${o.url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_key: o.key }) });
    expect(signIn.status).toBe(200);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const csrf = ((await signIn.json()) as { csrf_token: string }).csrf_token;
    const bySession = await o.post('/collections/edges', {}, { headers: { authorization: undefined, cookie, 'x-csrf-token': csrf } });
    expect(bySession.status).toBe(200);
    expect(Array.isArray(bySession.body.edges)).toBe(true);
  });
});

describe('several origins', () => {
  // Origins share a store on PostgreSQL (MetadataStore.sharedByOrigins): one lists what another heard.
  test.runIf(TEST_METADATA_POSTGRES)('an edge heard by one origin is listed by another sharing the store', async () => {
    const other = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '5000', COFFER_EDGE_TOKEN: edgeAuth.authorization!.slice(7), COFFER_ACCESS_KEY: o.key }, {
      clock, databaseUrl: o.databaseUrl!,
    });
    try {
      await ack('edge-shared');
      expect((await report(status('edge-shared', 'Shared'))).status).toBe(200);
      const listed = (await other.post('/collections/edges', {})).body.edges as any[];
      expect(listed.find((e) => e.id === 'edge-shared')).toMatchObject({ name: 'Shared', state: 'live', answering: true });
    } finally {
      await other.close();
    }
  });
});

describe('the OpenAPI document', () => {
  test('lists the call under "Edges" with its answer\'s fields', async () => {
    const doc = (await (await fetch(`${o.url}/openapi.json`)).json()) as any;
    const op = doc.paths['/collections/edges']?.post;
    expect(op?.tags).toEqual(['Edges']);
    const ok = op.responses['200'].content['application/json'].schema;
    expect(Object.keys(ok.properties)).toEqual(['head_seq', 'checked_at', 'edges']);
    expect(Object.keys(ok.properties.edges.items.properties)).toEqual(expect.arrayContaining([
      'id', 'name', 'parents', 'state', 'last_seen_at', 'lease_expires_at', 'applied_seq', 'feed_lag_events',
      'cache_used_bytes', 'cache_capacity_bytes', 'hit_ratio', 'requests', 'bytes_sent', 'fills', 'started_at',
    ]));
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403']));
    // The edges' own routes stay out of it.
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/_edge'))).toEqual([]);
  });
});

describe('a real edge', () => {
  // On the wall clock with a short lease: the edge runs its own timers in this process.
  let wall: TestOrigin;
  beforeAll(async () => {
    wall = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '1000' });
  });
  afterAll(async () => {
    await wall?.close();
  });
  const edges = async () => (await wall.post('/collections/edges', {})).body.edges as any[];

  test('reports itself with its name, is live, and is shown not answering once stopped', async () => {
    const running = await startTestEdge(wall, () => ({ COFFER_EDGE_NAME: 'Berlin' }));
    try {
      await running.edge.reportUsage();
      await eventually(async () => expect(await edges()).toMatchObject([{ name: 'Berlin', parents: [], state: 'live', answering: true, requests: 0, hit_ratio: null }]), { timeoutMs: 10_000 });
      // The SDK's edges() is the same list, typed.
      const berlin = (await createClient({ url: wall.url, accessKey: wall.key }).edges()).edges[0]!;
      expect(berlin).toMatchObject({ name: 'Berlin', state: 'live' });
      expect(berlin.cache_capacity_bytes).toBeGreaterThan(0);
      expect(Date.parse(berlin.started_at ?? '')).toBeLessThanOrEqual(Date.now());
    } finally {
      await running.close();
    }
    // Its lease (1 s) runs out; it stays listed, not answering.
    await eventually(async () => expect(await edges()).toMatchObject([{ name: 'Berlin', state: 'lapsed', answering: false }]), { timeoutMs: 15_000 });
  }, 30_000);
});
