/**
 * Usage and the access log (contract §11): an edge reports what it served in batches, the
 * origin sums it per file and day (file/get's downloads and bytes_served, /collections/usage),
 * and the edge writes one JSON line per request when COFFER_EDGE_ACCESS_LOG is set.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { startLoggingEdge, type LoggingEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';

let o: TestOrigin;
let logging: LoggingEdge;
let edge: RunningEdge;
let logPath: string;
beforeAll(async () => {
  o = await startTestOrigin();
  logging = await startLoggingEdge(o);
  ({ edge, logPath } = logging);
});
afterAll(async () => {
  await logging?.close();
  await o?.close();
});

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${edge.url}${path}`, { headers });
  await res.arrayBuffer();
  return res.status;
};

test('downloads and bytes reach file/get and the daily totals; the access log has a line per request', async () => {
  const bytes = Buffer.alloc(10_000, 3);
  const f = await uploadBytes(o, bytes, { name: 'counted.bin' });
  const before = (await o.post('/collections/usage', {})).body.days.at(-1);
  expect(await get(`/files/${f.file_id}`)).toBe(200);
  expect(await get(`/files/${f.file_id}`)).toBe(200);
  expect(await get(`/files/${f.file_id}`, { range: 'bytes=0-99' })).toBe(206);
  expect(await get(`/files/${f.file_id}`, { 'if-none-match': `"${f.sha256}"` })).toBe(304);
  expect(await get('/files/unknown-file')).toBe(404);
  // Answers are counted as they end on the edge's side, a moment after the client has them.
  await new Promise((r) => setTimeout(r, 100));
  await edge.reportUsage();

  const got = await o.post('/collections/file/get', { file_id: f.file_id });
  expect(got.body).toMatchObject({ downloads: 3, bytes_served: 20_100 });
  const days = (await o.post('/collections/usage', { days: 7 })).body.days;
  expect(days).toHaveLength(7);
  expect(days.at(-1).date).toBe(new Date().toISOString().slice(0, 10));
  expect(days.at(-1).bytes - (before?.bytes ?? 0)).toBe(20_100);
  expect(days.at(-1).downloads - (before?.downloads ?? 0)).toBe(3);
  expectError(await o.post('/collections/usage', { days: 0 }), 400, 'invalid_days');

  // The log is written in batches: within a flush interval.
  let lines: any[] = [];
  for (let i = 0; i < 40 && lines.length < 5; i++) {
    await new Promise((r) => setTimeout(r, 50));
    lines = (await readFile(logPath, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }
  const mine = lines.filter((l) => l.file_id === f.file_id);
  expect(mine.map((l) => l.status)).toEqual([200, 200, 206, 304]);
  expect(mine[0]).toMatchObject({ method: 'GET', bytes: 10_000, complete: true, client: '127.0.0.1', range: null });
  expect(mine[0].cache === 'HIT' || mine[0].cache === 'MISS').toBe(true);
  expect(typeof mine[0].duration_ms).toBe('number');
  expect(Date.parse(mine[0].time)).toBeGreaterThan(0);
  expect(mine[2]).toMatchObject({ bytes: 100, range: 'bytes=0-99' });
  expect(lines.some((l) => l.status === 404 && l.file_id === 'unknown-file')).toBe(true);
});

test('an edge\'s usage report is checked like any edge call', async () => {
  const post = (body: unknown, token = o.origin.credentials.edgeTokens[0]) => fetch(`${o.url}/_edge/usage`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  expect((await post({ files: { abc: [1, 10] } }, 'not-the-token')).status).toBe(401);
  expect((await post({ files: { abc: [-1, 10] } })).status).toBe(400);
  expect((await post({ files: { abc: [1] } })).status).toBe(400);
  expect((await post({ files: [] })).status).toBe(400);
  expect((await post({ files: { 'a/b': [1, 1] } })).status).toBe(400);
  expect((await post({ files: { abc: [1, 10] } })).status).toBe(200);
});
