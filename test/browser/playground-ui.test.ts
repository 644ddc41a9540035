/**
 * The Playground's file manager in a real browser (issue 5, points 1–3 and 5–8): sign-in
 * and sign-out with the key kept nowhere, every action (folders, rename, visibility, copy,
 * signed links, download, delete), grid and list with sorting, breadcrumbs, search, the
 * address as state (reload, back, forward), the keyboard, a file named like markup shown
 * as text, a 10,000-file folder that scrolls to its end with a few hundred rows at most in
 * the page, dark mode, a phone's width, and an axe-core scan of the main screens.
 * Screenshots go to test-results/playground/.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameKey } from '../../src/core/names.js';
import type { StoredFile } from '../../src/core/ports.js';
import { CofferError, type FileRecord, type FolderRecord } from '../../src/sdk/index.js';
import { axeScan, persistedText } from './checks.js';
import { startPlayground, type Playground } from './harness.js';

let pg: Playground;
let png: Uint8Array;
const XSS_NAME = '<img src=x onerror=alert(1)>.png';

beforeAll(async () => {
  pg = await startPlayground();
  // A real PNG for the thumbnails: the browser draws one.
  const { page, context } = await pg.newPage({ viewport: { width: 240, height: 160 } });
  await page.setContent('<body style="margin:0;background:linear-gradient(135deg,#e11d48,#1e3a8a)"></body>');
  png = new Uint8Array(await page.screenshot());
  await context.close();
}, 60_000);

afterAll(async () => {
  await pg?.close();
});

// ---- helpers -----------------------------------------------------------------------------

let counter = 0;
const unique = (base: string) => `${base}-${++counter}-${randomBytes(3).toString('hex')}`;

const upload = (name: string, bytes: Uint8Array, folderId: string | null, visibility = 'Public'): Promise<FileRecord> =>
  pg.api.uploadFile(bytes, { name, folderId, visibility });

async function folder(name: string, parentId: string | null = null, visibility: 'Public' | 'Private' = 'Public'): Promise<FolderRecord> {
  return pg.api.createFolder({ name, visibility, parent_id: parentId });
}

/** A folder holding one file of each type, with a Private image and the markup-named file. */
async function sampleFolder(): Promise<{ root: FolderRecord; sub: FolderRecord; files: Record<string, FileRecord> }> {
  const root = await folder(unique('sample'));
  const sub = await folder('Albums', root.folder_id);
  const files: Record<string, FileRecord> = {};
  files.image = await upload('sunset.png', png, root.folder_id);
  files.privateImage = await upload('secret-photo.png', png, root.folder_id, 'Private');
  files.video = await upload('clip.mp4', new Uint8Array(3 * 1024 * 1024 + 5), root.folder_id);
  files.document = await upload('report.pdf', new TextEncoder().encode('%PDF-1.4'), root.folder_id);
  files.audio = await upload('song.mp3', new Uint8Array(700_000), root.folder_id);
  files.archive = await upload('backup.zip', new Uint8Array(12_345), root.folder_id, 'Private');
  files.other = await upload('notes.bin', new Uint8Array(512), root.folder_id);
  files.xss = await upload(XSS_NAME, png, root.folder_id);
  return { root, sub, files };
}

async function open(path: string, options: Parameters<Playground['signedInPage']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const r = await pg.signedInPage({ path, ...options });
  r.page.on('pageerror', (e) => { throw e; });
  return r;
}

/** The folder view's row (list) or card (grid) of a name. */
const item = (page: Page, name: string): Locator => page.locator(`[data-testid=row][data-name="${name}"], [data-testid=card][data-name="${name}"]`);
const grid = (page: Page): Locator => page.locator('[role=grid]');
const names = (page: Page): Promise<string[]> =>
  page.locator('[data-testid=row][data-kind=file], [data-testid=card][data-kind=file]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')!));

async function menuAction(page: Page, name: string, action: string): Promise<void> {
  await item(page, name).locator('.more-btn').click();
  await page.locator(`[role=menu] [data-action="${action}"]`).click();
}

const toast = (page: Page): Locator => page.locator('[data-testid=toast]').last();

function fileRow(over: Partial<StoredFile> & { name: string }): StoredFile {
  const id = randomBytes(16).toString('base64url');
  const at = over.created_at ?? Date.now();
  return {
    id, name_key: nameKey(over.name), visibility: 'Public', size: 0, file_type: 'other', content_type: 'application/octet-stream',
    folder_id: null, status: 'ready', sha256: '0'.repeat(64), created_at: at, updated_at: at, completed_at: at,
    bucket: 'local', blob_key: `files/${id}`, upload_id: null, upload_expires_at: null, grant_id: null, links_revoked_at: null, ...over,
  };
}

// ---- sign-in -----------------------------------------------------------------------------

