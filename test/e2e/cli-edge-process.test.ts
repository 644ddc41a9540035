/**
 * `coffer edge` as an operator starts it (the built CLI, its own process, a real origin): its
 * options read without commander (cli/edge-args.ts) in both spellings and both forms, and
 * GET /metrics answered by an edge that loads prom-client only at its first scrape
 * (edge/metrics.ts), with what it counted before then and the token still checked first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonClient, upload, waitFor } from '../kit/index.js';

const MAIN = join(process.cwd(), 'dist', 'cli', 'main.js');
const KEY = `edge-process-key-${Math.random().toString(36).slice(2)}`;
const SECRET = `edge-process-secret-${Math.random().toString(36).slice(2)}`;
const EDGE_TOKEN = `edge-process-token-${Math.random().toString(36).slice(2)}`;
const METRICS_TOKEN = `edge-process-metrics-${Math.random().toString(36).slice(2)}`;
const children: ChildProcess[] = [];
let root: string;

/** Spawns the built CLI with only the COFFER_* settings given; resolves with the address it prints. */
function start(args: string[], env: Record<string, string>, line: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_')));
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start in time:\n${out}`)), 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = line.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited with ${code}:\n${out}`));
    });
  });
}

let origin: string;
let edge: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'coffer-edge-process-'));
  const common = { COFFER_HOST: '127.0.0.1', COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_METRICS_TOKEN: METRICS_TOKEN };
  origin = await start(['origin'], { ...common, COFFER_PORT: '0', COFFER_S3_PORT: '0', COFFER_ACCESS_KEY: KEY, COFFER_DATA_DIR: join(root, 'origin') },
    /^origin listening on (\S+)$/m);
  // Flags in both spellings and both forms; the port's environment variable is overridden.
  edge = await start(['edge', `--origin=${origin}`, '--coffer-edge-port', '0', '--data-dir', join(root, 'edge'), '--name=edge-process-test'],
    { ...common, COFFER_EDGE_PORT: '1' }, /^edge listening on (\S+)$/m);
}, 90_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  if (root) await rm(root, { recursive: true, force: true });
});

async function metricsText(token?: string): Promise<{ status: number; text: string; auth: string | null }> {
  const res = await fetch(`${edge}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, text: await res.text(), auth: res.headers.get('www-authenticate') };
}

/** The value of one sample line (`name{labels} value`), labels matched as written by prom-client. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  expect(line, `${name} with ${labels}`).toBeDefined();
  return Number(line!.slice(line!.lastIndexOf(' ') + 1));
}

describe('coffer edge, its own process', () => {
  it('takes its options in both spellings and forms, and reports its name to the origin', async () => {
    const client = jsonClient(origin, KEY);
    await waitFor(async () => {
      const r = await client.post('/collections/edges', {});
      return r.status === 200 && JSON.stringify(r.body).includes('edge-process-test');
    }, { what: 'the origin to list the edge by the name given with --name=', timeoutMs: 20_000 });
  }, 30_000);

  it('serves /metrics after serving files, loading its metrics library at the first scrape', async () => {
    const done = await upload(jsonClient(origin, KEY), Buffer.from('metrics after lazy loading'), { name: 'lazy.txt', file_type: 'document' });
    const path = new URL(done.delivery_url).pathname;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${edge}${path}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('metrics after lazy loading');
    }
    // The token is checked before anything is read, also at the very first scrape.
    const refused = await metricsText();
    expect(refused.status).toBe(401);
    expect(refused.auth).toBe('Bearer');
    expect(JSON.parse(refused.text).error.code).toBe('unauthorized');

    const first = await metricsText(METRICS_TOKEN);
    expect(first.status).toBe(200);
    // Answers counted before prom-client was loaded are all there.
    expect(sample(first.text, 'coffer_http_requests_total', 'route="/files/:id",method="GET",status="200"')).toBe(3);
    const hits = first.text.includes('result="hit"') ? sample(first.text, 'coffer_edge_cache_requests_total', 'result="hit"') : 0;
    const misses = first.text.includes('result="miss"') ? sample(first.text, 'coffer_edge_cache_requests_total', 'result="miss"') : 0;
    expect(hits + misses).toBe(3);
    expect(sample(first.text, 'coffer_unhandled_rejections_total', 'process="edge"')).toBe(0);
    expect(sample(first.text, 'coffer_edge_applied_seq', 'process="edge"')).toBeGreaterThan(0);
    // The process's CPU since it started, not since the first scrape: starting took some.
    expect(sample(first.text, 'coffer_process_cpu_seconds_total', 'process="edge"')).toBeGreaterThan(0.02);
    expect(first.text).toMatch(/^coffer_nodejs_heap_size_used_bytes\{process="edge"\} \d+/m);

    // A later scrape goes on from the first.
    await fetch(`${edge}${path}`);
    const second = await metricsText(METRICS_TOKEN);
    expect(second.status).toBe(200);
    expect(sample(second.text, 'coffer_http_requests_total', 'route="/files/:id",method="GET",status="200"')).toBe(4);
    expect(sample(second.text, 'coffer_http_requests_total', 'route="/metrics",method="GET",status="200"')).toBe(1);
  }, 60_000);
});
