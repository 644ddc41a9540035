/**
 * The Playground's webhooks and usage in a real browser (issue 13, points 4 and 5): a
 * webhook made on the Webhooks page against a real receiver in this process, its signing
 * secret shown once and kept in no storage; "Send test" reaching the receiver signed and
 * listed with its outcome; a delivery sent again; the webhook deleted after a
 * confirmation. A download through the edge shows in a file's details and as a bar of
 * today's usage chart on the home page. Screenshots go to test-results/playground/.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/sdk/index.js';
import { axeScan, persistedText, settled } from './checks.js';
import { startPlayground, type Playground } from './harness.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver on a loopback port (the origin allows private receivers here) that answers 200 "ok". */
async function startReceiver(): Promise<{ url: string; got: Received[]; close: () => Promise<void> }> {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok, thanks');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/coffer-events`,
    got,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

let pg: Playground;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  [pg, receiver] = await Promise.all([
    startPlayground({ COFFER_WEBHOOK_ALLOW_PRIVATE: '1', COFFER_WEBHOOK_RETRY_BASE_MS: '50' }),
    startReceiver(),
  ]);
}, 60_000);

afterAll(async () => {
  await pg?.close();
  await receiver?.close();
});

const text = (s: string) => new TextEncoder().encode(s);

async function open(path: string, options: Parameters<Playground['signedInPage']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const r = await pg.signedInPage({ path, ...options });
  r.page.on('pageerror', (e) => { throw e; });
  return r;
}

async function shot(page: Page, name: string): Promise<void> {
  await settled(page);
  await pg.screenshot(page, name);
}

/** Deliveries are made and re-read every second or so: waits give them time. */
const WAIT = { timeout: 15_000, interval: 200 };

const toast = (page: Page): Locator => page.locator('[data-testid=toast]').last();
const card = (page: Page, url: string): Locator => page.locator(`[data-testid=webhook-card][data-url="${url}"]`);