describe('sign-in', () => {
  it('signs in with the pasted key, shows the service message for a wrong one, keeps the key nowhere, and signs out', async () => {
    const { context, page } = await pg.newPage();
    await page.goto('/');
    const field = page.getByLabel('Access key');
    await expect.poll(() => field.getAttribute('type')).toBe('password');
    expect(await field.getAttribute('autocomplete')).toBe('off');

    await field.fill('not-the-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const error = page.locator('#signin-error');
    await error.waitFor();
    const wrong = await context.request.post('/session', { data: { access_key: 'not-the-key' } });
    expect(await error.textContent()).toBe(((await wrong.json()) as { error: { message: string } }).error.message);
    await pg.screenshot(page, 'sign-in');

    await field.fill(pg.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await grid(page).or(page.locator('[data-testid=empty-state]')).first().waitFor();
    expect(page.url()).not.toContain(pg.key);

    // The key is in no web storage, no cookie a script can read, no address, no field.
    const stored = [await persistedText(page), await page.evaluate(() => document.documentElement.outerHTML)].join('\n');
    expect(stored).not.toContain(pg.key);
    const cookies = await context.cookies();
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) {
      expect(c.value).not.toContain(pg.key);
      expect(c.httpOnly).toBe(true);
    }

    // Reload: the session decides, no sign-in screen.
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // A session that ends (here: ended by another tab) sends the next call back to sign-in, saying so.
    const probe = await folder(unique('session'));
    await page.reload();
    await item(page, probe.name).waitFor();
    await page.evaluate(async () => {
      const { csrf_token } = (await (await fetch('/session')).json()) as { csrf_token: string };
      await fetch('/session/end', { method: 'POST', headers: { 'x-csrf-token': csrf_token, 'content-type': 'application/json' }, body: '{}' });
    });
    await item(page, probe.name).dblclick();
    await page.getByText('Your session has ended. Sign in again to continue.').waitFor();
    await page.getByLabel('Access key').fill(pg.key);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Access key').waitFor();
    expect((await context.request.get('/session')).status()).toBe(401);
    await page.reload();
    await page.getByLabel('Access key').waitFor();
  });
});

// ---- views -------------------------------------------------------------------------------

describe('grid and list', () => {
  it('grid: type icons, visibility badges, binary sizes, relative times, thumbnails (Private through a short link), names as text', async () => {
    const { root, files } = await sampleFolder();
    const { page } = await open(`/?folder=${root.folder_id}&view=grid`);
    let alerted = false;
    page.on('dialog', (d) => { alerted = true; void d.dismiss(); });
    await item(page, 'sunset.png').waitFor();

    for (const [type, name] of [['image', 'sunset.png'], ['video', 'clip.mp4'], ['document', 'report.pdf'], ['audio', 'song.mp3'], ['archive', 'backup.zip'], ['other', 'notes.bin']]) {
      const card = item(page, name!);
      expect(await card.locator('.thumb').getAttribute('class'), name).toContain(`type-${type}`);
      if (type !== 'image') expect(await card.locator('.thumb svg').count(), name).toBe(1);
    }
    expect(await item(page, 'Albums').locator('.thumb.type-folder svg').count()).toBe(1);
    expect(await item(page, 'backup.zip').locator('.badge-private').count()).toBe(1);
    expect(await item(page, 'notes.bin').locator('.badge-public').count()).toBe(1);
    expect(await item(page, 'clip.mp4').locator('.card-meta').textContent()).toContain('3 MiB');
    expect(await item(page, 'song.mp3').locator('.card-meta').textContent()).toContain('684 KiB');
    const text = (await page.locator('[data-testid=scroller]').textContent())!;
    expect(text).not.toMatch(/\d\s?(KB|MB|GB)\b/);
    const time = item(page, 'notes.bin').locator('time');
    expect(await time.locator('[aria-hidden=true]').textContent()).toBe('just now');
    const exact = (await time.getAttribute('title'))!;
    expect(exact).toMatch(/\d{4}/);
    expect(await time.locator('.sr-only').textContent()).toContain(exact);

    // Thumbnails: 320-pixel WebP variants (contract §13; a format every browser shows, made at once), the Public image's
    // at its delivery URL, the Private one's through a ~300 s signed link that signs the variant.
    const pub = item(page, 'sunset.png').locator('img');
    await expect.poll(() => pub.getAttribute('src')).toBe(`${files.image!.delivery_url}?w=320&format=webp&preview=1`);
    // The first variant at this edge starts its transform process (run through tsx here).
    const FIRST_VARIANT = { timeout: 30_000 };
    await expect.poll(() => pub.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth), FIRST_VARIANT).toBeGreaterThan(0);
    const priv = item(page, 'secret-photo.png').locator('img');
    await expect.poll(() => priv.getAttribute('src')).toContain('X-Sig=');
    const signed = new URL((await priv.getAttribute('src'))!);
    expect(signed.pathname).toBe(new URL(files.privateImage!.delivery_url!).pathname);
    expect([signed.searchParams.get('w'), signed.searchParams.get('format'), signed.searchParams.get('preview')]).toEqual(['320', 'webp', '1']);
    const ttl = Number(signed.searchParams.get('X-Expires')) - Date.now() / 1000;
    expect(ttl).toBeGreaterThan(200);
    expect(ttl).toBeLessThanOrEqual(301);
    await expect.poll(() => priv.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth), FIRST_VARIANT).toBeGreaterThan(0);

    // A file named like markup is text: no element made from it, no script run.
    const xss = item(page, XSS_NAME);
    expect(await xss.locator('.name').getAttribute('title')).toBe(XSS_NAME);
    expect(await xss.locator('.name-shown').textContent()).toBe(XSS_NAME);
    expect(await xss.locator('.name .sr-only').textContent()).toBe(XSS_NAME);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(alerted).toBe(false);

    // A long name is shortened in the middle (head with an ellipsis, tail with the extension), whole on hover.
    const long = 'a-very-long-file-name-that-will-never-fit-on-one-card-2026-final-version.png';
    await upload(long, new Uint8Array(10), root.folder_id);
    await page.reload();
    const longName = item(page, long).locator('.name');
    await longName.waitFor();
    expect(await longName.getAttribute('title')).toBe(long);
    expect(await longName.locator('.name-tail').textContent()).toMatch(/\.png$/);
    expect(await longName.locator('.name-head').evaluate((e) => e.scrollWidth > e.clientWidth && getComputedStyle(e).textOverflow)).toBe('ellipsis');
    // Shortened on screen, it is read out whole: the card's name and its grid cell are the whole name.
    await page.getByRole('button', { name: long, exact: true }).waitFor();
    await page.getByRole('gridcell', { name: new RegExp(`^${long.replace(/\./g, '\\.')}`) }).waitFor();

    await page.waitForTimeout(300);
    await pg.screenshot(page, 'grid');
  });

  it('list: columns, sorting by name, size and modified through the service (persisted), type and visibility not sortable', async () => {
    const root = await folder(unique('sorting'));
    // Names, sizes and modification times in three different orders.
    await upload('b-medium.txt', new Uint8Array(2000), root.folder_id);
    await upload('c-small.txt', new Uint8Array(10), root.folder_id);
    await upload('a-large.txt', new Uint8Array(50_000), root.folder_id);
    const renamed = await upload('d-renamed-later.txt', new Uint8Array(500), root.folder_id);
    await new Promise((r) => setTimeout(r, 20));
    await pg.api.updateFile({ file_id: renamed.file_id, name: 'd-modified.txt' });
    const { page } = await open(`/?folder=${root.folder_id}`);
    await item(page, 'a-large.txt').and(page.locator('[data-testid=card]')).waitFor();
    // The grid by default; the list once chosen.
    await page.getByRole('button', { name: 'List view' }).click();
    await item(page, 'a-large.txt').and(page.locator('[data-testid=row]')).waitFor();
    const header = (label: string) => page.getByRole('columnheader', { name: label });

    expect(await names(page)).toEqual(['a-large.txt', 'b-medium.txt', 'c-small.txt', 'd-modified.txt']);
    expect(await header('Name').getAttribute('aria-sort')).toBe('ascending');
    const lists: string[] = [];
    page.on('request', (r) => { if (r.url().endsWith('/collections/list')) lists.push(r.postData() ?? ''); });

    await header('Size').getByRole('button').click();
    await expect.poll(() => names(page)).toEqual(['a-large.txt', 'b-medium.txt', 'd-modified.txt', 'c-small.txt']);
    expect(await header('Size').getAttribute('aria-sort')).toBe('descending');
    expect(await header('Name').getAttribute('aria-sort')).toBe('none');
    await header('Size').getByRole('button').click();
    await expect.poll(() => names(page)).toEqual(['c-small.txt', 'd-modified.txt', 'b-medium.txt', 'a-large.txt']);
    expect(await header('Size').getAttribute('aria-sort')).toBe('ascending');
    await header('Modified').getByRole('button').click();
    await expect.poll(() => names(page)).toEqual(['d-modified.txt', 'a-large.txt', 'c-small.txt', 'b-medium.txt']);
    expect(lists.some((b) => b.includes('"sort":"updated_at"') && b.includes('"order":"desc"'))).toBe(true);
    expect(lists.some((b) => b.includes('"sort":"size"') && b.includes('"order":"asc"'))).toBe(true);
    // Type and visibility say they are not sortable.
    expect(await header('Type').getByRole('button').count()).toBe(0);
    expect(await header('Type').getAttribute('aria-sort')).toBeNull();
    expect(await header('Visibility').getByRole('button').count()).toBe(0);

    // Each row: name, size, modified, type, visibility.
    const row = item(page, 'a-large.txt');
    expect(await row.locator('.col-size').textContent()).toBe('48.8 KiB');
    expect(await row.locator('.col-type').textContent()).toBe('Document');
    expect(await row.locator('.col-visibility').textContent()).toContain('Public');
    expect(await row.locator('.col-modified time').getAttribute('title')).toMatch(/\d{4}/);

    // The view and the sort persist (localStorage holds only them).
    await page.goto(`/?folder=${root.folder_id}`);
    await item(page, 'a-large.txt').waitFor();
    expect(await page.locator('[data-testid=row]').count()).toBeGreaterThan(0);
    expect(await names(page)).toEqual(['d-modified.txt', 'a-large.txt', 'c-small.txt', 'b-medium.txt']);
    const prefs = await page.evaluate(() => Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]));
    expect(prefs).toEqual([['coffer.playground.prefs', JSON.stringify({ view: 'list', sort: { field: 'updated_at', order: 'desc' } })]]);
    await header('Name').getByRole('button').click();
    await expect.poll(() => names(page)).toEqual(['a-large.txt', 'b-medium.txt', 'c-small.txt', 'd-modified.txt']);

    await pg.screenshot(page, 'list');
  });
});

