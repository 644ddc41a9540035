/**
 * The interface's reference page (/docs) in a real browser: it loads with no Content-Security-
 * Policy error or any other in the console, and wears Coffer's look (its colours, type and
 * mark), not the stock Swagger one. A screenshot goes to test-results/playground/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlayground, type Playground } from './harness.js';

let pg: Playground;

beforeAll(async () => {
  pg = await startPlayground();
}, 60_000);

afterAll(async () => {
  await pg?.close();
});

describe('/docs', () => {
  it('raises no console error, CSP or other, and looks like Coffer', async () => {
    const { page } = await pg.newPage();
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    // A CSP violation names its directive and source, for a failure that says where.
    await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP ${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}`)));
    await page.goto('/docs/');
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    await page.waitForLoadState('networkidle');
    await pg.screenshot(page, 'api-docs');
    expect(problems).toEqual([]);
    // Coffer's mark and name in the top bar, not Swagger's, and the way back to the Playground.
    expect(await page.locator('.coffer-bar .coffer-brand').textContent()).toBe('Coffer');
    expect(await page.locator('.coffer-bar .coffer-back').getAttribute('href')).toBe('/');
    expect(await page.locator('.swagger-ui .topbar').count()).toBe(0);
    expect(await page.title()).toBe('Coffer · API reference');
    // The page's font is the Playground's system stack.
    expect(await page.evaluate(() => getComputedStyle(document.querySelector('.swagger-ui .info .title')!).fontFamily)).toMatch(/system-ui|-apple-system/);
  });
});
