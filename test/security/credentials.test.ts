/**
 * The edges' credential is their own: never derived from the signing secret (which
 * application servers hold to sign links), generated on the first start beside the key,
 * kept in credentials.json (0600), and a list of them rotates. An edge without one does not start.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { jsonClient, sha256, upload } from '../kit/index.js';

/** What edges used to present: HMAC-SHA256 of "coffer-edge" under the signing secret. */
const derivedToken = (secret: string): string => createHmac('sha256', secret).update('coffer-edge').digest('base64url');

const dirs: string[] = [];
const origins: TestOrigin[] = [];
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
async function origin(settings: Parameters<typeof startTestOrigin>[0] = {}): Promise<TestOrigin> {
  const o = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn', ...settings });
  origins.push(o);
  return o;
}

afterAll(async () => {
  await stopAll();
  await Promise.all(origins.map((o) => o.close()));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The status the feed answers with `token`; a stream that opens is closed at once. */
async function feedStatus(o: TestOrigin, token: string): Promise<number> {
  const controller = new AbortController();
  const res = await fetch(`${o.url}/_edge/feed?after=0&edge=cred-test`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  controller.abort();
  await res.body?.cancel().catch(() => {});
  return res.status;
}
async function snapshotStatus(o: TestOrigin, token: string): Promise<number> {
  const res = await fetch(`${o.url}/_edge/snapshot`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('the edge credential', () => {
  it('refuses the token derived from the signing secret, on the feed and on the bytes', async () => {
    const o = await origin();
    const file = await uploadBytes(o, Buffer.from('only edges read this'), { visibility: 'Private' });
    const old = derivedToken(o.secret);
    expect(await feedStatus(o, old)).toBe(401);
    expect(await snapshotStatus(o, old)).toBe(401);
    const blob = await fetch(`${o.url}/_edge/blob/${file.file_id}`, { headers: { authorization: `Bearer ${old}` } });
    expect(blob.status).toBe(401);
    await blob.arrayBuffer();
    // The origin's own token works, and is none of the other credentials.
    const [token] = o.origin.credentials.edgeTokens;
    expect(token).toBeTruthy();
    expect([o.key, o.secret, old]).not.toContain(token);
    expect(await feedStatus(o, token!)).toBe(200);
  });

  it('is generated on the first start, printed once, kept in credentials.json (0600), and works for an edge', async () => {
    const root = await tempDir('coffer-cred-first-');
    const dataDir = join(root, 'origin');
    const env = { COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_CDN_URL: 'http://cdn.test', COFFER_LOG_LEVEL: 'warn' };
    const first = spawnCoffer({ kind: 'origin', name: 'origin', args: ['origin'], env });
    const url = await first.ready;
    const printed = /COFFER_EDGE_TOKEN=(\S+)/.exec(first.stdout())?.[1];
    expect(printed).toMatch(/^coffer_edge_[A-Za-z0-9_-]{20,}$/);
    const creds = join(dataDir, 'credentials.json');
    expect((await stat(creds)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(creds, 'utf8')) as Record<string, string>;
    expect(stored.edge_token).toBe(printed);
    expect(stored.edge_token).not.toBe(derivedToken(stored.signing_secret!));

    const edge = spawnCoffer({
      kind: 'edge', name: 'edge', args: ['edge', '--origin', url],
      env: { COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, 'edge'), COFFER_SIGNING_SECRET: stored.signing_secret, COFFER_EDGE_TOKEN: printed, COFFER_LOG_LEVEL: 'warn' },
    });
    const edgeUrl = await edge.ready;
    const bytes = randomBytes(3000);
    const rec = await upload(jsonClient(url, stored.access_key!), bytes, { name: 'a.bin' });
    const delivered = await fetch(`${edgeUrl}/files/${rec.file_id}`);
    expect(delivered.status).toBe(200);
    expect(sha256(Buffer.from(await delivered.arrayBuffer()))).toBe(sha256(bytes));
    await edge.stop();
    await first.stop();

    // A second start reuses it and prints nothing.
    const second = spawnCoffer({ kind: 'origin', name: 'origin again', args: ['origin'], env });
    await second.ready;
    expect(second.stdout()).not.toContain('COFFER_EDGE_TOKEN=');
    expect(JSON.parse(await readFile(creds, 'utf8'))).toEqual(stored);
    await second.stop();
  });

  it('is added to a credentials.json written before edge tokens existed, keeping the rest', async () => {
    const dataDir = await tempDir('coffer-cred-upgrade-');
    const creds = join(dataDir, 'credentials.json');
    const before = { access_key: 'old-key-' + randomBytes(6).toString('hex'), signing_secret: 'old-secret-' + randomBytes(6).toString('hex') };
    await writeFile(creds, JSON.stringify(before), { mode: 0o600 });
    const o = await startTestOrigin({ COFFER_DATA_DIR: dataDir, COFFER_LOG_LEVEL: 'warn' });
    origins.push(o);
    const after = JSON.parse(await readFile(creds, 'utf8')) as Record<string, string>;
    expect(after).toMatchObject(before);
    expect(after.edge_token).toMatch(/^coffer_edge_/);
    expect(o.origin.credentials.edgeTokens).toEqual([after.edge_token]);
    expect((await stat(creds)).mode & 0o777).toBe(0o600);
    // Written in one step: no temporary file is left beside it.
    expect((await readdir(dataDir)).filter((n) => n.startsWith('credentials.json.'))).toEqual([]);
    expect(await feedStatus(o, after.edge_token!)).toBe(200);
  });

  it('accepts every token of a list; an edge presents the first', async () => {
    const next = 'next-' + randomBytes(12).toString('hex');
    const previous = 'previous-' + randomBytes(12).toString('hex');
    const o = await origin({ COFFER_EDGE_TOKEN: `${next},${previous}` });
    expect(await feedStatus(o, next)).toBe(200);
    expect(await feedStatus(o, previous)).toBe(200);
    expect(await snapshotStatus(o, previous)).toBe(200);
    expect(await feedStatus(o, 'neither-' + randomBytes(8).toString('hex'))).toBe(401);

    // Edges in the middle of a rotation: one still on the old token, one already on the new.
    const root = await tempDir('coffer-cred-rotate-');
    const edgeEnv = (name: string, token: string) => ({
      COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, name), COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: token, COFFER_LOG_LEVEL: 'warn',
    });
    const onOld = spawnCoffer({ kind: 'edge', name: 'edge on the old token', args: ['edge', '--origin', o.url], env: edgeEnv('old', previous) });
    // The first of the edge's list is what it sends: a list starting with an unknown token fails.
    const wrongFirst = spawnCoffer({
      kind: 'edge', name: 'edge sending an unknown token', args: ['edge', '--origin', o.url],
      env: edgeEnv('wrong', `unknown-${randomBytes(6).toString('hex')},${next}`), readyTimeoutMs: 4000,
    });
    const onNew = spawnCoffer({ kind: 'edge', name: 'edge on the new token', args: ['edge', '--origin', o.url], env: edgeEnv('new', `${next},${previous}`) });
    await Promise.all([onOld.ready, onNew.ready]);
    await expect(wrongFirst.ready).rejects.toThrow();
    await Promise.all([onOld.stop(), onNew.stop(), wrongFirst.stop('SIGKILL')]);
  });

  it('an edge started without COFFER_EDGE_TOKEN exits non-zero, says where to find it, and creates nothing', async () => {
    const root = await tempDir('coffer-cred-none-');
    const cache = join(root, 'edge-cache');
    const proc = spawnCoffer({
      kind: 'edge', name: 'edge without a token', args: ['edge', '--origin', 'http://127.0.0.1:9'],
      env: { COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: cache, COFFER_SIGNING_SECRET: 's-' + randomBytes(6).toString('hex') },
    });
    const timer = setTimeout(() => void proc.stop('SIGKILL'), 10_000);
    const exit = await proc.exited;
    clearTimeout(timer);
    expect(exit.signal).toBeNull();
    expect(exit.code).not.toBe(0);
    expect(proc.stderr()).toMatch(/COFFER_EDGE_TOKEN/);
    expect(proc.stderr()).toMatch(/credentials\.json/);
    expect(proc.stderr()).toMatch(/first start/);
    expect(existsSync(cache)).toBe(false);
  });
});