// ---- navigation --------------------------------------------------------------------------

describe('folders, breadcrumbs and the address', () => {
  it('creates nested folders, opens them, follows breadcrumbs, and keeps folder, view and search across reload, back and forward', async () => {
    const top = await folder(unique('nav'));
    const { page } = await open(`/?folder=${top.folder_id}&view=grid`);
    await page.locator('[data-testid=empty-state]').waitFor();
    await pg.screenshot(page, 'empty-folder');
    expect(await page.locator('[data-testid=empty-state]').textContent()).toContain('This folder is empty');

    // New folder: name + Private.
    await page.getByRole('button', { name: 'New folder' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'New folder' });
    await dialog.getByLabel('Name').fill('Level 1');
    await dialog.getByText('Private', { exact: true }).click();
    await dialog.getByRole('button', { name: 'Create folder' }).click();
    await item(page, 'Level 1').waitFor();
    expect(await dialog.count()).toBe(0);
    const listed = await pg.api.list({ folder_id: top.folder_id });
    const level1 = listed.folders.find((f) => f.name === 'Level 1')!;
    expect(level1.visibility).toBe('Private');
    expect(await item(page, 'Level 1').locator('.badge-private').count()).toBe(1);

    // A name that exists: the service's message in the dialog.
    await page.getByRole('button', { name: 'New folder' }).first().click();
    await dialog.getByLabel('Name').fill('Level 1');
    await dialog.getByRole('button', { name: 'Create folder' }).click();
    await dialog.getByRole('alert').waitFor();
    const conflict = await pg.api.createFolder({ name: 'Level 1', visibility: 'Public', parent_id: top.folder_id }).catch((e: CofferError) => e);
    expect(await dialog.getByRole('alert').textContent()).toBe((conflict as CofferError).message);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    // Open it (double-click), create inside, open that (Enter): nested to any depth.
    await item(page, 'Level 1').dblclick();
    await expect.poll(() => new URL(page.url()).searchParams.get('folder')).toBe(level1.folder_id);
    await page.locator('[data-testid=empty-state]').waitFor();
    for (const name of ['Level 2', 'Level 3']) {
      await page.getByRole('button', { name: 'New folder' }).first().click();
      await dialog.getByLabel('Name').fill(name);
      await page.keyboard.press('Enter');
      await item(page, name).waitFor();
      // The closing dialog hands focus back to its opener on the next frame: only then does the grid take it.
      await dialog.waitFor({ state: 'detached' });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      await grid(page).focus();
      // The only entry: focusing the grid selects it; Enter opens what is selected.
      await expect.poll(() => item(page, name).getAttribute('aria-selected')).toBe('true');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
      await page.keyboard.press('Enter');
      await page.locator('[data-testid=empty-state]').waitFor();
    }
    const crumbs = page.locator('[data-testid=breadcrumbs] li');
    await expect.poll(() => crumbs.allTextContents()).toEqual(['All files', top.name, 'Level 1', 'Level 2', 'Level 3']);
    expect(await page.locator('[data-testid=breadcrumbs] [aria-current=page]').textContent()).toBe('Level 3');
    const level3Url = page.url();

    // Reload keeps the place.
    await page.reload();
    await page.locator('[data-testid=empty-state]').waitFor();
    await expect.poll(() => crumbs.allTextContents()).toEqual(['All files', top.name, 'Level 1', 'Level 2', 'Level 3']);

    // A breadcrumb goes up, and selects the folder we came from.
    await page.locator('[data-testid=breadcrumbs]').getByRole('link', { name: 'Level 1' }).click();
    await item(page, 'Level 2').waitFor();
    await expect.poll(() => crumbs.allTextContents()).toEqual(['All files', top.name, 'Level 1']);
    await expect.poll(() => item(page, 'Level 2').getAttribute('aria-selected')).toBe('true');

    // List view and a search, both in the address.
    await page.getByRole('button', { name: 'List view' }).click();
    await item(page, 'Level 2').and(page.locator('[data-testid=row]')).waitFor();
    await expect.poll(() => new URL(page.url()).searchParams.get('view')).toBe('list');
    await page.getByRole('searchbox').fill('zzz');
    await page.locator('[data-testid=no-results]').waitFor();
    await expect.poll(() => new URL(page.url()).searchParams.get('q')).toBe('zzz');
    expect(await page.locator('[data-testid=no-results]').textContent()).toContain('No results for “zzz”');
    await page.reload();
    await page.locator('[data-testid=no-results]').waitFor();
    await expect.poll(() => page.getByRole('searchbox').inputValue()).toBe('zzz');

    // Back: the search goes, then the grid view, then Level 3 again; forward returns.
    await page.goBack();
    await item(page, 'Level 2').and(page.locator('[data-testid=row]')).waitFor();
    await expect.poll(() => page.getByRole('searchbox').inputValue()).toBe('');
    await page.goBack();
    await item(page, 'Level 2').and(page.locator('[data-testid=card]')).waitFor();
    await page.goBack();
    await page.locator('[data-testid=empty-state]').waitFor();
    await expect.poll(() => page.url()).toBe(level3Url);
    await page.goForward();
    await item(page, 'Level 2').and(page.locator('[data-testid=card]')).waitFor();
    await page.goForward();
    await item(page, 'Level 2').and(page.locator('[data-testid=row]')).waitFor();

    // "All files" is the root.
    await page.locator('[data-testid=breadcrumbs]').getByRole('link', { name: 'All files' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('folder')).toBeNull();
    await item(page, top.name).waitFor();

    // A folder that does not exist: the service's message and a way out.
    await page.goto('/?folder=no-such-folder');
    const error = page.locator('[data-testid=error-state]');
    await error.waitFor();
    const missing = await pg.api.list({ folder_id: 'no-such-folder' }).catch((e: CofferError) => e);
    expect(await error.textContent()).toContain((missing as CofferError).message);
    await error.getByRole('button', { name: 'Go to All files' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('folder')).toBeNull();
  });

  it('searches by name within the current folder (Mod+F focuses, Escape clears)', async () => {
    const root = await folder(unique('search'));
    const inner = await folder('Holiday photos', root.folder_id);
    await upload('holiday-1.jpg', png, root.folder_id);
    await upload('HOLIDAY-2.jpg', png, root.folder_id);
    await upload('work.txt', new Uint8Array(3), root.folder_id);
    await upload('holiday-deep.jpg', png, inner.folder_id);
    const { page } = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'work.txt').waitFor();
    await grid(page).focus();
    await page.keyboard.press('Control+f');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('search');
    const searches: string[] = [];
    page.on('request', (r) => { if (r.url().endsWith('/collections/search')) searches.push(r.postData() ?? ''); });
    await page.keyboard.type('holiday');
    await expect.poll(() => page.locator('[data-testid=row]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')).sort()))
      .toEqual(['HOLIDAY-2.jpg', 'Holiday photos', 'holiday-1.jpg']);
    expect(JSON.parse(searches.at(-1)!)).toMatchObject({ folder_id: root.folder_id, query: 'holiday' });
    expect(await page.locator('.subbar').textContent()).toContain('3 results for “holiday”');
    await page.keyboard.press('Escape');
    await item(page, 'work.txt').waitFor();
    expect(new URL(page.url()).searchParams.get('q')).toBeNull();
  });
});

