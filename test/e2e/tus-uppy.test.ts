/**
 * Uppy (@uppy/core + @uppy/tus, bundled here from node_modules) in Debian's Chromium, driven
 * by playwright-core: a page on another origin uploads a 30 MiB file to /tus with an upload
 * grant (CORS, preflights and exposed headers included), is reloaded in the middle of the
 * upload, resumes from where the origin says, and the file ends ready with the right SHA-256.
 * The page holds no key: only the grant it was given, never kept in its storage.
 */
import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM } from '../browser/harness.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { seededBytes } from '../pages/seeded-bytes.js';
import { MiB } from '../helpers/tus.js';
import { sha256, sleep } from '../kit/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SIZE = 30 * MiB;
const SEED = 20_260_611;

interface PageState {
  progress: number;
  requests: Array<{ method: string; offset: string | null }>;
  fileId: string | null;
  done: boolean;
  error: string | null;
}

let o: TestOrigin;
let page: Server;
let pageUrl: string;
let bundleDir: string;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install Debian's package (apt-get install chromium), or set CHROMIUM_PATH.`);
  // The page's script: Uppy and its tus plugin from node_modules, as one file for the browser.
  bundleDir = await mkdtemp(join(tmpdir(), 'coffer-uppy-'));
  await build({
    configFile: false, root: ROOT, logLevel: 'silent',
    build: {
      outDir: bundleDir, emptyOutDir: true, minify: false, write: true,
      lib: { entry: join(ROOT, 'test/pages/uppy-tus.ts'), formats: ['iife'], name: 'UppyTusPage', fileName: () => 'page.js' },
    },
  });
  const script = await readFile(join(bundleDir, 'page.js'));
  const html = '<!doctype html><meta charset="utf-8"><title>Uppy to Coffer</title><script src="/page.js"></script>';
  page = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://page').pathname;
    if (path === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else if (path === '/') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
  pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
  o = await startTestOrigin();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
});
afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await new Promise<void>((r) => (page ? page.close(() => r()) : r()));
  await o?.close();
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
});

describe('Uppy in Chromium', () => {
  it('uploads 30 MiB with a grant from a page on another origin, resumes after a reload, and the file is whole', async () => {
    const folder = (await o.post('/collections/folder/create', { name: 'from-uppy', visibility: 'Private' })).body.folder_id;
    const grant = (await o.post('/collections/upload/grant', { folder_id: folder, max_size: SIZE, max_files: 1 })).body.grant as string;
    const context = await browser.newContext();
    const tab = await context.newPage();
    // The page's uploads are held to 8 MiB/s, so the reload lands inside the first PATCH however
    // fast this machine is (at full loopback speed the whole body could arrive before it).
    const cdp = await context.newCDPSession(tab);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 8 * MiB });
    const failures: string[] = [];
    tab.on('pageerror', (err) => failures.push(String(err)));
    const url = `${pageUrl}/?${new URLSearchParams({ origin: o.url, grant, size: String(SIZE), seed: String(SEED) })}`;
    const state = () => tab.evaluate(() => (window as unknown as { uploadState?: PageState }).uploadState ?? null);

    await tab.goto(url);
    // Reload once well into the first PATCH, before the end.
    let before: PageState | null = null;
    for (let i = 0; i < 600; i++) {
      before = await state();
      if (before?.error || before?.done || (before?.progress ?? 0) > 8 * MiB) break;
      await sleep(50);
    }
    expect(before?.error ?? null, failures.join('\n')).toBeNull();
    expect(before?.done).toBe(false);
    expect(before!.requests.map((r) => r.method)).toEqual(['POST', 'PATCH']);
    await tab.reload();

    let after: PageState | null = null;
    for (let i = 0; i < 1200; i++) {
      after = await state();
      if (after?.error || after?.done) break;
      await sleep(100);
    }
    expect(after?.error ?? null, failures.join('\n')).toBeNull();
    expect(after?.done).toBe(true);
    // After the reload: no new upload, but HEAD and a PATCH from the offset the origin kept. While
    // the origin still saves the PATCH the reload cut off, the new one is refused 409 and Uppy
    // asks HEAD again and retries: a pair more.
    const methods = after!.requests.map((r) => r.method);
    expect(methods.length).toBeGreaterThanOrEqual(2);
    expect(methods.length).toBeLessThanOrEqual(8);
    expect(methods).toEqual(methods.map((_, i) => (i % 2 ? 'PATCH' : 'HEAD')));
    const resumedAt = Number(after!.requests[methods.length - 1]!.offset);
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThan(SIZE);

    const file = (await o.post('/collections/file/get', { file_id: after!.fileId })).body;
    expect(file).toMatchObject({ status: 'ready', size: SIZE, folder_id: folder, name: 'uppy.bin', sha256: sha256(Buffer.from(seededBytes(SIZE, SEED))) });
    // The page's storage keeps the upload's URL for resuming, and no credential.
    const stored = await tab.evaluate(() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)]));
    expect(stored).toContain('/tus/');
    for (const secret of [o.key, grant, grant.split('.')[1]!, 'Bearer', 'Grant ']) expect(stored).not.toContain(secret);
    await context.close();
  }, 180_000);
});
