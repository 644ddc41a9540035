/**
 * `coffer edges` (docs/api.md "Edges"): the built CLI in a child process against an origin in
 * this process on a clock moved by hand. Edges are played over HTTP with the edge token, so
 * one is live and one has stopped answering, exactly when the test says.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRunner, type CliResult, type CliRunner } from '../helpers/cli-run.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { ManualClock } from '../kit/index.js';

const clock = new ManualClock(Date.now());
const TOKEN = `cli-edges-token-${Math.random().toString(36).slice(2)}`;
let o: TestOrigin;
let root: string;

let cli: CliRunner;
const coffer = (args: string[], key?: string): Promise<CliResult> => cli.run(args, key === undefined ? {} : { key });
async function ok(args: string[]): Promise<CliResult> {
  const r = await cli.ok(args);
  expect(r.stdout).not.toMatch(/\x1b/);
  return r;
}

const asEdge = (path: string, body: unknown) => clock.flowUntil(o.post(path, body, { headers: { authorization: `Bearer ${TOKEN}` } }), 5);
const report = (id: string, name: string, over: Record<string, unknown> = {}) => asEdge('/_edge/usage', {
  files: {},
  edge: {
    id, name, parents: [], started_at: clock.now() - 60_000, seq: 0,
    cache: { used_bytes: 1288490189, capacity_bytes: 10 * 1024 ** 3 }, requests: 1234, hits: 3, misses: 1, bytes_sent: 5 * 1024 ** 2,
    fills: { parent: 0, origin: 1, failovers: 0, served_to_children: 0 }, ...over,
  },
});
const ack = (id: string) => asEdge('/_edge/ack', { edge: id, seq: 0 });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'coffer-cli-edges-'));
  o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '5000', COFFER_EDGE_TOKEN: TOKEN }, { clock });
  cli = cliRunner({ url: o.url, key: o.key, root });
});
afterAll(async () => {
  await o?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('coffer edges', () => {
  it('says so when no edge has been heard from, and how to start one', async () => {
    const r = await ok(['edges']);
    expect(r.stdout).toBe('No edge has been heard from in the last hour.\n');
    expect(r.stderr).toMatch(/coffer edge --origin URL/);
  });

  it('lists a live edge and marks one that stopped answering', async () => {
    await ack('edge-lyon');
    await report('edge-lyon', 'Lyon <b>evil</b>', { parents: ['http://paris.example:8081', 'http://rome.example:8081'] });
    // Lyon stops; Paris keeps acking and reporting while its lease runs out.
    for (let i = 0; i < 5; i++) {
      await clock.advance(2000);
      await ack('edge-paris');
    }
    await report('edge-paris', 'Paris');
    const r = await ok(['edges']);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+PARENT\s+STATE\s+LAST SEEN\s+LAG\s+CACHE\s+HIT\s+REQUESTS\s+SENT$/);
    expect(lines).toHaveLength(3);
    const lyon = lines.find((l) => l.startsWith('Lyon'))!;
    const paris = lines.find((l) => l.startsWith('Paris'))!;
    // A name is data: shown as written (control and text-direction characters never reach a report).
    expect(lyon).toContain('Lyon <b>evil</b>');
    expect(lyon).toContain('http://paris.example:8081 (+1)');
    expect(lyon).toMatch(/!! NOT ANSWERING \(lease lapsed\)/);
    expect(lyon).toMatch(/1[01] s ago/);
    expect(paris).toMatch(/^Paris\s+origin\s+live\s+0 s ago\s+0 ev\s+1\.2 GiB \/ 10\.0 GiB\s+75\.0%\s+1,234\s+5\.0 MiB$/);
    expect(r.stderr).toBe('2 edges, 1 not answering; feed head 0.\n');
  });

  it('--json prints the origin\'s answer', async () => {
    const r = await ok(['edges', '--json']);
    const body = JSON.parse(r.stdout);
    expect(body.head_seq).toBe(0);
    expect(body.edges.map((e: any) => [e.name, e.state, e.answering])).toEqual([['Lyon <b>evil</b>', 'lapsed', false], ['Paris', 'live', true]]);
    expect(body.edges[1]).toMatchObject({ cache_used_bytes: 1288490189, hit_ratio: 0.75, requests: 1234 });
  });

  it('refuses another key with what to do', async () => {
    const admin = await o.post('/collections/keys/create', { name: 'admin', scopes: ['read', 'write', 'admin'] });
    const r = await coffer(['edges'], admin.body.key);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^coffer: Only the root key lists the edges: set COFFER_ACCESS_KEY/);
  });

  it('--help explains the columns with examples', async () => {
    const r = await ok(['edges', '--help']);
    expect(r.stdout).toMatch(/coffer edges --json/);
    expect(r.stdout).toMatch(/NOT ANSWERING/);
  });
});