// ---- actions -----------------------------------------------------------------------------

describe('actions', () => {
  it('renames (F2), switches visibility of files and folders, copies delivery URLs, downloads', async () => {
    const root = await folder(unique('actions'));
    const sub = await folder('Shared', root.folder_id);
    const file = await upload('draft.txt', new TextEncoder().encode('hello coffer'), root.folder_id);
    const { context, page } = await open(`/?folder=${root.folder_id}&view=list`, { permissions: ['clipboard-read', 'clipboard-write'] });
    await item(page, 'draft.txt').click({ position: { x: 6, y: 6 } });

    // F2 renames; the name up to the extension is selected.
    await page.keyboard.press('F2');
    const rename = page.getByRole('dialog', { name: 'Rename file' });
    const input = rename.getByLabel('New name');
    expect(await input.evaluate((i: HTMLInputElement) => [i.selectionStart, i.selectionEnd])).toEqual([0, 5]);
    await page.keyboard.type('final');
    await page.keyboard.press('Enter');
    await item(page, 'final.txt').waitFor();
    expect((await pg.api.getFile(file.file_id)).name).toBe('final.txt');
    expect(await toast(page).textContent()).toContain('Renamed to “final.txt”');
    // Focus went back to the files.
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');

    // Copy the delivery URL of a Public file.
    await menuAction(page, 'final.txt', 'copy-url');
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(file.delivery_url);
    expect(await toast(page).textContent()).toContain('Delivery URL copied');
    const publicRes = await fetch(file.delivery_url!);
    expect(publicRes.status).toBe(200);

    // Private: the badge changes, the service agrees, the copied URL says it needs a signed link.
    await menuAction(page, 'final.txt', 'visibility');
    await item(page, 'final.txt').locator('.badge-private').waitFor();
    expect((await pg.api.getFile(file.file_id)).visibility).toBe('Private');
    await menuAction(page, 'final.txt', 'copy-url');
    await expect.poll(() => toast(page).textContent()).toContain('this file is Private');
    expect(await toast(page).textContent()).toContain('signed link');
    expect((await fetch(file.delivery_url!)).status).toBe(403);
    await menuAction(page, 'final.txt', 'visibility');
    await item(page, 'final.txt').locator('.badge-public').waitFor();
    expect((await pg.api.getFile(file.file_id)).visibility).toBe('Public');

    // A folder too; its menu has no file actions.
    await item(page, 'Shared').locator('.more-btn').click();
    expect(await page.locator('[role=menu] [data-action]').evaluateAll((els) => els.map((e) => e.getAttribute('data-action'))))
      .toEqual(['open', 'upload-here', 'rename', 'move', 'visibility', 'delete']);
    await page.locator('[role=menu] [data-action=visibility]').click();
    await item(page, 'Shared').locator('.badge-private').waitFor();
    expect((await pg.api.getFolder(sub.folder_id)).visibility).toBe('Private');

    // Rename a folder from its menu.
    await menuAction(page, 'Shared', 'rename');
    await page.getByRole('dialog', { name: 'Rename folder' }).getByLabel('New name').fill('Shared 2026');
    await page.keyboard.press('Enter');
    await item(page, 'Shared 2026').waitFor();
    expect((await pg.api.getFolder(sub.folder_id)).name).toBe('Shared 2026');

    // Download: the browser saves it under its name.
    const [download] = await Promise.all([page.waitForEvent('download'), menuAction(page, 'final.txt', 'download')]);
    expect(download.suggestedFilename()).toBe('final.txt');
    const saved = await download.path();
    expect(saved).toBeTruthy();
    const { readFile } = await import('node:fs/promises');
    expect((await readFile(saved!)).toString()).toBe('hello coffer');
    // The page is still the file manager.
    await item(page, 'final.txt').waitFor();
    await context.close();
  });

  it('creates a signed link for a Private file: presets, custom up to 24 h, the exact expiry, copy', async () => {
    const root = await folder(unique('links'));
    const file = await upload('contract.pdf', new TextEncoder().encode('%PDF-1.4 signed'), root.folder_id, 'Private');
    const { page } = await open(`/?folder=${root.folder_id}&view=grid`, { permissions: ['clipboard-read', 'clipboard-write'] });
    const links: Array<{ expiry: number; file_type: string }> = [];
    page.on('request', (r) => { if (r.url().endsWith('/collections/create-link')) links.push(JSON.parse(r.postData()!)); });
    await menuAction(page, 'contract.pdf', 'signed-link');
    const dialog = page.getByRole('dialog', { name: 'Create a signed link' });
    const expiry = dialog.locator('[data-testid=link-expiry] time');

    // 1 hour by default.
    await expiry.waitFor();
    const at = async () => Date.parse((await expiry.getAttribute('datetime'))!);
    expect(Math.abs((await at()) - Date.now() - 3600_000)).toBeLessThan(60_000);
    expect(links.at(-1)).toMatchObject({ expiry: 3600, file_type: 'document' });
    // The exact date and time, with seconds.
    expect(await expiry.textContent()).toMatch(/\d{4}.*\d{1,2}:\d{2}:\d{2}/);

    for (const [label, seconds] of [['15 min', 900], ['1 day', 86400]] as const) {
      await dialog.getByText(label, { exact: true }).click();
      await expect.poll(() => links.at(-1)?.expiry).toBe(seconds);
      await expect.poll(async () => Math.abs((await at()) - Date.now() - seconds * 1000)).toBeLessThan(60_000);
    }

    // Custom: 90 minutes; 25 hours is refused before asking the service.
    await dialog.getByText('Custom', { exact: true }).click();
    const amount = dialog.getByLabel('Custom time');
    await dialog.getByLabel('Unit').selectOption('minutes');
    await amount.fill('90');
    await expect.poll(() => links.at(-1)?.expiry).toBe(5400);
    await expect.poll(async () => Math.abs((await at()) - Date.now() - 5400_000)).toBeLessThan(60_000);
    const before = links.length;
    await dialog.getByLabel('Unit').selectOption('hours');
    await amount.fill('25');
    await dialog.getByText('Choose a time from 1 minute to 24 hours.').waitFor();
    await page.waitForTimeout(500);
    expect(links.length).toBe(before);
    await amount.fill('2');
    await expect.poll(() => links.at(-1)?.expiry).toBe(7200);
    await expiry.waitFor();
    await page.waitForTimeout(200);
    await pg.screenshot(page, 'signed-link-dialog');

    await dialog.getByRole('button', { name: 'Copy' }).click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(await dialog.locator('[data-testid=signed-link]').inputValue());
    expect(copied).toContain('X-Sig=');
    const res = await fetch(copied);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('%PDF-1.4 signed');
    expect(await toast(page).textContent()).toContain('Signed link copied');

    // Escape closes it, and focus returns to the files.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
    void file;
  });

  it('deletes after a confirmation that names what goes; a non-empty folder says what it holds', async () => {
    const root = await folder(unique('delete'));
    const full = await folder('Full', root.folder_id);
    await folder('Inner', full.folder_id);
    await upload('one.txt', new Uint8Array(1), full.folder_id);
    await upload('two.txt', new Uint8Array(2), full.folder_id);
    const empty = await folder('Empty', root.folder_id);
    const doomed = await upload('doomed.txt', new Uint8Array(3), root.folder_id);
    const { page } = await open(`/?folder=${root.folder_id}&view=list`);
    const requests: string[] = [];
    page.on('request', (r) => { if (r.url().includes('/delete')) requests.push(`${new URL(r.url()).pathname} ${r.postData()}`); });

    // A file, with the Delete key.
    await item(page, 'doomed.txt').click({ position: { x: 6, y: 6 } });
    await page.keyboard.press('Delete');
    const dialog = page.getByRole('dialog', { name: 'Delete file?' });
    expect(await dialog.textContent()).toContain('doomed.txt');
    // Cancel keeps it.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(requests).toEqual([]);
    await page.keyboard.press('Delete');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await item(page, 'doomed.txt').waitFor({ state: 'detached' });
    await expect(pg.api.getFile(doomed.file_id)).rejects.toMatchObject({ code: 'file_not_found' });

    // A non-empty folder: what is inside, then recursive.
    const sent = requests.length;
    await menuAction(page, 'Full', 'delete');
    const folderDialog = page.getByRole('dialog', { name: 'Delete folder?' });
    await folderDialog.locator('[data-testid=delete-contents]').waitFor();
    expect(await folderDialog.locator('[data-testid=delete-contents]').textContent()).toBe('It contains 2 files and 1 folder (3 B) at every level, all deleted with it.');
    expect(requests.length).toBe(sent);
    await pg.screenshot(page, 'delete-folder-dialog');
    await folderDialog.getByRole('button', { name: 'Delete folder and contents' }).click();
    await item(page, 'Full').waitFor({ state: 'detached' });
    expect(requests.at(-1)).toBe(`/collections/folder/delete ${JSON.stringify({ folder_id: full.folder_id, recursive: true })}`);
    await expect(pg.api.getFolder(full.folder_id)).rejects.toMatchObject({ code: 'folder_not_found' });

    // An empty folder: no warning, not recursive.
    await menuAction(page, 'Empty', 'delete');
    await folderDialog.getByText('is empty').waitFor();
    await folderDialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await item(page, 'Empty').waitFor({ state: 'detached' });
    expect(requests.at(-1)).toBe(`/collections/folder/delete ${JSON.stringify({ folder_id: empty.folder_id, recursive: false })}`);
    expect(await toast(page).textContent()).toContain('Deleted folder “Empty”');
    await page.locator('[data-testid=empty-state]').waitFor();
  });

  it('uploads through the file browser and by a drop onto a folder; new files appear with inline progress', async () => {
    const root = await folder(unique('uploads'));
    const target = await folder('Drop here', root.folder_id);
    const { page } = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'Drop here').waitFor();
    // Record whether an upload row with a progress bar ever showed in the folder.
    await page.evaluate(() => {
      const w = window as unknown as { sawUpload: boolean };
      w.sawUpload = false;
      new MutationObserver(() => {
        if (document.querySelector('[data-testid=row][data-kind=upload] [role=progressbar]')) w.sawUpload = true;
      }).observe(document.body, { subtree: true, childList: true });
    });
    await page.locator('input[type=file]').setInputFiles([
      { name: 'picked-1.txt', mimeType: 'text/plain', buffer: Buffer.from('one') },
      { name: 'picked-2.bin', mimeType: 'application/octet-stream', buffer: randomBytes(6 * 1024 * 1024) },
    ]);
    await item(page, 'picked-1.txt').and(page.locator('[data-kind=file]')).waitFor();
    await item(page, 'picked-2.bin').and(page.locator('[data-kind=file]')).waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => (window as unknown as { sawUpload: boolean }).sawUpload)).toBe(true);
    const here = await pg.api.list({ folder_id: root.folder_id });
    expect(here.files.map((f) => f.name).sort()).toEqual(['picked-1.txt', 'picked-2.bin']);

    // Dropped on a folder's row: into that folder, the current one unchanged.
    const data = await page.evaluateHandle(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['dropped bytes'], 'dropped.txt', { type: 'text/plain' }));
      return dt;
    });
    const row = item(page, 'Drop here');
    await row.dispatchEvent('dragenter', { dataTransfer: data });
    await row.dispatchEvent('dragover', { dataTransfer: data });
    await expect.poll(() => row.getAttribute('class')).toContain('drop-target');
    await row.dispatchEvent('drop', { dataTransfer: data });
    await expect.poll(async () => (await pg.api.list({ folder_id: target.folder_id })).files.map((f) => f.name), { timeout: 15_000 }).toEqual(['dropped.txt']);
    expect(await item(page, 'dropped.txt').count()).toBe(0);
    expect(await toast(page).textContent()).toContain('to “Drop here”');
  });
});

