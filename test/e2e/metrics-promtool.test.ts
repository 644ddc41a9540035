/**
 * The origin's and an edge's GET /metrics pass `promtool check metrics` (Debian's `prometheus`
 * package, which scripts/prerequisites.mjs installs) with no warning: counters end in `_total`,
 * nothing else does, units are base units. Traffic first, so that every labelled family and
 * histogram has samples for promtool to read.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { solidImage } from '../helpers/images.js';

const PROMTOOL = '/usr/bin/promtool';

/** promtool's exit code and everything it printed for `text` on its standard input. */
function promtool(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(PROMTOOL, ['check', 'metrics'], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
    child.on('error', reject);
    child.stdin!.end(text);
  });
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('promtool check metrics', () => {
  let o: TestOrigin;
  let running: TestEdge;

  beforeAll(async () => {
    expect(existsSync(PROMTOOL), `${PROMTOOL} is missing: install the Debian package "prometheus" (npm test does, as root)`).toBe(true);
    o = await startTestOrigin();
    running = await startTestEdge(o);
    const file = await uploadBytes(o, Buffer.from('measured'), { name: 'm.txt' });
    const image = await uploadBytes(o, await solidImage('png', 16, 16), { name: 'm.png', file_type: 'image', content_type: 'image/png' });
    await o.post('/collections/file/get', { file_id: 'nope' });
    for (const path of [`/files/${file.file_id}`, `/files/${file.file_id}`, `/files/${image.file_id}?w=8&format=webp`, '/files/nope']) {
      await (await fetch(`${running.edge.url}${path}`)).arrayBuffer();
    }
  });

  afterAll(async () => {
    await running?.close();
    await o?.close();
  });

  test('the origin\'s metrics have no problem and no warning', async () => {
    const text = await scrape(o.url);
    expect(text).toContain('coffer_http_request_duration_seconds_bucket');
    const r = await promtool(text);
    expect(r.output, 'promtool check metrics on the origin').toBe('');
    expect(r.code).toBe(0);
  });

  test('the edge\'s metrics have no problem and no warning', async () => {
    const text = await scrape(running.edge.url);
    expect(text).toContain('coffer_edge_cache_requests_total{');
    expect(text).toContain('coffer_edge_variants_made_total');
    const r = await promtool(text);
    expect(r.output, 'promtool check metrics on the edge').toBe('');
    expect(r.code).toBe(0);
  });
});
