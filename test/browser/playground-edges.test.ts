/**
 * The Playground's Edges page in a real browser (issue 26, point 4): the harness's edge and a
 * second one filling from it, both live with their names, parents and counts; the second is
 * stopped and shown "Not answering" once its lease (3 s here, not the default 5 s) runs out,
 * without a reload. Names come from the edges and are shown as text, never markup. Empty
 * state, light and dark axe scans. Screenshots go to test-results/playground/.
 */
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { axeScan, settled } from './checks.js';
import { startPlayground, type Playground } from './harness.js';

/** A name an edge chose: markup in it must stay text. */
const CHILD = 'eu-west-1a <img src=x onerror="window.__pwned=1">';
const WAIT = { timeout: 30_000, interval: 250 };

let pg: Playground;
let child: TestEdge | undefined;

beforeAll(async () => {
  pg = await startPlayground({ COFFER_EDGE_LEASE_MS: '3000' });
}, 60_000);

afterAll(async () => {
  await child?.close();
  await pg?.close();
});

async function open(path: string, options: Parameters<Playground['signedInPage']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const r = await pg.signedInPage({ path, ...options });
  r.page.on('pageerror', (e) => { throw e; });
  return r;
}

async function shot(page: Page, name: string): Promise<void> {
  await settled(page);
  await pg.screenshot(page, name);
}

const rowNamed = (page: Page, text: string): Locator => page.locator('[data-testid=edge-row]').filter({ hasText: text });

describe('the Edges page', () => {
  it('lists the edges with parents and counts, names as text, and shows a stopped edge as not answering without a reload', { timeout: 120_000 }, async () => {
    child = await startTestEdge(pg.origin, () => ({ COFFER_EDGE_NAME: CHILD, COFFER_EDGE_PARENTS: pg.edgeUrl }));
    await Promise.all([pg.edge.reportUsage(), child.edge.reportUsage()]);

    const { context, page } = await open('/?page=edges');
    expect(await page.getByTestId('nav-edges').getAttribute('aria-current')).toBe('page');
    const childRow = rowNamed(page, 'eu-west-1a');
    await expect.poll(() => childRow.getAttribute('data-state'), WAIT).toBe('live');
    await expect.poll(() => page.locator('[data-testid=edge-row][data-state=live]').count(), WAIT).toBe(2);

    expect(await childRow.getByTestId('edge-name').textContent()).toBe(CHILD);
    expect(await page.locator('[data-testid=edges-table] img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await childRow.textContent()).toContain(pg.edgeUrl);
    expect(await childRow.getByTestId('edge-state').textContent()).toBe('Live');
    expect(await childRow.getByTestId('edge-seen').textContent()).toMatch(/^\d+ s ago$/);
    const parentRow = page.locator('[data-testid=edge-row][data-state=live]').filter({ hasNotText: 'eu-west-1a' });
    expect(await parentRow.textContent()).toContain('Origin');
    expect(await page.getByTestId('edges-summary').textContent()).toMatch(/^2 edges · all answering · feed at event \d+$/);
    await shot(page, 'edges');

    // Stopped: its lease runs out and the page, refreshing by itself, marks it.
    await child.close();
    child = undefined;
    await expect.poll(() => childRow.getAttribute('data-state'), WAIT).toMatch(/^(lapsed|unreachable)$/);
    expect(await childRow.getByTestId('edge-state').textContent()).toBe('Not answering');
    expect(await childRow.getAttribute('class')).toContain('down');
    expect(await page.getByTestId('edges-summary').textContent()).toContain('1 not answering');
    expect(await parentRow.getAttribute('data-state')).toBe('live');
    await shot(page, 'edges-not-answering');
    await context.close();
  });

  it('says how to start an edge when there is none', { timeout: 60_000 }, async () => {
    const { context, page } = await open('/?page=edges');
    await page.route('**/collections/edges', (route) => route.fulfill({
      status: 200, contentType: 'application/json', body: JSON.stringify({ head_seq: 0, checked_at: new Date().toISOString(), edges: [] }),
    }));
    await page.reload();
    const empty = page.getByTestId('edges-empty');
    await empty.waitFor();
    expect(await empty.textContent()).toContain('coffer edge --origin URL');
    await shot(page, 'edges-empty');
    await context.close();
  });

  it('has no serious or critical axe findings, light and dark', { timeout: 120_000 }, async () => {
    const found: Record<string, unknown> = {};
    for (const scheme of ['light', 'dark'] as const) {
      const { context, page } = await open('/?page=edges', { colorScheme: scheme, bypassCSP: true });
      await page.locator('[data-testid=edge-row]').first().waitFor();
      found[scheme] = await axeScan(page);
      await context.close();
    }
    expect(found).toEqual({ light: [], dark: [] });
  });
});
