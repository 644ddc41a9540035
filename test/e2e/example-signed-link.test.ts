/**
 * examples/signed-link/server.mjs, black box: a real `coffer serve` (origin and edge),
 * a Private file uploaded with the SDK, and the example run as a child process exactly as
 * its README says, once calling create-link and once signing offline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient, type FileRecord } from '../../src/sdk/index.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { waitFor } from '../kit/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SERVER = join(ROOT, 'examples/signed-link/server.mjs');
const KEY = 'example-key-' + randomBytes(8).toString('hex');
const SECRET = 'example-secret-' + randomBytes(8).toString('hex');
const PASSWORDS = { alice: 'alice-' + randomBytes(6).toString('hex'), bob: 'bob-' + randomBytes(6).toString('hex') };

let dataDir: string;
let originUrl: string;
let edgeUrl: string;
let serveLog: () => string;
let file: FileRecord;
let other: FileRecord;
const bytes = randomBytes(300_000);
const examples: ChildProcess[] = [];

interface Example {
  url: string;
  stderr: () => string;
}

/** Starts the example with `node`, from the repository, and waits for its listening line. */
function startExample(env: Record<string, string>): Promise<Example> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_')));
  const child = spawn(process.execPath, [SERVER], { cwd: ROOT, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  examples.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}\n${err}`)), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /example listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise({ url: m[1]!, stderr: () => err });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the example exited with ${code}:\n${out}\n${err}`));
    });
  });
}

/** Signs in through POST /login; returns the Cookie header to send. */
async function signIn(app: Example, user: 'alice' | 'bob'): Promise<string> {
  const res = await fetch(`${app.url}/login`, { method: 'POST', body: new URLSearchParams({ user, password: PASSWORDS[user] }) });
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Lax/);
  return setCookie.split(';')[0]!;
}

const createLinkCalls = () => serveLog().split('\n').filter((l) => l.includes('"url":"/collections/create-link"')).length;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'coffer-example-'));
  const serve = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET },
  });
  edgeUrl = await serve.ready;
  originUrl = /origin listening on (http:\/\/\S+)/.exec(serve.stdout())![1]!;
  serveLog = serve.stdout;

  const coffer = new CofferClient({ url: originUrl, accessKey: KEY });
  file = await coffer.uploadFile(bytes, { name: 'report.pdf', visibility: 'Private' });
  other = await coffer.uploadFile(new TextEncoder().encode('bob only'), { name: 'notes.txt', visibility: 'Private' });
});

afterAll(async () => {
  for (const child of examples) child.kill('SIGTERM');
  await stopAll();
  await rm(dataDir, { recursive: true, force: true });
});

describe('examples/signed-link', () => {
  let app: Example;
  let offline: Example;

  beforeAll(async () => {
    const users = JSON.stringify({
      alice: { password: PASSWORDS.alice, files: [file.file_id] },
      bob: { password: PASSWORDS.bob, files: [other.file_id] },
    });
    const common = { COFFER_URL: originUrl, COFFER_ACCESS_KEY: KEY, PORT: '0', EXAMPLE_USERS: users };
    [app, offline] = await Promise.all([
      startExample(common),
      startExample({ ...common, SIGN_OFFLINE: '1', COFFER_SIGNING_SECRET: SECRET }),
    ]);
  });

  it('redirects the allowed user to a 900-second signed link at the edge, which serves exactly the bytes', async () => {
    const cookie = await signIn(app, 'alice');
    const before = createLinkCalls();

    const redirect = await fetch(`${app.url}/files/${file.file_id}`, { headers: { cookie }, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('cache-control')).toBe('no-store');
    const location = new URL(redirect.headers.get('location')!);
    expect(location.origin).toBe(new URL(edgeUrl).origin);
    expect(location.pathname).toBe(`/files/${file.file_id}`);
    expect(location.searchParams.get('X-Sig')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const lifetime = Number(location.searchParams.get('X-Expires')) - Math.floor(Date.now() / 1000);
    expect(lifetime).toBeGreaterThanOrEqual(895);
    expect(lifetime).toBeLessThanOrEqual(900);
    await waitFor(() => createLinkCalls() === before + 1, { what: 'the create-link call in the log', intervalMs: 20 });

    const followed = await fetch(`${app.url}/files/${file.file_id}`, { headers: { cookie } });
    expect(followed.status).toBe(200);
    expect(followed.url.startsWith(`${edgeUrl}/files/${file.file_id}?`)).toBe(true);
    expect(followed.headers.get('x-cache')).toMatch(/^(HIT|MISS)$/);
    expect(Buffer.from(await followed.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers a user who may not see the file 404 without a link, as for a file that does not exist', async () => {
    const cookie = await signIn(app, 'bob');
    const theirs = await fetch(`${app.url}/files/${file.file_id}`, { headers: { cookie }, redirect: 'manual' });
    const missing = await fetch(`${app.url}/files/NoSuchFile0000000000AA`, { headers: { cookie }, redirect: 'manual' });
    expect(theirs.status).toBe(404);
    expect(theirs.headers.get('location')).toBeNull();
    const body = await theirs.text();
    expect(body).toBe(await missing.text());
    expect(body).not.toContain(file.file_id);

    // Bob still gets his own file.
    const own = await fetch(`${app.url}/files/${other.file_id}`, { headers: { cookie } });
    expect(own.status).toBe(200);
    expect(await own.text()).toBe('bob only');
  });

  it('answers 401 without a session, with a made-up session, and to a wrong password', async () => {
    for (const headers of [{}, { cookie: 'sid=made-up' }] as Array<Record<string, string>>) {
      const res = await fetch(`${app.url}/files/${file.file_id}`, { headers, redirect: 'manual' });
      expect(res.status).toBe(401);
      expect(res.headers.get('location')).toBeNull();
    }
    const wrong = await fetch(`${app.url}/login`, { method: 'POST', body: new URLSearchParams({ user: 'alice', password: 'guess' }) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
  });

  it('signs offline with COFFER_SIGNING_SECRET, without calling create-link', async () => {
    const cookie = await signIn(offline, 'alice');
    const before = createLinkCalls();
    const redirect = await fetch(`${offline.url}/files/${file.file_id}`, { headers: { cookie }, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('cache-control')).toBe('no-store');
    const location = new URL(redirect.headers.get('location')!);
    expect(location.origin).toBe(new URL(edgeUrl).origin);
    const lifetime = Number(location.searchParams.get('X-Expires')) - Math.floor(Date.now() / 1000);
    expect(lifetime).toBeGreaterThanOrEqual(895);
    expect(lifetime).toBeLessThanOrEqual(900);

    const followed = await fetch(`${offline.url}/files/${file.file_id}`, { headers: { cookie } });
    expect(followed.status).toBe(200);
    expect(Buffer.from(await followed.arrayBuffer()).equals(bytes)).toBe(true);

    // One create-link through the other example marks the log: the offline requests added none.
    const online = await signIn(app, 'alice');
    await fetch(`${app.url}/files/${file.file_id}`, { headers: { cookie: online }, redirect: 'manual' });
    await waitFor(() => createLinkCalls() >= before + 1, { what: 'the marker create-link call in the log', intervalMs: 20 });
    expect(createLinkCalls()).toBe(before + 1);
  });

  it('leaves the unsigned delivery URL refused', async () => {
    const res = await fetch(file.delivery_url!);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('signature_required');
  });
});
