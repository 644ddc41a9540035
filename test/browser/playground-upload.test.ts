/**
 * The Playground's uploads in a real browser (issue 5, point 4): files chosen in the file
 * browser or dropped on the page are sent by a Web Worker, stored whole (SHA-256), shown
 * with progress in the upload panel; an upload cut off by a reload resumes without
 * resending the parts the service has; cancel discards it on the service; a 5xx is
 * retried and a 4xx is not.
 *
 * How "a Worker sent the chunks" is established: every part request the browser makes is
 * counted with page.on('request') (Playwright reports a dedicated worker's requests on its
 * page, but gives them the page's main frame, so request.frame() cannot tell them apart,
 * and the Playground's Referrer-Policy: no-referrer leaves no Referer to read). The proof
 * comes from the browser itself: Resource Timing keeps one performance timeline per global
 * scope, so each part request is listed in the `performance` of the scope that made it.
 * The test reads the timeline of every upload worker (worker.evaluate) and of the page: all
 * the part requests are in a worker's, none in the page's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page, Request, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferError, type FileRecord } from '../../src/sdk/index.js';
import { startPlayground, type Playground } from './harness.js';
import { sha256, sleep } from '../kit/index.js';

const MiB = 1024 * 1024;
const PART = '/collections/upload/file-progress';
/** Part requests in either form: a raw part carries its fields in the query string. */
const PART_GLOB = (url: URL): boolean => url.pathname === PART;
/** The file manager's hidden file input, and the element a drop lands on (the folder's contents). */
const FILE_INPUT = 'input[type="file"]';
const DROP_TARGET = 'main';

let pg: Playground;
let dir: string;

beforeAll(async () => {
  pg = await startPlayground();
  dir = await mkdtemp(join(tmpdir(), 'coffer-pg-upload-'));
}, 60_000);

afterAll(async () => {
  await pg?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * A file of random bytes on disk. Chosen by path, the browser reads it itself (a buffer
 * would cross the protocol as base64, seconds for 20 MiB), and its lastModified is stable
 * across a reload, as a real file's is.
 */
async function randomFile(name: string, size: number): Promise<{ name: string; path: string; bytes: Buffer }> {
  const bytes = randomBytes(size);
  const path = join(dir, name);
  await writeFile(path, bytes);
  return { name, path, bytes };
}
/** How long a poll waits: generous, for a machine busy with other tests. */
const WAIT = { timeout: 20_000 };

/** A folder of its own for each test, and a signed-in page open in it. */
async function pageInNewFolder(name: string): Promise<{ page: Page; folderId: string }> {
  const folder = await pg.api.createFolder({ name, visibility: 'Public' });
  const { page } = await pg.signedInPage({ path: `/?folder=${encodeURIComponent(folder.folder_id)}` });
  await page.locator(FILE_INPUT).first().waitFor({ state: 'attached' });
  return { page, folderId: folder.folder_id };
}

/** The part number a part request carries: in the query string of a raw part, else before the chunk in the JSON. */
function partNumberOf(request: Request): number | null {
  const inQuery = new URL(request.url()).searchParams.get('partNumber');
  if (inQuery !== null) return Number(inQuery);
  const head = request.postDataBuffer()?.subarray(0, 1024).toString('latin1') ?? '';
  const m = /"partNumber":(\d+)/.exec(head);
  return m ? Number(m[1]) : null;
}

/** Every part request the page (or a worker of it) makes, in order. */
function recordParts(page: Page): Array<{ n: number | null; at: number; raw: boolean }> {
  const seen: Array<{ n: number | null; at: number; raw: boolean }> = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === PART) {
      seen.push({ n: partNumberOf(r), at: Date.now(), raw: /^application\/octet-stream/.test(r.headers()['content-type'] ?? '') });
    }
  });
  return seen;
}

/** Which global scope made the part requests, from each scope's own Resource Timing entries. */
async function partTimelines(page: Page): Promise<{ inPage: number; inWorkers: number; workers: number }> {
  const count = (path: string) => performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === path).length;
  const inPage = await page.evaluate(count, PART);
  const workers = page.workers().filter((w) => /upload-worker/.test(w.url()));
  let inWorkers = 0;
  for (const w of workers) inWorkers += await w.evaluate(count, PART);
  return { inPage, inWorkers, workers: workers.length };
}