// ---- keyboard and accessibility ----------------------------------------------------------

describe('keyboard and accessibility', () => {
  it('arrows move the selection in the list and the grid; Enter opens; focus is visible', async () => {
    const root = await folder(unique('keys'));
    for (let i = 0; i < 14; i++) await upload(`k${String(i).padStart(2, '0')}.txt`, new Uint8Array(i + 1), root.folder_id);
    const inner = await folder('a-folder', root.folder_id);
    await upload('inside.txt', new Uint8Array(1), inner.folder_id);
    const { page } = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'k00.txt').waitFor();
    const active = () => grid(page).evaluate((g) => {
      const id = g.getAttribute('aria-activedescendant');
      return id ? document.getElementById(id)?.getAttribute('data-name') ?? null : null;
    });

    // Tab into the files from the view buttons: the first item is selected and ringed.
    await page.getByRole('button', { name: 'List view' }).focus();
    await page.keyboard.press('Tab');
    await expect.poll(active).toBe('a-folder');
    expect(await item(page, 'a-folder').evaluate((e) => getComputedStyle(e).boxShadow)).not.toBe('none');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await active()).toBe('k01.txt');
    await page.keyboard.press('ArrowUp');
    expect(await active()).toBe('k00.txt');
    await page.keyboard.press('End');
    expect(await active()).toBe('k13.txt');
    await page.keyboard.press('Home');
    expect(await active()).toBe('a-folder');

    // Grid: left/right by one, up/down by a row of cards.
    await page.getByRole('button', { name: 'Grid view' }).click();
    await item(page, 'k00.txt').and(page.locator('[data-testid=card]')).waitFor();
    const cols = await page.locator('.card-row').first().locator('[data-testid=card]').count();
    expect(cols).toBeGreaterThan(1);
    await grid(page).focus();
    expect(await active()).toBe('a-folder');
    await page.keyboard.press('ArrowRight');
    expect(await active()).toBe('k00.txt');
    await page.keyboard.press('ArrowDown');
    expect(await active()).toBe(`k${String(cols).padStart(2, '0')}.txt`);
    await page.keyboard.press('ArrowLeft');
    expect(await active()).toBe(`k${String(cols - 1).padStart(2, '0')}.txt`);
    await page.keyboard.press('ArrowUp');
    expect(await active()).toBe('a-folder');

    // Enter on a file opens its details; Escape closes them and focus comes back.
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    const details = page.getByRole('dialog', { name: 'k00.txt' });
    await details.waitFor();
    expect(await details.evaluate((d: HTMLDialogElement) => d.open && d.matches(':modal'))).toBe(true);
    await page.keyboard.press('Escape');
    await details.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');

    // Enter on a folder opens it; Alt+Up goes back up with that folder selected.
    await page.keyboard.press('Home');
    await page.keyboard.press('Enter');
    await item(page, 'inside.txt').waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
    await page.keyboard.press('Alt+ArrowUp');
    await item(page, 'k00.txt').waitFor();
    await expect.poll(active).toBe('a-folder');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');

    // The ⋮ menu: arrow keys, Escape returns focus.
    await page.keyboard.press('Shift+F10');
    const menu = page.getByRole('menu');
    await menu.waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-action'))).toBe('open');
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-action'))).toBe('upload-here');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');

    // Every button has a name.
    const unnamed = await page.locator('button').evaluateAll((els) => els.filter((b) => !(b.getAttribute('aria-label') || b.textContent?.trim())).length);
    expect(unnamed).toBe(0);
  });

  it('has no serious or critical axe violations on the main screens, light and dark', async () => {
    const root = await folder(unique('axe'));
    await folder('Sub', root.folder_id, 'Private');
    await upload('photo.png', png, root.folder_id);
    await upload('private.pdf', new TextEncoder().encode('%PDF'), root.folder_id, 'Private');
    const found: Record<string, unknown> = {};
    // axe is injected as a script, which the Playground's CSP would refuse: this context bypasses it.
    const { context, page } = await pg.newPage({ bypassCSP: true });
    await page.goto('/');
    await page.getByLabel('Access key').waitFor();
    found.signIn = await axeScan(page);
    await context.request.post('/session', { data: { access_key: pg.key } });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`/?folder=${root.folder_id}&view=grid`);
      await item(page, 'photo.png').waitFor();
      found[`grid-${scheme}`] = await axeScan(page);
      await page.goto(`/?folder=${root.folder_id}&view=list`);
      await item(page, 'photo.png').waitFor();
      found[`list-${scheme}`] = await axeScan(page);
      await menuAction(page, 'private.pdf', 'signed-link');
      await page.locator('[data-testid=link-expiry] time').waitFor();
      found[`link-dialog-${scheme}`] = await axeScan(page);
      await page.keyboard.press('Escape');
      await menuAction(page, 'Sub', 'delete');
      await page.locator('[data-testid=delete-dialog]').getByText('is empty').waitFor();
      found[`delete-dialog-${scheme}`] = await axeScan(page);
      await page.keyboard.press('Escape');
    }
    await page.goto(`/?folder=${root.folder_id}&q=nothing-matches`);
    await page.locator('[data-testid=no-results]').waitFor();
    found.noResults = await axeScan(page);
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
    await context.close();
  });

  it('follows the system dark mode and fits a phone’s width', async () => {
    const { root } = await sampleFolder();
    const { page } = await open(`/?folder=${root.folder_id}&view=grid`, { colorScheme: 'dark' });
    await item(page, 'sunset.png').locator('img').waitFor();
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [r, g, b] = bg.match(/\d+/g)!.map(Number);
    expect(r! + g! + b!).toBeLessThan(120);
    await page.waitForTimeout(300);
    await pg.screenshot(page, 'dark-mode');
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe(bg);

    // 360 px: labels fold into icons (still named), the list keeps the name column.
    await page.setViewportSize({ width: 360, height: 720 });
    await page.getByRole('button', { name: 'List view' }).click();
    await item(page, 'sunset.png').and(page.locator('[data-testid=row]')).waitFor();
    expect(await page.getByRole('button', { name: 'New folder' }).first().locator('.hide-narrow').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Upload files' }).isVisible()).toBe(true);
    expect(await item(page, 'sunset.png').locator('.col-size').isVisible()).toBe(false);
    expect(await item(page, 'sunset.png').locator('.col-type').isVisible()).toBe(false);
    expect(await item(page, 'sunset.png').locator('.row-sub').isVisible()).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await pg.screenshot(page, 'phone-list');
    await page.getByRole('button', { name: 'Grid view' }).click();
    await item(page, 'sunset.png').and(page.locator('[data-testid=card]')).waitFor();
    expect(await page.locator('.card-row').first().locator('[data-testid=card]').count()).toBe(2);
    await pg.screenshot(page, 'phone-grid');
  });
});

