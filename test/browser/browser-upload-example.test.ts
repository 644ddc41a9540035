/**
 * examples/browser-upload in a real browser (issue 12, point 5): a real `coffer serve`, the
 * example's page built with Vite as its README says, its server run with `node`, and Debian's
 * Chromium driven by playwright-core. The demo user signs in, picks a 7 MiB file, and the
 * page's worker sends it straight to Coffer with an upload grant: the file is ready, whole,
 * in the user's folder. Everything the page received is recorded (every response's headers
 * and body, the page's own and its worker's, every message to and from the worker, its
 * storage) and none of it holds the access key; the grant it did get cannot list files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient, type FileRecord } from '../../src/sdk/index.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { CHROMIUM, SCREENSHOTS } from './harness.js';
import { sha256 } from '../kit/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'examples/browser-upload');
const VITE = join(ROOT, 'node_modules/vite/bin/vite.js');
const KEY = 'browser-example-root-key-' + randomBytes(24).toString('hex');
const PASSWORD = 'demo-' + randomBytes(8).toString('hex');
const MiB = 1024 * 1024;

let work: string;
let originUrl: string;
let appUrl: string;
const apps: ChildProcess[] = [];
let browser: Browser;
let admin: CofferClient;

function run(args: string[]): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolvePromise() : reject(new Error(`${args.join(' ')} exited ${code}:\n${err}`))));
  });
}

/** Starts the example's server and waits for its listening line. */
function startApp(env: Record<string, string>): Promise<string> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_')));
  const app = spawn(process.execPath, [join(EXAMPLE, 'server.mjs')], { cwd: ROOT, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  apps.push(app);
  let out = '';
  let err = '';
  app.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}\n${err}`)), 15_000);
    app.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /example listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1]!);
      }
    });
    app.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the example exited with ${code}:\n${out}\n${err}`));
    });
  });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'coffer-browser-example-'));
  const dist = join(work, 'dist');
  // The README's build step, into a directory of the test's own.
  const built = run([VITE, 'build', '--config', join(EXAMPLE, 'vite.config.mjs'), '--outDir', dist, '--emptyOutDir']);
  const serve = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(work, 'data'), COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: 'example-secret' },
  });
  await serve.ready;
  originUrl = /origin listening on (http:\/\/\S+)/.exec(serve.stdout())![1]!;
  admin = new CofferClient({ url: originUrl, accessKey: KEY });
  await built;
  appUrl = await startApp({ COFFER_URL: originUrl, COFFER_ACCESS_KEY: KEY, EXAMPLE_PASSWORD: PASSWORD, EXAMPLE_DIST: dist, PORT: '0' });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  for (const app of apps) app.kill('SIGTERM');
  await stopAll();
  if (work) await rm(work, { recursive: true, force: true });
});

interface Seen {
  url: string;
  method: string;
  status: number;
  requestHeaders: Record<string, string>;
  headers: Record<string, string>;
  body: string;
}

/**
 * A fresh context whose every response (the page's and its worker's) is recorded with its
 * headers and body, and whose page logs every message to and from a Worker.
 */
async function recordedPage(): Promise<{ context: BrowserContext; page: Page; seen: Seen[]; settled: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  const seen: Seen[] = [];
  const pending: Promise<void>[] = [];
  context.on('response', (response) => {
    pending.push((async () => {
      const request = response.request();
      const body = await response.body().catch(() => Buffer.alloc(0));
      seen.push({
        url: response.url(), method: request.method(), status: response.status(),
        requestHeaders: await request.allHeaders(), headers: await response.allHeaders(), body: body.toString('latin1'),
      });
    })().catch((err: Error) => {
      // Only a response still arriving as its context closes goes unrecorded; settled() comes first.
      if (!/closed/.test(err.message)) throw err;
    }));
  });
  await context.addInitScript(() => {
    const log: string[] = [];
    (window as unknown as { workerMessages: string[] }).workerMessages = log;
    // A File is shown by its name, size and type: its bytes are the user's own.
    const text = (data: unknown) => JSON.stringify(data, (_k, v) => (v instanceof Blob ? { blob: (v as File).name ?? '', size: v.size, type: v.type } : v));
    const Native = window.Worker;
    window.Worker = class extends Native {
      constructor(url: string | URL, options?: WorkerOptions) {
        super(url, options);
        this.addEventListener('message', (e) => log.push(`from worker: ${text(e.data)}`));
      }
      override postMessage(data: unknown, options?: any) {
        log.push(`to worker: ${text(data)}`);
        super.postMessage(data, options);
      }
    };
  });
  const page = await context.newPage();
  return { context, page, seen, settled: async () => void (await Promise.all(pending)) };
}

