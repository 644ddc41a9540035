/**
 * GET /metrics on the origin and an edge (contract §11): Prometheus text that a parser reads,
 * the series the contract lists, counters that move as requests are made, labels from
 * bounded sets (no file ids), and COFFER_METRICS_TOKEN guarding both when set.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';

const require = createRequire(import.meta.url);
const parsePrometheusTextFormat = require('parse-prometheus-text-format') as (text: string) => Array<{
  name: string;
  type: string;
  metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string }>;
}>;

type Families = Map<string, ReturnType<typeof parsePrometheusTextFormat>[number]>;

async function scrape(url: string, token?: string): Promise<Families> {
  const res = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
}

/** The sum of a family's samples whose labels include `labels`. */
function total(families: Families, name: string, labels: Record<string, string> = {}): number {
  const f = families.get(name);
  if (!f) return 0;
  return f.metrics
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
    .reduce((sum, s) => sum + Number(s.value ?? s.count ?? s.buckets?.['+Inf'] ?? 0), 0);
}


describe('metrics', () => {
  let o: TestOrigin;
  let running: TestEdge;
  let edge: RunningEdge;
  beforeAll(async () => {
    o = await startTestOrigin();
    running = await startTestEdge(o);
    edge = running.edge;
  });
  afterAll(async () => {
    await running?.close();
    await o?.close();
  });

  test('the origin counts requests by route and status, parts, open uploads, edges\' lag and change waits', async () => {
    const before = await scrape(o.url);
    for (const name of ['coffer_http_requests_total', 'coffer_http_request_duration_seconds', 'coffer_http_received_bytes_total', 'coffer_uploads_open',
      'coffer_upload_parts_written_total', 'coffer_edge_feed_lag_events', 'coffer_change_ack_seconds', 'coffer_webhook_deliveries_total', 'coffer_process_resident_memory_bytes']) {
      expect(before.has(name), name).toBe(true);
    }
    const f = await uploadBytes(o, Buffer.from('count me'), { name: 'm.txt' });
    await o.post('/collections/upload/file', { name: 'open.bin', visibility: 'Public', size: 1, file_type: 'other' });
    await o.post('/collections/file/get', { file_id: 'nope' });
    const after = await scrape(o.url);
    const route = (r: string, status: string) => total(after, 'coffer_http_requests_total', { route: r, status }) - total(before, 'coffer_http_requests_total', { route: r, status });
    expect(route('/collections/upload/file', '200')).toBe(2);
    expect(route('/collections/upload/file-progress', '200')).toBe(1);
    expect(route('/collections/file/get', '404')).toBe(1);
    expect(total(after, 'coffer_upload_parts_written_total') - total(before, 'coffer_upload_parts_written_total')).toBe(1);
    expect(total(after, 'coffer_uploads_open')).toBe(total(before, 'coffer_uploads_open') + 1);
    expect(total(after, 'coffer_change_ack_seconds')).toBeGreaterThan(total(before, 'coffer_change_ack_seconds'));
    // One lag series per edge, labelled by the edge's id; none by file.
    expect(after.get('coffer_edge_feed_lag_events')!.metrics.length).toBe(1);
    const text = await (await fetch(`${o.url}/metrics`)).text();
    expect(text).not.toContain(f.file_id);
  });

  test('the edge counts answers, cache hits and misses, bytes, and its feed lag', async () => {
    const bytes = Buffer.alloc(5000, 7);
    const f = await uploadBytes(o, bytes, { name: 'e.bin' });
    const before = await scrape(edge.url);
    for (const name of ['coffer_edge_cache_requests_total', 'coffer_edge_cache_bytes', 'coffer_edge_cache_evictions_total', 'coffer_edge_cache_broken_copies_total', 'coffer_edge_fills_total', 'coffer_edge_fill_failovers_total', 'coffer_edge_fills_served_to_children_total', 'coffer_edge_feed_lag_events', 'coffer_http_sent_bytes_total']) {
      expect(before.has(name), name).toBe(true);
    }
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${edge.url}/files/${f.file_id}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    }
    const missing = await fetch(`${edge.url}/files/unknown`);
    expect(missing.status).toBe(404);
    await missing.arrayBuffer();
    // An answer is counted when it has ended on the edge's side, a moment after the client has it.
    await new Promise((r) => setTimeout(r, 100));
    const after = await scrape(edge.url);
    const moved = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
    expect(moved('coffer_http_requests_total', { route: '/files/:id', status: '200' })).toBe(3);
    expect(moved('coffer_http_requests_total', { route: '/files/:id', status: '404' })).toBe(1);
    expect(moved('coffer_edge_cache_requests_total')).toBe(3);
    expect(moved('coffer_http_sent_bytes_total', { route: '/files/:id' })).toBeGreaterThanOrEqual(3 * 5000);
    expect(total(after, 'coffer_edge_cache_bytes')).toBeGreaterThanOrEqual(5000);
    expect(total(after, 'coffer_edge_feed_lag_events')).toBeGreaterThanOrEqual(0);
    const text = await (await fetch(`${edge.url}/metrics`)).text();
    expect(text).not.toContain(f.file_id);
  });
});

describe('COFFER_METRICS_TOKEN', () => {
  test('guards /metrics on the origin and the edge when set', async () => {
    const o = await startTestOrigin({ COFFER_METRICS_TOKEN: 'scrape-me' });
    const running = await startTestEdge(o, () => ({ COFFER_METRICS_TOKEN: 'scrape-me' }));
    const edge = running.edge;
    try {
      for (const url of [o.url, edge.url]) {
        const missing = await fetch(`${url}/metrics`);
        expect(missing.status).toBe(401);
        // The origin and the edge answer with the same error of the table (core/error-codes.ts).
        expect((await missing.json()).error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('COFFER_METRICS_TOKEN') });
        const wrong = await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer wrong' } });
        expect(wrong.status).toBe(401);
        expect(wrong.headers.get('content-type')).toMatch(/^application\/json/);
        await wrong.body?.cancel();
        expect((await scrape(url, 'scrape-me')).has('coffer_http_requests_total')).toBe(true);
      }
    } finally {
      await running.close();
      await o.close();
    }
  });
});
