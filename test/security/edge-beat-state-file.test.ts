/**
 * A real edge's `edge-state.json` (src/edge/state-file.ts on the follower's beat): written at
 * start over whatever an earlier run or an intruder left there, kept current at the beat, written
 * last at close, and a restarted edge over the same directory starts and writes it again. A
 * symlink planted at the temporary name is never written through.
 */
import { mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startEdge, type RunningEdge } from '../../src/edge/server.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';

let o: TestOrigin;
let dir: string;
let edge: RunningEdge | undefined;

const start = (): Promise<RunningEdge> => startEdge(loadConfig({}, {
  COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dir, COFFER_SIGNING_SECRET: o.secret, COFFER_LOG_LEVEL: 'warn',
  COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0],
}), o.url, { cacheDir: dir, logStream: new Writable({ write(_c, _e, cb) { cb(); } }) });

const saved = async () => JSON.parse(await readFile(join(dir, 'edge-state.json'), 'utf8').catch(() => 'null')) as { origin: string; seq: number } | null;

beforeAll(async () => {
  o = await startTestOrigin();
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-beat-state-'));
});

afterAll(async () => {
  await edge?.close();
  await o?.close();
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
});

it('keeps edge-state.json current from start to close and again after a restart, through a planted symlink', { timeout: 60_000 }, async () => {
  const victim = join(dir, 'victim');
  await writeFile(victim, 'keep me\n');
  await writeFile(join(dir, 'edge-state.json'), 'not json at all');
  await symlink(victim, join(dir, 'edge-state.json.tmp'));

  edge = await start();
  const running = edge;
  expect(await saved()).toEqual({ origin: expect.any(String), seq: running.state.seq });
  expect(await readFile(victim, 'utf8')).toBe('keep me\n');

  // A change: saved at a later beat (a fifth of the 5 s lease).
  const before = running.state.seq;
  expect((await o.post('/collections/folder/create', { name: 'beat-state', visibility: 'Private' })).status).toBe(200);
  await expect.poll(() => running.state.seq, { timeout: 20_000 }).toBeGreaterThan(before);
  await expect.poll(async () => (await saved())?.seq, { timeout: 20_000 }).toBe(running.state.seq);

  // Another change, then close at once: close writes it, not a beat.
  const second = running.state.seq;
  expect((await o.post('/collections/folder/create', { name: 'beat-state-2', visibility: 'Private' })).status).toBe(200);
  await expect.poll(() => running.state.seq, { timeout: 20_000 }).toBeGreaterThan(second);
  const last = running.state.seq;
  await running.close();
  edge = undefined;
  expect((await saved())?.seq).toBeGreaterThanOrEqual(last);
  expect((await readdir(dir)).filter((n) => n.startsWith('edge-state'))).toEqual(['edge-state.json']);

  // A restart over the same directory: starts, and writes the file again at once.
  await rm(join(dir, 'edge-state.json'));
  edge = await start();
  expect((await saved())?.seq).toBe(edge.state.seq);
  expect(edge.state.seq).toBeGreaterThanOrEqual(last);
  expect(await readFile(victim, 'utf8')).toBe('keep me\n');
});
