/**
 * The Playground's keys and link revocation in a real browser (issue 12, point 5): a key
 * made on the Keys page with scopes, a folder from the picker and an expiry; its secret
 * shown once, copied, and kept in no storage; the key working over HTTP and confined to
 * its folder; revoked from the page and refused (401). "Revoke links" on a file makes an
 * earlier signed link answer 403 link_revoked at the edge. Screenshots go to
 * test-results/playground/.
 */
import { randomBytes } from 'node:crypto';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient, CofferError, type FolderRecord } from '../../src/sdk/index.js';
import { axeScan, persistedText, settled } from './checks.js';
import { startPlayground, type Playground } from './harness.js';

let pg: Playground;

beforeAll(async () => {
  pg = await startPlayground();
}, 60_000);

afterAll(async () => {
  await pg?.close();
});

const unique = (base: string) => `${base}-${randomBytes(3).toString('hex')}`;
const text = (s: string) => new TextEncoder().encode(s);

const folder = (name: string, parentId: string | null = null, visibility: 'Public' | 'Private' = 'Public'): Promise<FolderRecord> =>
  pg.api.createFolder({ name, visibility, parent_id: parentId });

async function open(path: string, options: Parameters<Playground['signedInPage']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const r = await pg.signedInPage({ path, ...options });
  r.page.on('pageerror', (e) => { throw e; });
  return r;
}

/** A screenshot once the page has stopped moving. */
async function shot(page: Page, name: string): Promise<void> {
  await settled(page);
  await pg.screenshot(page, name);
}

const toast = (page: Page): Locator => page.locator('[data-testid=toast]').last();
const keyRow = (page: Page, name: string): Locator => page.locator(`[data-testid=key-row][data-name="${name}"]`);