describe('the Webhooks page', () => {
  it('makes a webhook (secret shown once), sends a test that arrives signed and is listed with its answer, sends it again, deletes after a confirmation', { timeout: 180_000 }, async () => {
    const { context, page } = await open('/', { permissions: ['clipboard-read', 'clipboard-write'] });
    await page.getByTestId('nav-webhooks').click();
    await page.getByTestId('webhooks-empty').waitFor();
    expect(new URL(page.url()).search).toBe('?page=webhooks');
    expect(await page.getByTestId('nav-webhooks').getAttribute('aria-current')).toBe('page');
    expect(await page.title()).toBe('Webhooks · Coffer');

    // The dialog checks the address before asking the service, and passes on its refusal.
    await page.getByTestId('create-webhook').click();
    const create = page.getByTestId('create-webhook-dialog');
    await create.getByLabel('Receiver URL').fill('ftp://example.com/hook');
    await create.getByRole('button', { name: 'Create webhook' }).click();
    expect(await create.getByRole('alert').textContent()).toContain('https://');
    await create.getByLabel('Receiver URL').fill(receiver.url);
    await create.getByTestId('some-events').check();
    await create.locator('input[value="file.ready"]').uncheck();
    await create.getByRole('button', { name: 'Create webhook' }).click();
    expect(await create.getByRole('alert').textContent()).toContain('Choose at least one event');
    await create.locator('input[value="file.ready"]').check();
    await create.locator('input[value="file.deleted"]').check();
    await shot(page, 'create-webhook-dialog');
    await create.getByRole('button', { name: 'Create webhook' }).click();

    // The secret, once, copied, and nowhere once the dialog has closed.
    const shown = page.getByTestId('webhook-created-dialog');
    const secret = await shown.getByTestId('new-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(await persistedText(page)).not.toContain(secret);
    await shot(page, 'webhook-secret-dialog');
    await shown.getByTestId('copy-secret').click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), WAIT).toBe(secret);
    await shown.getByTestId('secret-done').click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(secret);
    expect(await persistedText(page)).not.toContain(secret);
    expect(JSON.stringify(await pg.api.listWebhooks())).not.toContain(secret);

    const hook = card(page, receiver.url);
    expect(await hook.locator('.hook-events li').allTextContents()).toEqual(['file.ready', 'file.deleted']);
    await hook.getByTestId('no-deliveries').waitFor();

    // "Send test": the receiver gets a signed webhook.test; the page shows it delivered, with the answer.
    await hook.getByTestId('send-test').click();
    await expect.poll(() => receiver.got.length, WAIT).toBe(1);
    const event = await verifyWebhook(receiver.got[0]!.headers as Record<string, string>, receiver.got[0]!.body, secret);
    expect(event.type).toBe('webhook.test');
    const row = hook.locator('[data-testid=delivery-row][data-event="webhook.test"]');
    await expect.poll(() => row.getAttribute('data-status'), WAIT).toBe('delivered');
    expect(await row.getByTestId('delivery-status').textContent()).toBe('Delivered');
    expect(await row.getByTestId('delivery-attempts').textContent()).toBe('1');
    expect(await row.getByTestId('delivery-http-status').textContent()).toBe('200');
    expect(await row.locator('.hook-excerpt').textContent()).toBe('ok, thanks');

    // A real event arrives too, and shows once the list is refreshed.
    const file = await pg.api.uploadFile(text('hello'), { name: 'hooked.txt' });
    await expect.poll(() => receiver.got.some((g) => g.body.includes(file.file_id)), WAIT).toBe(true);
    await hook.getByRole('button', { name: /^Refresh the deliveries/ }).click();
    await expect.poll(() => hook.locator('[data-testid=delivery-row][data-event="file.ready"]').getAttribute('data-status'), WAIT).toBe('delivered');
    await shot(page, 'webhooks');

    // Redeliver: the same message again (same webhook-id), a second attempt on the same row.
    await row.getByTestId('redeliver').click();
    await expect.poll(() => receiver.got.length, WAIT).toBe(3);
    expect(receiver.got[2]!.headers['webhook-id']).toBe(receiver.got[0]!.headers['webhook-id']);
    await expect.poll(() => row.getByTestId('delivery-attempts').textContent(), WAIT).toBe('2');
    await expect.poll(() => row.getAttribute('data-status'), WAIT).toBe('delivered');

    // Delete, after a confirmation that names the receiver.
    await hook.getByTestId('delete-webhook').click();
    const confirm = page.getByTestId('delete-webhook-dialog');
    expect(await confirm.textContent()).toContain(receiver.url);
    await shot(page, 'delete-webhook-dialog');
    await confirm.getByRole('button', { name: 'Delete webhook' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect(await toast(page).textContent()).toContain('Deleted the webhook');
    await page.getByTestId('webhooks-empty').waitFor();
    expect((await pg.api.listWebhooks()).webhooks).toEqual([]);
    await context.close();
  });

  it('has no serious or critical axe findings, light and dark, with deliveries and in its dialogs', { timeout: 180_000 }, async () => {
    const made = await pg.api.createWebhook({ url: receiver.url, events: ['*'] });
    await pg.api.testWebhook(made.webhook_id);
    const found: Record<string, unknown> = {};
    for (const scheme of ['light', 'dark'] as const) {
      // axe-core is added as a script of its own: the page's CSP would refuse it.
      const { context, page } = await open('/?page=webhooks', { colorScheme: scheme, bypassCSP: true });
      await card(page, receiver.url).locator('[data-testid=delivery-row][data-status=delivered]').first().waitFor();
      found[`page-${scheme}`] = await axeScan(page);
      // Each scan takes seconds: the dialog is scanned in one scheme.
      if (scheme === 'light') {
        await page.getByTestId('create-webhook').click();
        await page.getByTestId('some-events').check();
        found.create = await axeScan(page);
      }
      await context.close();
    }
    await pg.api.deleteWebhook(made.webhook_id);
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
  });
});

describe('usage', () => {
  it('a download through the edge shows in the file’s details and as today’s bar on the home chart', { timeout: 120_000 }, async () => {
    const folder = await pg.api.createFolder({ name: `usage-${randomBytes(3).toString('hex')}`, visibility: 'Public', parent_id: null });
    const body = randomBytes(40_000);
    const file = await pg.api.uploadFile(body, { name: 'report.bin', folderId: folder.folder_id });
    const res = await fetch(file.delivery_url!);
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
    // Edges report in batches (every 10 s); this one is told to report now, until the count is in.
    await expect.poll(async () => {
      await pg.edge.reportUsage();
      return (await pg.api.getFile(file.file_id)).downloads;
    }, WAIT).toBe(1);

    const { context, page } = await open('/?view=list', { bypassCSP: true, colorScheme: 'dark' });
    const chart = page.getByTestId('usage-chart');
    const today = new Date().toISOString().slice(0, 10);
    const bar = chart.locator(`[data-testid=usage-bar][data-date="${today}"]`);
    await bar.waitFor();
    expect(Number(await bar.getAttribute('data-bytes'))).toBeGreaterThanOrEqual(body.length);
    expect(Number(await bar.getAttribute('height'))).toBeGreaterThan(0);
    expect(await chart.locator('svg title').first().textContent()).toContain('Bytes served per day');
    expect(await chart.locator('svg desc').textContent()).toContain('downloads');
    expect(await chart.getByTestId('usage-table').locator(`tr[data-date="${today}"] td`).first().textContent()).not.toBe('0');
    expect(await axeScan(page)).toEqual([]);
    await shot(page, 'usage-chart-dark');
    await context.close();

    const light = await open(`/?folder=${folder.folder_id}&view=list`);
    await light.page.locator('[data-testid=row][data-name="report.bin"]').click({ position: { x: 6, y: 6 } });
    await light.page.keyboard.press('Enter');
    const usage = light.page.getByTestId('details-dialog').getByTestId('file-usage');
    expect(await usage.getAttribute('data-downloads')).toBe('1');
    expect(Number(await usage.getAttribute('data-bytes'))).toBe(body.length);
    expect(await usage.textContent()).toContain('As reported by edges');
    await shot(light.page, 'file-details-usage');
    await light.page.keyboard.press('Escape');
    await light.page.locator('.brand').click();
    await light.page.getByTestId('usage-chart').locator('[data-testid=usage-bar]').first().waitFor();
    await shot(light.page, 'usage-chart');
    await light.context.close();
  });
});