/** Everything the page keeps: both storages, its cookies as scripts see them, every IndexedDB database. */
const pageStorage = (page: Page): Promise<string> => page.evaluate(async () => {
  const idb: unknown[] = [];
  for (const info of await indexedDB.databases()) {
    const db = await new Promise<IDBDatabase>((ok, no) => {
      const open = indexedDB.open(info.name!);
      open.onsuccess = () => ok(open.result);
      open.onerror = () => no(open.error);
    });
    for (const store of Array.from(db.objectStoreNames)) {
      const rows = await new Promise((ok) => {
        const get = db.transaction(store).objectStore(store).getAll();
        get.onsuccess = () => ok(get.result);
      });
      idb.push({ db: info.name, store, rows });
    }
    db.close();
  }
  return JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, idb });
});

describe('examples/browser-upload', () => {
  it('signs in, uploads a 7 MiB file from a worker straight to Coffer with progress, and shows the ready record; no key reaches the page', async () => {
    const { context, page, seen, settled } = await recordedPage();
    await page.goto(appUrl);
    await page.fill('#password', PASSWORD);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#upload:not([hidden])');
    expect(await page.textContent('#who')).toMatch(/^Signed in as demo\./);

    const bytes = randomBytes(7 * MiB);
    await page.setInputFiles('#file', { name: 'holiday.bin', mimeType: 'application/octet-stream', buffer: bytes });
    await page.click('#start');
    await page.waitForSelector('#record:not([hidden])', { timeout: 30_000 });
    const shown = JSON.parse((await page.textContent('#record'))!) as FileRecord;
    expect(await page.textContent('#status')).toBe('Uploaded holiday.bin: ready.');
    expect(await page.textContent('#error')).toBe('');
    expect(await page.$eval('#progress', (p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max])).toEqual([bytes.length, bytes.length]);
    await page.screenshot({ path: join(SCREENSHOTS, 'browser-upload-example.png') });

    // Stored whole, ready, in the demo user's own Private folder.
    const file = await admin.getFile(shown.file_id);
    expect(file).toMatchObject({ status: 'ready', name: 'holiday.bin', size: bytes.length, sha256: sha256(bytes), visibility: 'Private' });
    expect(shown).toMatchObject({ file_id: file.file_id, sha256: file.sha256, folder_id: file.folder_id });
    expect((await admin.getFolder(file.folder_id!)).path).toBe('/browser-uploads/demo');

    // The parts went from the worker straight to Coffer, not through the application or the page.
    await settled();
    // Raw parts (contract §9): the fields ride in the query.
    const parts = seen.filter((s) => new URL(s.url).origin + new URL(s.url).pathname === `${originUrl}/collections/upload/file-progress` && s.method === 'POST');
    expect(parts.length).toBe(2);
    for (const p of parts) {
      expect(p.status).toBe(200);
      expect(p.requestHeaders.authorization).toMatch(/^Grant cg_/);
    }
    expect(seen.filter((s) => s.url.startsWith(appUrl) && s.url.includes('/collections/'))).toEqual([]);
    const worker = page.workers()[0]!;
    const workerTimeline = await worker.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name));
    expect(workerTimeline.filter((u) => new URL(u).pathname === '/collections/upload/file-progress').length).toBe(2);
    const pageTimeline = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name));
    expect(pageTimeline.filter((u) => u.includes('/collections/'))).toEqual([]);

    // Progress came in steps from the worker: a part of the way, then all of it.
    const messages = await page.evaluate(() => (window as unknown as { workerMessages: string[] }).workerMessages);
    const progress = messages.filter((m) => m.startsWith('from worker: {"type":"progress"')).map((m) => JSON.parse(m.slice('from worker: '.length)) as { loaded: number; total: number });
    expect(progress.some((p) => p.loaded > 0 && p.loaded < p.total)).toBe(true);
    expect(progress.at(-1)).toEqual({ type: 'progress', loaded: bytes.length, total: bytes.length });
    expect(messages.some((m) => m.startsWith('from worker: {"type":"done"'))).toBe(true);

    // The recording works: the grant the page was given is in what it received and sent on.
    const grantAnswer = seen.find((s) => s.url === `${appUrl}/upload-grant`)!;
    const grant = (JSON.parse(grantAnswer.body) as { grant: string }).grant;
    expect(grant).toMatch(/^cg_/);
    expect(messages.some((m) => m.includes(grant))).toBe(true);
    expect(seen.length).toBeGreaterThan(8);

    // …and the access key is nowhere in it.
    const received = seen.map((s) => `${s.url}\n${JSON.stringify(s.headers)}\n${JSON.stringify(s.requestHeaders)}\n${s.body}`);
    for (const [i, text] of received.entries()) expect(text.includes(KEY), `${seen[i]!.method} ${seen[i]!.url}`).toBe(false);
    expect(messages.join('\n')).not.toContain(KEY);
    expect(await pageStorage(page)).not.toContain(KEY);
    expect(await page.content()).not.toContain(KEY);
    expect(JSON.stringify(await context.cookies())).not.toContain(KEY);
    // Nor any part of it long enough to matter (a key cut in two, or encoded).
    const all = received.join('\n') + messages.join('\n');
    expect(all).not.toContain(KEY.slice(0, 40));
    expect(all).not.toContain(KEY.slice(-40));
    expect(all).not.toContain(Buffer.from(KEY).toString('base64').slice(0, 40));

    // The grant is good for that one upload and nothing else.
    const list = await fetch(`${originUrl}/collections/list`, { method: 'POST', headers: { authorization: `Grant ${grant}`, 'content-type': 'application/json' }, body: '{}' });
    expect(list.status).toBe(403);
    expect(((await list.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    const withGrant = new CofferClient({ url: originUrl, grant });
    await expect(withGrant.getFile(file.file_id)).rejects.toMatchObject({ status: 403 });
    await expect(withGrant.uploadFile(randomBytes(10), { name: 'again.bin', visibility: 'Private' })).rejects.toMatchObject({ status: 403 });
    await settled();
    await context.close();
  });

  it('gives no grant to a visitor who is not signed in, and a wrong password shows the application\'s message', async () => {
    const anonymous = await fetch(`${appUrl}/upload-grant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain('cg_');

    const { context, page, settled } = await recordedPage();
    await page.goto(appUrl);
    await page.fill('#password', 'not-the-password');
    await page.click('#login button[type=submit]');
    await page.waitForFunction(() => document.getElementById('error')!.textContent !== '');
    expect(await page.textContent('#error')).toBe('Unknown user or wrong password.');
    expect(await page.isHidden('#upload')).toBe(true);
    await settled();
    await context.close();
  });

  it('with a smaller limit, the page refuses a larger file itself, and Coffer refuses it to the grant anyway', async () => {
    const small = await startApp({ COFFER_URL: originUrl, COFFER_ACCESS_KEY: KEY, EXAMPLE_PASSWORD: PASSWORD, EXAMPLE_DIST: join(work, 'dist'), PORT: '0', EXAMPLE_MAX_SIZE: String(MiB) });
    const { context, page, seen, settled } = await recordedPage();
    await page.goto(small);
    await page.fill('#password', PASSWORD);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#upload:not([hidden])');
    await page.setInputFiles('#file', { name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(2 * MiB) });
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('error')!.textContent !== '');
    expect(await page.textContent('#error')).toBe('That file is 2.0 MiB; the limit is 1.0 MiB.');
    await settled();
    expect(seen.filter((s) => s.url.startsWith(originUrl))).toEqual([]);

    // A page changed to skip its check gets a grant Coffer holds to the same limit.
    const { grant, coffer_url: url } = await page.evaluate(async () => {
      const res = await fetch('/upload-grant', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return (await res.json()) as { grant: string; coffer_url: string };
    });
    expect(url).toBe(originUrl);
    const tampered = new CofferClient({ url, grant });
    await expect(tampered.uploadFile(new Uint8Array(MiB + 1), { name: 'big.bin', visibility: 'Private' })).rejects.toMatchObject({ status: 413, code: 'file_too_large' });
    await settled();
    await context.close();
  });
});