/** What a call with this key ends in: the status it failed with, or 200. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (err) {
    if (err instanceof CofferError) return err.status;
    throw err;
  }
}

describe('the Keys page', () => {
  it('makes a key with scopes, a folder from the picker and an expiry; shows it once; the key works inside its folder only; revoking refuses it', { timeout: 180_000 }, async () => {
    const clients = await folder('Clients');
    const acme = await folder('Acme', clients.folder_id);
    const elsewhere = await folder('Elsewhere', null, 'Private');
    const inside = await pg.api.uploadFile(text('brief'), { name: 'brief.txt', folderId: acme.folder_id });
    const outside = await pg.api.uploadFile(text('secret'), { name: 'secret.txt', folderId: elsewhere.folder_id });

    // The navigation leads from the files to the keys, in the address too.
    const { context, page } = await open('/', { permissions: ['clipboard-read', 'clipboard-write'] });
    await page.getByTestId('nav-keys').click();
    await page.getByTestId('keys-empty').waitFor();
    expect(new URL(page.url()).search).toBe('?page=keys');
    expect(await page.getByTestId('nav-keys').getAttribute('aria-current')).toBe('page');
    expect(await page.title()).toBe('Keys · Coffer');
    await shot(page, 'keys-empty');

    // The dialog asks for what is missing, in words.
    await page.getByTestId('keys-empty').getByRole('button', { name: 'Create key' }).click();
    const create = page.getByTestId('create-key-dialog');
    await create.getByRole('button', { name: 'Create key' }).click();
    expect(await create.getByRole('alert').textContent()).toContain('Enter a name');
    await create.getByLabel('Name').fill('Acme uploader');
    await create.getByRole('checkbox', { name: /^read/ }).uncheck();
    await create.getByRole('button', { name: 'Create key' }).click();
    expect(await create.getByRole('alert').textContent()).toContain('Choose at least one scope');
    await create.getByRole('checkbox', { name: /^read/ }).check();
    await create.getByRole('checkbox', { name: /^write/ }).check();

    // The folder comes from the tree: a click selects, Enter opens, the arrows move.
    await create.getByTestId('choose-folder').click();
    const picker = page.getByTestId('folder-picker');
    await picker.locator('[role=option][data-name="Clients"]').click();
    expect(await picker.getByTestId('picker-choose').textContent()).toBe('Choose “Clients”');
    await page.keyboard.press('Enter');
    await picker.locator('[role=option][data-name="Acme"]').waitFor();
    await page.keyboard.press('ArrowDown');
    expect(await picker.locator('[role=option][data-name="Acme"]').getAttribute('aria-selected')).toBe('true');
    expect(await picker.getByTestId('picker-choose').textContent()).toBe('Choose “Acme”');
    await shot(page, 'folder-picker');
    await picker.getByTestId('picker-choose').click();
    await picker.waitFor({ state: 'detached' });
    expect(await create.getByTestId('key-folder-value').textContent()).toBe('Clients / Acme');
    await create.getByLabel('Expires').selectOption('30d');
    await create.getByRole('button', { name: 'Create key' }).click();

    // The key, once, with a warning and a copy button.
    const shown = page.getByTestId('key-created-dialog');
    await shown.waitFor();
    const key = await shown.getByTestId('new-key').inputValue();
    expect(key).toMatch(/^ck_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(await shown.textContent()).toContain('This is the only time the key is shown');
    expect(await persistedText(page)).not.toContain(key);
    await shown.getByTestId('copy-key').click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    expect(await toast(page).textContent()).toContain('Key copied');
    await shown.getByTestId('key-done').click();
    await shown.waitFor({ state: 'detached' });

    // Gone from the page with the dialog, and never written anywhere that outlives it.
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(key);
    expect(await page.evaluate(() => Array.from(document.querySelectorAll('input')).map((i) => i.value).join('\n'))).not.toContain(key);
    expect(await persistedText(page)).not.toContain(key);
    for (const c of await context.cookies()) expect(c.value).not.toContain(key);
    const listed = await pg.api.listKeys();
    expect(JSON.stringify(listed)).not.toContain(key.split('.')[1]);

    // The list shows it with its folder by path, its scopes, active, never used.
    const row = keyRow(page, 'Acme uploader');
    expect(await row.getByTestId('key-folder').textContent()).toBe('Clients / Acme');
    expect(await row.locator('.scope').allTextContents()).toEqual(['read', 'write']);
    expect(await row.getAttribute('data-status')).toBe('active');
    expect(await row.getByTestId('key-last-used').textContent()).toBe('Never');
    const record = listed.keys.find((k) => k.name === 'Acme uploader')!;
    expect(record.folder_id).toBe(acme.folder_id);
    expect(Date.parse(record.expires_at!) - Date.parse(record.created_at)).toBe(30 * 86_400_000);

    // The key works over HTTP, inside its folder only.
    const asKey = new CofferClient({ url: pg.url, accessKey: key, retry: { attempts: 1 } });
    expect((await asKey.list({ folder_id: acme.folder_id })).files.map((f) => f.name)).toEqual(['brief.txt']);
    expect((await asKey.getFile(inside.file_id)).name).toBe('brief.txt');
    expect(await statusOf(asKey.getFile(outside.file_id))).toBe(404);
    expect(await statusOf(asKey.list({ folder_id: elsewhere.folder_id }))).toBe(404);
    expect(await statusOf(asKey.list({}))).toBe(404);
    expect((await asKey.uploadFile(text('from the key'), { name: 'by-key.txt', folderId: acme.folder_id })).folder_id).toBe(acme.folder_id);
    expect(await statusOf(asKey.uploadFile(text('no'), { name: 'nope.txt', folderId: elsewhere.folder_id }))).toBe(404);
    expect(await statusOf(asKey.listKeys())).toBe(403);

    // The page says when it was last used.
    await expect.poll(async () => (await pg.api.listKeys()).keys.find((k) => k.key_id === record.key_id)!.last_used_at).not.toBeNull();
    await page.reload();
    await expect.poll(() => keyRow(page, 'Acme uploader').getByTestId('key-last-used').locator('[aria-hidden=true]').textContent()).toBe('just now');

    // Revoked from the page, after a confirmation; from then on the key is refused.
    await keyRow(page, 'Acme uploader').getByRole('button', { name: 'Revoke key Acme uploader' }).click();
    const confirm = page.getByTestId('revoke-key-dialog');
    expect(await confirm.textContent()).toContain('Clients / Acme');
    expect(await confirm.textContent()).toContain('stops working at once');
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect(await toast(page).textContent()).toContain('Revoked “Acme uploader”');
    expect(await keyRow(page, 'Acme uploader').getAttribute('data-status')).toBe('revoked');
    expect(await keyRow(page, 'Acme uploader').getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    expect(await statusOf(asKey.list({ folder_id: acme.folder_id }))).toBe(401);
    expect((await pg.api.listKeys()).keys.find((k) => k.key_id === record.key_id)!.revoked_at).not.toBeNull();
    await context.close();
  });

  it('asks before a key is closed uncopied, lists an unconfined key as All files, and says so when the list fails', async () => {
    const { context, page } = await open('/?page=keys');
    await page.getByTestId('create-key').click();
    const create = page.getByTestId('create-key-dialog');
    await create.getByLabel('Name').fill('Read everything');
    await create.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('key-created-dialog');
    const key = await shown.getByTestId('new-key').inputValue();
    // Escape pressed the moment the dialog shows still asks first: the dialog listens
    // before it opens.
    await page.keyboard.press('Escape');
    expect(await shown.getByRole('alert').textContent()).toContain('You have not copied the key');
    await shown.getByTestId('close-without-copy').click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(key);
    expect(await persistedText(page)).not.toContain(key);
    expect(await keyRow(page, 'Read everything').locator('.key-place').textContent()).toBe('All files');
    // An unconfined read key reads everywhere and writes nowhere.
    const asKey = new CofferClient({ url: pg.url, accessKey: key, retry: { attempts: 1 } });
    expect(await statusOf(asKey.list({}))).toBe(200);
    expect(await statusOf(asKey.createFolder({ name: unique('no'), visibility: 'Public', parent_id: null }))).toBe(403);

    // A failing list: the service's message and a way to try again.
    await page.route('**/collections/keys/list', (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'The metadata store is not reachable.' } }),
    }));
    await page.reload();
    const failed = page.getByTestId('keys-error');
    expect(await failed.textContent()).toContain('The metadata store is not reachable.');
    await page.unroute('**/collections/keys/list');
    await failed.getByRole('button', { name: 'Try again' }).click();
    await keyRow(page, 'Read everything').waitFor();
    await context.close();
  });

  it('looks finished: the table with keys of every kind, its dialogs free of accessibility findings, light and dark', { timeout: 300_000 }, async () => {
    const projects = await folder('Projects');
    const site = await folder('Website', projects.folder_id);
    await pg.api.createKey({ name: 'CI deploy', scopes: ['read', 'write'], expires_in: 90 * 86_400 });
    await pg.api.createKey({ name: 'Website uploads', scopes: ['write'], folder_id: site.folder_id, expires_in: 7 * 86_400 });
    const used = await pg.api.createKey({ name: 'Analytics export', scopes: ['read'], folder_id: projects.folder_id });
    await new CofferClient({ url: pg.url, accessKey: used.key }).list({ folder_id: projects.folder_id });
    await pg.api.createKey({ name: 'Key manager', scopes: ['admin'] });
    const old = await pg.api.createKey({ name: 'Old laptop', scopes: ['read', 'write'] });
    await pg.api.revokeKey(old.key_id);
    await expect.poll(async () => (await pg.api.listKeys()).keys.find((k) => k.key_id === used.key_id)!.last_used_at).not.toBeNull();

    const found: Record<string, unknown> = {};
    for (const scheme of ['light', 'dark'] as const) {
      // axe-core is added as a script of its own: the page's CSP would refuse it.
      const { context, page } = await open('/?page=keys', { colorScheme: scheme, bypassCSP: true, permissions: ['clipboard-read', 'clipboard-write'] });
      await keyRow(page, 'Website uploads').getByText(`${projects.name} / Website`).waitFor();
      found[`keys-${scheme}`] = await axeScan(page);
      if (scheme === 'light') await shot(page, 'keys');
      // Each scan takes seconds: the dialogs are scanned in one scheme, the page and the key in both.
      const light = scheme === 'light';
      await page.getByTestId('create-key').click();
      const create = page.getByTestId('create-key-dialog');
      await create.getByLabel('Name').fill('Partner portal');
      await create.getByTestId('choose-folder').click();
      await page.getByTestId('folder-picker').locator(`[role=option][data-name="${projects.name}"]`).click();
      if (light) found.picker = await axeScan(page);
      await page.getByTestId('picker-choose').click();
      if (light) found.create = await axeScan(page);
      if (scheme === 'light') await shot(page, 'create-key-dialog');
      await create.getByRole('button', { name: 'Create key' }).click();
      await page.getByTestId('key-created-dialog').waitFor();
      found[`created-${scheme}`] = await axeScan(page);
      if (scheme === 'light') await shot(page, 'key-created-dialog');
      await page.getByTestId('copy-key').click();
      await page.getByTestId('key-done').click();
      await keyRow(page, 'Website uploads').getByRole('button', { name: 'Revoke key Website uploads' }).click();
      await page.getByTestId('revoke-key-dialog').waitFor();
      if (light) found.revoke = await axeScan(page);
      await page.keyboard.press('Escape');
      if (light) {
        // A phone's width: the page fits, the table scrolls within its card.
        await page.setViewportSize({ width: 360, height: 720 });
        await keyRow(page, 'Website uploads').waitFor();
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
        expect(await page.getByTestId('create-key').isVisible()).toBe(true);
        await shot(page, 'phone-keys');
      }
      await context.close();
    }
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
  });
});

