/**
 * `coffer download` never writes outside its target directory, whatever the stored name:
 * the name is data and only picks a plain file name (separators and unsafe characters
 * become `_`, no leading dots or `~`, no device names, at most 200 bytes). Names the origin
 * accepts are uploaded to a real `coffer serve`; names it refuses (`/`, `..`, NUL, controls)
 * come from a hostile service, as a compromised or impersonated origin would send them.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient } from '../../src/sdk/index.js';
import { CLI, spawnCoffer, stopAll } from '../helpers/processes.js';
import { sha256 } from '../kit/index.js';

const KEY = 'download-key-' + randomBytes(8).toString('hex');
const SECRET = 'download-secret-' + randomBytes(8).toString('hex');

let root = '';
let origin = '';
let sdk: CofferClient;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'coffer-cli-download-'));
  const service = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, 'data'), COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET, COFFER_LOG_LEVEL: 'warn' },
  });
  await service.ready;
  origin = /origin listening on (http:\/\/\S+)/.exec(service.stdout())![1]!;
  sdk = new CofferClient({ url: origin, accessKey: KEY });
});

afterAll(async () => {
  await stopAll();
  if (root) await rm(root, { recursive: true, force: true });
});

interface Run { code: number | null; stdout: string; stderr: string }

function coffer(args: string[], cwd: string, url = origin): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('COFFER_')) env[k] = v;
  Object.assign(env, { COFFER_URL: url, COFFER_ACCESS_KEY: KEY, XDG_STATE_HOME: join(root, 'state') });
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => !e.isDirectory()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

/** A box holding an empty `target` directory, with `box/deep/er` to start relative escapes from. */
async function box(name: string): Promise<{ box: string; target: string; cwdTarget: string }> {
  const b = join(root, name);
  const target = join(b, 'deep', 'er', 'target');
  const cwdTarget = join(b, 'deep', 'er', 'cwd');
  await mkdir(target, { recursive: true });
  await mkdir(cwdTarget, { recursive: true });
  return { box: b, target, cwdTarget };
}

const LONG = 'n'.repeat(251) + '.txt';
/** Names the origin stores, and the name each is saved under. */
const STORED: Array<[string, string | 'id']> = [
  ['..\\..\\evil.txt', '_.._evil.txt'],
  ['C:\\Windows\\win.ini', 'C__Windows_win.ini'],
  ['C:evil.txt', 'C_evil.txt'],
  ['..x', 'x'],
  ['...', 'id'],
  ['~', 'id'],
  ['~root.txt', 'root.txt'],
  ['.bashrc', 'bashrc'],
  ['CON', '_CON'],
  ['nul.txt', '_nul.txt'],
  ['stream:$DATA', 'stream_$DATA'],
  ['trailing. . ', 'trailing'],
  ['\u202Etxt.exe', '_txt.exe'],
  ['report\u0085.pdf', 'report_.pdf'],
  [LONG, 'n'.repeat(196) + '.txt'],
  ['plain name.txt', 'plain name.txt'],
];

describe('coffer download and hostile names', () => {
  it('saves every name the origin accepts as one safe file directly inside the target, with -o DIR and in the working directory', async () => {
    const { box: b, target, cwdTarget } = await box('stored');
    const uploaded = await Promise.all(STORED.map(async ([name, saved]) => {
      const bytes = randomBytes(1000 + Math.floor(Math.random() * 1000));
      const file = await sdk.uploadFile(bytes, { name, visibility: 'Private' });
      return { file, bytes, saved: saved === 'id' ? file.file_id : saved };
    }));
    for (const u of uploaded) {
      const intoDir = await coffer(['download', u.file.file_id, '-o', target], b);
      expect(intoDir.code, `${JSON.stringify(u.file.name)}: ${intoDir.stderr}`).toBe(0);
      expect(intoDir.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202e]/);
      const inCwd = await coffer(['download', u.file.file_id], cwdTarget);
      expect(inCwd.code, `${JSON.stringify(u.file.name)}: ${inCwd.stderr}`).toBe(0);
    }
    for (const dir of [target, cwdTarget]) {
      for (const u of uploaded) {
        expect(sha256(await readFile(join(dir, u.saved))), `${JSON.stringify(u.file.name)} saved as ${u.saved}`).toBe(sha256(u.bytes));
      }
    }
    const expected = uploaded.map((u) => u.saved).sort();
    expect(await filesUnder(target)).toEqual(expected);
    expect(await filesUnder(cwdTarget)).toEqual(expected);
    // Nothing anywhere else in the box.
    expect((await filesUnder(b)).filter((p) => !p.startsWith('deep/er/target/') && !p.startsWith('deep/er/cwd/'))).toEqual([]);
  });

  it('keeps names a hostile service sends (/, .., NUL, controls, absolute paths) inside the target', async () => {
    const bytes = randomBytes(4096);
    const tag = randomBytes(6).toString('hex');
    const names = [
      '../../escaped.txt', `../../../../../../../../../../../../tmp/escaped-abs-${tag}.txt`, `/tmp/escaped-abs2-${tag}.txt`, '/etc/escaped', 'a/../../escaped2', '..', '.', '',
      'nul\u0000byte.txt', '\x1b[2J\x1b]0;pwned\x07name.txt', '..\\../..\\escaped3', 'sub/dir/file.txt',
    ];
    const ids = names.map((_, i) => `hostile${String(i).padStart(9, '0')}`);
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const address = server.address() as AddressInfo;
        const id = req.url === '/collections/file/get' || req.url === '/collections/file/download' ? (JSON.parse(body) as { file_id: string }).file_id : '';
        const index = ids.indexOf(id);
        if (req.method === 'POST' && req.url === '/collections/file/get' && index >= 0) {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({
            file_id: id, name: names[index], size: bytes.length, sha256: sha256(bytes), status: 'ready', visibility: 'Public', folder_id: null,
            file_type: 'other', content_type: 'application/octet-stream', created_at: new Date().toISOString(), updated_at: new Date().toISOString(),
          }));
        } else if (req.method === 'POST' && req.url === '/collections/file/download' && index >= 0) {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ download_url: `http://127.0.0.1:${address.port}/bytes`, expires_at: new Date(Date.now() + 60_000).toISOString() }));
        } else if (req.method === 'GET' && req.url === '/bytes') {
          res.end(bytes);
        } else {
          res.statusCode = 404;
          res.end('{"error":{"code":"not_found","message":"no","details":{}}}');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { box: b, target, cwdTarget } = await box('hostile');
      for (const id of ids) {
        const intoDir = await coffer(['download', id, '-o', target], b, url);
        expect(intoDir.code, intoDir.stderr).toBe(0);
        expect(intoDir.stderr).not.toMatch(/\x1b|\x07/);
        const inCwd = await coffer(['download', id], cwdTarget, url);
        expect(inCwd.code, inCwd.stderr).toBe(0);
      }
      // One file per name, each directly inside its directory, none anywhere else.
      for (const dir of [target, cwdTarget]) {
        const saved = await filesUnder(dir);
        expect(saved.length).toBe(names.length);
        for (const f of saved) {
          expect(f).not.toContain('/');
          expect(f.startsWith('.')).toBe(false);
          expect(sha256(await readFile(join(dir, f)))).toBe(sha256(bytes));
        }
      }
      expect((await filesUnder(b)).filter((p) => !p.startsWith('deep/er/target/') && !p.startsWith('deep/er/cwd/'))).toEqual([]);
      expect(existsSync(`/tmp/escaped-abs-${tag}.txt`)).toBe(false);
      expect(existsSync(`/tmp/escaped-abs2-${tag}.txt`)).toBe(false);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
