/** The processes as an operator starts them: `coffer serve`, `origin`, `edge`. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, stat, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonClient, upload } from '../kit/index.js';

const MAIN = join(process.cwd(), 'dist', 'cli', 'main.js');
const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  out: () => string;
  lines: Record<string, string>;
}

/** Spawns coffer and waits for the listening lines named. */
function start(args: string[], env: Record<string, string>, want: string[]): Promise<Started> {
  return new Promise((resolve, reject) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_')));
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    const lines: Record<string, string> = {};
    const timer = setTimeout(() => reject(new Error(`no listening lines in time:\n${out}`)), 20_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      for (const m of out.matchAll(/^(origin|edge|s3) listening on (\S+)$/gm)) lines[m[1]!] = m[2]!;
      if (want.every((w) => lines[w])) {
        clearTimeout(timer);
        resolve({ child, out: () => out, lines });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${out}`));
    });
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('coffer processes', () => {
  it('serve starts an origin and an edge, generates credentials once with mode 0600, and stops on SIGTERM', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-cli-'));
    dirs.push(dataDir);
    const env = { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_S3_PORT: '0', COFFER_DATA_DIR: dataDir };
    const first = await start(['serve'], env, ['origin', 'edge', 's3']);
    // The S3 interface's own port answers in S3's terms: an unsigned request is refused in XML.
    const anonymous = await fetch(`${first.lines.s3}/`);
    expect(anonymous.status).toBe(403);
    expect(await anonymous.text()).toContain('<Code>AccessDenied</Code>');
    expect(first.out()).toMatch(/COFFER_ACCESS_KEY=coffer_key_\S+/);
    expect(first.out()).toMatch(/COFFER_SIGNING_SECRET=coffer_secret_\S+/);
    const key = /COFFER_ACCESS_KEY=(\S+)/.exec(first.out())![1]!;
    const creds = join(dataDir, 'credentials.json');
    expect((await stat(creds)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(creds, 'utf8')).access_key).toBe(key);

    for (const url of [first.lines.origin!, first.lines.edge!]) {
      const r = await fetch(`${url}/healthz`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ status: 'ok' });
    }
    // The generated key works, and files uploaded are delivered by the edge started alongside.
    const done = await upload(jsonClient(first.lines.origin!, key), Buffer.from('hi'), { name: 'hi.txt', file_type: 'document' });
    expect(done.delivery_url.startsWith(first.lines.edge!)).toBe(true);
    const delivered = await fetch(done.delivery_url);
    expect(delivered.status).toBe(200);
    expect(await delivered.text()).toBe('hi');

    const exited = exitOf(first.child);
    first.child.kill('SIGTERM');
    expect(await exited).toBe(0);

    // A second start reuses the saved credentials and does not print them again.
    const second = await start(['serve'], env, ['origin', 'edge']);
    expect(second.out()).not.toContain('COFFER_ACCESS_KEY=');
    const again = await fetch(`${second.lines.origin}/collections/list`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}',
    });
    expect(again.status).toBe(200);
    const exited2 = exitOf(second.child);
    second.child.kill('SIGINT');
    expect(await exited2).toBe(0);
  });

  it('takes flags over environment variables, in both spellings', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-cli-'));
    dirs.push(dataDir);
    const o = await start(['origin', '--port', '0', '--coffer-access-key', 'flag-key', '--signing-secret', 's1', '--s3-port', '0'],
      { COFFER_PORT: '1', COFFER_S3_PORT: '1', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: 'env-key' }, ['origin', 's3']);
    const r = await fetch(`${o.lines.origin}/collections/list`, { method: 'POST', headers: { authorization: 'Bearer flag-key', 'content-type': 'application/json' }, body: '{}' });
    expect(r.status).toBe(200);
    o.child.kill('SIGTERM');
  });

  it('refuses a bad setting with a clear message and a non-zero exit', async () => {
    const child = spawn(process.execPath, [MAIN, 'origin', '--port', 'eighty'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    expect(await exitOf(child)).not.toBe(0);
    expect(err).toContain('COFFER_PORT must be a whole number');
  });

  it('refuses an edge without --origin', async () => {
    const child = spawn(process.execPath, [MAIN, 'edge'], { env: { ...process.env, COFFER_SIGNING_SECRET: 's', COFFER_EDGE_TOKEN: 't' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    expect(await exitOf(child)).not.toBe(0);
    expect(err).toContain('--origin');
  });

  it('refuses an edge whose origin address has a path', async () => {
    const child = spawn(process.execPath, [MAIN, 'edge', '--origin', 'https://origin.example/base'], { env: { ...process.env, COFFER_SIGNING_SECRET: 's', COFFER_EDGE_TOKEN: 't' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    expect(await exitOf(child)).not.toBe(0);
    expect(err).toContain('http://');
  });
});