describe('revoke links', () => {
  it('from a file’s menu: after the confirmation every earlier signed link answers 403 link_revoked at the edge; new links work', { timeout: 120_000 }, async () => {
    const root = await folder(unique('shared'));
    const priv = await pg.api.uploadFile(text('%PDF-1.4 contract'), { name: 'contract.pdf', folderId: root.folder_id, visibility: 'Private' });
    const pub = await pg.api.uploadFile(text('hello'), { name: 'notes.txt', folderId: root.folder_id });
    const earlier = await pg.api.createLink({ file_id: priv.file_id, file_type: priv.file_type, expiry: 3600 });
    expect(new URL(earlier.presigned_url).origin).toBe(pg.edgeUrl);
    expect((await fetch(earlier.presigned_url)).status).toBe(200);

    const { context, page } = await open(`/?folder=${root.folder_id}&view=list`);
    const row = page.locator('[data-testid=row][data-name="contract.pdf"]');
    await row.locator('.more-btn').click();
    await page.locator('[role=menu] [data-action="revoke-links"]').click();
    const dialog = page.getByTestId('revoke-links-dialog');
    expect(await dialog.textContent()).toContain('shared so far stops working at every edge');
    expect(await dialog.getByTestId('revoke-public-note').count()).toBe(0);
    await shot(page, 'revoke-links-dialog');
    await dialog.getByRole('button', { name: 'Revoke links' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(await toast(page).textContent()).toContain('Links to “contract.pdf” revoked');

    // The edge refuses the earlier link already; a link made now works.
    const refused = await fetch(earlier.presigned_url);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('link_revoked');
    const later = await pg.api.createLink({ file_id: priv.file_id, file_type: priv.file_type, expiry: 3600 });
    expect((await fetch(later.presigned_url)).status).toBe(200);

    // From a Public file's details too, saying that its delivery URL is not a link.
    await page.locator('[data-testid=row][data-name="notes.txt"]').click({ position: { x: 6, y: 6 } });
    await page.keyboard.press('Enter');
    const details = page.getByTestId('details-dialog');
    await details.getByRole('button', { name: 'Revoke links' }).click();
    const confirmPublic = page.getByTestId('revoke-links-dialog');
    expect(await confirmPublic.getByTestId('revoke-public-note').textContent()).toContain('delivery URL needs no link');
    await confirmPublic.getByRole('button', { name: 'Cancel' }).click();
    await confirmPublic.waitFor({ state: 'detached' });
    expect((await fetch(pub.delivery_url!)).status).toBe(200);
    await context.close();
  });
});
