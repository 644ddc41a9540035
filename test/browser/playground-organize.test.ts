/**
 * Organizing files in the Playground (issue 24, point 3): Move through the folder picker and
 * by dragging onto a folder or a breadcrumb; selecting several (click, Shift-click, Ctrl-click,
 * Ctrl-A, the list's check boxes) and moving, changing and deleting them together; a folder's
 * delete counting what it holds at every level; search across all folders with each hit's
 * path; the sort kept after an upload and a rename; the upload panel docked beside the files
 * with each bar as wide as its percentage; a toast never over an open menu; a phone's list
 * keeps the visibility badge; thumbnails asked for as WebP previews that usage does not count.
 * Screenshots go to test-results/playground/.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileRecord, FolderRecord } from '../../src/sdk/index.js';
import { startPlayground, type Playground } from './harness.js';

let pg: Playground;
let dir: string;

beforeAll(async () => {
  pg = await startPlayground();
  dir = await mkdtemp(join(tmpdir(), 'coffer-pg-organize-'));
}, 60_000);

afterAll(async () => {
  await pg?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let counter = 0;
const unique = (base: string) => `${base}-${++counter}-${randomBytes(3).toString('hex')}`;
const WAIT = { timeout: 20_000 };

const folder = (name: string, parentId: string | null = null, visibility: 'Public' | 'Private' = 'Public'): Promise<FolderRecord> =>
  pg.api.createFolder({ name, visibility, parent_id: parentId });
const upload = (name: string, folderId: string | null, size = 10): Promise<FileRecord> =>
  pg.api.uploadFile(new Uint8Array(size), { name, folderId, visibility: 'Public' });

async function open(path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const { page } = await pg.signedInPage({ path, viewport });
  page.on('pageerror', (e) => { throw e; });
  return page;
}

const item = (page: Page, name: string): Locator => page.locator(`[data-testid=row][data-name="${name}"], [data-testid=card][data-name="${name}"]`);
const shown = (page: Page): Promise<string[]> =>
  page.locator('[data-testid=row], [data-testid=card]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')!));
const selectedNames = (page: Page): Promise<string[]> =>
  page.locator('[data-testid=row][aria-selected=true], [data-testid=card][aria-selected=true]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')!));
const toast = (page: Page): Locator => page.locator('[data-testid=toast]').last();
const folderOf = async (f: FileRecord) => (await pg.api.getFile(f.file_id)).folder_id;

describe('moving', () => {
  it('moves a file through the folder picker, and files and folders by dragging onto a folder or a breadcrumb', async () => {
    const root = await folder(unique('move'));
    const archive = await folder('Archive', root.folder_id);
    const inner = await folder('Inner', root.folder_id);
    const report = await upload('report.pdf', root.folder_id);
    const notes = await upload('notes.txt', root.folder_id);
    const deep = await upload('deep.txt', inner.folder_id);
    const page = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'report.pdf').waitFor();

    // The menu's Move… opens the picker at this folder; choosing Archive moves the file there.
    await item(page, 'report.pdf').locator('.more-btn').click();
    await page.locator('[role=menu] [data-action="move"]').click();
    const picker = page.locator('[data-testid=folder-picker]');
    await picker.locator('[role=option][data-name="Archive"]').click();
    expect(await picker.locator('.hint').textContent()).toBe('“report.pdf” will move to “Archive”.');
    await pg.screenshot(page, 'move-dialog');
    await picker.locator('[data-testid=picker-choose]').click();
    await item(page, 'report.pdf').waitFor({ state: 'detached' });
    expect(await toast(page).textContent()).toContain('Moved “report.pdf” to “Archive”');
    expect(await folderOf(report)).toBe(archive.folder_id);

    // Dragged onto a folder's row: the file goes into it.
    await item(page, 'notes.txt').locator('.col-size').dragTo(item(page, 'Archive').locator('.col-modified'));
    await item(page, 'notes.txt').waitFor({ state: 'detached' });
    expect(await folderOf(notes)).toBe(archive.folder_id);

    // Dragged onto a breadcrumb: up to the folder it names.
    await page.goto(`/?folder=${inner.folder_id}&view=grid`);
    await item(page, 'deep.txt').waitFor();
    const rootCrumb = page.locator('[data-testid=breadcrumbs] a', { hasText: root.name });
    await item(page, 'deep.txt').locator('.thumb').dragTo(rootCrumb);
    await item(page, 'deep.txt').waitFor({ state: 'detached' });
    expect(await folderOf(deep)).toBe(root.folder_id);

    // A folder dragged onto another folder moves with what it holds.
    await page.goto(`/?folder=${root.folder_id}&view=grid`);
    await item(page, 'Inner').locator('.thumb').dragTo(item(page, 'Archive').locator('.thumb'));
    await item(page, 'Inner').waitFor({ state: 'detached' });
    expect((await pg.api.getFolder(inner.folder_id)).parent_id).toBe(archive.folder_id);
    await pg.screenshot(page, 'move-after-drag');
  });
});

describe('selecting several', () => {
  it('selects with click, Shift-click, Ctrl-click, Ctrl-A and check boxes; moves, changes visibility of and deletes them together', async () => {
    const root = await folder(unique('select'));
    const target = await folder('Target', root.folder_id);
    const files: FileRecord[] = [];
    for (const n of ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt']) files.push(await upload(n, root.folder_id));
    const page = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'a.txt').waitFor();

    // Shift with the arrows stretches the selection; Escape ends it.
    await item(page, 'b.txt').locator('.col-size').click();
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    expect(await selectedNames(page)).toEqual(['b.txt', 'c.txt', 'd.txt']);
    await page.locator('[data-testid=selection-bar]').waitFor();
    await page.keyboard.press('Escape');
    await page.locator('[data-testid=selection-bar]').waitFor({ state: 'detached' });
    expect(await selectedNames(page)).toEqual([]);

    await item(page, 'a.txt').locator('.col-size').click();
    await item(page, 'c.txt').locator('.col-size').click({ modifiers: ['Shift'] });
    expect(await selectedNames(page)).toEqual(['a.txt', 'b.txt', 'c.txt']);
    await item(page, 'e.txt').locator('.col-size').click({ modifiers: ['Control'] });
    expect(await selectedNames(page)).toEqual(['a.txt', 'b.txt', 'c.txt', 'e.txt']);
    await item(page, 'b.txt').locator('.col-size').click({ modifiers: ['Control'] });
    expect(await selectedNames(page)).toEqual(['a.txt', 'c.txt', 'e.txt']);
    const bar = page.locator('[data-testid=selection-bar]');
    expect(await bar.getByRole('status').textContent()).toBe('3 files selected');
    await pg.screenshot(page, 'multi-select');

    // Bulk visibility.
    await bar.getByRole('button', { name: 'Make Private' }).click();
    await expect.poll(async () => (await pg.api.getFile(files[4]!.file_id)).visibility, WAIT).toBe('Private');
    for (const i of [0, 2]) expect((await pg.api.getFile(files[i]!.file_id)).visibility).toBe('Private');
    expect((await pg.api.getFile(files[1]!.file_id)).visibility).toBe('Public');
    await expect.poll(() => item(page, 'e.txt').locator('.badge-private').count()).toBe(1);

    // Bulk move through the dialog.
    await bar.getByRole('button', { name: 'Move…' }).click();
    const picker = page.locator('[data-testid=folder-picker]');
    await picker.locator('[role=option][data-name="Target"]').click();
    expect(await picker.locator('.hint').textContent()).toBe('3 files will move to “Target”.');
    await picker.locator('[data-testid=picker-choose]').click();
    await expect.poll(() => shown(page)).toEqual(['Target', 'b.txt', 'd.txt', 'f.txt']);
    expect(await toast(page).textContent()).toContain('Moved 3 items to “Target”');
    for (const i of [0, 2, 4]) expect(await folderOf(files[i]!)).toBe(target.folder_id);

    // Check boxes, then Ctrl-A, then drag of the selection onto a folder.
    await item(page, 'b.txt').getByRole('checkbox').click();
    await item(page, 'd.txt').getByRole('checkbox').click();
    expect(await selectedNames(page)).toEqual(['b.txt', 'd.txt']);
    await item(page, 'd.txt').locator('.col-size').dragTo(item(page, 'Target').locator('.col-size'));
    await expect.poll(() => shown(page)).toEqual(['Target', 'f.txt']);
    for (const i of [1, 3]) expect(await folderOf(files[i]!)).toBe(target.folder_id);

    await page.goto(`/?folder=${target.folder_id}&view=list`);
    await item(page, 'a.txt').waitFor();
    await page.locator('[role=grid]').focus();
    await page.keyboard.press('Control+a');
    expect((await selectedNames(page)).length).toBe(5);
    expect(await page.getByRole('checkbox', { name: 'Select all' }).isChecked()).toBe(true);
    await page.locator('[data-testid=selection-bar]').getByRole('button', { name: 'Delete…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete 5 items?' });
    expect(await dialog.textContent()).toContain('5 files are deleted');
    await pg.screenshot(page, 'bulk-delete-dialog');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.locator('[data-testid=empty-state]').waitFor();
    expect((await pg.api.list({ folder_id: target.folder_id })).files).toEqual([]);
  });

  it('counts what a folder holds at every level before deleting it', async () => {
    const root = await folder(unique('count'));
    const big = await folder('Big', root.folder_id);
    const a = await folder('A', big.folder_id);
    const b = await folder('B', a.folder_id);
    await folder('C', big.folder_id);
    for (const [name, at] of [['1', big], ['2', big], ['3', a], ['4', a], ['5', b]] as const) await upload(`${name}.bin`, at.folder_id, 1024);
    const page = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'Big').locator('.more-btn').click();
    await page.locator('[role=menu] [data-action="delete"]').click();
    const dialog = page.getByRole('dialog', { name: 'Delete folder?' });
    const contents = dialog.locator('[data-testid=delete-contents]');
    await contents.waitFor();
    expect(await contents.textContent()).toBe('It contains 5 files and 3 folders (5 KiB) at every level, all deleted with it.');
    await pg.screenshot(page, 'delete-folder-count');
    await dialog.getByRole('button', { name: 'Delete folder and contents' }).click();
    await item(page, 'Big').waitFor({ state: 'detached' });
  });
});

describe('search across all folders', () => {
  it('finds names in every folder, shows where each hit is, and opens its folder', async () => {
    const tag = unique('needle');
    const root = await folder(unique('search'));
    const sub = await folder('Deep', root.folder_id);
    const deeper = await folder('Deeper', sub.folder_id);
    await upload(`${tag}-top.txt`, root.folder_id);
    await upload(`${tag}-deep.txt`, deeper.folder_id);
    await folder(`${tag} folder`, sub.folder_id);
    const page = await open(`/?folder=${root.folder_id}&view=list&q=${tag}`);
    // In this folder: only its own hit.
    await expect.poll(() => shown(page)).toEqual([`${tag}-top.txt`]);
    await page.locator('[data-testid=scope-all]').click();
    await expect.poll(() => shown(page), WAIT).toEqual([`${tag} folder`, `${tag}-deep.txt`, `${tag}-top.txt`]);
    expect(new URL(page.url()).searchParams.get('in')).toBe('all');
    expect(await item(page, `${tag}-deep.txt`).locator('[data-testid=hit-path]').textContent()).toBe(`in All files / ${root.name} / Deep / Deeper`);
    expect(await item(page, `${tag} folder`).locator('[data-testid=hit-path]').textContent()).toBe(`in All files / ${root.name} / Deep`);
    await expect.poll(() => page.locator('.subbar-text').textContent()).toContain('3 results');
    await pg.screenshot(page, 'search-all-folders');
    // Back to this folder only, then a hit's folder opens from the results.
    await page.locator('[data-testid=scope-folder]').click();
    await expect.poll(() => shown(page)).toEqual([`${tag}-top.txt`]);
    await page.locator('[data-testid=scope-all]').click();
    await item(page, `${tag} folder`).locator('.row-name').click();
    await expect.poll(() => page.locator('[data-testid=breadcrumbs] [aria-current=page]').textContent()).toBe(`${tag} folder`);
  });
});

describe('thumbnails', () => {
  it('asks for WebP variants marked as previews, which usage does not count as downloads', { timeout: 90_000 }, async () => {
    const { page: painter, context } = await pg.newPage({ viewport: { width: 240, height: 160 } });
    await painter.setContent('<body style="margin:0;background:linear-gradient(135deg,#0ea5e9,#7c3aed)"></body>');
    const png = new Uint8Array(await painter.screenshot());
    await context.close();
    const root = await folder(unique('thumbs'));
    const pub = await pg.api.uploadFile(png, { name: 'public.png', folderId: root.folder_id, visibility: 'Public' });
    const priv = await pg.api.uploadFile(png, { name: 'private.png', folderId: root.folder_id, visibility: 'Private' });
    const page = await open(`/?folder=${root.folder_id}&view=grid`);
    for (const f of [pub, priv]) {
      const img = item(page, f.name).locator('img');
      await expect.poll(() => img.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth), { timeout: 40_000 }).toBeGreaterThan(0);
      const url = new URL((await img.getAttribute('src'))!);
      expect([url.searchParams.get('w'), url.searchParams.get('format'), url.searchParams.get('preview')], f.name).toEqual(['320', 'webp', '1']);
    }
    expect(new URL((await item(page, 'private.png').locator('img').getAttribute('src'))!).searchParams.get('X-Sig')).toBeTruthy();
    await page.waitForTimeout(400); // the thumbnails' fade-in
    await pg.screenshot(page, 'thumbnails-webp');
    // The edge has served both thumbnails; neither is a download. A real download is.
    await pg.edge.reportUsage();
    expect((await pg.api.getFile(pub.file_id)).downloads).toBe(0);
    expect((await pg.api.getFile(priv.file_id)).downloads).toBe(0);
    expect((await fetch(pub.delivery_url!)).status).toBe(200);
    await expect.poll(async () => {
      await pg.edge.reportUsage();
      return (await pg.api.getFile(pub.file_id)).downloads;
    }, WAIT).toBe(1);
  });
});

describe('order', () => {
  it('keeps the sort after an upload and a rename', async () => {
    const root = await folder(unique('order'));
    for (const [n, size] of [['b.txt', 40], ['d.txt', 20], ['f.txt', 10]] as const) await upload(n, root.folder_id, size);
    const page = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'b.txt').waitFor();
    // Largest first.
    await page.locator('[data-testid=sort]').selectOption('size:desc');
    await expect.poll(() => shown(page)).toEqual(['b.txt', 'd.txt', 'f.txt']);
    const path = join(dir, 'c.txt');
    await writeFile(path, new Uint8Array(30));
    await page.locator('input[type=file]').setInputFiles(path);
    await expect.poll(() => page.locator('[data-testid=row][data-kind=file]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name'))), WAIT)
      .toEqual(['b.txt', 'c.txt', 'd.txt', 'f.txt']);
    // By name: a rename moves the file to its new place.
    await page.locator('[data-testid=sort]').selectOption('name:asc');
    await expect.poll(() => shown(page)).toEqual(['b.txt', 'c.txt', 'd.txt', 'f.txt']);
    await item(page, 'b.txt').locator('.col-size').click();
    await page.keyboard.press('F2');
    const rename = page.getByRole('dialog', { name: 'Rename file' });
    await rename.getByLabel('New name').fill('e.txt');
    await rename.getByRole('button', { name: 'Rename' }).click();
    await expect.poll(() => shown(page)).toEqual(['c.txt', 'd.txt', 'e.txt', 'f.txt']);
  });
});

describe('layout', () => {
  it('docks the upload panel beside the files, each bar as wide as its percentage; a toast never covers an open menu', async () => {
    const root = await folder(unique('dock'));
    for (let i = 0; i < 30; i++) await upload(`file-${String(i).padStart(2, '0')}.txt`, root.folder_id);
    const page = await open(`/?folder=${root.folder_id}&view=list`);
    await item(page, 'file-00.txt').waitFor();
    const path = join(dir, 'big.bin');
    await writeFile(path, randomBytes(20 * 1024 * 1024));
    // One part through, the rest held: the bar stops part way.
    let seen = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    await page.route((u) => u.pathname === '/collections/upload/file-progress', (route: Route) => {
      if (seen++ < 1) return route.continue().catch(() => undefined);
      return released.then(() => route.continue()).catch(() => undefined);
    });
    await page.locator('input[type=file]').setInputFiles(path);
    const bar = page.locator('.upl-item [role=progressbar]');
    await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), WAIT).toBeGreaterThan(0);
    const pct = Number(await bar.getAttribute('aria-valuenow'));
    const ratio = await bar.evaluate((b) => (b.firstElementChild as HTMLElement).getBoundingClientRect().width / b.getBoundingClientRect().width * 100);
    expect(Math.abs(ratio - pct)).toBeLessThan(1);
    expect(await page.locator('.upl-pct').textContent()).toBe(`${pct}%`);
    // Docked: the panel and the folder's contents do not overlap.
    const panel = (await page.locator('.upl').boundingBox())!;
    const content = (await page.locator('.content').boundingBox())!;
    expect(panel.x >= content.x + content.width || panel.y >= content.y + content.height).toBe(true);
    await pg.screenshot(page, 'upload-panel-docked');

    // A toast and an open menu: the menu is on top.
    await item(page, 'file-00.txt').locator('.more-btn').click();
    await page.evaluate(() => undefined);
    const menu = page.locator('[role=menu]');
    await menu.waitFor();
    const z = await page.evaluate(() => {
      const m = document.querySelector('.menu')!;
      const t = document.querySelector('.toasts')!;
      return [Number(getComputedStyle(m).zIndex), Number(getComputedStyle(t).zIndex)];
    });
    expect(z[0]).toBeGreaterThan(z[1]!);
    await page.keyboard.press('Escape');
    release();
    await expect.poll(() => page.locator('.upl-item').getAttribute('data-status'), { timeout: 60_000 }).toBe('done');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('keeps the visibility badge in a phone’s list, and a search placeholder that fits', async () => {
    const root = await folder(unique('phone'));
    await upload('a-rather-long-name-for-a-phone-screen-2026.pdf', root.folder_id);
    const page = await open(`/?folder=${root.folder_id}&view=list`, { width: 390, height: 760 });
    const row = item(page, 'a-rather-long-name-for-a-phone-screen-2026.pdf');
    await row.waitFor();
    await pg.screenshot(page, 'phone-list-badge');
    expect(await row.locator('.col-visibility .badge-public').isVisible(), 'the badge').toBe(true);
    const fits = await page.locator('[data-testid=search]').evaluate((input: HTMLInputElement) => {
      const c = document.createElement('canvas').getContext('2d')!;
      const s = getComputedStyle(input);
      c.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      const room = input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      return [c.measureText(input.placeholder).width, room];
    });
    expect(fits[0], `placeholder ${fits[0]} px in ${fits[1]} px`).toBeLessThanOrEqual(fits[1]!);
  });
});