const panelItem = (page: Page, name: string) => page.locator('.upl-item', { has: page.locator(`.upl-name[title="${name}"]`) });

async function waitForStatus(page: Page, name: string, status: string, timeout = 30_000): Promise<void> {
  await expect.poll(() => panelItem(page, name).getAttribute('data-status'), { timeout }).toBe(status);
}

/** Records every value the upload panel's progress bar for NAME shows, as it changes. */
async function watchProgress(page: Page, name: string): Promise<() => Promise<number[]>> {
  await page.evaluate((label) => {
    const values: number[] = [];
    (window as unknown as { __progress: number[] }).__progress = values;
    const read = () => {
      const bar = Array.from(document.querySelectorAll('.upl-item [role="progressbar"]')).find((b) => b.getAttribute('aria-label') === label);
      const v = bar ? Number(bar.getAttribute('aria-valuenow')) : NaN;
      if (!Number.isNaN(v) && values[values.length - 1] !== v) values.push(v);
    };
    new MutationObserver(read).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-valuenow'] });
  }, `Upload of ${name}`);
  return () => page.evaluate(() => (window as unknown as { __progress: number[] }).__progress);
}

/** The file id of each upload the page opens, by name, from the answers to initiate (listings show only ready files). */
function recordOpened(page: Page): Map<string, string> {
  const opened = new Map<string, string>();
  page.on('response', (r) => {
    if (new URL(r.url()).pathname !== '/collections/upload/file' || !r.ok()) return;
    r.json().then((body: { name: string; fileId: string }) => opened.set(body.name, body.fileId), () => undefined);
  });
  return opened;
}

async function fileInFolder(folderId: string, name: string): Promise<FileRecord | undefined> {
  const listing = await pg.api.list({ folder_id: folderId, limit: 1000 });
  return listing.files.find((f) => f.name === name);
}

/** The file's card or row in the folder view, as a stored file (not an upload in progress, not the panel's row). */
const listed = (page: Page, name: string) => page.locator(`[data-kind="file"][data-name="${name}"]`);

async function statusOf(fileId: string) {
  try {
    return await pg.api.uploadStatus(fileId);
  } catch (err) {
    if (err instanceof CofferError) return err.status;
    throw err;
  }
}

/**
 * Lets `pass` parts through and holds the rest until released; `drop`: held parts are then
 * aborted, never reaching the service. Held parts are settled before the route goes: removing
 * the last route turns interception off, and Chromium then lets paused requests through.
 */
async function holdParts(page: Page, pass: number, drop = false) {
  let seen = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const held: Promise<void>[] = [];
  await page.route(PART_GLOB, (route: Route) => {
    if (seen++ < pass) return route.continue().catch(() => undefined);
    const settled = released.then(() => (drop ? route.abort() : route.continue())).catch(() => undefined);
    held.push(settled);
    return settled;
  });
  return async () => {
    release();
    await Promise.all(held);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  };
}

