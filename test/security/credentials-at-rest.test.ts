/**
 * Data at rest is the owner's alone: an origin and an edge started as processes on fresh
 * directories leave the data dir and the edge's cache dir 0700, and every file in them
 * (the SQLite file and its -wal and -shm, credentials.json, blobs, cached copies) 0600 or
 * narrower. A directory that already exists with a looser mode is left alone, with a warning.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { jsonClient, sha256, upload as uploadBytes } from '../kit/index.js';

const KEY = 'at-rest-key-' + randomBytes(8).toString('hex');
const SECRET = 'at-rest-secret-' + randomBytes(8).toString('hex');
const mode = async (path: string): Promise<string> => ((await stat(path)).mode & 0o777).toString(8);

const dirs: string[] = [];
afterAll(async () => {
  await stopAll();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The mode, or null for a file renamed or removed since it was listed (a state file's `.tmp`). */
async function modeIfThere(path: string): Promise<string | null> {
  try {
    return await mode(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Every file and directory under `dir`, with its mode in octal. */
async function modesUnder(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const m = await modeIfThere(path);
    if (m !== null) out[relative(dir, path)] = m;
  }
  return out;
}

async function upload(url: string, bytes: Buffer, visibility: 'Public' | 'Private'): Promise<string> {
  return (await uploadBytes(jsonClient(url, KEY), bytes, { name: 'r.bin', visibility })).file_id;
}

describe('data at rest', () => {
  it('origin and edge processes keep their directories 0700 and their files 0600', async () => {
    const root = await mkdtemp(join(tmpdir(), 'coffer-at-rest-'));
    dirs.push(root);
    // Neither directory exists yet: the processes create them.
    const dataDir = join(root, 'srv', 'data');
    const cacheDir = join(root, 'edge', 'cache');
    const origin = spawnCoffer({
      kind: 'origin', name: 'origin', args: ['origin'],
      env: { COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_SIGNING_SECRET: SECRET, COFFER_ACCESS_KEY: KEY, COFFER_CDN_URL: 'http://cdn.test', COFFER_LOG_LEVEL: 'warn' },
    });
    const url = await origin.ready;
    // The origin generated the edge token: read it back the way an operator would.
    const creds = JSON.parse(await readFile(join(dataDir, 'credentials.json'), 'utf8')) as { edge_token: string };
    const edge = spawnCoffer({
      kind: 'edge', name: 'edge', args: ['edge', '--origin', url],
      env: { COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: cacheDir, COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: creds.edge_token, COFFER_LOG_LEVEL: 'warn' },
    });
    const edgeUrl = await edge.ready;

    const bytes = randomBytes(70_000);
    const id = await upload(url, bytes, 'Public');
    const res = await fetch(`${edgeUrl}/files/${id}`);
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(bytes));
    // The copy is kept once it has been served from the cache.
    for (let i = 0; i < 50; i++) {
      const head = await fetch(`${edgeUrl}/files/${id}`, { method: 'HEAD' });
      if (head.headers.get('x-cache') === 'HIT') break;
      await new Promise((r) => setTimeout(r, 100));
    }

    expect(await mode(dataDir)).toBe('700');
    expect(await mode(join(root, 'srv'))).toBe('700');
    expect(await mode(cacheDir)).toBe('700');
    const data = await modesUnder(dataDir);
    expect(data['credentials.json']).toBe('600');
    for (const f of ['coffer.sqlite', 'coffer.sqlite-wal', 'coffer.sqlite-shm']) expect(data[f], f).toBe('600');
    const cache = await modesUnder(cacheDir);
    expect(Object.keys(cache).length).toBeGreaterThan(1);
    // Every entry of either tree: directories 0700, files 0600.
    const loose = Object.entries({ ...data, ...Object.fromEntries(Object.entries(cache).map(([k, v]) => [`cache:${k}`, v])) })
      .filter(([, m]) => (parseInt(m, 8) & 0o077) !== 0);
    expect(loose).toEqual([]);
    // At least one blob file and one cached copy were checked.
    const files = async (dir: string) => (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    const blobFileList = await files(join(dataDir, 'blobs'));
    expect(blobFileList.length).toBeGreaterThan(0);
    for (const f of blobFileList) expect(await modeIfThere(f), f).toBe('600');
    const cached = await files(cacheDir);
    expect(cached.length).toBeGreaterThan(0);
    for (const f of cached) expect(['600', null], f).toContain(await modeIfThere(f));

    await edge.stop();
    await origin.stop();
  });

  it('leaves an existing data directory as it is and warns when others may enter it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'coffer-at-rest-open-'));
    dirs.push(root);
    const dataDir = join(root, 'shared');
    await mkdir(dataDir);
    await chmod(dataDir, 0o755);
    const origin = spawnCoffer({
      kind: 'origin', name: 'origin', args: ['origin'],
      env: { COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_SIGNING_SECRET: SECRET, COFFER_ACCESS_KEY: KEY, COFFER_LOG_LEVEL: 'warn' },
    });
    await origin.ready;
    expect(origin.stdout() + origin.stderr()).toContain(`chmod 700 ${dataDir}`);
    expect(await mode(dataDir)).toBe('755');
    // What it writes itself is still the owner's alone.
    expect(await mode(join(dataDir, 'credentials.json'))).toBe('600');
    expect(await mode(join(dataDir, 'coffer.sqlite'))).toBe('600');
    await origin.stop();
  });
});