// ---- scale -------------------------------------------------------------------------------

describe('a folder of 10,000 files', () => {
  it('pages in as it scrolls to the end, in the list and the grid, with fewer than 300 rows in the page', async () => {
    const big = await folder(unique('big'));
    const N = 10_000;
    const base = Date.now() - N * 1000;
    const rows = Array.from({ length: N }, (_, i) => fileRow({ name: `f${String(i).padStart(5, '0')}.bin`, folder_id: big.folder_id, size: i * 37, created_at: base + i * 1000 }));
    const writer = new BetterSqlite3(join(pg.origin.dataDir, 'coffer.sqlite'), { fileMustExist: true });
    try {
      const cols = Object.keys(rows[0]!);
      const insert = writer.prepare(`insert into files (${cols.join(', ')}) values (${cols.map((c) => '@' + c).join(', ')})`);
      writer.transaction(() => { for (const r of rows) insert.run(r); })();
    } finally {
      writer.close();
    }

    const { page } = await open(`/?folder=${big.folder_id}&view=list`);
    await item(page, 'f00000.bin').waitFor();
    const pages: string[] = [];
    page.on('request', (r) => { if (r.url().endsWith('/collections/list')) pages.push(r.postData() ?? ''); });

    /** Scrolls to the bottom until the last file is in view; returns the most rows and cards ever in the page. */
    const scrollToEnd = (last: string) => page.evaluate(async (lastName) => {
      const scroller = document.querySelector<HTMLElement>('[data-testid=scroller]')!;
      const frame = () => new Promise((r) => requestAnimationFrame(() => r(null)));
      let most = 0;
      const started = performance.now();
      while (performance.now() - started < 40_000) {
        scroller.scrollTop = scroller.scrollHeight;
        await frame();
        await frame();
        most = Math.max(most, document.querySelectorAll('[data-testid=row], [data-testid=card]').length);
        if (document.querySelector(`[data-name="${lastName}"]`) && !document.querySelector('.list-footer')) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      return { most, done: !!document.querySelector(`[data-name="${lastName}"]`), scrollTop: scroller.scrollTop };
    }, last);

    const t0 = Date.now();
    const list = await scrollToEnd('f09999.bin');
    expect(list.done).toBe(true);
    expect(list.most).toBeLessThan(300);
    expect(await page.locator('[data-testid=summary]').textContent()).toBe('0 folders, 10,000 files');
    // Cursor paging: pages of 200.
    expect(pages.length).toBeGreaterThanOrEqual(Math.floor(N / 200) - 2);
    expect(JSON.parse(pages[0]!)).toMatchObject({ folder_id: big.folder_id, limit: 200, cursor: expect.any(String) });
    expect(await page.locator('[data-testid=row]').count()).toBeLessThan(300);
    // Smooth: stepping through all 10,000 rows, each step renders within a frame or two.
    const steps = await page.locator('[data-testid=scroller]').evaluate(async (s) => {
      const times: number[] = [];
      const frame = () => new Promise((r) => requestAnimationFrame(() => r(null)));
      for (let i = 0; i <= 150; i++) {
        const t = performance.now();
        s.scrollTop = ((s.scrollHeight - s.clientHeight) * i) / 150;
        await frame();
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      return { p95: times[Math.floor(times.length * 0.95)]!, max: times.at(-1)!, rows: document.querySelectorAll('[data-testid=row]').length };
    });
    console.log(`scroll steps through 10,000 rows: p95 ${steps.p95.toFixed(1)} ms, max ${steps.max.toFixed(1)} ms, ${steps.rows} rows in the page`);
    // The step times are printed, not asserted: tests never assert timings. What holds is that the page stays small.
    expect(steps.rows).toBeLessThan(300);
    // A scroll back to the middle shows the rows there.
    await page.locator('[data-testid=scroller]').evaluate((s) => { s.scrollTop = s.scrollHeight / 2; });
    await expect.poll(() => page.locator('[data-testid=row][data-name="f05000.bin"]').count()).toBe(1);

    // The grid, over the same 10,000.
    await page.getByRole('button', { name: 'Grid view' }).click();
    await item(page, 'f00000.bin').waitFor();
    const gridScroll = await scrollToEnd('f09999.bin');
    expect(gridScroll.done).toBe(true);
    expect(gridScroll.most).toBeLessThan(300);
    console.log(`10,000 files: scrolled to the end of the list and the grid in ${Date.now() - t0} ms (${pages.length} pages)`);
  }, 60_000);
});