describe('Playground uploads', () => {
  it('sends a 20 MiB file chosen in the file browser from a Worker, shows progress, stores it whole', async () => {
    const { page, folderId } = await pageInNewFolder('browse');
    const { name, path, bytes } = await randomFile('browse-20MiB.bin', 20 * MiB);
    const parts = recordParts(page);
    // Parts answered one after another, so the bar has steps to show on a fast loopback.
    await page.route(PART_GLOB, async (route) => {
      await sleep(120 * (partNumberOf(route.request()) ?? 1));
      await route.continue();
    });
    const progress = await watchProgress(page, name);

    await page.locator(FILE_INPUT).first().setInputFiles(path);
    await waitForStatus(page, name, 'done');

    const seen = await progress();
    expect(seen.some((v) => v > 0 && v < 100), `progress values ${seen.join(', ')}`).toBe(true);
    expect(seen.at(-1)).toBe(100);
    await expect.poll(() => panelItem(page, name).locator('.upl-status-text').textContent(), WAIT).toBe('Done');

    // (a) a worker sent every chunk, as raw bytes; the page sent none.
    expect(parts.map((p) => p.n).sort()).toEqual([1, 2, 3, 4]);
    expect(parts.every((p) => p.raw), JSON.stringify(parts)).toBe(true);
    const timelines = await partTimelines(page);
    expect(timelines.workers).toBeGreaterThan(0);
    expect(timelines).toMatchObject({ inPage: 0, inWorkers: parts.length });

    // (b) the stored bytes are the chosen ones.
    const record = await fileInFolder(folderId, name);
    expect(record).toMatchObject({ status: 'ready', size: bytes.length, folder_id: folderId, sha256: sha256(bytes) });
    // (c) and the file shows in its folder.
    await expect.poll(() => listed(page, name).count(), WAIT).toBe(1);
  });

  it('sends a 20 MiB file dropped on the page from a Worker and stores it whole', async () => {
    const { page, folderId } = await pageInNewFolder('drop');
    const name = 'dropped-20MiB.bin';
    const parts = recordParts(page);
    const progress = await watchProgress(page, name);
    // The file is made in the page from random bytes, as a drag from the desktop would bring it.
    const dataTransfer = await page.evaluateHandle(({ size, fileName }) => {
      const bytes = new Uint8Array(size);
      for (let o = 0; o < size; o += 65536) crypto.getRandomValues(bytes.subarray(o, o + 65536));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], fileName, { type: 'application/octet-stream', lastModified: Date.now() }));
      return dt;
    }, { size: 20 * MiB, fileName: name });
    const expected = await page.evaluate(async (dt) => {
      const digest = await crypto.subtle.digest('SHA-256', await dt.files[0]!.arrayBuffer());
      return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
    }, dataTransfer);

    const target = page.locator(DROP_TARGET).first();
    await target.dispatchEvent('dragenter', { dataTransfer });
    await target.dispatchEvent('dragover', { dataTransfer });
    await target.dispatchEvent('drop', { dataTransfer });
    await waitForStatus(page, name, 'done');
    expect((await progress()).at(-1)).toBe(100);

    expect(parts.map((p) => p.n).sort()).toEqual([1, 2, 3, 4]);
    const timelines = await partTimelines(page);
    expect(timelines.workers).toBeGreaterThan(0);
    expect(timelines).toMatchObject({ inPage: 0, inWorkers: parts.length });

    const record = await fileInFolder(folderId, name);
    expect(record).toMatchObject({ status: 'ready', size: 20 * MiB, folder_id: folderId, sha256: expected });
    await expect.poll(() => listed(page, name).count(), WAIT).toBe(1);
  });

  it('resumes an upload cut off by a reload when the same file is chosen again, sending only the missing parts', async () => {
    const { page, folderId } = await pageInNewFolder('resume');
    const { name, path, bytes } = await randomFile('resume-22MiB.bin', 22 * MiB); // 5 parts
    const parts = recordParts(page);
    const opened = recordOpened(page);
    // The service gets the first two parts; the rest wait until the page is gone.
    // The held parts die with the page: after the reload, exactly the missing ones go again.
    const releaseHeld = await holdParts(page, 2, true);

    await page.locator(FILE_INPUT).first().setInputFiles(path);
    await expect.poll(() => opened.has(name), WAIT).toBe(true);
    const fileId = opened.get(name)!;
    await expect.poll(async () => (await pg.api.uploadStatus(fileId)).received.length, WAIT).toBe(2);
    await waitForStatus(page, name, 'uploading');

    // IndexedDB holds the upload's handle, and nothing else: no key, no token.
    const stored = await page.evaluate(() => new Promise<unknown[]>((resolve, reject) => {
      const open = indexedDB.open('coffer-uploads');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const req = open.result.transaction('handles').objectStore('handles').getAll();
        req.onsuccess = () => resolve(req.result as unknown[]);
        req.onerror = () => reject(req.error);
      };
    }));
    expect(stored).toHaveLength(1);
    expect(Object.keys((stored[0] as { handle: object }).handle).sort()).toEqual(['bucket', 'fileId', 'key', 'uploadId']);
    expect((stored[0] as { handle: { fileId: string } }).handle.fileId).toBe(fileId);
    expect(JSON.stringify(stored)).not.toContain(pg.key);

    await page.reload();
    await releaseHeld();
    await page.locator(FILE_INPUT).first().waitFor({ state: 'attached' });
    // What the service has now: a part in flight when the page went may still have landed.
    const atResume = await pg.api.uploadStatus(fileId);
    expect(atResume.received.length).toBeGreaterThanOrEqual(2);
    expect(atResume.missing.length).toBeGreaterThan(0);
    const sentBefore = parts.length;
    // What the page itself learnt when it resumed: a part cut off by the reload may still land
    // between any status taken here and the page's own question.
    const asked: Array<{ at: number; missing?: number[] }> = [];
    page.on('response', (r) => {
      if (r.request().method() === 'POST' && new URL(r.url()).pathname.endsWith('/collections/upload/status')) {
        const answer: { at: number; missing?: number[] } = { at: Date.now() };
        asked.push(answer);
        r.json().then((body: { missing: number[] }) => { answer.missing = body.missing; }, () => undefined);
      }
    });

    await page.locator(FILE_INPUT).first().setInputFiles(path);
    await waitForStatus(page, name, 'done');
    expect(await panelItem(page, name).locator('.upl-badge').textContent()).toBe('resumed');

    // Only the parts the service lacked when the page asked went out after the reload, from a worker.
    const after = parts.slice(sentBefore).map((p) => p.n).sort();
    expect(after.length).toBeGreaterThan(0);
    // The last answer the page had before it sent its first part again.
    const firstAgain = parts[sentBefore]!.at;
    const known = asked.filter((a) => a.at <= firstAgain).at(-1);
    expect(known, 'a status answer before the parts went again').toBeDefined();
    await expect.poll(() => known!.missing !== undefined, WAIT).toBe(true);
    expect(after).toEqual([...known!.missing!].sort());
    for (const n of after) expect(atResume.missing).toContain(n);
    const timelines = await partTimelines(page);
    expect(timelines).toMatchObject({ inPage: 0, inWorkers: after.length });

    // The same upload was completed, not a second one; its bytes are whole; the handle is gone.
    const files = (await pg.api.list({ folder_id: folderId })).files;
    expect(files.map((f) => f.file_id)).toEqual([fileId]);
    expect(await pg.api.getFile(fileId)).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
    const left = await page.evaluate(() => new Promise<number>((resolve) => {
      const open = indexedDB.open('coffer-uploads');
      open.onsuccess = () => {
        const req = open.result.transaction('handles').objectStore('handles').count();
        req.onsuccess = () => resolve(req.result);
      };
    }));
    expect(left).toBe(0);
  });

  it('uploads two files at a time; Cancel discards an upload on the service; Retry sends it again', async () => {
    const { page, folderId } = await pageInNewFolder('cancel');
    const files = await Promise.all(['cancel-a.bin', 'cancel-b.bin', 'cancel-c.bin'].map((name) => randomFile(name, 12 * MiB)));
    const opened = recordOpened(page);
    const releaseHeld = await holdParts(page, 2);

    await page.locator(FILE_INPUT).first().setInputFiles(files.map((f) => f.path));
    await waitForStatus(page, 'cancel-a.bin', 'uploading');
    await waitForStatus(page, 'cancel-b.bin', 'uploading');
    // Two at once: the third waits while the first two are held.
    await expect.poll(() => opened.size, WAIT).toBe(2);
    expect(await panelItem(page, 'cancel-c.bin').getAttribute('data-status')).toBe('queued');
    await expect.poll(async () => Number(await panelItem(page, 'cancel-a.bin').getByRole('progressbar').getAttribute('aria-valuenow'))
      + Number(await panelItem(page, 'cancel-b.bin').getByRole('progressbar').getAttribute('aria-valuenow')), WAIT).toBeGreaterThan(0);
    await pg.screenshot(page, 'upload-panel');

    const a = { file_id: opened.get('cancel-a.bin')! };
    expect(a.file_id).toBeTruthy();
    await panelItem(page, 'cancel-a.bin').getByRole('button', { name: 'Cancel upload of cancel-a.bin' }).click();
    await waitForStatus(page, 'cancel-a.bin', 'canceled');
    await expect.poll(() => statusOf(a.file_id), WAIT).toBe(404);
    // Its place goes to the third file.
    await waitForStatus(page, 'cancel-c.bin', 'uploading');

    await releaseHeld();
    await waitForStatus(page, 'cancel-b.bin', 'done');
    await waitForStatus(page, 'cancel-c.bin', 'done');

    await panelItem(page, 'cancel-a.bin').getByRole('button', { name: 'Retry upload of cancel-a.bin' }).click();
    await waitForStatus(page, 'cancel-a.bin', 'done');
    const listing = (await pg.api.list({ folder_id: folderId })).files;
    for (const f of files) {
      const stored = listing.filter((r) => r.name === f.name);
      expect(stored, f.name).toHaveLength(1);
      expect(stored[0]).toMatchObject({ status: 'ready', sha256: sha256(f.bytes) });
    }
    expect(listing.find((r) => r.file_id === a.file_id)).toBeUndefined();

    await page.locator('.upl').getByRole('button', { name: 'Clear finished' }).click();
    await expect.poll(() => page.locator('.upl-item').count(), WAIT).toBe(0);
  });

  it('retries a part answered 5xx; does not retry one answered 4xx, shows its message, and Retry sends only the missing parts', async () => {
    const { page, folderId } = await pageInNewFolder('retry');
    const parts = recordParts(page);
    const opened = recordOpened(page);
    const answers: Array<{ n: number | null; status: number }> = [];
    let inject: { status: number; code: string; message: string } | null = { status: 500, code: 'internal', message: 'Injected server failure.' };
    await page.route(PART_GLOB, async (route) => {
      const n = partNumberOf(route.request());
      if (n === 2 && inject) {
        const { status, code, message } = inject;
        if (status >= 500) inject = null; // once
        answers.push({ n, status });
        return route.fulfill({ status, contentType: 'application/json', body: JSON.stringify({ error: { code, message, details: {} } }) });
      }
      answers.push({ n, status: 200 });
      return route.continue();
    });

    // 5xx: part 2 fails once, is sent again, and the file completes.
    const five = await randomFile('retry-5xx.bin', 12 * MiB);
    await page.locator(FILE_INPUT).first().setInputFiles(five.path);
    await waitForStatus(page, five.name, 'done');
    expect(answers.filter((a) => a.n === 2).map((a) => a.status)).toEqual([500, 200]);
    expect(parts.map((p) => p.n).sort()).toEqual([1, 2, 2, 3]);
    expect(await fileInFolder(folderId, five.name)).toMatchObject({ status: 'ready', sha256: sha256(five.bytes) });

    // 4xx: part 2 is refused; it is not sent again and the service's message is shown.
    answers.length = 0;
    parts.length = 0;
    inject = { status: 400, code: 'part_size_mismatch', message: 'Injected: part 2 has the wrong size.' };
    const four = await randomFile('retry-4xx.bin', 12 * MiB);
    await page.locator(FILE_INPUT).first().setInputFiles(four.path);
    await waitForStatus(page, four.name, 'failed');
    await expect.poll(() => panelItem(page, four.name).locator('.upl-error').textContent(), WAIT).toBe('Injected: part 2 has the wrong size.');
    // The uploader gives up only once no part is being retried, so nothing more can follow;
    // the pause lets any straggling request event arrive before counting.
    await sleep(300);
    expect(parts.filter((p) => p.n === 2)).toHaveLength(1);

    // Retry continues the same upload: only what the service lacks is sent.
    inject = null;
    const record = { file_id: opened.get(four.name)! };
    const missing = (await pg.api.uploadStatus(record.file_id)).missing;
    expect(missing).toContain(2);
    const sentBefore = parts.length;
    await panelItem(page, four.name).getByRole('button', { name: `Retry upload of ${four.name}` }).click();
    await waitForStatus(page, four.name, 'done');
    expect(parts.slice(sentBefore).map((p) => p.n).sort()).toEqual([...missing].sort());
    expect(await pg.api.getFile(record.file_id)).toMatchObject({ status: 'ready', sha256: sha256(four.bytes) });
  });
});
